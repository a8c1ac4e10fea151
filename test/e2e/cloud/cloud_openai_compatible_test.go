package cloud

import (
	"fmt"
	"slices"
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
	"github.com/voxgate/voxgate/sdk/sdktest"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestCloudProviderOpenAICompatible runs the provider suite over the
// generic OpenAI-compatible plugin against the OpenAI fake mounted under a
// root of its own, as a self-hosted server mounts the API.
func TestCloudProviderOpenAICompatible(t *testing.T) {
	t.Parallel()
	f := openai.NewAt(t, fakeupstream.Options{}, "/kokoro/api/v1")
	runCloudSuite(t, cloudCase{
		ID: "openai-compatible", Fake: f, Key: openai.Key,
		Model: "tts-1", Voice: "echo",
		Streams: true,
		Settings: []string{
			"name: Kokoro-FastAPI",
			"models: tts-1, gpt-4o-mini-tts",
			"voices: alloy, echo",
			"formats: pcm, wav, mp3",
		},
	})
}

// TestCloudProviderOpenAICompatibleTwice runs two differently configured
// deployments of the one plugin side by side in one gateway, under the
// provider ids kokoro and localai: each shows its own models and voices
// and synthesizes against its own server.
func TestCloudProviderOpenAICompatibleTwice(t *testing.T) {
	t.Parallel()
	kokoro := openai.NewAt(t, fakeupstream.Options{}, "/kokoro/v1")
	localai := openai.NewAt(t, fakeupstream.Options{}, "/localai/api")
	tg := harness.Start(t, fmt.Sprintf(`
server:
  listen: 127.0.0.1:0
storage:
  path: %%DIR%%/voxgate.db
plugins:
  dir: %%BIN%%/plugins
providers:
  kokoro:
    plugin: voxgate-openai-compatible
    base_url: %s
    api_key: %s
    managed: true
    timeout: 5s
    name: Kokoro
    models: tts-1
    voices: alloy, echo
    formats: pcm, wav
    speed: 0.25-4
  localai:
    plugin: voxgate-openai-compatible
    base_url: %s
    api_key: %s
    managed: true
    timeout: 5s
    name: LocalAI
    models: gpt-4o-mini-tts, tts-1-hd
    default_model: tts-1-hd
    voices.gpt-4o-mini-tts: nova, ballad
    voices.tts-1-hd: shimmer
    formats: mp3
    streaming: false
orgs:
  acme:
    providers:
      kokoro: {enabled: true}
      localai: {enabled: true}
`, kokoro.BaseURL(), openai.Key, localai.BaseURL(), openai.Key))
	tg.Secrets = append(tg.Secrets, openai.Key)

	r := tg.Do("GET", "/v1/providers", "acme", nil)
	var cat struct {
		Data []struct {
			ID     string `json:"id"`
			Name   string `json:"name"`
			Models []struct {
				ID           string `json:"id"`
				Capabilities struct {
					Streaming bool `json:"streaming"`
					Speed     bool `json:"speed"`
				} `json:"capabilities"`
			} `json:"models"`
		} `json:"data"`
	}
	r.JSON(t, &cat)
	want := map[string]struct {
		name      string
		models    []string
		streaming bool
		speed     bool
	}{
		"kokoro":  {"Kokoro", []string{"tts-1"}, true, true},
		"localai": {"LocalAI", []string{"gpt-4o-mini-tts", "tts-1-hd"}, false, false},
	}
	if len(cat.Data) != 2 {
		t.Fatalf("providers %s", r.Body)
	}
	for _, p := range cat.Data {
		w := want[p.ID]
		var ids []string
		for _, m := range p.Models {
			ids = append(ids, m.ID)
			if m.Capabilities.Streaming != w.streaming || m.Capabilities.Speed != w.speed {
				t.Errorf("%s/%s capabilities %+v", p.ID, m.ID, m.Capabilities)
			}
		}
		if p.Name != w.name || !slices.Equal(ids, w.models) {
			t.Errorf("provider %s: name %q, models %v; want %q, %v", p.ID, p.Name, ids, w.name, w.models)
		}
	}

	voices := func(path string) []string {
		r := tg.Do("GET", path, "acme", nil)
		var list struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		r.JSON(t, &list)
		var ids []string
		for _, v := range list.Data {
			ids = append(ids, v.ID)
		}
		return ids
	}
	for path, want := range map[string][]string{
		"/v1/providers/kokoro/voices":                        {"alloy", "echo"},
		"/v1/providers/localai/voices":                       {"shimmer"},
		"/v1/providers/localai/voices?model=gpt-4o-mini-tts": {"ballad", "nova"},
	} {
		if got := voices(path); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", path, got, want)
		}
	}

	for _, c := range []struct {
		model, voice, mediaType string
		fake                    *openai.Server
	}{
		{"kokoro/tts-1", "echo", "audio/wav", kokoro}, // its default, pcm, is answered as wav
		{"localai", "shimmer", "audio/mpeg", localai},
		{"localai/gpt-4o-mini-tts", "ballad", "audio/mpeg", localai},
	} {
		before := c.fake.CallsTo(c.fake.SpeechURLPath())
		r := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": c.model, "voice": c.voice, "text": "Two servers, one gateway."})
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", c.model, r.Status, r.Body)
		}
		if ct := r.Header.Get("Content-Type"); ct != c.mediaType {
			t.Errorf("%s: Content-Type %q, want %q", c.model, ct, c.mediaType)
		}
		if _, err := sdktest.Decode(r.Header.Get("Content-Type"), r.Body); err != nil {
			t.Errorf("%s: %v", c.model, err)
		}
		if c.fake.CallsTo(c.fake.SpeechURLPath()) != before+1 {
			t.Errorf("%s did not reach its own server", c.model)
		}
	}
	// localai is declared without streaming, so the gateway refuses its
	// streams before calling it; kokoro streams.
	r = tg.Do("POST", "/v1/audio/speech/stream", "acme", map[string]any{"model": "localai/tts-1-hd", "voice": "shimmer", "text": "No stream here."})
	r.Problem(t, 501, "streaming_unsupported")
	r = tg.Do("POST", "/v1/audio/speech/stream", "acme", map[string]any{"model": "kokoro/tts-1", "voice": "alloy", "text": "A stream here."})
	if r.Status != 200 {
		t.Errorf("kokoro stream: %d %s", r.Status, r.Body)
	}
}
