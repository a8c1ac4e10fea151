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
metrics:
  token: %s
`, pluginsDir(), devKey, metricsToken)
	path := filepath.Join(dir, "gateway.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// metricsToken guards /metrics on the public listener of writeConfig's
// gateways.
const metricsToken = "cli-test-metrics-token"

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

// banner returns what the gateway printed on stdout, once it holds a
// development key (or after 10 s). The gateway prints the key before
// /readyz says ready, but os/exec copies the child's stdout into the
// buffer in a goroutine of its own, which lags under load.
func (s *server) banner() string {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b := s.stdout.String(); strings.Contains(b, "vxk_") || time.Now().After(deadline) {
			return b
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
	banner := s.banner()
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
		{"no command", nil, 2, "Usage: voxgate <command>"},
		{"unknown command", []string{"fly"}, 2, `unknown command "fly"`},
		{"missing config", []string{"serve", "--config", filepath.Join(dir, "none.yaml")}, 1, "--config FILE"},
		{"unknown key", []string{"serve", "--config", bad}, 1, `line 3: unknown key "server.colour"`},
		{"config check", []string{"config", "check", "--config", bad}, 1, "server.colour"},
		{"keys without org", []string{"keys", "create", "--config", bad}, 2, "missing flags: --org"},
		{"bad flag", []string{"serve", "--nope"}, 2, "unknown flag --nope"},
		{"bad flag names the command's help", []string{"keys", "list", "--nope"}, 2, "voxgate keys list --help"},
		{"bad log level", []string{"serve", "--log-level", "loud"}, 2, "--log-level must be one of"},
		{"bad listen", []string{"serve", "--config", writeConfig(t, dir, false), "--listen", "127.0.0.1:99999"}, 2, "0 to 65535"},
		{"version", []string{"--version"}, 0, "voxgate "},
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

// TestHelp: every command's --help is its own usage, on stdout with exit
// status 0, describing each of its flags.
func TestHelp(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, []string{"Usage: voxgate <command>", "serve", "keys create", "secrets set", "config check", "migrate", "version"}},
		{[]string{"serve", "--help"}, []string{"Usage: voxgate serve", "--config=FILE", "gateway.yaml", "--listen=ADDR", "--data=DATA",
			"--log-level=", "debug, info, warn or error", "--dev-log", "human-readable"}},
		{[]string{"keys", "create", "--help"}, []string{"Usage: voxgate keys create", "--org=ORG", "--admin", "--name=NAME", "--data=DATA", "postgres://", "admin socket"}},
		{[]string{"keys", "list", "-h"}, []string{"Usage: voxgate keys list", "--org=ORG", "--data=DATA"}},
		{[]string{"keys", "revoke", "--help"}, []string{"Usage: voxgate keys revoke <KEY_ID>", "--data=DATA"}},
		{[]string{"secrets", "set", "--help"}, []string{"Usage: voxgate secrets set", "--org=ORG", "--provider=PROVIDER", "--data=DATA", "stdin"}},
		{[]string{"secrets", "delete", "--help"}, []string{"--org=ORG", "--provider=PROVIDER", "--data=DATA"}},
		{[]string{"config", "check", "--help"}, []string{"Usage: voxgate config check", "--config=FILE", "every mistake"}},
		{[]string{"migrate", "--help"}, []string{"Usage: voxgate migrate --to=DRIVER", "--dsn=URL", "DATABASE_URL", "--data=PATH"}},
		{[]string{"help", "keys", "create"}, []string{"Usage: voxgate keys create"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, stderr, code := cli(t, tt.args...)
			if code != 0 || stderr != "" {
				t.Fatalf("code %d, stderr %q", code, stderr)
			}
			flat := strings.Join(strings.Fields(out), " ") // help wraps lines
			for _, w := range tt.want {
				if !strings.Contains(flat, w) {
					t.Errorf("help lacks %q:\n%s", w, out)
				}
			}
			if strings.HasPrefix(out, "voxgate: ") {
				t.Errorf("help reads as an error:\n%s", out)
			}
			// A flag's environment variable is named once (kong adds it
			// to the help text itself).
			if n := strings.Count(flat, "$DATABASE_URL"); n > 1 {
				t.Errorf("help names $DATABASE_URL %d times:\n%s", n, out)
			}
		})
	}
}

// TestConfigCheck: every mistake of a config in one run, including what
// only start-up used to find (a plugin binary that is not there), and a
// warning for each unset variable; a good config passes.
func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	_ = os.WriteFile(path, []byte(fmt.Sprintf(`server:
  listen: 127.0.0.1:99999
  colour: red
plugins:
  dir: %s
providers:
  espeak: {plugin: voxgate-espeak, managed: true}
  ghost:
    plugin: voxgate-ghost
    api_key: ${VOXGATE_TEST_UNSET_KEY}
orgs:
  acme:
    moderation: strict
    providers:
      espeak: {enabled: true}
`, pluginsDir())), 0o600)
	out, stderr, code := cli(t, "config", "check", "--config", path)
	if code != 1 {
		t.Fatalf("code %d, want 1; %s %s", code, out, stderr)
	}
	for _, w := range []string{
		"4 mistakes",
		"line 2: server.listen",
		"providers.ghost.plugin: binary ",
		`line 3: unknown key "server.colour"`,
		`orgs.acme.moderation: unknown ruleset "strict"`,
		"warning: line 10: providers.ghost.api_key: ${VOXGATE_TEST_UNSET_KEY} is not set",
	} {
		if !strings.Contains(stderr, w) {
			t.Errorf("config check output lacks %q:\n%s", w, stderr)
		}
	}
	// Fix the file's own mistakes: what start would find is left, the
	// missing plugin binary, still without starting anything.
	fixed := strings.NewReplacer("127.0.0.1:99999", "127.0.0.1:0", "  colour: red\n", "", "    moderation: strict\n", "").Replace(readFile(t, path))
	_ = os.WriteFile(path, []byte(fixed), 0o600)
	out, stderr, code = cli(t, "config", "check", "--config", path)
	if code != 1 || !strings.Contains(stderr, "providers.ghost.plugin: binary ") || !strings.Contains(stderr, "voxgate-ghost not found") {
		t.Fatalf("missing plugin binary: code %d, %s %s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
		t.Errorf("config check created the data directory (%v): it must not change anything", err)
	}
	fixed = strings.Replace(fixed, "voxgate-ghost", "voxgate-espeak", 1)
	_ = os.WriteFile(path, []byte(fixed), 0o600)
	out, stderr, code = cli(t, "config", "check", "--config", path)
	if code != 0 || !strings.Contains(out, "is valid") || !strings.Contains(stderr, "warning: ") {
		t.Fatalf("good config: code %d, %s %s", code, out, stderr)
	}
}

// TestConfigCheckJobsDir: config check says when the jobs folder (made
// at the first job) could not be written, naming jobs.dir and what to do,
// as it does the storage path; a folder that is not there yet but can be
// made passes, and is not made.
func TestConfigCheckJobsDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	readOnly := filepath.Join(dir, "read-only")
	if err := os.Mkdir(readOnly, 0o500); err != nil {
		t.Fatal(err)
	}
	const todo = "no long-form job could be rendered; give the gateway's user a folder it can write there (mkdir, chown, chmod), or set jobs.dir to one it can"
	for _, tc := range []struct {
		name    string
		storage string // storage.path; "" for the default
		jobsDir string // jobs.dir; "" for the default
		want    string // "" for a config that passes
		// unprivileged: root writes a read-only folder; the case is for
		// the other users.
		unprivileged bool
	}{
		{name: "a file", jobsDir: file, want: "jobs.dir: " + file + " is not a directory: " + todo},
		{name: "under a file", jobsDir: filepath.Join(file, "jobs"),
			want: "jobs.dir: " + file + " is not a directory, so " + filepath.Join(file, "jobs") + " cannot be created: " + todo},
		{name: "the default under a file", storage: filepath.Join(file, "voxgate.db"),
			want: "jobs.dir (not set: jobs/ beside storage.path): " + file + " is not a directory, so " + filepath.Join(file, "jobs") + " cannot be created: " + todo},
		{name: "read-only", jobsDir: readOnly, want: "jobs.dir: " + readOnly + " is not writable by this user: " + todo, unprivileged: true},
		{name: "under a read-only folder", jobsDir: filepath.Join(readOnly, "jobs"),
			want: "jobs.dir: cannot create " + filepath.Join(readOnly, "jobs") + ": directory " + readOnly + " is not writable by this user: " + todo, unprivileged: true},
		{name: "to be made", jobsDir: filepath.Join(dir, "new", "jobs")},
		{name: "the default, to be made"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.unprivileged && os.Geteuid() == 0 {
				t.Skip("root writes any folder: run as another user")
			}
			yaml := fmt.Sprintf("server:\n  listen: 127.0.0.1:0\nplugins:\n  dir: %s\nproviders:\n  espeak: {plugin: voxgate-espeak, managed: true}\n"+
				"orgs:\n  acme:\n    providers:\n      espeak: {enabled: true}\n", pluginsDir())
			if tc.storage != "" {
				yaml += fmt.Sprintf("storage:\n  path: %s\n", tc.storage)
			}
			if tc.jobsDir != "" {
				yaml += fmt.Sprintf("jobs:\n  dir: %s\n", tc.jobsDir)
			}
			cfgDir := t.TempDir()
			path := filepath.Join(cfgDir, "gateway.yaml")
			if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			out, stderr, code := cli(t, "config", "check", "--config", path)
			if tc.want == "" {
				if code != 0 || !strings.Contains(out, "is valid") {
					t.Fatalf("code %d, want 0; %s %s", code, out, stderr)
				}
				for _, made := range []string{filepath.Join(dir, "new"), filepath.Join(cfgDir, "data")} {
					if _, err := os.Stat(made); !os.IsNotExist(err) {
						t.Errorf("config check made %s (%v): it must not change anything", made, err)
					}
				}
				return
			}
			if code != 1 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("code %d, want 1 and %q; %s %s", code, tc.want, out, stderr)
			}
		})
	}
}

// TestConfigCheckProviderSettings: a typo of a gateway key in a provider
// block and the settings each plugin refuses are all reported in one run,
// with their lines, by config check and at serve start, before anything
// starts serving.
func TestConfigCheckProviderSettings(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "gateway.yaml")
	_ = os.WriteFile(path, []byte(fmt.Sprintf(`server:
  listen: 127.0.0.1:0
plugins:
  dir: %s
providers:
  espeak:
    plugin: voxgate-espeak
    instanses: 4
    stream_stall_timeout: 2h
  openai:
    plugin: voxgate-openai
    manged: true
    base_ulr: http://127.0.0.1:1/v1
    max_attempts: three
orgs:
  acme:
    providers:
      espeak: {enabled: true}
moderation:
  plugins:
    omod:
      plugin: voxgate-openai-moderation
      threshold: high
`, pluginsDir())), 0o600)
	want := []string{
		"6 mistakes",
		"line 8: providers.espeak.instanses: unknown key (did you mean instances?)",
		"line 9: providers.espeak.stream_stall_timeout: want a duration above 0",
		"line 12: providers.openai.manged: unknown key (did you mean managed?)",
		"line 13: providers.openai.base_ulr: unknown setting (did you mean base_url?)",
		`line 14: providers.openai.max_attempts: want a whole number, got "three"`,
		`line 23: moderation.plugins.omod.threshold: threshold "high" must be a number above 0 and at most 1`,
	}
	out, stderr, code := cli(t, "config", "check", "--config", path)
	if code != 1 {
		t.Fatalf("config check: code %d, want 1; %s %s", code, out, stderr)
	}
	at := 0
	for _, w := range want {
		i := strings.Index(stderr, w)
		if i < at {
			t.Errorf("config check output lacks %q after the mistakes before it (file order):\n%s", w, stderr)
			continue
		}
		at = i
	}
	// serve reports the same mistakes at once; the config's own first.
	out, stderr, code = cli(t, "serve", "--config", path)
	if code != 1 {
		t.Fatalf("serve: code %d, want 1; %s %s", code, out, stderr)
	}
	// (The plugins' verdicts come once the file itself is fixed.)
	for _, w := range []string{"2 mistakes", want[1], want[3]} {
		if !strings.Contains(stderr, w) {
			t.Errorf("serve output lacks %q:\n%s", w, stderr)
		}
	}
	fixed := strings.NewReplacer("    instanses: 4\n", "", "    manged: true\n", "").Replace(readFile(t, path))
	_ = os.WriteFile(path, []byte(fixed), 0o600)
	out, stderr, code = cli(t, "serve", "--config", path)
	if code != 1 {
		t.Fatalf("serve: code %d, want 1; %s %s", code, out, stderr)
	}
	for _, w := range []string{"4 mistakes", "line 8: providers.espeak.stream_stall_timeout", "line 11: providers.openai.base_ulr: unknown setting", "line 12: providers.openai.max_attempts",
		"line 21: moderation.plugins.omod.threshold"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("serve output lacks %q:\n%s", w, stderr)
		}
	}
}

// byok lets acme bring its own espeak key in the config at path, as
// `secrets set` requires (the API's rule).
func byok(t *testing.T, path string) {
	t.Helper()
	s := readFile(t, path)
	if !strings.Contains(s, "espeak: {enabled: true}") {
		t.Fatalf("%s gives acme no espeak access to extend", path)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(s, "espeak: {enabled: true}", "espeak: {enabled: true, byok: true}", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDevKeyNotBurnedByFailedStart: a first start that fails (here a
// plugin binary is missing) prints no key and makes none, so the start
// that works prints it.
func TestDevKeyNotBurnedByFailedStart(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, true)
	good := readFile(t, cfg)
	broken := strings.Replace(good, "  espeak: {plugin: voxgate-espeak, managed: true}\n",
		"  espeak: {plugin: voxgate-espeak, managed: true}\n  other: {plugin: voxgate-not-built}\n", 1)
	_ = os.WriteFile(cfg, []byte(broken), 0o600)
	out, stderr, code := cli(t, "serve", "--config", cfg, "--listen", freePort(t))
	if code != 1 || !strings.Contains(stderr, "voxgate-not-built not found") {
		t.Fatalf("broken start: code %d, stderr %s", code, stderr)
	}
	if strings.Contains(out, "vxk_") {
		t.Fatalf("a failed start printed a development key:\n%s", out)
	}
	_ = os.WriteFile(cfg, []byte(good), 0o600)
	s := startServe(t, cfg)
	banner := s.banner()
	i := strings.Index(banner, "vxk_")
	if i < 0 {
		t.Fatalf("no development key printed after a failed first start: %q", banner)
	}
	key := strings.Fields(banner[i:])[0]
	if st, _ := get(t, s.addr, "/v1/voices", key); st != 200 {
		t.Fatalf("dev key rejected: %d", st)
	}
	if !strings.Contains(banner, "http://"+s.addr+"/v1/voices") {
		t.Errorf("the banner's example does not name the address served: %q", banner)
	}
}

// TestKeysAndSecretsTakeData: --data points keys and secrets at the same
// storage as serve --data, in place of the config's.
func TestKeysAndSecretsTakeData(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, false)
	data := filepath.Join(dir, "other", "v.db")
	out, stderr, code := cli(t, "keys", "create", "--config", cfg, "--data", data, "--org", "acme")
	key := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(key, "vxk_") {
		t.Fatalf("keys create --data: %d %q %q", code, out, stderr)
	}
	if _, err := os.Stat(data); err != nil {
		t.Fatalf("keys create --data did not use %s: %v", data, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
		t.Fatalf("keys create --data also touched the config's storage: %v", err)
	}
	byok(t, cfg)
	cmd := exec.Command(binary(t), "secrets", "set", "--config", cfg, "--data", data, "--org", "acme", "--provider", "espeak")
	cmd.Stdin = strings.NewReader("sk-test-value")
	if b, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(b), "stored the espeak key") {
		t.Fatalf("secrets set --data: %v %s", err, b)
	}
	list, _, code := cli(t, "keys", "list", "--config", cfg, "--data", data)
	if code != 0 || !strings.Contains(list, "acme") {
		t.Fatalf("keys list --data:\n%s", list)
	}
	s := startServe(t, cfg, "--data", data)
	if st, body := get(t, s.addr, "/v1/voices", key); st != 200 {
		t.Fatalf("the key made with --data is unknown to serve --data: %d %s", st, body)
	}
	if _, stderr, code := cli(t, "secrets", "delete", "--config", cfg, "--data", data, "--org", "acme", "--provider", "espeak"); code != 0 {
		t.Fatalf("secrets delete --data (through the admin socket): %s", stderr)
	}
	id := keyID(t, list, key)
	if _, stderr, code := cli(t, "keys", "revoke", id, "--config", cfg, "--data", data); code != 0 {
		t.Fatalf("keys revoke --data: %s", stderr)
	}
	if st, _ := get(t, s.addr, "/v1/voices", key); st != 401 {
		t.Fatalf("revoked key still works: %d", st)
	}
}

// TestDevLogPlainWhenNotATerminal: --dev-log colours its levels only on a
// terminal; into a pipe or a file it writes plain text.
func TestDevLogPlainWhenNotATerminal(t *testing.T) {
	dir := t.TempDir()
	s := startServe(t, writeConfig(t, dir, false), "--dev-log")
	s.stop(t)
	logs := s.logs.String()
	if !strings.Contains(logs, "INFO") || !strings.Contains(logs, "listening") {
		t.Fatalf("no console log lines:\n%s", logs)
	}
	if strings.Contains(logs, "\x1b[") {
		t.Fatalf("--dev-log wrote colour codes into a pipe:\n%q", logs[:min(len(logs), 400)])
	}
}

// TestAdminKeys: `keys create --admin` prints an admin key, offline and
// through a running gateway's socket; it calls the admin API and is
// refused elsewhere; it takes no organization or scope.
func TestAdminKeys(t *testing.T) {
	dir := t.TempDir()
	cfg := writeConfig(t, dir, false)
	out, stderr, code := cli(t, "keys", "create", "--config", cfg, "--admin", "--name", "ops")
	offline := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(offline, "vxk_") {
		t.Fatalf("keys create --admin: code %d out %q err %q", code, out, stderr)
	}
	if _, stderr, code := cli(t, "keys", "create", "--config", cfg, "--admin", "--org", "acme"); code != 2 || !strings.Contains(stderr, "no organization") {
		t.Fatalf("--admin with --org: code %d %q", code, stderr)
	}
	if _, stderr, code := cli(t, "keys", "create", "--config", cfg); code != 2 || !strings.Contains(stderr, "--org") {
		t.Fatalf("neither --org nor --admin: code %d %q", code, stderr)
	}
	s := startServe(t, cfg)
	out, stderr, code = cli(t, "keys", "create", "--config", cfg, "--admin")
	online := strings.TrimSpace(out)
	if code != 0 || !strings.HasPrefix(online, "vxk_") {
		t.Fatalf("keys create --admin while serving: %d %q %q", code, out, stderr)
	}
	for _, k := range []string{offline, online} {
		if st, body := get(t, s.addr, "/v1/admin/orgs", k); st != 200 || !strings.Contains(body, `"managedBy":"file"`) {
			t.Fatalf("admin key on the admin API: %d %s", st, body)
		}
		if st, body := get(t, s.addr, "/v1/voices", k); st != 403 || !strings.Contains(body, "forbidden") {
			t.Fatalf("admin key on /v1/voices: %d %s", st, body)
		}
	}
	list, _, _ := cli(t, "keys", "list", "--config", cfg)
	if !strings.Contains(list, "*admin") {
		t.Errorf("keys list does not show the admin keys:\n%s", list)
	}
}
