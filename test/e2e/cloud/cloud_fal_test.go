package cloud

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/fal"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestCloudProviderFal runs the provider suite over the fal plugin against
// its fake: a model id with slashes (fal/fal-ai/kokoro/american-english),
// the JSON answer and the download of the file it names. fal's sync API
// does not stream, so the suite expects streaming_unsupported. The models
// setting lists a built-in model (as deployments written before Orpheus
// was built in do) and an MP3 one, which the plugin must accept.
func TestCloudProviderFal(t *testing.T) {
	t.Parallel()
	f := fal.New(t, fakeupstream.Options{})
	runCloudSuite(t, cloudCase{
		ID: "fal", Fake: f, Key: fal.Key,
		Model: fal.KokoroUS, Voice: "af_heart",
		Settings: []string{"models: " + fal.Orpheus + ", " + fal.ElevenV3 + "=mp3"},
	})
}

// TestCloudProviderFalPassThrough: a fal model the plugin does not list
// (fal-ai/elevenlabs/tts/eleven-v3 is served by the fake, not built into
// the plugin, and not in this deployment's models setting) is routed to
// the plugin through its sdk.AnyModel entry, reaches fal as it was named
// and answers audio, also when the gateway processes the clip; key scopes
// hold it to the id as written. An id the plugin refuses is a clear 422,
// never sent, and no listing shows the "*" entry.
func TestCloudProviderFalPassThrough(t *testing.T) {
	t.Parallel()
	f := fal.New(t, fakeupstream.Options{})
	tg := startCloudCase(t, cloudCase{ID: "fal", Fake: f, Key: fal.Key, Settings: []string{"models: " + fal.Orpheus}})
	model := "fal/" + fal.ElevenV3
	body := map[string]any{"model": model, "voice": "Rachel", "text": "The quick brown fox jumps over the lazy dog."}

	t.Run("clip", func(t *testing.T) {
		f.Reset()
		r := tg.Do("POST", "/v1/audio/speech", "acme", body)
		if r.Status != 200 {
			t.Fatalf("speech: %d %s", r.Status, r.Body)
		}
		clip, err := sdktest.Decode(r.Header.Get("Content-Type"), r.Body)
		if err != nil || clip.Format != sdk.FormatMP3 {
			t.Fatalf("the clip (%s) does not decode as MP3: %v", r.Header.Get("Content-Type"), err)
		}
		if got := r.Header.Get("X-Voxgate-Provider"); got != model {
			t.Errorf("X-Voxgate-Provider %q", got)
		}
		if n := f.CallsTo("/" + fal.ElevenV3); n != 1 {
			t.Errorf("%d calls to the app", n)
		}
		got, _ := f.LastRequest()
		var in map[string]any
		if err := json.Unmarshal(got.Body, &in); err != nil || in["text"] != body["text"] || in["voice"] != "Rachel" {
			t.Errorf("input %s", got.Body)
		}
		if row := lastLogRow(t, tg, "acme"); row.Provider != "fal" || row.Model != fal.ElevenV3 || row.Status != 200 {
			t.Errorf("log row %+v", row)
		}
		// Metrics label a passed-through id "*": callers choose these ids,
		// and a series per id would grow without bound.
		m := string(tg.MetricsBody())
		if strings.Contains(m, fal.ElevenV3) || !strings.Contains(m, `voxgate_provider_calls_total{model="*",op="synthesize",outcome="ok",provider="fal"}`) {
			t.Errorf("metrics of the pass-through model:\n%s", harness.Grep(m, "provider=\"fal\""))
		}
	})

	// Speed and a different output make the gateway decode the clip,
	// asking for one of the pass-through model's formats: the plugin
	// answers the app's MP3 all the same, which the gateway decodes.
	t.Run("processed", func(t *testing.T) {
		for _, extra := range []map[string]any{{"speed": 1.25}, {"output": "wav"}} {
			b := maps.Clone(body)
			maps.Copy(b, extra)
			r := tg.Do("POST", "/v1/audio/speech", "acme", b)
			if r.Status != 200 {
				t.Fatalf("%v: %d %s", extra, r.Status, r.Body)
			}
			if _, err := sdktest.Decode(r.Header.Get("Content-Type"), r.Body); err != nil {
				t.Errorf("%v: %s does not decode: %v", extra, r.Header.Get("Content-Type"), err)
			}
		}
	})

	t.Run("OpenAI dialect", func(t *testing.T) {
		r := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": model, "voice": "Rachel", "input": "Hello there."})
		if r.Status != 200 {
			t.Fatalf("speech: %d %s", r.Status, r.Body)
		}
		if _, err := sdktest.Decode(r.Header.Get("Content-Type"), r.Body); err != nil {
			t.Errorf("%s does not decode: %v", r.Header.Get("Content-Type"), err)
		}
	})

	t.Run("refused ids", func(t *testing.T) {
		f.Reset()
		for _, id := range []string{"fal-ai/../admin", "fal-ai/x?y=1", "fal-ai//x", "kokoro"} {
			b := map[string]any{"model": "fal/" + id, "voice": "Rachel", "text": "Hello."}
			p := tg.Do("POST", "/v1/audio/speech", "acme", b).Problem(t, 422, "provider_rejected_request")
			if !strings.Contains(p.Detail, "is not a fal model id") || p.Provider != "fal" {
				t.Errorf("%s: problem %+v", id, p)
			}
		}
		// The gateway's own bound, and the entry's own id, which names
		// no model.
		for _, id := range []string{"*", "fal-ai/a b", "fal-ai/" + strings.Repeat("x", 300)} {
			p := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "fal/" + id, "voice": "Rachel", "text": "Hello."}).Problem(t, 422, "unknown_model")
			if !strings.Contains(p.Detail, "has no model") {
				t.Errorf("%.40s: problem %+v", id, p)
			}
		}
		if n := f.Calls(); n != 0 {
			t.Errorf("%d upstream calls for refused model ids", n)
		}
	})

	t.Run("key scopes", func(t *testing.T) {
		mk := func(models ...string) []string {
			plain, _, err := tg.Core.CreateKey(t.Context(), "acme", "scoped", store.KeyScope{Models: models})
			if err != nil {
				t.Fatal(err)
			}
			return []string{"Authorization", "Bearer " + plain}
		}
		eleven, kokoro := mk(model), mk("fal/"+fal.KokoroUS)
		if r := tg.Do("POST", "/v1/audio/speech", "acme", body, eleven...); r.Status != 200 {
			t.Errorf("a key scoped to %s: %d %s", model, r.Status, r.Body)
		}
		p := tg.Do("POST", "/v1/audio/speech", "acme", body, kokoro...).Problem(t, 403, "key_scope_denied")
		if !strings.Contains(p.Detail, model) {
			t.Errorf("detail %q", p.Detail)
		}
		other := map[string]any{"model": "fal/fal-ai/dia-tts", "voice": "Rachel", "text": "Hello."}
		tg.Do("POST", "/v1/audio/speech", "acme", other, eleven...).Problem(t, 403, "key_scope_denied")
	})

	t.Run("listings", func(t *testing.T) {
		var providers struct {
			Data []struct {
				ID     string `json:"id"`
				Models []struct {
					ID string `json:"id"`
				} `json:"models"`
			} `json:"data"`
		}
		tg.Do("GET", "/v1/providers", "acme", nil).JSON(t, &providers)
		var ids []string
		for _, p := range providers.Data {
			for _, m := range p.Models {
				ids = append(ids, p.ID+"/"+m.ID)
			}
		}
		var openAI struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		tg.Do("GET", "/v1/models", "acme", nil).JSON(t, &openAI)
		for _, m := range openAI.Data {
			ids = append(ids, m.ID)
		}
		var el []struct {
			ModelID string `json:"model_id"`
		}
		tg.Do("GET", "/elevenlabs/v1/models", "acme", nil).JSON(t, &el)
		for _, m := range el {
			ids = append(ids, m.ModelID)
		}
		var documented struct {
			Data []struct {
				Models []string `json:"models"`
			} `json:"data"`
		}
		tg.Do("GET", "/v1/audio/providers", "acme", nil).JSON(t, &documented)
		for _, p := range documented.Data {
			ids = append(ids, p.Models...)
		}
		if !slices.Contains(ids, "fal/"+fal.KokoroUS) || !slices.Contains(ids, "fal/"+fal.Orpheus) {
			t.Fatalf("the listed models are missing: %v", ids)
		}
		for _, id := range ids {
			if strings.Contains(id, sdk.AnyModel) || id == model {
				t.Errorf("listed: %s", id)
			}
		}
	})
}
