package gateway_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/elevenlabs"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
)

// The org keys of the BYOK cases; never in a log, never in the database in
// plain text.
const (
	globexOpenAIKey = "sk-globex-byok-key-0000000000000000"
	acmeElevenKey   = "xi-acme-byok-key-1111111111111111"
)

type cloud struct {
	*testGateway
	oai *openai.Server
	el  *elevenlabs.Server
}

// startCloud runs the gateway with the real OpenAI and ElevenLabs plugin
// processes pointed at fakes that follow those providers' wire formats.
func startCloud(t *testing.T) *cloud { return startCloudWith(t, "") }

// startCloudWith is startCloud with extra lines (indented by four spaces)
// in the openai provider's block.
func startCloudWith(t *testing.T, openaiExtra string) *cloud {
	oai := openai.New(t, fakeupstream.Options{Keys: []string{openai.Key, globexOpenAIKey}})
	el := elevenlabs.New(t, fakeupstream.Options{Keys: []string{acmeElevenKey}})
	cfg := `
server:
  listen: 127.0.0.1:0
storage:
  path: %DIR%/voxgate.db
plugins:
  dir: %BIN%/plugins
providers:
  espeak: {plugin: voxgate-espeak, managed: true}
  openai:
    plugin: voxgate-openai
    base_url: ` + oai.BaseURL() + `
    api_key: ` + openai.Key + `
    managed: true
    timeout: 1s
    credits_per_1k_chars: 15
` + openaiExtra + `  elevenlabs:
    plugin: voxgate-elevenlabs
    base_url: ` + el.BaseURL() + `
    timeout: 5s
orgs:
  acme:
    providers:
      espeak: {enabled: true}
      openai: {enabled: true}
      elevenlabs: {enabled: true, byok: true}
  globex:
    providers:
      openai: {enabled: true, byok: true, api_key: ` + globexOpenAIKey + `}
  initech:
    providers:
      elevenlabs: {enabled: true, byok: true}
`
	tg := startGateway(t, cfg)
	tg.secrets = append(tg.secrets, openai.Key, globexOpenAIKey, acmeElevenKey)
	if err := tg.g.SetSecret(context.Background(), "acme", "elevenlabs", acmeElevenKey); err != nil {
		t.Fatal(err)
	}
	return &cloud{testGateway: tg, oai: oai, el: el}
}

func TestCloudProvidersEndToEnd(t *testing.T) {
	c := startCloud(t)
	oaiBody := map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "Hello from the cloud."}

	// Managed key for acme, the org's own key for globex.
	r := c.do("POST", "/v1/audio/speech", "acme", oaiBody)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "audio/") || len(r.body) < 1000 {
		t.Fatalf("openai speech: %d %s", r.status, r.body[:min(200, len(r.body))])
	}
	last, _ := c.oai.LastRequest()
	if got := last.Header.Get("Authorization"); got != "Bearer "+openai.Key {
		t.Errorf("acme used %q, want the managed key", redact(got))
	}
	if r := c.do("POST", "/v1/audio/speech", "globex", oaiBody); r.status != 200 {
		t.Fatalf("globex speech: %d %s", r.status, r.body)
	}
	last, _ = c.oai.LastRequest()
	if got := last.Header.Get("Authorization"); got != "Bearer "+globexOpenAIKey {
		t.Errorf("globex used %q, want its own key", redact(got))
	}
	if row := c.lastLog("acme"); row.Provider != "openai" || row.Model != "tts-1" || row.CreditsUsed != 1 || row.Status != 200 {
		t.Errorf("row %+v", row)
	}

	// Whole-clip processing of a provider's clip.
	r = c.do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "Levelled.", "volumeDbfs": -18, "output": map[string]any{"format": "wav", "sampleRate": 16000}})
	if r.status != 200 || r.header.Get("Content-Type") != "audio/wav" {
		t.Fatalf("processed: %d %s", r.status, r.body)
	}

	// Streaming passes through.
	r = c.do("POST", "/v1/audio/speech/stream", "acme", oaiBody)
	if r.status != 200 || len(r.body) == 0 {
		t.Fatalf("openai stream: %d %s", r.status, r.body)
	}
	// gpt-4o-mini-tts ignores speed upstream, so the gateway stretches the
	// whole clip; on the stream endpoint that is a whole-clip parameter.
	mini := map[string]any{"model": "openai/gpt-4o-mini-tts", "voice": "alloy", "text": "Faster please.", "speed": 1.5}
	if r := c.do("POST", "/v1/audio/speech", "acme", mini); r.status != 200 {
		t.Fatalf("stretched speech: %d %s", r.status, r.body)
	}
	p := c.do("POST", "/v1/audio/speech/stream", "acme", mini).problem(t, 400, "param_not_allowed_on_stream")
	assertPaths(t, p, "speed")

	// OpenAI has no word timestamps: the gateway aligns them, but the
	// fake's tone says no words, so it answers the clip without
	// timestamps and says why rather than guessing. ElevenLabs has its
	// own.
	r = c.do("POST", "/v1/audio/speech/with-timestamps", "acme", oaiBody)
	var aligned tsEnvelope
	r.json(t, &aligned)
	if r.status != 200 || len(aligned.Timestamps) != 0 || len(aligned.Warnings) != 1 || !strings.Contains(aligned.Warnings[0], "does not follow the text") {
		t.Errorf("openai with timestamps: %d, %d words, warnings %q", r.status, len(aligned.Timestamps), aligned.Warnings)
	}
	voice := c.el.VoiceIDs()[0]
	r = c.do("POST", "/v1/audio/speech/with-timestamps", "acme", map[string]any{"model": "elevenlabs", "voice": voice, "text": "Word timing from alignment."})
	if r.status != 200 {
		t.Fatalf("elevenlabs timestamps: %d %s", r.status, r.body)
	}
	var env tsEnvelope
	r.json(t, &env)
	var words []string
	for _, w := range env.Timestamps {
		words = append(words, w.Text)
	}
	if strings.Join(words, " ") != "Word timing from alignment." && strings.Join(words, " ") != "Word timing from alignment" {
		t.Errorf("elevenlabs words %q", words)
	}
	lastEl, _ := c.el.LastRequest()
	if lastEl.Header.Get("xi-api-key") != acmeElevenKey {
		t.Errorf("elevenlabs did not get acme's stored BYOK key")
	}

	// An org that brings its own key but stored none gets a clear problem.
	c.do("POST", "/v1/audio/speech", "initech", map[string]any{"model": "elevenlabs", "voice": voice, "text": "x"}).problem(t, 403, "no_api_key")

	// The catalog shows the flags, never a key.
	cat := c.do("GET", "/v1/providers", "globex", nil)
	if bytes.Contains(cat.body, []byte(globexOpenAIKey)) || !bytes.Contains(cat.body, []byte(`"byok":true`)) {
		t.Errorf("catalog: %s", cat.body)
	}
}

func TestCloudCloning(t *testing.T) {
	c := startCloud(t)
	sample := c.do("POST", "/v1/audio/speech", "acme", speechBody("A few seconds of my voice for cloning purposes.", "output", map[string]any{"format": "wav"}))
	up := c.upload("acme", "audio/wav", sample.body)
	var m store.Media
	up.json(t, &m)
	r := c.do("POST", "/v1/voices", "acme", map[string]any{"title": "My clone", "provider": "elevenlabs", "model": "eleven_multilingual_v2", "mediaId": m.ID})
	if r.status != 201 {
		t.Fatalf("clone: %d %s", r.status, r.body)
	}
	v := r.voice(t)
	if v.VoiceID == "" {
		t.Fatal("no provider voice id")
	}
	if n := c.el.CallsTo("/v1/voices/add"); n != 1 {
		t.Errorf("clone calls = %d", n)
	}
	r = c.do("POST", "/v1/audio/speech", "acme", map[string]any{"voiceId": v.ID, "text": "Now I speak with the cloned voice."})
	if r.status != 200 {
		t.Fatalf("speech with clone: %d %s", r.status, r.body)
	}
	last, _ := c.el.LastRequest()
	if !strings.Contains(last.Path, v.VoiceID) {
		t.Errorf("speech went to %s, not the cloned voice %s", last.Path, v.VoiceID)
	}
	// A failed clone is never retried (it could create two voices).
	c.el.FailNext(1, fakeupstream.Fault{Path: "/v1/voices/add", Status: 500})
	before := c.el.CallsTo("/v1/voices/add")
	r = c.do("POST", "/v1/voices", "acme", map[string]any{"title": "Again", "provider": "elevenlabs", "model": "eleven_multilingual_v2", "mediaId": m.ID})
	if r.status < 500 || c.el.CallsTo("/v1/voices/add") != before+1 {
		t.Errorf("failed clone: status %d, %d calls", r.status, c.el.CallsTo("/v1/voices/add")-before)
	}
	// OpenAI cannot clone.
	c.do("POST", "/v1/voices", "acme", map[string]any{"title": "x", "provider": "openai", "model": "tts-1", "mediaId": m.ID}).problem(t, 501, "cloning_unsupported")
}

// TestCloudSavedVoiceIDs checks POST /v1/voices against a cloud provider's
// voice list, read with the organization's own key: a listed id is saved,
// a voice's name gets its id suggested, and when the list cannot be read
// the request fails and nothing is saved.
func TestCloudSavedVoiceIDs(t *testing.T) {
	c := startCloud(t)
	voice := func(org, id string) *response {
		return c.do("POST", "/v1/voices", org, map[string]any{"title": "Rachel", "provider": "elevenlabs", "model": "eleven_multilingual_v2", "voice_id": id})
	}
	if r := voice("acme", elevenlabs.VoiceRachel); r.status != 201 {
		t.Fatalf("listed voice id: %d %s", r.status, r.body)
	}
	if p := voice("acme", "Rachel").problem(t, 422, "unknown_voice"); !strings.Contains(p.Detail, "close matches: "+elevenlabs.VoiceRachel) {
		t.Errorf("a voice's name for its id: %q", p.Detail)
	}
	var page voicePage
	c.do("GET", "/v1/voices", "acme", nil).json(t, &page)

	// The list call fails (every attempt): the provider's failure, 503.
	c.el.FailNext(3, fakeupstream.Fault{Path: elevenlabs.VoicesPath, Status: 503})
	if p := voice("acme", elevenlabs.VoiceSarah).problem(t, 503, "provider_unavailable"); p.Provider != "elevenlabs" {
		t.Errorf("problem %+v", p)
	}
	c.el.Reset()
	// An org that brings its own key but stored none cannot read the list.
	voice("initech", elevenlabs.VoiceSarah).problem(t, 403, "no_api_key")

	var after voicePage
	c.do("GET", "/v1/voices", "acme", nil).json(t, &after)
	if len(after.Data) != len(page.Data) {
		t.Errorf("%d voices saved by failed requests", len(after.Data)-len(page.Data))
	}
}

func TestCloudUpstreamFailures(t *testing.T) {
	c := startCloud(t)
	body := map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "failure modes"}

	// A transient 500 is retried and the request succeeds.
	c.oai.Reset()
	c.oai.FailNext(1, fakeupstream.Fault{Status: 500})
	if r := c.do("POST", "/v1/audio/speech", "acme", body); r.status != 200 || c.oai.Calls() != 2 {
		t.Fatalf("retry after 500: %d, %d upstream calls", r.status, c.oai.Calls())
	}
	// A 429 with Retry-After is honoured, then succeeds.
	c.oai.Reset()
	c.oai.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "0.05"})
	if r := c.do("POST", "/v1/audio/speech", "acme", body); r.status != 200 || c.oai.Calls() != 2 {
		t.Fatalf("retry after 429: %d, %d upstream calls", r.status, c.oai.Calls())
	}

	tests := []struct {
		name     string
		fault    fakeupstream.Fault
		status   int
		code     string
		upstream int
	}{
		{"rejected key", fakeupstream.Fault{Status: 401}, 502, "provider_error", 401},
		{"rate limited", fakeupstream.Fault{Status: 429, RetryAfter: "3"}, 502, "provider_error", 429},
		{"server error", fakeupstream.Fault{Status: 500}, 0, "", 500},
		{"bad request", fakeupstream.Fault{Status: 400, Code: "invalid_value"}, 422, "provider_rejected_request", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.oai.Reset()
			c.oai.FailAlways(tt.fault)
			defer c.oai.Reset()
			r := c.do("POST", "/v1/audio/speech", "acme", body)
			var p problemBody
			if tt.status != 0 {
				p = r.problem(t, tt.status, tt.code)
			} else {
				if r.status != 502 && r.status != 503 {
					t.Fatalf("status %d %s", r.status, r.body)
				}
				r.json(t, &p)
			}
			if p.Provider != "openai" || p.UpstreamStatus != tt.upstream {
				t.Errorf("problem %+v", p)
			}
			if tt.fault.Status == 429 && r.header.Get("Retry-After") == "" {
				t.Error("no Retry-After passed on")
			}
			if bytes.Contains(r.body, []byte(openai.Key)) {
				t.Error("the problem leaks the provider key")
			}
		})
	}
	// An upstream that does not answer within the provider timeout.
	c.oai.Reset()
	c.oai.SetLatency(3 * time.Second)
	defer c.oai.SetLatency(0)
	c.do("POST", "/v1/audio/speech", "acme", body).problem(t, 504, "provider_timeout")
}

// TestBYOKEncryptedAtRest checks the stored org key is not in the database
// file in plain text, after the gateway has used it.
func TestBYOKEncryptedAtRest(t *testing.T) {
	c := startCloud(t)
	voice := c.el.VoiceIDs()[0]
	if r := c.do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "elevenlabs", "voice": voice, "text": "x"}); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.g.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	db, err := os.ReadFile(filepath.Join(c.dir, "voxgate.db"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(db, []byte(acmeElevenKey)) {
		t.Fatal("the BYOK key is stored in plain text")
	}
}

func redact(s string) string {
	if len(s) > 12 {
		return s[:12] + "…"
	}
	return s
}
