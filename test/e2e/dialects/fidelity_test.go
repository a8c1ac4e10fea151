package dialects

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestProviderOptionsRefusedNamingTheField: a providerOptions value
// outside what the provider documents is refused by its plugin before any
// call, and the caller gets 400 validation_failed naming the field under
// providerOptions, in voxgate's problem shape and in the ElevenLabs
// dialect's (which passes its own fields on as providerOptions).
func TestProviderOptionsRefusedNamingTheField(t *testing.T) {
	d := startDialects(t, "")
	voice := d.el.VoiceIDs()[0]
	tests := []struct {
		name    string
		model   string
		options map[string]any
		path    []string
	}{
		{"voice_settings.speed", "", map[string]any{"voice_settings": map[string]any{"speed": 1.5}}, []string{"voice_settings", "speed"}},
		{"seed above 2^32-1", "", map[string]any{"seed": 4294967296}, []string{"seed"}},
		{"four dictionary locators", "", map[string]any{"pronunciation_dictionary_locators": []any{
			map[string]any{"pronunciation_dictionary_id": "a"}, map[string]any{"pronunciation_dictionary_id": "b"},
			map[string]any{"pronunciation_dictionary_id": "c"}, map[string]any{"pronunciation_dictionary_id": "d"},
		}}, []string{"pronunciation_dictionary_locators"}},
		{"apply_text_normalization", "", map[string]any{"apply_text_normalization": "sometimes"}, []string{"apply_text_normalization"}},
		{"language_code on multilingual v2", "", map[string]any{"language_code": "fr"}, []string{"language_code"}},
		{"optimize_streaming_latency", "", map[string]any{"optimize_streaming_latency": 9}, []string{"optimize_streaming_latency"}},
		{"an unknown nested option", "", map[string]any{"voice_settings": map[string]any{"pitch": 2}}, []string{"voice_settings", "pitch"}},
	}
	calls := d.el.Calls()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := map[string]any{"model": "elevenlabs/eleven_multilingual_v2", "voice": voice, "text": "Hello.", "providerOptions": tt.options}
			p := d.Do("POST", "/v1/audio/speech", "globex", body).Problem(t, 400, "validation_failed")
			want := append([]string{"providerOptions"}, tt.path...)
			if len(p.Validation) != 1 || !slices.Equal(p.Validation[0].Path, want) || p.Validation[0].Message == "" || p.Provider != "elevenlabs" {
				t.Errorf("problem %+v, want one validation entry at %v", p, want)
			}
		})
	}
	// The ElevenLabs dialect: a seed of -1 in its body, a latency level
	// of 9 in its query.
	key := d.Keys["globex"]
	xi := func(path string, body any) *harness.Response {
		return d.Do("POST", path, "", body, "xi-api-key", key)
	}
	e := xi("/elevenlabs/v1/text-to-speech/"+voice, map[string]any{"text": "Hi.", "model_id": "eleven_multilingual_v2", "seed": -1}).
		ElevenLabsError(t, 400, "validation_failed")
	if e.Detail.Param != "seed" {
		t.Errorf("dialect seed: %+v", e.Detail)
	}
	e = xi("/elevenlabs/v1/text-to-speech/"+voice+"/stream?optimize_streaming_latency=9", map[string]any{"text": "Hi.", "model_id": "eleven_multilingual_v2"}).
		ElevenLabsError(t, 400, "validation_failed")
	if e.Detail.Param != "optimize_streaming_latency" {
		t.Errorf("dialect latency: %+v", e.Detail)
	}
	if n := d.el.Calls() - calls; n != 0 {
		t.Errorf("%d calls to ElevenLabs for refused options", n)
	}
}

// TestElevenLabsZeroRetentionAndStitching: enable_logging=false, the
// caller's request for zero retention, and the stitching fields reach
// ElevenLabs from the ElevenLabs dialect (its query and body) and from a
// native request's providerOptions.
func TestElevenLabsZeroRetentionAndStitching(t *testing.T) {
	d := startDialects(t, "")
	voice := d.el.VoiceIDs()[0]
	key := d.Keys["globex"]
	stitching := map[string]any{
		"previous_request_ids": []any{"req-1", "req-2"}, "next_request_ids": []any{"req-4"},
		"previous_text": "Before this.", "next_text": "After this.",
	}
	upstream := func(t *testing.T) (enableLogging string, body map[string]any) {
		t.Helper()
		last, ok := d.el.LastRequest()
		if !ok {
			t.Fatal("ElevenLabs was not called")
		}
		if err := json.Unmarshal(last.Body, &body); err != nil {
			t.Fatal(err)
		}
		return last.Query.Get("enable_logging"), body
	}
	for _, suffix := range []string{"", "/stream", "/with-timestamps"} {
		t.Run("dialect"+suffix, func(t *testing.T) {
			body := map[string]any{"text": "Hello.", "model_id": "eleven_multilingual_v2"}
			for k, v := range stitching {
				body[k] = v
			}
			r := d.Do("POST", "/elevenlabs/v1/text-to-speech/"+voice+suffix+"?enable_logging=false&output_format=pcm_24000", "", body, "xi-api-key", key)
			if r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			logging, got := upstream(t)
			if logging != "false" {
				t.Errorf("enable_logging %q upstream, want false", logging)
			}
			for k, v := range stitching {
				if b, _ := json.Marshal(got[k]); string(b) != toJSON(v) {
					t.Errorf("%s upstream %s, want %s", k, b, toJSON(v))
				}
			}
		})
	}
	t.Run("native", func(t *testing.T) {
		options := map[string]any{"enable_logging": false}
		for k, v := range stitching {
			options[k] = v
		}
		r := d.Do("POST", "/v1/audio/speech", "globex", map[string]any{"model": "elevenlabs/eleven_multilingual_v2", "voice": voice, "text": "Hello.", "providerOptions": options})
		if r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		if logging, got := upstream(t); logging != "false" || got["previous_request_ids"] == nil {
			t.Errorf("enable_logging %q, body %v", logging, got)
		}
	})
	t.Run("a logging flag that is not a boolean", func(t *testing.T) {
		e := d.Do("POST", "/elevenlabs/v1/text-to-speech/"+voice+"?enable_logging=maybe", "", map[string]any{"text": "Hi."}, "xi-api-key", key).
			ElevenLabsError(t, 400, "validation_failed")
		if e.Detail.Param != "enable_logging" {
			t.Errorf("%+v", e.Detail)
		}
	})
	t.Run("a fourth request id", func(t *testing.T) {
		e := d.Do("POST", "/elevenlabs/v1/text-to-speech/"+voice, "", map[string]any{"text": "Hi.", "model_id": "eleven_multilingual_v2",
			"previous_request_ids": []any{"a", "b", "c", "d"}}, "xi-api-key", key).ElevenLabsError(t, 400, "validation_failed")
		if e.Detail.Param != "previous_request_ids" {
			t.Errorf("%+v", e.Detail)
		}
	})
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
