package cloud

import (
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/mistral"
)

// TestCloudProviderMistral runs the provider suite over the Mistral
// plugin: clips and streams of Voxtral's float32 PCM converted by the
// plugin, and the voice list. Voxtral gives no word timestamps.
func TestCloudProviderMistral(t *testing.T) {
	t.Parallel()
	f := mistral.New(t, fakeupstream.Options{})
	runCloudSuite(t, cloudCase{
		ID: "mistral", Fake: f, Key: mistral.Key,
		Model: "voxtral-mini-tts-3-0", Voice: mistral.VoiceJane,
		Streams: true,
		// Voxtral sends float32 samples; the plugin makes 16-bit PCM.
		Derived: []string{"pcm_24000", "wav_24000"},
	})
}
