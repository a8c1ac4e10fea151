package cloud

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/elevenlabs"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

func TestCloudProvidersEndToEnd(t *testing.T) {
	t.Parallel()
	c := harness.StartCloud(t)
	oaiBody := map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "Hello from the cloud."}

	// Managed key for acme, the org's own key for globex.
	r := c.Do("POST", "/v1/audio/speech", "acme", oaiBody)
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "audio/") || len(r.Body) < 1000 {
		t.Fatalf("openai speech: %d %s", r.Status, r.Body[:min(200, len(r.Body))])
	}
	last, _ := c.OpenAI.LastRequest()
	if got := last.Header.Get("Authorization"); got != "Bearer "+openai.Key {
		t.Errorf("acme used %q, want the managed key", harness.Redact(got))
	}
	if r := c.Do("POST", "/v1/audio/speech", "globex", oaiBody); r.Status != 200 {
		t.Fatalf("globex speech: %d %s", r.Status, r.Body)
	}
	last, _ = c.OpenAI.LastRequest()
	if got := last.Header.Get("Authorization"); got != "Bearer "+harness.GlobexOpenAIKey {
		t.Errorf("globex used %q, want its own key", harness.Redact(got))
	}
	if row := c.LastLog("acme"); row.Provider != "openai" || row.Model != "tts-1" || row.CreditsUsed != 1 || row.Status != 200 {
		t.Errorf("row %+v", row)
	}

	// Whole-clip processing of a provider's clip.
	r = c.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "Levelled.", "volumeDbfs": -18, "output": map[string]any{"format": "wav", "sampleRate": 16000}})
	if r.Status != 200 || r.Header.Get("Content-Type") != "audio/wav" {
		t.Fatalf("processed: %d %s", r.Status, r.Body)
	}

	// Streaming passes through.
	r = c.Do("POST", "/v1/audio/speech/stream", "acme", oaiBody)
	if r.Status != 200 || len(r.Body) == 0 {
		t.Fatalf("openai stream: %d %s", r.Status, r.Body)
	}
	// gpt-4o-mini-tts ignores speed upstream, so the gateway stretches the
	// whole clip; on the stream endpoint that is a whole-clip parameter.
	mini := map[string]any{"model": "openai/gpt-4o-mini-tts", "voice": "alloy", "text": "Faster please.", "speed": 1.5}
	if r := c.Do("POST", "/v1/audio/speech", "acme", mini); r.Status != 200 {
		t.Fatalf("stretched speech: %d %s", r.Status, r.Body)
	}
	p := c.Do("POST", "/v1/audio/speech/stream", "acme", mini).Problem(t, 400, "param_not_allowed_on_stream")
	harness.AssertPaths(t, p, "speed")

	// OpenAI has no word timestamps: the gateway aligns them, but the
	// fake's tone says no words, so it answers the clip without
	// timestamps and says why rather than guessing. ElevenLabs has its
	// own.
	r = c.Do("POST", "/v1/audio/speech/with-timestamps", "acme", oaiBody)
	var aligned harness.TimestampsEnvelope
	r.JSON(t, &aligned)
	if r.Status != 200 || len(aligned.Timestamps) != 0 || len(aligned.Warnings) != 1 || !strings.Contains(aligned.Warnings[0], "does not follow the text") {
		t.Errorf("openai with timestamps: %d, %d words, warnings %q", r.Status, len(aligned.Timestamps), aligned.Warnings)
	}
	voice := c.ElevenLabs.VoiceIDs()[0]
	r = c.Do("POST", "/v1/audio/speech/with-timestamps", "acme", map[string]any{"model": "elevenlabs", "voice": voice, "text": "Word timing from alignment."})
	if r.Status != 200 {
		t.Fatalf("elevenlabs timestamps: %d %s", r.Status, r.Body)
	}
	var env harness.TimestampsEnvelope
	r.JSON(t, &env)
	var words []string
	for _, w := range env.Timestamps {
		words = append(words, w.Text)
	}
	if strings.Join(words, " ") != "Word timing from alignment." && strings.Join(words, " ") != "Word timing from alignment" {
		t.Errorf("elevenlabs words %q", words)
	}
	lastEl, _ := c.ElevenLabs.LastRequest()
	if lastEl.Header.Get("xi-api-key") != harness.AcmeElevenKey {
		t.Errorf("elevenlabs did not get acme's stored BYOK key")
	}

	// An org that brings its own key but stored none gets a clear problem.
	c.Do("POST", "/v1/audio/speech", "initech", map[string]any{"model": "elevenlabs", "voice": voice, "text": "x"}).Problem(t, 403, "no_api_key")

	// The catalog shows the flags, never a key.
	cat := c.Do("GET", "/v1/providers", "globex", nil)
	if bytes.Contains(cat.Body, []byte(harness.GlobexOpenAIKey)) || !bytes.Contains(cat.Body, []byte(`"byok":true`)) {
		t.Errorf("catalog: %s", cat.Body)
	}
}

func TestCloudCloning(t *testing.T) {
	t.Parallel()
	c := harness.StartCloud(t)
	sample := c.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody("A few seconds of my voice for cloning purposes.", "output", map[string]any{"format": "wav"}))
	up := c.Upload("acme", "audio/wav", sample.Body)
	var m store.Media
	up.JSON(t, &m)
	r := c.Do("POST", "/v1/voices", "acme", map[string]any{"title": "My clone", "provider": "elevenlabs", "model": "eleven_multilingual_v2", "mediaId": m.ID, "consent": map[string]any{"attested_by": "Test Speaker", "relation": "self", "statement": "I agree to this clone."}})
	if r.Status != 201 {
		t.Fatalf("clone: %d %s", r.Status, r.Body)
	}
	v := r.Voice(t)
	if v.VoiceID == "" {
		t.Fatal("no provider voice id")
	}
	if n := c.ElevenLabs.CallsTo("/v1/voices/add"); n != 1 {
		t.Errorf("clone calls = %d", n)
	}
	r = c.Do("POST", "/v1/audio/speech", "acme", map[string]any{"voiceId": v.ID, "text": "Now I speak with the cloned voice."})
	if r.Status != 200 {
		t.Fatalf("speech with clone: %d %s", r.Status, r.Body)
	}
	last, _ := c.ElevenLabs.LastRequest()
	if !strings.Contains(last.Path, v.VoiceID) {
		t.Errorf("speech went to %s, not the cloned voice %s", last.Path, v.VoiceID)
	}
	// A failed clone is never retried (it could create two voices).
	c.ElevenLabs.FailNext(1, fakeupstream.Fault{Path: "/v1/voices/add", Status: 500})
	before := c.ElevenLabs.CallsTo("/v1/voices/add")
	r = c.Do("POST", "/v1/voices", "acme", map[string]any{"title": "Again", "provider": "elevenlabs", "model": "eleven_multilingual_v2", "mediaId": m.ID, "consent": map[string]any{"attested_by": "Test Speaker", "relation": "self", "statement": "I agree to this clone."}})
	if r.Status < 500 || c.ElevenLabs.CallsTo("/v1/voices/add") != before+1 {
		t.Errorf("failed clone: status %d, %d calls", r.Status, c.ElevenLabs.CallsTo("/v1/voices/add")-before)
	}
	// OpenAI cannot clone.
	c.Do("POST", "/v1/voices", "acme", map[string]any{"title": "x", "provider": "openai", "model": "tts-1", "mediaId": m.ID, "consent": map[string]any{"attested_by": "Test Speaker", "relation": "self", "statement": "I agree to this clone."}}).Problem(t, 501, "cloning_unsupported")
}

// TestCloudSavedVoiceIDs checks POST /v1/voices against a cloud provider's
// voice list, read with the organization's own key: a listed id is saved,
// a voice's name gets its id suggested, and when the list cannot be read
// the request fails and nothing is saved.
func TestCloudSavedVoiceIDs(t *testing.T) {
	t.Parallel()
	c := harness.StartCloud(t)
	voice := func(org, id string) *harness.Response {
		return c.Do("POST", "/v1/voices", org, map[string]any{"title": "Rachel", "provider": "elevenlabs", "model": "eleven_multilingual_v2", "voice_id": id})
	}
	if r := voice("acme", elevenlabs.VoiceRachel); r.Status != 201 {
		t.Fatalf("listed voice id: %d %s", r.Status, r.Body)
	}
	if p := voice("acme", "Rachel").Problem(t, 422, "unknown_voice"); !strings.Contains(p.Detail, "close matches: "+elevenlabs.VoiceRachel) {
		t.Errorf("a voice's name for its id: %q", p.Detail)
	}
	var page harness.VoicePage
	c.Do("GET", "/v1/voices", "acme", nil).JSON(t, &page)

	// The list call fails (every attempt): the provider's failure, 503.
	c.ElevenLabs.FailNext(3, fakeupstream.Fault{Path: elevenlabs.VoicesPath, Status: 503})
	if p := voice("acme", elevenlabs.VoiceSarah).Problem(t, 503, "provider_unavailable"); p.Provider != "elevenlabs" {
		t.Errorf("problem %+v", p)
	}
	c.ElevenLabs.Reset()
	// An org that brings its own key but stored none cannot read the list.
	voice("initech", elevenlabs.VoiceSarah).Problem(t, 403, "no_api_key")

	var after harness.VoicePage
	c.Do("GET", "/v1/voices", "acme", nil).JSON(t, &after)
	if len(after.Data) != len(page.Data) {
		t.Errorf("%d voices saved by failed requests", len(after.Data)-len(page.Data))
	}
}

func TestCloudUpstreamFailures(t *testing.T) {
	t.Parallel()
	c := harness.StartCloud(t)
	body := map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "failure modes"}

	// A transient 500 is retried and the request succeeds.
	c.OpenAI.Reset()
	c.OpenAI.FailNext(1, fakeupstream.Fault{Status: 500})
	if r := c.Do("POST", "/v1/audio/speech", "acme", body); r.Status != 200 || c.OpenAI.Calls() != 2 {
		t.Fatalf("retry after 500: %d, %d upstream calls", r.Status, c.OpenAI.Calls())
	}
	// A 429 with Retry-After is honoured, then succeeds.
	c.OpenAI.Reset()
	c.OpenAI.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "0.05"})
	if r := c.Do("POST", "/v1/audio/speech", "acme", body); r.Status != 200 || c.OpenAI.Calls() != 2 {
		t.Fatalf("retry after 429: %d, %d upstream calls", r.Status, c.OpenAI.Calls())
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
			c.OpenAI.Reset()
			c.OpenAI.FailAlways(tt.fault)
			defer c.OpenAI.Reset()
			r := c.Do("POST", "/v1/audio/speech", "acme", body)
			var p harness.Problem
			if tt.status != 0 {
				p = r.Problem(t, tt.status, tt.code)
			} else {
				if r.Status != 502 && r.Status != 503 {
					t.Fatalf("status %d %s", r.Status, r.Body)
				}
				r.JSON(t, &p)
			}
			if p.Provider != "openai" || p.UpstreamStatus != tt.upstream {
				t.Errorf("problem %+v", p)
			}
			if tt.fault.Status == 429 && r.Header.Get("Retry-After") == "" {
				t.Error("no Retry-After passed on")
			}
			if bytes.Contains(r.Body, []byte(openai.Key)) {
				t.Error("the problem leaks the provider key")
			}
		})
	}
	// An upstream that does not answer within the provider timeout.
	c.OpenAI.Reset()
	c.OpenAI.SetLatency(3 * time.Second)
	defer c.OpenAI.SetLatency(0)
	c.Do("POST", "/v1/audio/speech", "acme", body).Problem(t, 504, "provider_timeout")

	// A planned stream the provider stops sending after its first chunk
	// ends at the provider timeout as an incomplete transfer, and its row
	// says provider_timeout: that deadline is the upstream connection's
	// (dispatch.Client.OpenUntil), not a context's.
	c.OpenAI.SetLatency(0)
	c.OpenAI.HoldStreams()
	defer c.OpenAI.ReleaseStreams()
	status, data, err := harness.ReadStreamPath(t, c.Gateway, "/v1/audio/speech/stream", body)
	if status != 200 || len(data) == 0 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("held stream: %d, %d bytes, %v; want 200, the first chunk, then an incomplete transfer", status, len(data), err)
	}
	if row := c.LastLog("acme"); row.ErrorCode != "provider_timeout" || !strings.Contains(row.ErrorDetail, "providers.openai.timeout") {
		t.Errorf("held stream's row: %q (%s); want provider_timeout naming providers.openai.timeout", row.ErrorCode, row.ErrorDetail)
	}
}

// TestBYOKEncryptedAtRest checks the stored org key is not in the database
// file in plain text, after the gateway has used it.
func TestBYOKEncryptedAtRest(t *testing.T) {
	t.Parallel()
	c := harness.StartCloud(t)
	voice := c.ElevenLabs.VoiceIDs()[0]
	if r := c.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "elevenlabs", "voice": voice, "text": "x"}); r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Core.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	db, err := os.ReadFile(filepath.Join(c.Dir, "voxgate.db"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(db, []byte(harness.AcmeElevenKey)) {
		t.Fatal("the BYOK key is stored in plain text")
	}
}
