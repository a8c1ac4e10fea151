package main

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startServeLimited is startServe with the gateway's open-files limit
// lowered to nofile (soft and hard, through the shell's ulimit).
func startServeLimited(t *testing.T, cfgPath string, nofile int) *server {
	t.Helper()
	addr := freePort(t)
	cmd := exec.Command("sh", "-c", `ulimit -n `+strconv.Itoa(nofile)+` && exec "$0" "$@"`,
		binary(t), "serve", "--config", cfgPath, "--listen", addr)
	s := &server{cmd: cmd, addr: addr, stdout: &syncBuffer{}, done: make(chan struct{}), logs: &bytes.Buffer{}}
	cmd.Stdout = s.stdout
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			s.logs.WriteString(sc.Text() + "\n")
		}
		s.err = cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get("http://" + addr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s
			}
		}
		select {
		case <-s.done:
			t.Fatalf("gateway exited during start: %v\n%s", s.err, s.logs)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway did not become ready")
		}
	}
}

// TestDescriptorExhaustion holds more idle connections than the gateway
// has file descriptors. Before the connection limit and the accept retry,
// fasthttp's accept loop took EMFILE for a permanent error and the
// gateway exited with status 0. Now connections past the limit get a 503
// and are closed, and the gateway answers again once they are gone.
func TestDescriptorExhaustion(t *testing.T) {
	dir := t.TempDir()
	s := startServeLimited(t, writeConfig(t, dir, false), 256)

	var conns []net.Conn
	for range 300 {
		c, err := net.DialTimeout("tcp", s.addr, 2*time.Second)
		if err != nil {
			break // the backlog is full: also a way of saying no
		}
		conns = append(conns, c)
	}
	time.Sleep(2 * time.Second)
	rejected := 0
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		b, _ := io.ReadAll(c)
		if bytes.HasPrefix(b, []byte("HTTP/1.1 503 ")) {
			rejected++
		}
		c.Close()
	}
	select {
	case <-s.done:
		t.Fatalf("the gateway stopped (%v) under %d idle connections:\n%s", s.err, len(conns), s.logs)
	default:
	}
	if rejected == 0 {
		t.Errorf("none of %d connections past the limit was told 503", len(conns))
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get("http://" + s.addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway does not answer after the connections closed: %v", err)
		}
	}
	req, _ := http.NewRequest("GET", "http://"+s.addr+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+metricsToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(m), `voxgate_http_connections_rejected_total{limit="max_conns"} `+strconv.Itoa(rejected)) {
		t.Errorf("rejections are not counted as %d:\n%s", rejected, grepLines(string(m), "voxgate_http_connections"))
	}
	s.stop(t)
}

// TestPluginsExitWithTheGateway kills the gateway with SIGKILL, which it
// cannot handle: its plugin processes must still be gone within a second.
func TestPluginsExitWithTheGateway(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, writeConfig(t, dir, false))
	kids := children(s.cmd.Process.Pid)
	if len(kids) == 0 {
		t.Fatal("no plugin processes found under the gateway")
	}
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-s.done
	for deadline := time.Now().Add(time.Second); ; time.Sleep(20 * time.Millisecond) {
		alive := 0
		for _, pid := range kids {
			if processAlive(pid) {
				alive++
			}
		}
		if alive == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range kids {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("%d of %d plugin processes outlived the gateway's SIGKILL by a second", alive, len(kids))
		}
	}
}

// children returns the pids of pid's child processes, from /proc.
func children(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		rest := string(b[bytes.LastIndexByte(b, ')')+2:])
		f := strings.Fields(rest)
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}

// processAlive reports whether pid runs and is not a zombie.
func processAlive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	rest := string(b[bytes.LastIndexByte(b, ')')+2:])
	return !strings.HasPrefix(rest, "Z")
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
