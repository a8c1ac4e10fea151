package cloud

import (
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/xai"
)

// TestCloudProviderXAI runs the provider suite over the xAI plugin against
// its fake: clips and streams planned through POST /v1/tts, the voice
// list from /v1/tts/voices.
func TestCloudProviderXAI(t *testing.T) {
	t.Parallel()
	f := xai.New(t, fakeupstream.Options{})
	runCloudSuite(t, cloudCase{
		ID: "xai", Fake: f, Key: xai.Key,
		Model: "grok-tts", Voice: xai.VoiceEve,
		Streams: true,
	})
}
