package harness

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The OpenAPI document is the contract: every response the end-to-end
// tests receive through the harness's client (Gateway.Do and
// Gateway.Client), and every response the JS SDK tests receive (through
// ValidatingProxy), is checked against it with libopenapi-validator.

// TestValidatorCatchesDrift checks that the harness's validation is not
// vacuous: answers that drift from the document fail it.
func TestValidatorCatchesDrift(t *testing.T) {
	v := loadSpec(t)
	tests := []struct {
		name, method, path, ct, body string
		status                       int
		ok                           bool
	}{
		{"problem", "GET", "/v1/voices", "application/problem+json", `{"type":"t","title":"x","status":401,"code":"unauthorized"}`, 401, true},
		{"problem without title", "GET", "/v1/voices", "application/problem+json", `{"type":"t","status":401,"code":"unauthorized"}`, 401, false},
		{"unknown problem code", "GET", "/v1/voices", "application/problem+json", `{"type":"t","title":"x","status":401,"code":"nope"}`, 401, false},
		{"page", "GET", "/v1/voices", "application/json", `{"data":[],"next_cursor":"","has_more":false,"limit":50}`, 200, true},
		{"page with extra field", "GET", "/v1/voices", "application/json", `{"data":[],"next_cursor":"","has_more":false,"limit":50,"total":3}`, 200, false},
		{"openai error", "POST", "/v1/audio/speech", "application/json", `{"error":{"message":"m","type":"invalid_request_error","param":null,"code":"validation_failed"}}`, 400, true},
		{"openai error without param", "GET", "/v1/models", "application/json", `{"error":{"message":"m","type":"invalid_request_error","code":"validation_failed"}}`, 400, false},
		{"clip", "POST", "/v1/audio/speech", "audio/pcm;rate=24000", ``, 200, true},
		{"clip of an undocumented type", "POST", "/v1/audio/speech", "video/mp4", ``, 200, false},
		{"elevenlabs models", "GET", "/elevenlabs/v1/models", "application/json", `[{"model_id":"espeak/espeak-ng","name":"x","can_be_finetuned":false,"can_do_text_to_speech":true,"can_do_voice_conversion":false,"can_use_style":false,"can_use_speaker_boost":false,"serves_pro_voices":false,"token_cost_factor":1,"description":"d","requires_alpha_access":false,"max_characters_request_free_user":5000,"max_characters_request_subscribed_user":5000,"maximum_text_length_per_request":5000,"languages":[],"model_rates":{"character_cost_multiplier":1},"concurrency_group":"standard"}]`, 200, true},
		{"elevenlabs model without what ElevenLabs requires", "GET", "/elevenlabs/v1/models", "application/json", `[{"model_id":"espeak/espeak-ng","name":"x","can_do_text_to_speech":true}]`, 200, false},
		{"one line of a timestamp stream", "POST", "/elevenlabs/v1/text-to-speech/v/stream/with-timestamps", "application/json", `{"audio_base64":"AAA=","alignment":null,"normalized_alignment":null}`, 200, true},
		{"a timestamp stream line without its alignment", "POST", "/elevenlabs/v1/text-to-speech/v/stream/with-timestamps", "application/json", `{"audio_base64":"AAA="}`, 200, false},
		{"openai model", "GET", "/v1/models/tts-1", "application/json", `{"id":"tts-1","object":"model","created":0,"owned_by":"espeak"}`, 200, true},
		{"openai model as a problem", "GET", "/v1/models/nope", "application/problem+json", `{"type":"t","title":"x","status":404,"code":"not_found"}`, 404, false},
		{"elevenlabs models, wrong shape", "GET", "/elevenlabs/v1/models", "application/json", `{"models":[]}`, 200, false},
		{"dashboard twin", "GET", "/ui/api/v1/voices", "application/json", `{"data":[],"next_cursor":"","has_more":false,"limit":50}`, 200, true},
		{"dashboard twin, wrong shape", "GET", "/ui/api/v1/voices", "application/json", `{"data":[]}`, 200, false},
		{"no dashboard twin", "POST", "/ui/api/v1/audio/speech", "audio/wav", ``, 200, false},
		{"no dashboard twin of operations", "GET", "/ui/api/healthz", "application/json", `{"status":"ok"}`, 200, false},
		{"no dashboard twin of the public probe", "GET", "/ui/api/health", "application/json", `{"status":"ok"}`, 200, false},
		{"dashboard twin of the dictionaries", "GET", "/ui/api/v1/pronunciation-dictionaries", "application/json", `{"data":[],"next_cursor":"","has_more":false,"limit":50}`, 200, true},
		{"dashboard twin of the key routes", "DELETE", "/ui/api/v1/api-keys/elevenlabs", "", ``, 204, true},
		{"voice without its envelope", "GET", "/v1/voices/v", "application/json", `{"id":"v"}`, 200, false},
		{"moderation block without its confidence", "POST", "/v1/audio/speech/with-timestamps", "application/json", `{"error":{"code":"content_moderation_blocked","message":"m","reason":{"type":"t","detail":"d"}},"code":"content_moderation_blocked"}`, 422, false},
		{"fail-closed moderation", "POST", "/v1/audio/speech/with-timestamps", "application/json", `{"error":{"code":"content_moderation_blocked","message":"m","reason":{"type":"error_fail_closed","detail":"d","confidence":0}},"code":"content_moderation_blocked"}`, 403, true},
		{"dashboard session", "GET", "/ui/api/session", "application/json", `{"org":"acme","key_id":"k","expires_at":"2026-01-02T15:04:05Z","csrf_token":"t"}`, 200, true},
		{"log row without its cache field", "GET", "/v1/logs", "application/json", `{"data":[{"request_id":"r"}],"next_cursor":"","has_more":false,"limit":50}`, 200, false},
	}
	check := func(name, method, path string, h http.Header, body string, status int, want bool) {
		req := httptest.NewRequest(method, path, nil)
		resp := &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req}
		specMu.Lock()
		ok, errs := v.ValidateHttpResponse(req, resp)
		specMu.Unlock()
		if ok != want {
			t.Errorf("%s: valid = %v, want %v (%v)", name, ok, want, errs)
		}
	}
	for _, tt := range tests {
		check(tt.name, tt.method, tt.path, http.Header{"Content-Type": {tt.ct}}, tt.body, tt.status, tt.ok)
	}
	// Documented headers are checked too.
	headers := []struct {
		name, key, value string
		ok               bool
	}{
		{"cache hit", "X-Voxgate-Cache", "hit", true},
		{"unknown cache answer", "X-Voxgate-Cache", "maybe", false},
		{"provider", "X-Voxgate-Provider", "espeak/espeak-ng", true},
		{"provider without model", "X-Voxgate-Provider", "espeak", false},
	}
	for _, tt := range headers {
		check(tt.name, "POST", "/v1/audio/speech", http.Header{"Content-Type": {"audio/wav"}, tt.key: {tt.value}}, "", 200, tt.ok)
	}
	// Request bodies built from shared parts (allOf) stay closed, and
	// each endpoint takes only its own fields.
	const inline = `"model":"espeak","voice":"en","text":"x"`
	requests := []struct {
		name, method, path, body string
		ok                       bool
	}{
		{"speech", "POST", "/v1/audio/speech", `{` + inline + `,"output":"mp3","instructions":"calm","timestamps":"off"}`, true},
		{"speech, unknown field", "POST", "/v1/audio/speech", `{` + inline + `,"bogus":1}`, false},
		{"speech, timestamps on the plain endpoint", "POST", "/v1/audio/speech", `{` + inline + `,"timestamps":"on"}`, false},
		{"speech, captions on the plain endpoint", "POST", "/v1/audio/speech", `{` + inline + `,"captions":"srt"}`, false},
		{"speech, unknown output format", "POST", "/v1/audio/speech", `{` + inline + `,"output":"ogg"}`, false},
		{"speech, output object", "POST", "/v1/audio/speech", `{` + inline + `,"output":{"format":"wav","sampleRate":16000}}`, true},
		{"speech, 21 dictionaries", "POST", "/v1/audio/speech", `{` + inline + `,"pronunciations":{"dictionaryIds":[` + strings.Repeat(`"`+"6f1c6a52-5b0c-4d7e-9a53-3c1f2d8e9b10"+`",`, 20) + `"6f1c6a52-5b0c-4d7e-9a53-3c1f2d8e9b11"]}}`, false},
		{"with timestamps", "POST", "/v1/audio/speech/with-timestamps", `{` + inline + `,"timestamps":"auto","captions":"vtt"}`, true},
		{"with timestamps, unknown mode", "POST", "/v1/audio/speech/with-timestamps", `{` + inline + `,"timestamps":"maybe"}`, false},
		{"stream with output", "POST", "/v1/audio/speech/stream", `{` + inline + `,"output":"wav"}`, false},
		{"stream", "POST", "/v1/audio/speech/stream", `{` + inline + `}`, true},
		{"conversation", "POST", "/v1/audio/conversation", `{"model":"espeak","normalizeVolume":false,"turns":[{"mode":"inline","voice":"en","text":"x","instructions":"calm"}]}`, true},
		{"conversation, unknown field", "POST", "/v1/audio/conversation", `{"model":"espeak","turns":[{"voice":"en","text":"x"}],"bogus":1}`, false},
		{"dictionary change", "PATCH", "/v1/pronunciation-dictionaries/default", `{"description":"d"}`, true},
		{"dictionary change, unknown field", "PATCH", "/v1/pronunciation-dictionaries/default", `{"name":"n","bogus":1}`, false},
		{"rule without its word", "POST", "/v1/pronunciation-dictionaries/default/rules", `{"replacement":"r"}`, false},
	}
	for _, tt := range requests {
		req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer k")
		specMu.Lock()
		ok, errs := v.ValidateHttpRequest(req)
		specMu.Unlock()
		if ok != tt.ok {
			t.Errorf("request %s: valid = %v, want %v (%v)", tt.name, ok, tt.ok, errs)
		}
	}
}

// TestCheckSchemaCatchesDrift: CheckSchema is not vacuous either. The
// webhook body of a job, as the document describes it, passes; a body
// without its warnings, or with a field the document does not list,
// fails.
func TestCheckSchemaCatchesDrift(t *testing.T) {
	const data = `"id":"0b0c5d4e-1f2a-4b3c-8d9e-0f1a2b3c4d5e","state":"succeeded","chunks_done":2,"chunks_total":2,"characters":38,"credits":0,"duration_ms":2410`
	for _, tc := range []struct {
		name, body string
		ok         bool
	}{
		{"job event", `{"type":"job.succeeded","created_at":"2026-11-29T02:00:00Z","data":{` + data + `,"warnings":[]}}`, true},
		{"failed job event", `{"type":"job.failed","created_at":"2026-11-29T02:00:00Z","data":{` + strings.Replace(data, "succeeded", "failed", 1) + `,"error":"provider_error","error_detail":"d","warnings":[]}}`, true},
		{"without warnings", `{"type":"job.succeeded","created_at":"2026-11-29T02:00:00Z","data":{` + data + `}}`, false},
		{"warnings null", `{"type":"job.succeeded","created_at":"2026-11-29T02:00:00Z","data":{` + data + `,"warnings":null}}`, false},
		{"an unlisted field", `{"type":"job.succeeded","created_at":"2026-11-29T02:00:00Z","data":{` + data + `,"warnings":[],"bytes":1}}`, false},
		{"an unknown event", `{"type":"job.started","created_at":"2026-11-29T02:00:00Z","data":{` + data + `,"warnings":[]}}`, false},
	} {
		if ok, msgs := schemaErrors(t, "JobEvent", []byte(tc.body)); ok != tc.ok {
			t.Errorf("%s: valid %v, want %v (%v)", tc.name, ok, tc.ok, msgs)
		}
	}
}
