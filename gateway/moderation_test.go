package gateway_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/admission/moderation"
	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/openaimoderation"
	"github.com/voxgate/voxgate/internal/testplugin/calllog"
)

// moderationConfig runs real plugin processes: eSpeak and the test kit as
// providers (the kit logs every call it gets, which proves a blocked
// request never reached a provider), the test kit's moderator (through a
// wrapper script that selects its moderator mode) and the OpenAI
// moderation plugin against a local fake of the OpenAI API.
//
// acme moderates with the built-in defaults and may pick the plugin
// rulesets; globex has no moderation.
const moderationConfig = `
server:
  listen: 127.0.0.1:0
  max_body_bytes: 65536
storage:
  path: %DIR%/voxgate.db
  log_batch_size: 64
plugins:
  dir: %BIN%/plugins
  health_interval: 1s
providers:
  espeak: {plugin: voxgate-espeak, managed: true, instances: 1}
  testkit:
    plugin: %BIN%/testplugins/voxgate-testplugin
    managed: true
    timeout: 10s
    call_log: %DIR%/calls.jsonl
orgs:
  acme:
    moderation: standard
    rulesets: [closed, open, remote]
    providers:
      espeak: {enabled: true}
      testkit: {enabled: true}
  globex:
    providers:
      espeak: {enabled: true}
      testkit: {enabled: true}
moderation:
  plugins:
    testmod:
      plugin: %WRAP%
      timeout: 30s
      call_log: %DIR%/moderation-calls.jsonl
    openai:
      plugin: voxgate-openai-moderation
      api_key: %MODKEY%
      base_url: %FAKE%
  rulesets:
    standard:
      mode: fail_closed
      checks: [{builtin: {}}]
    closed:
      mode: fail_closed
      timeout: 2s
      checks: [{builtin: {}}, {plugin: testmod}]
    open:
      mode: fail_open
      timeout: 2s
      checks: [{plugin: testmod}]
    remote:
      mode: fail_closed
      timeout: 10s
      checks: [{plugin: openai}]
`

// moderationGateway is a started moderationConfig gateway.
type moderationGateway struct {
	*testGateway
	wrapper string
	fake    *openaimoderation.Server
}

func startModerationGateway(t testing.TB) *moderationGateway {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join(binDir(t), "testplugins", "voxgate-testplugin"))
	if err != nil {
		t.Fatal(err)
	}
	mg := &moderationGateway{wrapper: filepath.Join(t.TempDir(), "voxgate-testmoderator")}
	// The test kit serves a Moderator when started with this variable;
	// the plugin host passes no per-plugin environment, so a wrapper sets
	// it (exec keeps the process id, which the pool tracks).
	mg.writeWrapper(t, "VOXGATE_TESTPLUGIN_MODE=moderator exec '"+bin+"' \"$@\"")
	mg.fake = openaimoderation.New(t, fakeupstream.Options{})
	mg.fake.Flag("zorblax", "harassment", 0.91)
	yaml := strings.NewReplacer("%WRAP%", mg.wrapper, "%MODKEY%", openaimoderation.Key, "%FAKE%", mg.fake.BaseURL()).Replace(moderationConfig)
	mg.testGateway = startGateway(t, yaml)
	return mg
}

// writeWrapper (re)writes the moderator wrapper script atomically.
func (mg *moderationGateway) writeWrapper(t testing.TB, line string) {
	t.Helper()
	tmp := mg.wrapper + ".tmp"
	if err := os.WriteFile(tmp, []byte("#!/bin/sh\n"+line+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, mg.wrapper); err != nil {
		t.Fatal(err)
	}
}

// providerCalls counts the synthesis calls the test-kit provider received.
func (mg *moderationGateway) providerCalls(t testing.TB) int {
	t.Helper()
	path := filepath.Join(mg.dir, "calls.jsonl")
	s, err := calllog.Count(path, "synthesize")
	if err != nil {
		t.Fatal(err)
	}
	st, err := calllog.Count(path, "stream")
	if err != nil {
		t.Fatal(err)
	}
	return s + st
}

// moderationCalls counts the calls the test-kit moderator received.
func (mg *moderationGateway) moderationCalls(t testing.TB) int {
	t.Helper()
	n, err := calllog.Count(filepath.Join(mg.dir, "moderation-calls.jsonl"), "moderate")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// blockedEnvelope is the spec's moderation error body.
type blockedEnvelope struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Reason  struct {
			Type   string `json:"type"`
			Detail string `json:"detail"`
		} `json:"reason"`
	} `json:"error"`
	// Code repeats error.code at the top level, where the public client
	// reads every error's code.
	Code string `json:"code"`
}

// blocked asserts r is the moderation envelope with status and reason.
func (r *response) blocked(t testing.TB, status int, reasonType string) blockedEnvelope {
	t.Helper()
	if r.status != status {
		t.Fatalf("status = %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q, want application/json; body %s", ct, r.body)
	}
	var env blockedEnvelope
	r.json(t, &env)
	if env.Error.Code != "content_moderation_blocked" || env.Code != env.Error.Code || env.Error.Message == "" || env.Error.Reason.Type != reasonType {
		t.Fatalf("envelope %s; want code content_moderation_blocked, reason %s", r.body, reasonType)
	}
	return env
}

// rawLogRow returns the log row of a request as JSON fields, so that the
// presence of a field can be asserted, not only its value.
func (tg *testGateway) rawLogRow(org string, r *response) map[string]any {
	tg.t.Helper()
	tg.flushLogs()
	id := r.header.Get("X-Request-Id")
	var page struct {
		Data []map[string]any `json:"data"`
	}
	tg.do("GET", "/v1/logs?limit=200", org, nil).json(tg.t, &page)
	for _, row := range page.Data {
		if row["request_id"] == id {
			return row
		}
	}
	tg.t.Fatalf("no log row for request %s", id)
	return nil
}

// checkRow asserts a log row's moderation fields and that it does not
// repeat the request's text.
func checkRow(t testing.TB, row map[string]any, text string, status int, decision, reasonType string) {
	t.Helper()
	if got := row["status"]; got != float64(status) {
		t.Errorf("row status = %v, want %d", got, status)
	}
	if row["moderation_decision"] != decision || row["moderation_reason_type"] != reasonType {
		t.Errorf("row moderation = %v/%v, want %s/%s", row["moderation_decision"], row["moderation_reason_type"], decision, reasonType)
	}
	if ms, ok := row["moderation_latency_ms"].(float64); !ok || ms < 0 {
		t.Errorf("row moderation_latency_ms = %v", row["moderation_latency_ms"])
	}
	if _, ok := row["moderation_confidence"].(float64); !ok {
		t.Errorf("row moderation_confidence = %v", row["moderation_confidence"])
	}
	for _, f := range []string{"moderation_reason_detail", "error_detail"} {
		if s, _ := row[f].(string); len(text) > 3 && strings.Contains(strings.ToLower(s), strings.ToLower(text)) {
			t.Errorf("row %s %q repeats the text", f, s)
		}
	}
}

func TestModerationAllowsAndLogs(t *testing.T) {
	mg := startModerationGateway(t)
	text := "Hello there, the weather is lovely today."
	for _, tt := range []struct {
		org, ruleset, decision string
	}{
		{"acme", "", moderation.DecisionAllow},       // the org's default, built-in only
		{"acme", "closed", moderation.DecisionAllow}, // built-in and a plugin
		{"acme", "remote", moderation.DecisionAllow}, // the OpenAI plugin
		{"globex", "", moderation.DecisionOff},       // no moderation
	} {
		t.Run(tt.org+"/"+tt.ruleset, func(t *testing.T) {
			body := speechBody(text)
			if tt.ruleset != "" {
				body["moderation_ruleset_id"] = tt.ruleset
			}
			r := mg.do("POST", "/v1/audio/speech", tt.org, body)
			if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "audio/") {
				t.Fatalf("status %d %s: %s", r.status, r.header.Get("Content-Type"), r.body[:min(len(r.body), 200)])
			}
			checkRow(t, mg.rawLogRow(tt.org, r), text, 200, tt.decision, "")
		})
	}
	if n := mg.moderationCalls(t); n != 1 {
		t.Errorf("the test-kit moderator got %d calls, want 1 (ruleset closed)", n)
	}
	if n := mg.fake.CallsTo(openaimoderation.Path); n != 1 {
		t.Errorf("the OpenAI fake got %d calls, want 1 (ruleset remote)", n)
	}
	metrics := string(mg.metricsBody())
	for _, want := range []string{
		`voxgate_moderation_decisions_total{decision="allow",reason="",ruleset="standard"} 1`,
		`voxgate_moderation_duration_seconds_count{ruleset="closed"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestModerationBlocks(t *testing.T) {
	mg := startModerationGateway(t)
	tests := []struct {
		name, ruleset, text, reason, detail string
	}{
		{"test phrase", "", "Please say " + moderation.TestPhrase + " now.", moderation.ReasonTestPhrase, moderation.TestPhrase},
		{"test phrase full-width", "", "ＶＯＸＧＡＴＥ－ＭＯＤＥＲＡＴＩＯＮ－ＴＥＳＴ", moderation.ReasonTestPhrase, moderation.TestPhrase},
		{"test phrase leetspeak", "", "v0xg4te m0der4ti0n te5t", moderation.ReasonTestPhrase, moderation.TestPhrase},
		{"test phrase in a plugin-only ruleset", "open", "read " + moderation.TestPhrase + " aloud", moderation.ReasonTestPhrase, moderation.TestPhrase},
		{"default term", "", "Just kill yourself.", moderation.ReasonContent, "self_harm"},
		{"zero-width evasion", "", "kill\u200b your\u200dself", moderation.ReasonContent, "self_harm"},
		{"spacing evasion", "", "k.i.l.l y.o.u.r.s.e.l.f", moderation.ReasonContent, "self_harm"},
		{"leetspeak evasion", "", "K1LL Y0URSELF", moderation.ReasonContent, "self_harm"},
		{"full-width evasion", "", "ｋｉｌｌ ｙｏｕｒｓｅｌｆ", moderation.ReasonContent, "self_harm"},
		{"test-kit moderator", "closed", "this word is forbidden", moderation.ReasonContent, "test"},
		{"openai moderation plugin", "remote", "you absolute zorblax", moderation.ReasonContent, "harassment"},
	}
	endpoints := []string{"/v1/audio/speech", "/v1/audio/speech/with-timestamps", "/v1/audio/speech/stream"}
	for _, tt := range tests {
		for _, ep := range endpoints {
			t.Run(tt.name+ep, func(t *testing.T) {
				body := map[string]any{"model": "testkit/test", "voice": "alpha", "text": tt.text}
				if tt.ruleset != "" {
					body["moderation_ruleset_id"] = tt.ruleset
				}
				r := mg.do("POST", ep, "acme", body)
				env := r.blocked(t, 422, tt.reason)
				if env.Error.Reason.Detail != tt.detail {
					t.Errorf("reason.detail = %q, want %q", env.Error.Reason.Detail, tt.detail)
				}
				row := mg.rawLogRow("acme", r)
				checkRow(t, row, tt.text, 422, moderation.DecisionBlock, tt.reason)
				if row["error_code"] != "content_moderation_blocked" || row["moderation_reason_detail"] != tt.detail {
					t.Errorf("row error_code %v, detail %v", row["error_code"], row["moderation_reason_detail"])
				}
			})
		}
	}
	if n := mg.providerCalls(t); n != 0 {
		t.Errorf("the provider received %d calls for blocked requests", n)
	}
	// Local checks run first: the moderator plugin was only asked for the
	// text it blocked itself, never for the test phrase.
	if n := mg.moderationCalls(t); n != len(endpoints) {
		t.Errorf("the test-kit moderator got %d calls, want %d", n, len(endpoints))
	}
	// The control: the same gateway lets a clean request through.
	if r := mg.do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "all fine"}); r.status != 200 {
		t.Fatalf("clean request: %d %s", r.status, r.body)
	}
	if n := mg.providerCalls(t); n != 1 {
		t.Errorf("the provider received %d calls, want 1", n)
	}
}

// TestModerationCheckFailures: a moderation plugin that crashes, hangs or
// stays down fails a fail_closed ruleset with 403 error_fail_closed and
// lets a fail_open one through, and the log says which happened.
func TestModerationCheckFailures(t *testing.T) {
	mg := startModerationGateway(t)
	calls := 0
	run := func(t *testing.T, ruleset, text string, status int, decision, reason string) {
		t.Helper()
		body := map[string]any{"model": "testkit/test", "voice": "alpha", "text": text, "moderation_ruleset_id": ruleset}
		r := mg.do("POST", "/v1/audio/speech", "acme", body)
		if status == 403 {
			r.blocked(t, 403, moderation.ReasonErrorFailClosed)
		} else if r.status != status {
			t.Fatalf("status %d, want %d: %s", r.status, status, r.body[:min(len(r.body), 300)])
		}
		if status == 200 {
			calls++
		}
		checkRow(t, mg.rawLogRow("acme", r), text, status, decision, reason)
		if n := mg.providerCalls(t); n != calls {
			t.Errorf("the provider received %d calls, want %d", n, calls)
		}
	}
	t.Run("plugin crashes, fail_open", func(t *testing.T) {
		run(t, "open", "please crash-moderation now", 200, moderation.DecisionAllowOnError, moderation.ReasonErrorFailOpen)
	})
	t.Run("plugin crashes, fail_closed", func(t *testing.T) {
		run(t, "closed", "please crash-moderation now", 403, moderation.DecisionBlock, moderation.ReasonErrorFailClosed)
	})
	t.Run("plugin hangs, fail_closed", func(t *testing.T) {
		run(t, "closed", "please hang-moderation now", 403, moderation.DecisionBlock, moderation.ReasonErrorFailClosed)
	})
	t.Run("plugin hangs, fail_open", func(t *testing.T) {
		run(t, "open", "please hang-moderation now", 200, moderation.DecisionAllowOnError, moderation.ReasonErrorFailOpen)
	})
	t.Run("plugin fails, fail_closed", func(t *testing.T) {
		run(t, "closed", "please fail-moderation now", 403, moderation.DecisionBlock, moderation.ReasonErrorFailClosed)
	})
	t.Run("plugin recovers", func(t *testing.T) {
		run(t, "closed", "all good again", 200, moderation.DecisionAllow, "")
	})
	t.Run("plugin killed and down", func(t *testing.T) {
		// Kill the moderator and keep it from coming back: every restart
		// of the wrapper now exits at once.
		mg.writeWrapper(t, "exit 1")
		pids := mg.g.PluginPIDs("moderation.testmod")
		if len(pids) != 1 {
			t.Fatalf("moderator pids = %v", pids)
		}
		if err := syscall.Kill(pids[0], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(15 * time.Second); len(mg.g.PluginPIDs("moderation.testmod")) > 0; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the pool did not notice the killed moderator")
			}
		}
		run(t, "closed", "hello while the moderator is down", 403, moderation.DecisionBlock, moderation.ReasonErrorFailClosed)
		run(t, "open", "hello while the moderator is down", 200, moderation.DecisionAllowOnError, moderation.ReasonErrorFailOpen)
		// Rulesets without the plugin are unaffected.
		run(t, "standard", "hello while the moderator is down", 200, moderation.DecisionAllow, "")
	})
	t.Run("openai endpoint fails", func(t *testing.T) {
		mg.fake.FailNext(1, fakeupstream.Fault{Status: 500})
		run(t, "remote", "hello there", 403, moderation.DecisionBlock, moderation.ReasonErrorFailClosed)
	})
}

func TestModerationRulesetSelection(t *testing.T) {
	mg := startModerationGateway(t)
	for _, tt := range []struct{ name, org, ruleset string }{
		{"unknown ruleset", "acme", "nope"},
		{"another org's ruleset", "globex", "closed"},
		{"not a string", "acme", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			body := speechBody("hello")
			body["moderation_ruleset_id"] = tt.ruleset
			if tt.ruleset == "" {
				body["moderation_ruleset_id"] = 5
			}
			p := mg.do("POST", "/v1/audio/speech", tt.org, body).problem(t, 400, "validation_failed")
			if len(p.Validation) == 0 || strings.Join(p.Validation[0].Path, ".") != "moderation_ruleset_id" {
				t.Errorf("validation %+v does not name moderation_ruleset_id", p.Validation)
			}
		})
	}
}

// TestModerationKeyStaysSecret: the moderation plugin's API key reaches the
// endpoint, and no log line carries it.
func TestModerationKeyStaysSecret(t *testing.T) {
	mg := startModerationGateway(t)
	r := mg.do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "hi", "moderation_ruleset_id": "remote"})
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	last, ok := mg.fake.LastRequest()
	if !ok || last.Header.Get("Authorization") != "Bearer "+openaimoderation.Key {
		t.Fatalf("the endpoint got Authorization %q", last.Header.Get("Authorization"))
	}
	mg.fake.FailNext(1, fakeupstream.Fault{Status: 401})
	mg.do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "hi", "moderation_ruleset_id": "remote"}).blocked(t, 403, moderation.ReasonErrorFailClosed)
	for _, e := range mg.logs.All() {
		line, _ := json.Marshal(e.ContextMap())
		if strings.Contains(e.Message+string(line), openaimoderation.Key) {
			t.Errorf("a log entry contains the moderation API key: %s %s", e.Message, line)
		}
	}
}

// moderationBenchConfig differs between its two orgs only in moderation.
const moderationBenchConfig = `
server:
  listen: 127.0.0.1:0
  access_log: false
storage:
  path: %DIR%/voxgate.db
plugins:
  dir: %BIN%/plugins
providers:
  espeak: {plugin: voxgate-espeak, managed: true, instances: 1}
orgs:
  acme:
    moderation: standard
    providers: {espeak: {enabled: true}}
  globex:
    providers: {espeak: {enabled: true}}
moderation:
  rulesets:
    standard:
      checks: [{builtin: {}}]
`

// BenchmarkSpeechModeration puts the built-in check in proportion: the
// same short eSpeak request with the default ruleset (acme) and without
// moderation (globex), interleaved in one run so that machine noise hits
// both alike, and the check's own time from the moderation histogram.
func BenchmarkSpeechModeration(b *testing.B) {
	tg := startGateway(b, moderationBenchConfig)
	body := speechBody("Hello there, this is a short sentence to speak.")
	var moderated, unmoderated time.Duration
	for b.Loop() {
		start := time.Now()
		if r := tg.do("POST", "/v1/audio/speech", "acme", body); r.status != 200 {
			b.Fatalf("moderated: %d %s", r.status, r.body)
		}
		moderated += time.Since(start)
		start = time.Now()
		if r := tg.do("POST", "/v1/audio/speech", "globex", body); r.status != 200 {
			b.Fatalf("unmoderated: %d %s", r.status, r.body)
		}
		unmoderated += time.Since(start)
	}
	n := float64(b.N)
	mod, off := float64(moderated.Microseconds())/n, float64(unmoderated.Microseconds())/n
	check := checkMicros(b, tg)
	b.ReportMetric(mod, "moderated-µs")
	b.ReportMetric(off, "unmoderated-µs")
	b.ReportMetric(check, "check-µs")
	b.ReportMetric(100*check/mod, "check-%")
}

// checkMicros is the mean moderation check time of ruleset standard.
func checkMicros(b *testing.B, tg *testGateway) float64 {
	fams, err := tg.g.Metrics().Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "voxgate_moderation_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			if h := m.GetHistogram(); h.GetSampleCount() > 0 {
				return h.GetSampleSum() / float64(h.GetSampleCount()) * 1e6
			}
		}
	}
	b.Fatal("no moderation latency recorded")
	return 0
}
