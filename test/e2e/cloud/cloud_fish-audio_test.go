package cloud

import (
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/fishaudio"
)

// TestCloudProviderFishAudio runs the provider suite over the Fish Audio
// plugin: clips and streams planned through /v1/tts, word timestamps from
// the timestamp event stream, and the voice model list.
func TestCloudProviderFishAudio(t *testing.T) {
	t.Parallel()
	f := fishaudio.New(t, fakeupstream.Options{})
	runCloudSuite(t, cloudCase{
		ID: "fish-audio", Fake: f, Key: fishaudio.Key,
		Model: "s2.1-pro", Voice: fishaudio.VoiceNarrator,
		Streams: true, Timestamps: true,
	})
}
