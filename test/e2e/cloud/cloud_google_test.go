package cloud

import (
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/google"
)

// TestCloudProviderGoogle runs the provider suite over the Gemini TTS
// plugin: clips and streams (streamGenerateContent), the static voice
// list; the models give no word timestamps.
func TestCloudProviderGoogle(t *testing.T) {
	t.Parallel()
	f := google.New(t, fakeupstream.Options{})
	runCloudSuite(t, cloudCase{ID: "google", Fake: f, Key: google.Key, Model: "gemini-2.5-flash-preview-tts", Voice: "Kore", Streams: true,
		Derived: []string{"wav_24000"}}) // Gemini sends PCM; the plugin puts it in a header
}
