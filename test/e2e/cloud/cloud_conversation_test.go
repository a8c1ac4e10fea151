package cloud

import (
	"strings"
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/cartesia"
	"github.com/voxgate/voxgate/internal/fakeupstream/elevenlabs"
	"github.com/voxgate/voxgate/internal/fakeupstream/hume"
	"github.com/voxgate/voxgate/internal/fakeupstream/inworld"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestConversationAcrossFourCloudProviders: one conversation, four cloud
// providers (each a real plugin process against its fake), rendered on one
// timeline with word timestamps for every turn.
func TestConversationAcrossFourCloudProviders(t *testing.T) {
	t.Parallel()
	el := elevenlabs.New(t, fakeupstream.Options{})
	ca := cartesia.New(t, fakeupstream.Options{})
	hu := hume.New(t, fakeupstream.Options{})
	in := inworld.New(t, fakeupstream.Options{})
	provider := func(id, base, key string) string {
		return "  " + id + ":\n    plugin: voxgate-" + id + "\n    base_url: " + base + "\n    api_key: " + key + "\n    managed: true\n    timeout: 10s\n"
	}
	cfg := `
server:
  listen: 127.0.0.1:0
storage:
  path: %DIR%/voxgate.db
plugins:
  dir: %BIN%/plugins
providers:
` + provider("elevenlabs", el.BaseURL(), elevenlabs.Key) + provider("cartesia", ca.BaseURL(), cartesia.Key) +
		provider("hume", hu.BaseURL(), hume.Key) + provider("inworld", in.BaseURL(), inworld.Key) + `orgs:
  acme:
    providers:
      elevenlabs: {enabled: true}
      cartesia: {enabled: true}
      hume: {enabled: true}
      inworld: {enabled: true}
`
	tg := harness.Start(t, cfg)
	tg.Secrets = append(tg.Secrets, elevenlabs.Key, cartesia.Key, hume.Key, inworld.Key)
	turns := []map[string]any{
		{"model": "elevenlabs/eleven_multilingual_v2", "voice": el.VoiceIDs()[0], "text": "Welcome to the panel."},
		{"model": "cartesia/sonic-2", "voice": cartesia.VoiceKatie, "text": "Thank you for having me here."},
		{"model": "hume/octave-2", "voice": hume.VoiceAva, "text": "Let us talk about speech."},
		{"model": "inworld/inworld-tts-1.5-max", "voice": in.VoiceIDs()[0], "text": "Gladly, where shall we start?"},
	}
	r := tg.Do("POST", "/v1/audio/conversation/with-timestamps", "acme", map[string]any{"turns": turns, "gapMs": 200})
	if r.Status != 200 {
		t.Fatalf("conversation: %d %s", r.Status, r.Body)
	}
	var env harness.ConversationEnvelope
	r.JSON(t, &env)
	total := harness.DecodeAudio(t, env.Audio, env.MediaType)
	words := map[int]int{}
	prev := -1.0
	for _, ts := range env.Timestamps {
		if ts.Start < prev-1e-3 || ts.End < ts.Start || ts.End > total+0.01 {
			t.Fatalf("timestamp %+v out of order or outside the %.2fs clip", ts, total)
		}
		prev = ts.Start
		words[ts.TurnIndex]++
	}
	for i, turn := range turns {
		if want := len(strings.Fields(turn["text"].(string))); words[i] != want {
			t.Errorf("turn %d (%s): %d timestamps for %d words", i, turn["model"], words[i], want)
		}
	}
	if meta, _ := env.ProviderMetadata["voxgate"].(map[string]any); meta == nil || len(meta["turns"].([]any)) != 4 {
		t.Errorf("providerMetadata %v", env.ProviderMetadata)
	}
}
