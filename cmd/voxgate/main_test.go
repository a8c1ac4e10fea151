package main

import (
	"bufio"
	"bytes"

	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// These tests drive the real bin/voxgate binary (built by `make build`, or
// here when missing), as an operator would.

func binary(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("VOXGATE_BIN_DIR")
	if dir == "" {
		wd, _ := os.Getwd()
		dir = filepath.Join(wd, "..", "..", "bin")
	}
	bin := filepath.Join(dir, "voxgate")
	if _, err := os.Stat(bin); err != nil {
		bin = filepath.Join(t.TempDir(), "voxgate")
		if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
			t.Fatalf("build: %v\n%s", err, out)
		}
	}
	return bin
}

func pluginsDir() string {
	if d := os.Getenv("VOXGATE_BIN_DIR"); d != "" {
		return filepath.Join(d, "plugins")
	}
	wd, _ := os.Getwd()
	return filepath.Join(wd, "..", "..", "bin", "plugins")
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func writeConfig(t *testing.T, dir string, devKey bool) string {
	cfg := fmt.Sprintf(`
server:
  listen: 127.0.0.1:1
storage:
  path: ./data/voxgate.db
plugins:
  dir: %s
providers:
  espeak: {plugin: voxgate-espeak, managed: true}
orgs:
  acme:
    dev_key: %v
    providers:
      espeak: {enabled: true}
`, pluginsDir(), devKey)
	path := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// cli runs the binary to completion.
func cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code = 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), code
}

// syncBuffer is a bytes.Buffer the child process writes while the test
// reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// server is a running `voxgate serve`.
type server struct {
	cmd    *exec.Cmd
	addr   string
	stdout *syncBuffer
	// done is closed when the process has exited; err holds Wait's error.
	done chan struct{}
	err  error
	// logs is the process's stderr, complete once done is closed.
	logs *bytes.Buffer
}

func startServe(t *testing.T, cfgPath string, extra ...string) *server {
	t.Helper()
	addr := freePort(t)
	args := append([]string{"serve", "--config", cfgPath, "--listen", addr}, extra...)
	cmd := exec.Command(binary(t), args...)
	s := &server{cmd: cmd, addr: addr, stdout: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout = s.stdout
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	s.logs = logs
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.WriteString(sc.Text() + "\n")
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
		if time.Now().After(deadline) {
			t.Fatalf("gateway did not become ready")
		}
	}
}

func (s *server) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.done:
		if s.err != nil {
			t.Fatalf("gateway exited with %v", s.err)
		}
	case <-time.After(20 * time.Second):
		// Stack dumps say where it hangs: SIGQUIT makes the Go runtime
		// print every goroutine before it exits.
		_ = s.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
		}
		t.Fatalf("gateway did not stop on SIGTERM; its log:\n%s", tailString(s.logs.String(), 20000))
	}
}

// tailString is the last n bytes of s.
func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func get(t *testing.T, addr, path, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func post(t *testing.T, addr, path, key, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+addr+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func keyID(t *testing.T, list, prefix string) string {
	t.Helper()
	for _, line := range strings.Split(list, "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && strings.HasPrefix(prefix, strings.TrimSuffix(f[3], "…")) {
			return f[0]
		}
	}
	t.Fatalf("no key %s… in:\n%s", prefix[:10], list)
	return ""
}

func TestKeysAndRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, false)

	// Offline: the CLI opens the database itself.
	out, stderr, code := cli(t, "keys", "create", "--config", cfg, "--org", "acme", "--name", "ci")
	key := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(key, "vxk_") || strings.Count(out, "\n") != 1 {
		t.Fatalf("keys create: code %d out %q err %q", code, out, stderr)
	}
	if _, stderr, code := cli(t, "keys", "create", "--config", cfg, "--org", "nope"); code == 0 || !strings.Contains(stderr, `"nope"`) {
		t.Fatalf("unknown org: code %d %q", code, stderr)
	}

	s := startServe(t, cfg)
	first := s
	if st, body := get(t, s.addr, "/v1/voices", key); st != 200 {
		t.Fatalf("offline-created key rejected: %d %s", st, body)
	}
	if st, body := post(t, s.addr, "/v1/voices", key, `{"title":"Keeper","provider":"espeak","model":"espeak-ng","voice_id":"en"}`); st != 201 {
		t.Fatalf("create voice: %d %s", st, body)
	}
	// While serving: the CLI goes through the admin socket.
	out, stderr, code = cli(t, "keys", "create", "--config", cfg, "--org", "acme")
	key2 := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(key2, "vxk_") {
		t.Fatalf("keys create while serving: %d %q %q", code, out, stderr)
	}
	if st, _ := get(t, s.addr, "/v1/voices", key2); st != 200 {
		t.Fatalf("new key not active at once: %d", st)
	}
	list, _, code := cli(t, "keys", "list", "--config", cfg)
	if code != 0 || strings.Count(list, "acme") != 2 || strings.Contains(list, key2) {
		t.Fatalf("keys list:\n%s", list)
	}
	id2 := keyID(t, list, key2)
	if _, stderr, code := cli(t, "keys", "revoke", id2, "--config", cfg); code != 0 {
		t.Fatalf("revoke: %s", stderr)
	}
	if st, _ := get(t, s.addr, "/v1/voices", key2); st != 401 {
		t.Fatalf("revoked key still works: %d", st)
	}
	if _, stderr, code := cli(t, "keys", "revoke", "no-such-id", "--config", cfg); code == 0 || stderr == "" {
		t.Fatalf("revoke unknown id: code %d", code)
	}
	s.stop(t)

	// Restart: voices and keys survive, the revocation too.
	s = startServe(t, cfg)
	st, body := get(t, s.addr, "/v1/voices", key)
	if st != 200 || !strings.Contains(body, `"Keeper"`) {
		t.Fatalf("after restart: %d %s", st, body)
	}
	if st, _ := get(t, s.addr, "/v1/voices", key2); st != 401 {
		t.Fatalf("revoked key works after restart: %d", st)
	}
	// Offline revoke after stop also works.
	s.stop(t)
	id1 := keyID(t, list, key)
	if _, stderr, code := cli(t, "keys", "revoke", id1, "--config", cfg); code != 0 {
		t.Fatalf("offline revoke: %s", stderr)
	}
	list, _, _ = cli(t, "keys", "list", "--config", cfg, "--org", "acme")
	if strings.Count(list, "revoked") != 2 {
		t.Fatalf("list after revokes:\n%s", list)
	}
	// The gateway's own log never carries a key.
	for _, k := range []string{key, key2} {
		if strings.Contains(s.logs.String(), k) || strings.Contains(first.logs.String(), k) {
			t.Fatal("an API key appears in the gateway's log")
		}
	}
	if !strings.Contains(first.logs.String(), `"plugin loaded"`) || !strings.Contains(first.logs.String(), `"listening"`) {
		t.Errorf("start-up log does not say what loaded and listens:\n%s", first.logs.String())
	}
}

func TestDevKeyPrintedOnceAndDataOverride(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, true)
	data := filepath.Join(dir, "elsewhere", "v.db")
	s := startServe(t, cfg, "--data", data)
	banner := s.stdout.String()
	i := strings.Index(banner, "vxk_")
	if i < 0 {
		t.Fatalf("no development key printed: %q", banner)
	}
	key := strings.Fields(banner[i:])[0]
	if st, _ := get(t, s.addr, "/v1/voices", key); st != 200 {
		t.Fatalf("dev key rejected: %d", st)
	}
	if _, err := os.Stat(data); err != nil {
		t.Fatalf("--data not used: %v", err)
	}
	s.stop(t)
	s = startServe(t, cfg, "--data", data)
	s.stop(t)
	if strings.Contains(s.stdout.String(), "vxk_") {
		t.Fatal("development key printed again on the second start")
	}
}

func TestCLIErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	_ = os.WriteFile(bad, []byte("server:\n  listen: 127.0.0.1:1\n  colour: red\norgs: {a: {}}\n"), 0o600)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no command", nil, 2, "Usage"},
		{"unknown command", []string{"fly"}, 2, `unknown command "fly"`},
		{"missing config", []string{"serve", "--config", filepath.Join(dir, "none.yaml")}, 1, "--config FILE"},
		{"unknown key", []string{"serve", "--config", bad}, 1, `line 3: unknown key "server.colour"`},
		{"config check", []string{"config", "check", "--config", bad}, 1, "server.colour"},
		{"keys without org", []string{"keys", "create", "--config", bad}, 2, "--org is required"},
		{"bad flag", []string{"serve", "--nope"}, 2, "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, code := cli(t, tt.args...)
			if code != tt.code || !strings.Contains(out+stderr, tt.want) {
				t.Fatalf("code %d (want %d), output %q %q, want %q", code, tt.code, out, stderr, tt.want)
			}
		})
	}
}
