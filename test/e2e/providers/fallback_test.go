package providers

import (
	"strings"
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/elevenlabs"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// fallbackConfig sends openai/tts-1 requests to ElevenLabs when OpenAI
// fails: alloy in voice elVoice, any other voice in espeak's en-us.
func fallbackConfig(oai *openai.Server, el *elevenlabs.Server, elVoice string) string {
	return `
server:
  listen: 127.0.0.1:0
storage:
  path: %DIR%/voxgate.db
  log_batch_size: 8
plugins:
  dir: %BIN%/plugins
providers:
  openai:
    plugin: voxgate-openai
    base_url: ` + oai.BaseURL() + `
    api_key: ` + openai.Key + `
    managed: true
    timeout: 2s
    max_attempts: 1
  elevenlabs:
    plugin: voxgate-elevenlabs
    base_url: ` + el.BaseURL() + `
    api_key: ` + elevenlabs.Key + `
    managed: true
  espeak: {plugin: voxgate-espeak, managed: true}
fallbacks:
  openai/tts-1:
    - model: elevenlabs/eleven_multilingual_v2
      voices: {alloy: ` + elVoice + `}
    - model: espeak/espeak-ng
      voice: en-us
orgs:
  acme:
    providers:
      openai: {enabled: true}
      elevenlabs: {enabled: true}
      espeak: {enabled: true}
`
}

func TestFallbacks(t *testing.T) {
	t.Parallel()
	oai := openai.New(t, fakeupstream.Options{})
	el := elevenlabs.New(t, fakeupstream.Options{})
	elVoice := el.VoiceIDs()[0]
	tg := harness.Start(t, fallbackConfig(oai, el, elVoice))
	tg.Secrets = append(tg.Secrets, openai.Key, elevenlabs.Key)
	body := map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "Fall back when you must."}

	// Healthy: the target asked for serves.
	if r := tg.Do("POST", "/v1/audio/speech", "acme", body); r.Status != 200 || r.Header.Get("X-Voxgate-Provider") != "openai/tts-1" {
		t.Fatalf("healthy: %d %q", r.Status, r.Header.Get("X-Voxgate-Provider"))
	}

	// OpenAI down: ElevenLabs serves, in the voice the route maps alloy to,
	// and both attempts are logged.
	oai.FailAlways(fakeupstream.Fault{Status: 503})
	r := tg.Do("POST", "/v1/audio/speech", "acme", body)
	if r.Status != 200 || r.Header.Get("X-Voxgate-Provider") != "elevenlabs/eleven_multilingual_v2" {
		t.Fatalf("openai down: %d %q %s", r.Status, r.Header.Get("X-Voxgate-Provider"), r.Body)
	}
	if last, _ := el.LastRequest(); !strings.Contains(last.Path, elVoice) {
		t.Errorf("the fallback spoke in %s, want the mapped voice %s", last.Path, elVoice)
	}
	row := tg.LastLog("acme")
	if row.Provider != "elevenlabs" || row.Status != 200 || row.ErrorCode != "" {
		t.Errorf("row of the served request: %+v", row)
	}
	attempts := tg.LogsWhere("acme", "parent_request_id="+row.RequestID)
	if len(attempts) != 1 || attempts[0].Provider != "openai" || attempts[0].Status < 500 || attempts[0].CreditsUsed != 0 {
		t.Errorf("attempt rows %+v", attempts)
	}

	// Both cloud providers down: the voice another route target gives.
	el.FailAlways(fakeupstream.Fault{Status: 500})
	r = tg.Do("POST", "/v1/audio/speech", "acme", body)
	if r.Status != 200 || r.Header.Get("X-Voxgate-Provider") != "espeak/espeak-ng" {
		t.Fatalf("two down: %d %q", r.Status, r.Header.Get("X-Voxgate-Provider"))
	}
	if n := len(tg.LogsWhere("acme", "parent_request_id="+tg.LastLog("acme").RequestID)); n != 2 {
		t.Errorf("%d attempt rows, want 2", n)
	}
	el.Reset()

	// A stream falls back before its first byte.
	status, data, err := harness.ReadStreamPath(t, tg, "/v1/audio/speech/stream", body)
	if status != 200 || err != nil || len(data) == 0 {
		t.Errorf("stream with openai down: %d, %v", status, err)
	}

	// A request that would fail everywhere does not fall back.
	oai.Reset()
	oai.FailAlways(fakeupstream.Fault{Status: 400, Code: "invalid_value"})
	calls := el.Calls()
	tg.Do("POST", "/v1/audio/speech", "acme", body).Problem(t, 422, "provider_rejected_request")
	if el.Calls() != calls {
		t.Error("a 400 fell back")
	}
	oai.Reset()

	// A saved voice falls back to its own equivalents, not the route's.
	oai.FailAlways(fakeupstream.Fault{Status: 503})
	r = tg.Do("POST", "/v1/voices", "acme", map[string]any{"title": "Narrator", "provider": "openai", "model": "tts-1", "voice_id": "echo",
		"fallbacks": []map[string]any{{"provider": "elevenlabs", "model": "eleven_multilingual_v2", "voice_id": el.VoiceIDs()[1]}}})
	if r.Status != 201 {
		t.Fatalf("voice with fallbacks: %d %s", r.Status, r.Body)
	}
	v := r.Voice(t)
	r = tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"voiceId": v.ID, "text": "Still my voice."})
	if r.Status != 200 || r.Header.Get("X-Voxgate-Provider") != "elevenlabs/eleven_multilingual_v2" {
		t.Fatalf("saved voice, openai down: %d %q", r.Status, r.Header.Get("X-Voxgate-Provider"))
	}
	if last, _ := el.LastRequest(); !strings.Contains(last.Path, el.VoiceIDs()[1]) {
		t.Errorf("the saved voice's fallback spoke in %s", last.Path)
	}

	// A conversation turn falls back too.
	r = tg.Do("POST", "/v1/audio/conversation", "acme", map[string]any{"turns": []any{
		map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "Turn one."},
		map[string]any{"model": "espeak/espeak-ng", "voice": "en", "text": "Turn two."},
	}})
	if r.Status != 200 {
		t.Fatalf("conversation with openai down: %d %s", r.Status, r.Body)
	}

	// Fallbacks of a saved voice are checked like its own voice.
	p := tg.Do("POST", "/v1/voices", "acme", map[string]any{"title": "x", "provider": "espeak", "model": "espeak-ng", "voice_id": "en",
		"fallbacks": []map[string]any{{"provider": "nope", "model": "m", "voice_id": "v"}}}).Problem(t, 422, "unknown_provider")
	if !strings.Contains(p.Detail, "fallback 0") {
		t.Errorf("detail %q", p.Detail)
	}
	harness.AssertPaths(t, tg.Do("POST", "/v1/voices", "acme", map[string]any{"title": "x", "provider": "espeak", "model": "espeak-ng", "voice_id": "en",
		"fallbacks": []map[string]any{{"provider": "espeak", "model": "espeak-ng", "voice_id": "no-such-voice"}}}).Problem(t, 422, "unknown_voice"), "fallbacks.0.voice_id")
}
