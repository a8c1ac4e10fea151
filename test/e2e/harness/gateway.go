// Package harness is what the end-to-end tests of every area under test/e2e
// share: a real gateway started in-process on a loopback port with a temp
// bbolt file and the real plugin processes (Start), a client whose every
// exchange is checked against the OpenAPI document (Gateway.Do), the API's
// wire shapes as tests decode them, and clients of the realtime socket,
// the dashboard's session API and /metrics.
//
// Each gateway has its own port and temp dir, so tests may call
// t.Parallel; binaries and repository files are found from the module's
// root (BinDir, Path), whatever the package's depth.
package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/voxgate/voxgate/config"
	"github.com/voxgate/voxgate/gateway"
	"github.com/voxgate/voxgate/gateway/provenance"
	"github.com/voxgate/voxgate/gateway/store"
)

// Gateway is a real gateway on a loopback port with a temp bbolt file.
type Gateway struct {
	t      testing.TB
	Core   *gateway.Gateway
	Config *config.Config
	Base   string
	Dir    string
	Keys   map[string]string // org -> key
	// secrets are further values no log line may contain (provider keys).
	Secrets []string
	Logs    *observer.ObservedLogs
	Client  *http.Client
}

// OpenOnly opens (and closes again) a gateway, for start-up errors.
func OpenOnly(t testing.TB, yaml string) (*gateway.Gateway, error) {
	dir := t.TempDir()
	g, err := gateway.Open(context.Background(), testConfig(t, yaml, dir), gateway.Options{})
	if err == nil {
		_ = g.Shutdown(context.Background())
	}
	return g, err
}

// Start opens and starts a gateway with the test config yaml (see
// BaseConfig for its placeholders) on a loopback port of its own, in a
// temp dir of its own, so tests that use it can run in parallel; it
// creates one API key per org and, when the test ends, shuts the gateway
// down and fails the test if any log line held a key or a secret.
func Start(t testing.TB, yaml string) *Gateway {
	t.Helper()
	dir := t.TempDir()
	cfg := testConfig(t, yaml, dir)
	core, logs := observer.New(zap.DebugLevel)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Fingerprints in child processes of the built binary, as voxgate
	// serve computes them (this test binary is no voxgate).
	worker := []string{filepath.Join(BinDir(t), "voxgate"), provenance.WorkerCommand}
	g, err := gateway.Open(ctx, cfg, gateway.Options{Logger: zap.New(core), FingerprintWorker: worker})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if err := g.Start(); err != nil {
		t.Fatalf("start: %v", err)
	}
	tg := &Gateway{t: t, Core: g, Config: cfg, Base: "http://" + g.Addr(), Dir: dir, Keys: map[string]string{}, Logs: logs,
		Client: &http.Client{Timeout: 60 * time.Second, Transport: validating(t, nil)}}
	for org := range cfg.Orgs {
		key, _, err := g.CreateKey(ctx, org, "test", store.KeyScope{})
		if err != nil {
			t.Fatal(err)
		}
		tg.Keys[org] = key
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := g.Shutdown(ctx); err != nil {
			// A shutdown that runs out of time is stuck somewhere: say where.
			var dump strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&dump, 1)
			t.Errorf("shutdown: %v\ngoroutines:\n%s", err, dump.String())
		}
		tg.assertNoSecretsLogged()
	})
	return tg
}

// assertNoSecretsLogged fails if any log entry carries an API key.
func (tg *Gateway) assertNoSecretsLogged() {
	for _, e := range tg.Logs.All() {
		line := e.Message
		for k, v := range e.ContextMap() {
			line += " " + k + "=" + toString(v)
		}
		for _, key := range tg.Keys {
			if strings.Contains(line, key) {
				tg.t.Errorf("a log entry contains an API key: %q", e.Message)
			}
		}
		for _, s := range tg.Secrets {
			if strings.Contains(line, s) {
				tg.t.Errorf("a log entry contains a provider key: %q", e.Message)
			}
		}
		if strings.Contains(line, "vxk_") && !strings.Contains(line, "prefix") {
			tg.t.Errorf("a log entry contains a key-like token: %s", line)
		}
	}
}

func toString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Do sends a request as org ("" = no Authorization header).
func (tg *Gateway) Do(method, path, org string, body any, hdr ...string) *Response {
	tg.t.Helper()
	return do(tg.t, tg.Client, tg.Base+path, method, tg.Keys[org], org != "", body, hdr...)
}

// do sends a request to url with key (when auth) and body: nil for none,
// []byte or string sent as they are, anything else as its JSON; hdr are
// header name, value pairs (an empty value removes the header).
func do(t testing.TB, c *http.Client, url, method, key string, auth bool, body any, hdr ...string) *Response {
	t.Helper()
	var rd io.Reader
	ct := ""
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
		ct = "application/json"
	case string:
		rd = strings.NewReader(b)
		ct = "application/json"
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
		ct = "application/json"
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if auth {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: data}
}

// FlushLogs waits until every recorded log row is on disk.
func (tg *Gateway) FlushLogs() {
	tg.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tg.Core.Logs().Flush(ctx); err != nil {
		tg.t.Fatal(err)
	}
}

// Warnings renders the gateway's log entries at warning level and above,
// and the access lines of streams that broke off, for a test that fails
// on the client's side to say what the gateway saw.
func (tg *Gateway) Warnings() string {
	var b strings.Builder
	for _, e := range tg.Logs.All() {
		if _, broke := e.ContextMap()["stream_error"]; e.Level >= zap.WarnLevel || broke {
			fmt.Fprintf(&b, "%s %s %s %v\n", e.Time.Format("15:04:05.000"), e.Level, e.Message, e.ContextMap())
		}
	}
	return b.String()
}

// Upload sends raw bytes with a content type.
func (tg *Gateway) Upload(org, contentType string, body []byte) *Response {
	tg.t.Helper()
	req, _ := http.NewRequest("POST", tg.Base+"/v1/media", bytes.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer "+tg.Keys[org])
	resp, err := tg.Client.Do(req)
	if err != nil {
		tg.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: data}
}

// RawLogRow returns the log row of a request as JSON fields, so that the
// presence of a field can be asserted, not only its value.
func (tg *Gateway) RawLogRow(org string, r *Response) map[string]any {
	tg.t.Helper()
	tg.FlushLogs()
	id := r.Header.Get("X-Request-Id")
	var page struct {
		Data []map[string]any `json:"data"`
	}
	tg.Do("GET", "/v1/logs?limit=200", org, nil).JSON(tg.t, &page)
	for _, row := range page.Data {
		if row["request_id"] == id {
			return row
		}
	}
	tg.t.Fatalf("no log row for request %s", id)
	return nil
}

// WaitFor polls cond until it holds, failing the test after 20 seconds:
// for what a test must see happen, never for a timing it asserts.
func WaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// LogsWhere returns org's log rows matching query (after a flush).
func (tg *Gateway) LogsWhere(org, query string) []LogRow {
	tg.t.Helper()
	tg.FlushLogs()
	var p LogPage
	tg.Do("GET", "/v1/logs?limit=200&"+query, org, nil).JSON(tg.t, &p)
	return p.Data
}

// LastLog returns the newest log row of org.
func (tg *Gateway) LastLog(org string) LogRow {
	tg.t.Helper()
	tg.FlushLogs()
	var p LogPage
	tg.Do("GET", "/v1/logs?limit=1", org, nil).JSON(tg.t, &p)
	if len(p.Data) != 1 {
		tg.t.Fatalf("no log row for %s", org)
	}
	return p.Data[0]
}
