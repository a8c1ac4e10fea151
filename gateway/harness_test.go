package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/voxgate/voxgate/config"
	"github.com/voxgate/voxgate/gateway"
	"github.com/voxgate/voxgate/gateway/store"
)

// testGateway is a real gateway on a loopback port with a temp bbolt file.
type testGateway struct {
	t    testing.TB
	g    *gateway.Gateway
	cfg  *config.Config
	base string
	dir  string
	keys map[string]string // org -> key
	// secrets are further values no log line may contain (provider keys).
	secrets []string
	logs    *observer.ObservedLogs
	hc      *http.Client
}

// baseConfig is the YAML every test gateway starts from; extra is appended
// under the top level (providers:, moderation: ... blocks).
const baseConfig = `
server:
  listen: 127.0.0.1:0
  max_body_bytes: 65536
storage:
  path: %DIR%/voxgate.db
  log_batch_size: 64
plugins:
  dir: %BIN%/plugins
orgs:
  acme:
    providers: {}
  globex:
    providers: {}
`

// binDir is where `make build` put the binaries.
func binDir(t testing.TB) string {
	if d := os.Getenv("VOXGATE_BIN_DIR"); d != "" {
		return d
	}
	wd, _ := os.Getwd()
	return filepath.Join(filepath.Dir(wd), "bin")
}

// testConfig expands the placeholders of a test config.
func testConfig(t testing.TB, yaml, dir string) *config.Config {
	t.Helper()
	yaml = strings.ReplaceAll(yaml, "%DIR%", dir)
	yaml = strings.ReplaceAll(yaml, "%BIN%", binDir(t))
	cfg, err := config.Parse([]byte(yaml), os.LookupEnv)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	cfg.Dir = dir
	return cfg
}

// openOnly opens (and closes again) a gateway, for start-up errors.
func openOnly(t testing.TB, yaml string) (*gateway.Gateway, error) {
	dir := t.TempDir()
	g, err := gateway.Open(context.Background(), testConfig(t, yaml, dir), gateway.Options{})
	if err == nil {
		_ = g.Shutdown(context.Background())
	}
	return g, err
}

func startGateway(t testing.TB, yaml string) *testGateway {
	t.Helper()
	dir := t.TempDir()
	cfg := testConfig(t, yaml, dir)
	core, logs := observer.New(zap.DebugLevel)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g, err := gateway.Open(ctx, cfg, gateway.Options{Logger: zap.New(core)})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if err := g.Start(); err != nil {
		t.Fatalf("start: %v", err)
	}
	tg := &testGateway{t: t, g: g, cfg: cfg, base: "http://" + g.Addr(), dir: dir, keys: map[string]string{}, logs: logs,
		hc: &http.Client{Timeout: 60 * time.Second, Transport: validating(t, nil)}}
	for org := range cfg.Orgs {
		key, _, err := g.CreateKey(ctx, org, "test", store.KeyScope{})
		if err != nil {
			t.Fatal(err)
		}
		tg.keys[org] = key
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
func (tg *testGateway) assertNoSecretsLogged() {
	for _, e := range tg.logs.All() {
		line := e.Message
		for k, v := range e.ContextMap() {
			line += " " + k + "=" + toString(v)
		}
		for _, key := range tg.keys {
			if strings.Contains(line, key) {
				tg.t.Errorf("a log entry contains an API key: %q", e.Message)
			}
		}
		for _, s := range tg.secrets {
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

// response is a finished HTTP exchange.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r *response) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// problemBody is the problem+json shape.
type problemBody struct {
	Type       string `json:"type"`
	Title      string `json:"title"`
	Status     int    `json:"status"`
	Detail     string `json:"detail"`
	Code       string `json:"code"`
	Validation []struct {
		Path    []string `json:"path"`
		Message string   `json:"message"`
	} `json:"validation"`
	Provider       string `json:"provider"`
	UpstreamCode   string `json:"upstream_code"`
	UpstreamStatus int    `json:"upstream_status"`
	TurnIndex      *int   `json:"turn_index"`
}

// problem asserts r is a problem+json with status and code.
func (r *response) problem(t testing.TB, status int, code string) problemBody {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type = %q, want application/problem+json; body %s", ct, r.body)
	}
	var p problemBody
	r.json(t, &p)
	if p.Code != code || p.Status != status || p.Title == "" || p.Type == "" {
		t.Fatalf("problem = %+v, want code %s status %d", p, code, status)
	}
	return p
}

// do sends a request as org ("" = no Authorization header).
func (tg *testGateway) do(method, path, org string, body any, hdr ...string) *response {
	tg.t.Helper()
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
			tg.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
		ct = "application/json"
	}
	req, err := http.NewRequest(method, tg.base+path, rd)
	if err != nil {
		tg.t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if org != "" {
		req.Header.Set("Authorization", "Bearer "+tg.keys[org])
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := tg.hc.Do(req)
	if err != nil {
		tg.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		tg.t.Fatal(err)
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: data}
}

// flushLogs waits until every recorded log row is on disk.
func (tg *testGateway) flushLogs() {
	tg.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tg.g.Logs().Flush(ctx); err != nil {
		tg.t.Fatal(err)
	}
}

// apiVoice is the Voice resource as the API renders it; tests decode
// responses into it (the store's records have no JSON form).
type apiVoice struct {
	ID              string         `json:"id"`
	OrgID           string         `json:"org_id"`
	Title           string         `json:"title"`
	Provider        string         `json:"provider"`
	Model           string         `json:"model"`
	VoiceID         string         `json:"voice_id"`
	Tags            []string       `json:"tags"`
	Gender          string         `json:"gender"`
	Description     string         `json:"description"`
	ProviderOptions map[string]any `json:"provider_options"`
	MediaID         string         `json:"media_id,omitempty"`
	CreatedAt       time.Time      `json:"created_at"`
	UpdatedAt       time.Time      `json:"updated_at"`
}

// voice decodes the {data: voice} answer of the single-voice endpoints.
func (r *response) voice(t testing.TB) apiVoice {
	t.Helper()
	var env struct {
		Data *apiVoice `json:"data"`
	}
	r.json(t, &env)
	if env.Data == nil {
		t.Fatalf("no {data: voice} in %s", r.body)
	}
	return *env.Data
}

// apiLogRow is a request log row as GET /v1/logs renders it.
type apiLogRow struct {
	RequestID              string    `json:"request_id"`
	ParentRequestID        string    `json:"parent_request_id"`
	TS                     time.Time `json:"ts"`
	Path                   string    `json:"path"`
	Status                 int       `json:"status"`
	Provider               string    `json:"provider"`
	Model                  string    `json:"model"`
	VoiceID                string    `json:"voice_id"`
	VoiceRef               string    `json:"voice_ref"`
	CharCount              int       `json:"char_count"`
	CreditsUsed            int       `json:"credits_used"`
	LatencyMS              int64     `json:"latency_ms"`
	ErrorCode              string    `json:"error_code"`
	ErrorDetail            string    `json:"error_detail"`
	ProviderOptions        string    `json:"provider_options"`
	ModerationDecision     string    `json:"moderation_decision"`
	ModerationReasonType   string    `json:"moderation_reason_type"`
	ModerationReasonDetail string    `json:"moderation_reason_detail"`
	ModerationConfidence   float64   `json:"moderation_confidence"`
	ModerationLatencyMS    int64     `json:"moderation_latency_ms"`
	Cache                  string    `json:"cache"`
	Transcoded             string    `json:"transcoded"`
	Sanitized              bool      `json:"sanitized"`
}

// apiMedia is the media object as the API renders it.
type apiMedia struct {
	ID         string    `json:"id"`
	OrgID      string    `json:"org_id"`
	Filename   string    `json:"filename"`
	MediaType  string    `json:"media_type"`
	Bytes      int64     `json:"bytes"`
	DurationMS int64     `json:"duration_ms"`
	SHA256     string    `json:"sha256"`
	CreatedAt  time.Time `json:"created_at"`
}

// warnings renders the gateway's log entries at warning level and above,
// and the access lines of streams that broke off, for a test that fails
// on the client's side to say what the gateway saw.
func (tg *testGateway) warnings() string {
	var b strings.Builder
	for _, e := range tg.logs.All() {
		if _, broke := e.ContextMap()["stream_error"]; e.Level >= zap.WarnLevel || broke {
			fmt.Fprintf(&b, "%s %s %s %v\n", e.Time.Format("15:04:05.000"), e.Level, e.Message, e.ContextMap())
		}
	}
	return b.String()
}
