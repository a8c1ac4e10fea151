package cloud

import (
	"strings"
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/cartesia"
	"github.com/voxgate/voxgate/internal/fakeupstream/elevenlabs"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// passThroughFake is a fake whose requests the test reads.
type passThroughFake interface {
	cloudFake
	Requests() []fakeupstream.Request
}

// TestCloudPassThroughModels: behind the gateway, a model the provider
// has and its plugin does not list (a newer one, in the fake's
// Options.NewModels) answers audio under the id the caller wrote, which
// reaches the provider verbatim and is what the log row names; an id that
// cannot be the provider's is a 422 provider_rejected_request naming it,
// with no call upstream; the listings never show the plugin's "*" entry.
func TestCloudPassThroughModels(t *testing.T) {
	t.Parallel()
	bodyField := func(name string) func(fakeupstream.Request) string {
		return func(r fakeupstream.Request) string {
			var b map[string]any
			_ = r.JSON(&b)
			s, _ := b[name].(string)
			return s
		}
	}
	tests := []struct {
		id, model, voice, invalid string
		fake                      func(t *testing.T, o fakeupstream.Options) (passThroughFake, string)
		sent                      func(fakeupstream.Request) string
	}{
		{id: "openai", model: "gpt-5-mini-tts-2027-01-01", voice: "alloy", invalid: "GPT-5_tts",
			fake: func(t *testing.T, o fakeupstream.Options) (passThroughFake, string) {
				return openai.New(t, o), openai.Key
			}, sent: bodyField("model")},
		{id: "elevenlabs", model: "eleven_v4_preview", voice: elevenlabs.VoiceRachel, invalid: "eleven-v4",
			fake: func(t *testing.T, o fakeupstream.Options) (passThroughFake, string) {
				return elevenlabs.New(t, o), elevenlabs.Key
			}, sent: bodyField("model_id")},
		{id: "cartesia", model: "sonic-4.1-2027-02-01", voice: cartesia.VoiceKatie, invalid: "ink-whisper",
			fake: func(t *testing.T, o fakeupstream.Options) (passThroughFake, string) {
				return cartesia.New(t, o), cartesia.Key
			}, sent: bodyField("model_id")},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			t.Parallel()
			f, key := tt.fake(t, fakeupstream.Options{NewModels: []string{tt.model}})
			tg := startCloudCase(t, cloudCase{ID: tt.id, Fake: f, Key: key})
			body := map[string]any{"model": tt.id + "/" + tt.model, "voice": tt.voice, "text": "The quick brown fox jumps over the lazy dog."}
			r := tg.Do("POST", "/v1/audio/speech", "acme", body)
			if r.Status != 200 {
				t.Fatalf("speech: %d %s", r.Status, r.Body)
			}
			if _, err := sdktest.Decode(r.Header.Get("Content-Type"), r.Body); err != nil {
				t.Errorf("the clip (%s) does not decode: %v", r.Header.Get("Content-Type"), err)
			}
			reqs := f.Requests()
			if len(reqs) == 0 || tt.sent(reqs[len(reqs)-1]) != tt.model {
				t.Errorf("the provider was not asked for %s (%d requests)", tt.model, len(reqs))
			}
			if row := lastLogRow(t, tg, "acme"); row.Provider != tt.id || row.Model != tt.model || row.Status != 200 {
				t.Errorf("log row %+v", row)
			}

			f.Reset()
			body["model"] = tt.id + "/" + tt.invalid
			p := tg.Do("POST", "/v1/audio/speech", "acme", body).Problem(t, 422, "provider_rejected_request")
			if !strings.Contains(p.Detail, `"`+tt.invalid+`"`) || p.Provider != tt.id {
				t.Errorf("problem %+v", p)
			}
			if n := f.Calls(); n != 0 {
				t.Errorf("%d upstream calls for %q", n, tt.invalid)
			}

			for _, path := range []string{"/v1/providers", "/v1/models"} {
				if r := tg.Do("GET", path, "acme", nil); r.Status != 200 || strings.Contains(string(r.Body), `"id":"*"`) || strings.Contains(string(r.Body), "passed through") {
					t.Errorf("%s: %d, lists the pass-through entry: %.300s", path, r.Status, r.Body)
				}
			}
		})
	}
}
