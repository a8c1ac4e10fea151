package dialects

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/elevenlabs"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// dialectGateway runs eSpeak and the OpenAI and ElevenLabs plugins
// against their fakes, with aliases that move OpenAI's names to eSpeak
// for one organization (acme) and keep them at OpenAI for another
// (globex), and an alias of a saved voice.
type dialectGateway struct {
	*harness.Gateway
	oai *openai.Server
	el  *elevenlabs.Server
}

func startDialects(t *testing.T, extraACME string) *dialectGateway {
	t.Helper()
	oai := openai.New(t, fakeupstream.Options{Keys: []string{openai.Key}})
	el := elevenlabs.New(t, fakeupstream.Options{Keys: []string{"xi-managed-key-000000000000"}})
	cfg := `
server:
  listen: 127.0.0.1:0
  max_body_bytes: 65536
limits:
  max_text_chars: 5000
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
  elevenlabs:
    plugin: voxgate-elevenlabs
    base_url: ` + el.BaseURL() + `
    api_key: xi-managed-key-000000000000
    managed: true
aliases:
  models:
    eleven_multilingual_v2: elevenlabs/eleven_multilingual_v2
orgs:
  acme:
    moderation: standard
    aliases:
      models: {tts-1: espeak/espeak-ng, tts-1-hd: espeak}
      voices:
        alloy: {voice: en-us}
        narrator: {model: espeak/espeak-ng, voice: en}
` + extraACME + `
    providers:
      espeak: {enabled: true}
      openai: {enabled: true}
      elevenlabs: {enabled: true}
  globex:
    providers:
      openai: {enabled: true}
      elevenlabs: {enabled: true}
moderation:
  rulesets:
    standard:
      checks: [{builtin: {}}]
`
	tg := harness.Start(t, cfg)
	tg.Secrets = append(tg.Secrets, openai.Key, "xi-managed-key-000000000000")
	return &dialectGateway{Gateway: tg, oai: oai, el: el}
}

func TestOpenAIDialect(t *testing.T) {
	t.Parallel()
	d := startDialects(t, "")

	// Without aliases (globex) tts-1 is OpenAI's own model; mp3 is the
	// default format.
	r := d.Do("POST", "/v1/audio/speech", "globex", map[string]any{"model": "tts-1", "input": "Hello from OpenAI's body.", "voice": "alloy"})
	if r.Status != 200 || r.Header.Get("Content-Type") != "audio/mpeg" {
		t.Fatalf("globex: %d %s %.200s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	if last, _ := d.oai.LastRequest(); !bytes.Contains(last.Body, []byte(`"model":"tts-1"`)) {
		t.Errorf("upstream body %s", last.Body)
	}

	// acme's aliases move the same code to eSpeak; pcm is 24 kHz as
	// OpenAI's is; speed is honoured.
	r = d.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "tts-1", "input": "Hello from eSpeak.", "voice": "alloy", "response_format": "pcm"})
	if r.Status != 200 || r.Header.Get("Content-Type") != "audio/pcm;rate=24000" {
		t.Fatalf("acme pcm: %d %s %.200s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	normal := len(r.Body)
	r = d.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "tts-1", "input": "Hello from eSpeak.", "voice": "alloy", "response_format": "pcm", "speed": 2})
	if r.Status != 200 || len(r.Body) > normal*3/4 {
		t.Fatalf("speed 2: %d, %d bytes against %d", r.Status, len(r.Body), normal)
	}
	if row := d.LastLog("acme"); row.Provider != "espeak" || row.VoiceID != "en-us" {
		t.Errorf("row %+v", row)
	}
	for _, f := range []string{"wav", "mp3"} {
		r = d.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "tts-1", "input": "Formats.", "voice": map[string]any{"id": "narrator"}, "response_format": f})
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", f, r.Status, r.Body)
		}
	}

	// instructions reach a model that follows them and are dropped, with
	// a warning, elsewhere.
	r = d.Do("POST", "/v1/audio/speech", "globex", map[string]any{"model": "gpt-4o-mini-tts", "input": "Calmly.", "voice": "coral", "instructions": "Speak calmly."})
	if last, _ := d.oai.LastRequest(); r.Status != 200 || !bytes.Contains(last.Body, []byte(`"instructions":"Speak calmly."`)) {
		t.Errorf("instructions: %d, upstream %s", r.Status, last.Body)
	}
	r = d.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "tts-1", "input": "Calmly.", "voice": "alloy", "instructions": "Speak calmly."})
	if r.Status != 200 || !strings.Contains(r.Header.Get("X-Voxgate-Warnings"), "instructions were ignored") {
		t.Errorf("dropped instructions: %d, warnings %q", r.Status, r.Header.Get("X-Voxgate-Warnings"))
	}

	// SSE: delta events with base64 audio, then done with usage.
	r = d.Do("POST", "/v1/audio/speech", "globex", map[string]any{"model": "tts-1", "input": "Streamed as events.", "voice": "alloy", "response_format": "pcm", "stream_format": "sse"})
	if r.Status != 200 || r.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("sse: %d %s %.300s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	audio, done := harness.SSEEvents(t, r.Body)
	if len(audio) < 1000 || done == nil || done["usage"].(map[string]any)["input_tokens"].(float64) != float64(len("Streamed as events.")) {
		t.Errorf("sse: %d bytes of audio, done %v", len(audio), done)
	}

	// GET /v1/models: OpenAI's list shape, with the aliases.
	var list struct {
		Object string `json:"object"`
		Data   []struct{ ID, Object, OwnedBy string }
	}
	d.Do("GET", "/v1/models", "acme", nil).JSON(t, &list)
	ids := map[string]bool{}
	for _, m := range list.Data {
		ids[m.ID] = m.Object == "model"
	}
	if list.Object != "list" || !ids["tts-1"] || !ids["espeak/espeak-ng"] || !ids["openai/gpt-4o-mini-tts"] {
		t.Errorf("models %+v", list)
	}

	// GET /v1/models/{model}: an entry of the list, the slash of
	// provider/model sent plainly or escaped as OpenAI's SDKs send it; an
	// alias only in the organization that has it.
	for _, tt := range []struct{ org, path, id, owner string }{
		{"acme", "/v1/models/tts-1", "tts-1", "espeak"},
		{"acme", "/v1/models/espeak/espeak-ng", "espeak/espeak-ng", "espeak"},
		{"acme", "/v1/models/espeak%2Fespeak-ng", "espeak/espeak-ng", "espeak"},
		{"globex", "/v1/models/openai%2Fgpt-4o-mini-tts", "openai/gpt-4o-mini-tts", "openai"},
	} {
		var m struct {
			ID, Object string
			OwnedBy    string `json:"owned_by"`
		}
		d.Do("GET", tt.path, tt.org, nil).JSON(t, &m)
		if m.ID != tt.id || m.Object != "model" || m.OwnedBy != tt.owner {
			t.Errorf("GET %s: %+v", tt.path, m)
		}
	}
	// Every answer on OpenAI's paths is in OpenAI's error shape, so that
	// its SDKs show the message: a model that is not there (acme's alias
	// in globex), no key, a method or an endpoint voxgate does not serve.
	if e := d.Do("GET", "/v1/models/tts-1", "globex", nil).OpenAIError(t, 404, "not_found", ""); e.Error.Type != "not_found_error" || !strings.Contains(e.Error.Message, `"tts-1" does not exist`) {
		t.Errorf("missing model: %+v", e.Error)
	}
	d.Do("GET", "/v1/models/tts-1", "", nil).OpenAIError(t, 401, "unauthorized", "")
	d.Do("GET", "/v1/models/tts-1?limit=2", "acme", nil).OpenAIError(t, 400, "validation_failed", "limit")
	d.Do("POST", "/v1/models", "acme", map[string]any{}).OpenAIError(t, 405, "method_not_allowed", "")
	d.Do("POST", "/v1/chat/completions", "acme", map[string]any{"model": "gpt-4o"}).OpenAIError(t, 404, "not_found", "")
	d.Do("POST", "/v1/audio/transcriptions", "acme", map[string]any{}).OpenAIError(t, 404, "not_found", "")

	// Bad input gets OpenAI's envelope with voxgate's statuses and codes.
	long := strings.Repeat("a", 5001)
	tests := []struct {
		name, org   string
		body        any
		status      int
		code, param string
		hdr         []string
	}{
		{"unknown response_format", "acme", map[string]any{"model": "tts-1", "input": "x", "voice": "alloy", "response_format": "ogg"}, 400, "validation_failed", "response_format", nil},
		{"format voxgate cannot make yet", "acme", map[string]any{"model": "tts-1", "input": "x", "voice": "alloy", "response_format": "vorbis"}, 400, "validation_failed", "response_format", nil},
		{"input too long", "acme", map[string]any{"model": "tts-1", "input": long, "voice": "alloy"}, 422, "text_too_long", "", nil},
		{"unknown voice alias", "acme", map[string]any{"model": "tts-1", "input": "x", "voice": "no-such-alias"}, 422, "provider_rejected_request", "", nil},
		{"unknown saved voice", "acme", map[string]any{"model": "tts-1", "input": "x", "voice": map[string]any{"id": "0b0c5d4e-1f2a-4b3c-8d9e-0f1a2b3c4d5e"}}, 404, "voice_not_found", "", nil},
		{"unknown field", "acme", map[string]any{"model": "tts-1", "input": "x", "voice": "alloy", "colour": "red"}, 400, "validation_failed", "colour", nil},
		{"missing voice", "acme", map[string]any{"model": "tts-1", "input": "x"}, 400, "validation_failed", "voice", nil},
		{"blank input", "acme", map[string]any{"model": "tts-1", "input": " ", "voice": "alloy"}, 400, "validation_failed", "input", nil},
		{"bad speed", "acme", map[string]any{"model": "tts-1", "input": "x", "voice": "alloy", "speed": 9}, 400, "validation_failed", "speed", nil},
		{"bad stream_format", "acme", map[string]any{"model": "tts-1", "input": "x", "voice": "alloy", "stream_format": "ws"}, 400, "validation_failed", "stream_format", nil},
		{"no key", "", map[string]any{"model": "tts-1", "input": "x", "voice": "alloy"}, 401, "unauthorized", "", nil},
		{"moderated", "acme", map[string]any{"model": "tts-1", "input": "VOXGATE-MODERATION-TEST", "voice": "alloy"}, 422, "content_moderation_blocked", "", nil},
		{"models without key", "", nil, 401, "unauthorized", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.body == nil {
				d.Do("GET", "/v1/models", tt.org, nil).OpenAIError(t, tt.status, tt.code, tt.param)
				return
			}
			d.Do("POST", "/v1/audio/speech", tt.org, tt.body).OpenAIError(t, tt.status, tt.code, tt.param)
		})
	}
	// voxgate's own body on the same path keeps its problem objects.
	d.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "espeak", "voice": "en", "text": ""}).Problem(t, 400, "validation_failed")
}

func TestElevenLabsDialect(t *testing.T) {
	t.Parallel()
	d := startDialects(t, "")
	key := d.Keys["acme"]
	xi := func(method, path string, body any, hdr ...string) *harness.Response {
		return d.Do(method, path, "", body, append([]string{"xi-api-key", key}, hdr...)...)
	}
	// A voice alias, on eSpeak; the default output is mp3_44100_128.
	r := xi("POST", "/elevenlabs/v1/text-to-speech/narrator", map[string]any{"text": "Hello from the ElevenLabs body."})
	if r.Status != 200 || r.Header.Get("Content-Type") != "audio/mpeg" {
		t.Fatalf("convert: %d %s %.200s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	r = xi("POST", "/elevenlabs/v1/text-to-speech/narrator?output_format=pcm_16000", map[string]any{"text": "Raw samples.", "voice_settings": map[string]any{"speed": 1.1, "stability": 0.5}})
	if r.Status != 200 || r.Header.Get("Content-Type") != "audio/pcm;rate=16000" || !strings.Contains(r.Header.Get("X-Voxgate-Warnings"), "elevenlabs settings were ignored") {
		t.Fatalf("pcm_16000: %d %s %q", r.Status, r.Header.Get("Content-Type"), r.Header.Get("X-Voxgate-Warnings"))
	}

	// ElevenLabs' own voices and models, through the ElevenLabs plugin:
	// voice_settings reach it.
	voice := d.el.VoiceIDs()[0]
	r = xi("POST", "/elevenlabs/v1/text-to-speech/"+voice+"?output_format=mp3_44100_128", map[string]any{"text": "To the provider.", "model_id": "eleven_multilingual_v2", "voice_settings": map[string]any{"stability": 0.4}})
	if r.Status != 200 {
		t.Fatalf("elevenlabs voice: %d %s", r.Status, r.Body)
	}
	if last, _ := d.el.LastRequest(); !bytes.Contains(last.Body, []byte(`"stability":0.4`)) {
		t.Errorf("upstream body %s", last.Body)
	}

	// with-timestamps: base64 audio and a character alignment.
	r = xi("POST", "/elevenlabs/v1/text-to-speech/narrator/with-timestamps?output_format=pcm_22050", map[string]any{"text": "Two words."})
	var ts struct {
		AudioBase64 string `json:"audio_base64"`
		Alignment   struct {
			Characters []string  `json:"characters"`
			Starts     []float64 `json:"character_start_times_seconds"`
			Ends       []float64 `json:"character_end_times_seconds"`
		} `json:"alignment"`
	}
	r.JSON(t, &ts)
	a := ts.Alignment
	if r.Status != 200 || strings.Join(a.Characters, "") != "Two words." || len(a.Starts) != len(a.Characters) || len(a.Ends) != len(a.Characters) || a.Ends[len(a.Ends)-1] <= 0 {
		t.Fatalf("with-timestamps: %d %.300s", r.Status, r.Body)
	}
	for i := 1; i < len(a.Starts); i++ {
		if a.Starts[i] < a.Starts[i-1] || a.Ends[i] < a.Starts[i] {
			t.Fatalf("alignment not monotonic at %d: %+v", i, a)
		}
	}

	// stream: the provider's audio as it comes, in the asked format.
	r = xi("POST", "/elevenlabs/v1/text-to-speech/"+voice+"/stream?output_format=pcm_24000", map[string]any{"text": "A stream.", "model_id": "eleven_multilingual_v2"})
	if r.Status != 200 || r.Header.Get("Content-Type") != "audio/pcm;rate=24000" || len(r.Body) < 1000 {
		t.Fatalf("stream: %d %s %d bytes", r.Status, r.Header.Get("Content-Type"), len(r.Body))
	}

	// voices and models in ElevenLabs' shapes.
	var voices struct {
		Voices []struct {
			VoiceID string `json:"voice_id"`
			Name    string `json:"name"`
		} `json:"voices"`
	}
	xi("GET", "/elevenlabs/v1/voices", nil).JSON(t, &voices)
	if len(voices.Voices) < 2 || voices.Voices[0].VoiceID != "alloy" {
		t.Errorf("voices %+v", voices)
	}
	var models []struct {
		ModelID string `json:"model_id"`
		TTS     bool   `json:"can_do_text_to_speech"`
	}
	xi("GET", "/elevenlabs/v1/models", nil).JSON(t, &models)
	if len(models) < 3 || !models[0].TTS {
		t.Errorf("models %+v", models)
	}

	// stream/with-timestamps: newline-ended objects whose audio joins into
	// the clip and whose alignments join into the text.
	r = xi("POST", "/elevenlabs/v1/text-to-speech/narrator/stream/with-timestamps?output_format=pcm_22050", map[string]any{"text": "Two words, streamed."})
	if r.Status != 200 || r.Header.Get("Content-Type") != "application/json" || !bytes.HasSuffix(r.Body, []byte("\n")) {
		t.Fatalf("stream/with-timestamps: %d %s %.300s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	var text string
	var pcm []byte
	lines := bytes.Split(bytes.TrimSuffix(r.Body, []byte("\n")), []byte("\n"))
	for _, l := range lines {
		var c struct {
			AudioBase64 []byte `json:"audio_base64"`
			Alignment   *struct {
				Characters []string `json:"characters"`
			} `json:"alignment"`
		}
		if err := json.Unmarshal(l, &c); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		pcm = append(pcm, c.AudioBase64...)
		if c.Alignment != nil {
			text += strings.Join(c.Alignment.Characters, "")
		}
	}
	if len(lines) < 2 || text != "Two words, streamed." || len(pcm) < 20000 {
		t.Errorf("stream/with-timestamps: %d lines, %d bytes, %q", len(lines), len(pcm), text)
	}
	xi("POST", "/elevenlabs/v1/text-to-speech/narrator/stream/with-timestamps", map[string]any{"text": strings.Repeat("a", 5001)}).ElevenLabsError(t, 422, "text_too_long")

	// GET /v2/voices and /v1/voices/{voice_id}: only the organization's
	// own saved voices; bad parameters named.
	other := d.Do("POST", "/v1/voices", "globex", map[string]any{"title": "Elsewhere", "provider": "openai", "model": "tts-1", "voice_id": "alloy"}).Voice(t).ID
	xi("GET", "/elevenlabs/v1/voices/"+other, nil).ElevenLabsError(t, 404, "voice_not_found")
	xi("GET", "/elevenlabs/v1/voices/no-such-voice", nil).ElevenLabsError(t, 404, "voice_not_found")
	var page struct {
		Voices []struct {
			VoiceID string `json:"voice_id"`
		} `json:"voices"`
		TotalCount int `json:"total_count"`
	}
	xi("GET", "/elevenlabs/v2/voices?search=Elsewhere", nil).JSON(t, &page)
	if len(page.Voices) != 0 || page.TotalCount != 0 {
		t.Errorf("acme finds globex's voice: %+v", page)
	}
	if e := xi("GET", "/elevenlabs/v2/voices?page_size=500", nil).ElevenLabsError(t, 400, "validation_failed"); e.Detail.Param != "page_size" {
		t.Errorf("page_size: %+v", e.Detail)
	}
	if e := xi("GET", "/elevenlabs/v2/voices?colour=red", nil).ElevenLabsError(t, 400, "validation_failed"); e.Detail.Param != "colour" {
		t.Errorf("unknown parameter: %+v", e.Detail)
	}
	d.Do("GET", "/elevenlabs/v2/voices", "", nil).ElevenLabsError(t, 401, "unauthorized")

	// Bad input gets ElevenLabs' shape.
	xi("POST", "/elevenlabs/v1/text-to-speech/narrator?output_format=ogg_44100", map[string]any{"text": "x"}).ElevenLabsError(t, 400, "validation_failed")
	xi("POST", "/elevenlabs/v1/text-to-speech/narrator?output_format=ulaw_9000", map[string]any{"text": "x"}).ElevenLabsError(t, 400, "validation_failed")
	xi("POST", "/elevenlabs/v1/text-to-speech/narrator", map[string]any{"text": strings.Repeat("a", 5001)}).ElevenLabsError(t, 422, "text_too_long")
	xi("POST", "/elevenlabs/v1/text-to-speech/no-such-alias", map[string]any{"text": "x", "model_id": "espeak"}).ElevenLabsError(t, 422, "provider_rejected_request")
	xi("POST", "/elevenlabs/v1/text-to-speech/narrator", map[string]any{"text": "VOXGATE-MODERATION-TEST"}).ElevenLabsError(t, 422, "content_moderation_blocked")
	xi("POST", "/elevenlabs/v1/text-to-speech/narrator?colour=red", map[string]any{"text": "x"}).ElevenLabsError(t, 400, "validation_failed")
	xi("GET", "/elevenlabs/v1/nope", nil).ElevenLabsError(t, 404, "not_found")
	e := d.Do("POST", "/elevenlabs/v1/text-to-speech/narrator", "", map[string]any{"text": "x"}).ElevenLabsError(t, 401, "unauthorized")
	if !strings.Contains(e.Detail.Message, "xi-api-key") {
		t.Errorf("401 message %q", e.Detail.Message)
	}
	// Bearer works there too; xi-api-key works nowhere else.
	if r := d.Do("GET", "/elevenlabs/v1/voices", "acme", nil); r.Status != 200 {
		t.Errorf("bearer on elevenlabs: %d", r.Status)
	}
	d.Do("GET", "/v1/voices", "", nil, "xi-api-key", key).Problem(t, 401, "unauthorized")
}
