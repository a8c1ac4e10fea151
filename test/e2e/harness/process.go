package harness

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Process is a `voxgate serve` of bin/voxgate in a process of its own, for
// tests that kill it (kill -9) and start it again on the same files.
type Process struct {
	t    testing.TB
	Dir  string
	Cfg  string
	Addr string
	// Keys are the development keys the first start printed, by org.
	Keys map[string]string
	*Child
	client *http.Client
}

// FreeAddr returns a loopback address with a port nobody listens on now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// StartProcess writes yaml (%DIR%, %BIN% and %ADDR% replaced) to a
// gateway.yaml in dir and starts `voxgate serve` on it; keys, when not
// nil, are the organizations' keys of an earlier start on the same
// files (the development keys are printed only the first time). It
// returns once /readyz answers 200. The process is stopped (SIGTERM) when
// the test ends, unless it was killed.
func StartProcess(t testing.TB, dir, yaml string, keys map[string]string) *Process {
	t.Helper()
	bin := BinDir(t)
	p := &Process{t: t, Dir: dir, Cfg: filepath.Join(dir, "gateway.yaml"), Addr: FreeAddr(t), Keys: map[string]string{},
		client: &http.Client{Timeout: time.Minute}}
	yaml = strings.NewReplacer("%DIR%", dir, "%BIN%", bin, "%ADDR%", p.Addr).Replace(yaml)
	if err := os.WriteFile(p.Cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	p.Child = Spawn(t, p.Cfg)
	waitTB(t, "the gateway to be ready", func() bool {
		if p.Exited() {
			t.Fatalf("the gateway exited:\n%s", p.Log())
		}
		resp, err := http.Get("http://" + p.Addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	if keys != nil {
		p.Keys = keys
		return p
	}
	keyRE := regexp.MustCompile(`org "([a-z]+)" \(shown once[^\n]*\n\n\s+(vxk_\S+)`)
	waitTB(t, "the development keys", func() bool {
		for _, m := range keyRE.FindAllStringSubmatch(p.Stdout(), -1) {
			p.Keys[m[1]] = m[2]
		}
		return len(p.Keys) > 0
	})
	return p
}

// Kill kills the process with SIGKILL (kill -9) and waits for it to end.
func (p *Process) Kill() {
	p.t.Helper()
	_ = p.Signal(syscall.SIGKILL)
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		p.t.Fatal("the killed gateway did not exit")
	}
}

// Do sends a request as org ("" = no Authorization header), with body
// and headers as Gateway.Do takes them.
func (p *Process) Do(method, path, org string, body any, hdr ...string) *Response {
	p.t.Helper()
	return do(p.t, p.client, "http://"+p.Addr+path, method, p.Keys[org], org != "", body, hdr...)
}

// waitTB polls cond for up to a minute, as WaitFor, for tests and
// benchmarks alike.
func waitTB(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func tailOf(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
