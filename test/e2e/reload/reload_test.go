// Package reload holds the end-to-end tests of configuration reloads:
// the real binary, real plugin processes, SIGHUP and `voxgate reload`
// while clips and streams are in flight.
package reload

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/bolt"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// settings are what a step of the test changes in the config file.
type settings struct {
	listen, metrics string
	// second declares provider testkit2 (the same test plugin under
	// another id).
	second bool
	// tinyLimited gives org tiny a rate limit of one request.
	tinyLimited bool
	// alias is what model alias "house" points to.
	alias string
	// typo adds a misspelt key.
	typo bool
	// settingTypo misspells a key of testkit's plugin settings, which
	// only the plugin knows.
	settingTypo bool
	// restart changes testkit's plugin settings, which restarts its
	// plugin process.
	restart bool
}

func (s settings) yaml(dir, bin string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `server:
  listen: %s
storage:
  path: %s/voxgate.db
metrics:
  listen: %s
plugins:
  dir: %s/plugins
providers:
  testkit:
    plugin: %s/testplugins/voxgate-testplugin
    managed: true
    timeout: 20s
`, s.listen, dir, s.metrics, bin, bin)
	if s.restart {
		b.WriteString("    max_text_chars: \"2000\"\n")
	}
	if s.settingTypo {
		b.WriteString("    max_text_chrs: \"2000\"\n")
	}
	if s.second {
		fmt.Fprintf(&b, `  testkit2:
    plugin: %s/testplugins/voxgate-testplugin
    managed: true
    timeout: 20s
`, bin)
	}
	access := "    providers:\n      testkit: {enabled: true}\n"
	if s.second {
		access += "      testkit2: {enabled: true}\n"
	}
	fmt.Fprintf(&b, `aliases:
  models:
    house: %s
orgs:
  acme:
    dev_key: true
    rate_limit: 100000
    rate_burst: 100000
    read_rate_limit: 100000
    read_rate_burst: 100000
%s  tiny:
    dev_key: true
%s`, s.alias, access, access)
	if s.tinyLimited {
		b.WriteString("    rate_limit: 0.001\n    rate_burst: 1\n    read_rate_limit: 0.001\n    read_rate_burst: 1\n")
	}
	if s.typo {
		b.WriteString("    rate_limt: 5\n")
	}
	return b.String()
}

// gw is a running `voxgate serve`.
type gw struct {
	t             *testing.T
	dir, bin, cfg string
	addr, metrics string
	*harness.Child
	keys           map[string]string
	client         *http.Client
	stoppedCleanly bool
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func (g *gw) write(s settings) {
	g.t.Helper()
	if err := os.WriteFile(g.cfg, []byte(s.yaml(g.dir, g.bin)), 0o600); err != nil {
		g.t.Fatal(err)
	}
}

func start(t *testing.T, s settings, env ...string) *gw {
	t.Helper()
	g := &gw{t: t, dir: t.TempDir(), bin: harness.BinDir(t), keys: map[string]string{},
		client: &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	g.cfg = filepath.Join(g.dir, "gateway.yaml")
	g.addr, g.metrics = s.listen, s.metrics
	g.write(s)
	g.Child = harness.Spawn(t, g.cfg, env...)
	harness.WaitFor(t, "the gateway to be ready", func() bool {
		resp, err := http.Get("http://" + g.addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	keyRE := regexp.MustCompile(`org "([a-z]+)" \(shown once[^\n]*\n\n\s+(vxk_\S+)`)
	harness.WaitFor(t, "both development keys", func() bool {
		for _, m := range keyRE.FindAllStringSubmatch(g.Stdout(), -1) {
			g.keys[m[1]] = m[2]
		}
		return len(g.keys) == 2
	})
	return g
}

func (g *gw) log() string { return g.Log() }

// waitLog waits for the n-th log line containing sub.
func (g *gw) waitLog(sub string, n int) {
	g.t.Helper()
	harness.WaitFor(g.t, fmt.Sprintf("log line %d with %q", n, sub), func() bool {
		return strings.Count(g.log(), sub) >= n
	})
}

// reloadCLI runs `voxgate reload`.
func (g *gw) reloadCLI() (stdout, stderr string, code int) {
	cmd := exec.Command(filepath.Join(g.bin, "voxgate"), "reload", "--config", g.cfg)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		g.t.Fatal(err)
	}
	return o.String(), e.String(), code
}

func (g *gw) hup() {
	g.t.Helper()
	if err := g.Signal(syscall.SIGHUP); err != nil {
		g.t.Fatal(err)
	}
}

// post sends a JSON body and returns the status, the body and the
// provider that answered.
func (g *gw) post(org, path, reqID string, body any) (int, []byte, string, error) {
	data, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", "http://"+g.addr+path, bytes.NewReader(data))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+g.keys[org])
	if reqID != "" {
		req.Header.Set("X-Request-Id", reqID)
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	provider, _, _ := strings.Cut(resp.Header.Get("X-Voxgate-Provider"), "/") // "testkit2/test"
	return resp.StatusCode, out, provider, err
}

func (g *gw) get(url string) (int, string) {
	g.t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (g *gw) metricWith(name string, labels ...string) float64 {
	g.t.Helper()
	_, body := g.get("http://" + g.metrics + "/metrics")
	v, _ := harness.SampleValue(harness.ParseMetrics(g.t, []byte(body)), name, labels...)
	return v
}

// load keeps clips and streams in flight until stop is closed, and
// reports every request that did not end in a complete 200.
type load struct {
	ok       sync.Map // request id -> struct{}
	answered atomic.Int64
	failures chan string
	wg       sync.WaitGroup
}

func startLoad(g *gw, stop <-chan struct{}) *load {
	l := &load{failures: make(chan string, 1000)}
	var n atomic.Int64
	worker := func(kind string) {
		defer l.wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			id := fmt.Sprintf("reload-%s-%d", kind, n.Add(1))
			body := map[string]any{"model": "testkit/test", "voice": "alpha", "text": "one two three four five six"}
			path := "/v1/audio/speech"
			if kind == "stream" {
				path += "/stream"
				body["providerOptions"] = map[string]any{"slow_stream_ms": 40}
			}
			st, out, _, err := g.post("acme", path, id, body)
			switch {
			case err != nil:
				l.failures <- fmt.Sprintf("%s: %v", id, err)
			case st != 200:
				l.failures <- fmt.Sprintf("%s: %d %s", id, st, out)
			case len(out) == 0:
				l.failures <- fmt.Sprintf("%s: 200 with no audio", id)
			default:
				l.ok.Store(id, struct{}{})
				l.answered.Add(1)
			}
		}
	}
	for range 4 {
		l.wg.Add(2)
		go worker("clip")
		go worker("stream")
	}
	return l
}

// TestReloadUnderLoad: reloads that add a provider, change an
// organization's limits and an alias, remove a provider (with a stream in
// flight on it), and three refused ones (a typo, a changed listen address, a plugin
// setting the plugin does not know),
// by SIGHUP and by `voxgate reload`, while clips and streams run: none of
// them fails, each has its log row, and each reload's settings apply
// from its answer on.
func TestReloadUnderLoad(t *testing.T) {
	s := settings{listen: freeAddr(t), metrics: freeAddr(t), alias: "testkit/test"}
	g := start(t, s)
	stop := make(chan struct{})
	l := startLoad(g, stop)
	// The load is under way before the first reload.
	harness.WaitFor(t, "requests answered", func() bool { return l.answered.Load() >= 20 })

	// 1. A provider added, through `voxgate reload`.
	s.second = true
	g.write(s)
	out, errOut, code := g.reloadCLI()
	if code != 0 || !strings.Contains(out, "providers +testkit2") {
		t.Fatalf("reload adding testkit2: exit %d\n%s%s", code, out, errOut)
	}
	if st, body, prov, err := g.post("acme", "/v1/audio/speech", "", map[string]any{"model": "testkit2/test", "voice": "alpha", "text": "new provider"}); err != nil || st != 200 || prov != "testkit2" {
		t.Fatalf("testkit2 after the reload: %d %.300s provider %q %v", st, body, prov, err)
	}

	// 2. An organization's limits and an alias changed, and testkit's
	// plugin restarted with new settings, by SIGHUP.
	s.tinyLimited, s.alias, s.restart = true, "testkit2/test", true
	g.write(s)
	g.hup()
	g.waitLog(`"msg":"reloaded: `, 2)
	if !strings.Contains(g.log(), "orgs ~tiny") || !strings.Contains(g.log(), "aliases changed") || !strings.Contains(g.log(), "plugins restarted testkit") {
		t.Errorf("the reload's log line does not say what changed:\n%s", harness.Grep(g.log(), "reloaded"))
	}
	openai := map[string]any{"model": "house", "voice": "alpha", "input": "alias", "response_format": "wav"}
	if st, body, prov, err := g.post("acme", "/v1/audio/speech", "", openai); err != nil || st != 200 || prov != "testkit2" {
		t.Errorf("alias house after the reload: %d %.300s provider %q (want testkit2) %v", st, body, prov, err)
	}
	var statuses []int
	for range 3 {
		st, _, _, err := g.post("tiny", "/v1/audio/speech", "", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "tiny"})
		if err != nil {
			t.Fatal(err)
		}
		statuses = append(statuses, st)
	}
	if statuses[len(statuses)-1] != 429 {
		t.Errorf("tiny's requests after its limit was reloaded: %v, want a 429 after the first", statuses)
	}

	// 3. A stream on testkit2, in flight while testkit2 is removed:
	// it ends on the old plugin process.
	type result struct {
		st   int
		body []byte
		err  error
	}
	const longText = "a stream that outlives its provider's removal by a second or so"
	_, whole, _, err := g.post("acme", "/v1/audio/speech/stream", "", map[string]any{"model": "testkit2/test", "voice": "alpha", "text": longText})
	if err != nil || len(whole) == 0 {
		t.Fatalf("the reference stream: %d bytes, %v", len(whole), err)
	}
	onOld, firstBytes := make(chan result, 1), make(chan struct{})
	go func() {
		data, _ := json.Marshal(map[string]any{"model": "testkit2/test", "voice": "alpha", "text": longText,
			"providerOptions": map[string]any{"slow_stream_ms": 150}})
		req, _ := http.NewRequest("POST", "http://"+g.addr+"/v1/audio/speech/stream", bytes.NewReader(data))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+g.keys["acme"])
		req.Header.Set("X-Request-Id", "reload-on-removed")
		resp, err := g.client.Do(req)
		if err != nil {
			close(firstBytes)
			onOld <- result{err: err}
			return
		}
		defer resp.Body.Close()
		buf := make([]byte, 1)
		n, err := io.ReadFull(resp.Body, buf) // the stream's first byte: it is on testkit2
		close(firstBytes)
		rest, err2 := io.ReadAll(resp.Body)
		if err == nil {
			err = err2
		}
		onOld <- result{resp.StatusCode, append(buf[:n], rest...), err}
	}()
	<-firstBytes
	select {
	case r := <-onOld:
		t.Fatalf("the stream on testkit2 ended (%d, %v) before the reload removing it: the test proves nothing", r.st, r.err)
	default:
	}
	s.second, s.alias = false, "testkit/test"
	g.write(s)
	out, errOut, code = g.reloadCLI()
	if code != 0 || !strings.Contains(out, "providers -testkit2") {
		t.Fatalf("reload removing testkit2: exit %d\n%s%s", code, out, errOut)
	}
	if st, body, _, _ := g.post("acme", "/v1/audio/speech", "", map[string]any{"model": "testkit2/test", "voice": "alpha", "text": "gone"}); st == 200 {
		t.Errorf("testkit2 still answers after its removal: %d %.300s", st, body)
	}
	r := <-onOld
	if r.err != nil || r.st != 200 || len(r.body) != len(whole) {
		t.Errorf("the stream in flight on the removed provider: %d, %d bytes of %d, %v", r.st, len(r.body), len(whole), r.err)
	}
	g.waitLog("plugin stopped: no longer in the configuration", 1)

	// 4. Refused: a typo (SIGHUP), then a changed listen address
	// (`voxgate reload`). Nothing changes; the gateway serves on.
	bad := s
	bad.typo = true
	g.write(bad)
	g.hup()
	g.waitLog(`"msg":"reload refused: the gateway runs as it was"`, 1)
	if !strings.Contains(g.log(), "rate_limt") {
		t.Errorf("the refusal's log does not name the mistake:\n%s", harness.Grep(g.log(), "refused"))
	}
	moved := s
	moved.listen = freeAddr(t)
	g.write(moved)
	out, errOut, code = g.reloadCLI()
	if code == 0 || !strings.Contains(errOut, "server.listen") || !strings.Contains(errOut, "restart") {
		t.Errorf("reload changing server.listen: exit %d, want non-zero naming server.listen\n%s%s", code, out, errOut)
	}
	// A key of the plugin's own settings misspelt: the plugin refuses it
	// (sdk.SettingsValidator), as `voxgate config check` would.
	plugTypo := s
	plugTypo.settingTypo = true
	g.write(plugTypo)
	out, errOut, code = g.reloadCLI()
	if code == 0 || !strings.Contains(errOut, "max_text_chrs") {
		t.Errorf("reload with a misspelt plugin setting: exit %d, want non-zero naming max_text_chrs\n%s%s", code, out, errOut)
	}
	if got := g.metricWith("voxgate_config_reloads_total", "result", "refused"); got != 3 {
		t.Errorf("voxgate_config_reloads_total{result=refused} = %v, want 3", got)
	}
	if got := g.metricWith("voxgate_config_reloads_total", "result", "ok"); got != 3 {
		t.Errorf("voxgate_config_reloads_total{result=ok} = %v, want 3", got)
	}
	if st, body := g.get("http://" + g.addr + "/readyz"); st != 200 || !strings.Contains(body, `"result":"refused"`) || !strings.Contains(body, "max_text_chrs") {
		t.Errorf("/readyz after a refused reload: %d %s", st, body)
	}
	// The refused reloads changed nothing: tiny is still limited, and
	// the alias still points at testkit.
	if st, _, prov, _ := g.post("acme", "/v1/audio/speech", "", openai); st != 200 || prov != "testkit" {
		t.Errorf("alias house after the refused reloads: %d provider %q", st, prov)
	}

	time.Sleep(500 * time.Millisecond) // a little more load on the final configuration
	close(stop)
	l.wg.Wait()
	close(l.failures)
	var failed []string
	for f := range l.failures {
		failed = append(failed, f)
	}
	if len(failed) > 0 {
		t.Errorf("%d of %d requests failed across the reloads:\n%s", len(failed), int(l.answered.Load())+len(failed), strings.Join(failed[:min(len(failed), 20)], "\n"))
	}
	t.Logf("%d requests answered across 6 reloads (3 accepted, 3 refused)", l.answered.Load())

	// Every answered request has its row: stop (which drains the log
	// queue), then read the file.
	_ = g.Signal(syscall.SIGTERM)
	select {
	case <-g.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the gateway did not stop")
	}
	st, err := bolt.Open(filepath.Join(g.dir, "voxgate.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var missing []string
	l.ok.Range(func(k, _ any) bool {
		if _, err := st.GetLog(context.Background(), "acme", k.(string)); err != nil {
			missing = append(missing, k.(string))
		}
		return true
	})
	if len(missing) > 0 {
		t.Errorf("%d answered requests have no log row: %v", len(missing), missing[:min(len(missing), 10)])
	}
	if _, err := st.GetLog(context.Background(), "acme", "reload-on-removed"); err != nil {
		t.Errorf("the stream on the removed provider has no log row: %v", err)
	}
}

// TestSIGHUPWithABrokenFileKeepsServing: a file that is not even YAML
// is refused, logged, and the gateway answers as before.
func TestSIGHUPWithABrokenFileKeepsServing(t *testing.T) {
	s := settings{listen: freeAddr(t), metrics: freeAddr(t), alias: "testkit/test"}
	g := start(t, s)
	if err := os.WriteFile(g.cfg, []byte("server: [\n  listen: :\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g.hup()
	g.waitLog(`"msg":"reload refused: the gateway runs as it was"`, 1)
	select {
	case <-g.Done():
		t.Fatal("the gateway exited on SIGHUP")
	default:
	}
	if st, body, _, err := g.post("acme", "/v1/audio/speech", "", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "still here"}); err != nil || st != 200 {
		t.Fatalf("after a refused SIGHUP: %d %.300s %v", st, body, err)
	}
	if got := g.metricWith("voxgate_config_reloads_total", "result", "refused"); got != 1 {
		t.Errorf("voxgate_config_reloads_total{result=refused} = %v, want 1", got)
	}
}

// TestSystemdNotifications: under Type=notify, systemd learns from the
// gateway when it serves, when a reload runs and ends, and when it
// drains. The notify socket here is the test's, as systemd's would be.
func TestSystemdNotifications(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msgs := make(chan string, 16)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()
	next := func(want string) string {
		t.Helper()
		select {
		case m := <-msgs:
			if !strings.HasPrefix(m, want) {
				t.Fatalf("notification %q, want %s first", m, want)
			}
			return m
		case <-time.After(20 * time.Second):
			t.Fatalf("no %s notification", want)
		}
		return ""
	}
	s := settings{listen: freeAddr(t), metrics: freeAddr(t), alias: "testkit/test"}
	g := start(t, s, "NOTIFY_SOCKET="+sock)
	next("READY=1")
	g.hup()
	if m := next("RELOADING=1"); !strings.Contains(m, "MONOTONIC_USEC=") {
		t.Errorf("RELOADING=1 without MONOTONIC_USEC: %q", m)
	}
	if m := next("READY=1"); !strings.Contains(m, "last reload ok") {
		t.Errorf("the READY=1 after the reload: %q", m)
	}
	_ = g.Signal(syscall.SIGTERM)
	next("STOPPING=1")
}
