package cloud

import (
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/minimax"
)

// TestCloudProviderMiniMax runs the provider suite over the MiniMax
// plugin. The fake answers a rejected key and a rate limit as MiniMax
// does, with HTTP 200 and a status code in base_resp, so this also holds
// the plugin to reporting them as 401 and 429 and to retrying the latter.
// MiniMax's HTTP subtitles are not word timings: no timestamps.
func TestCloudProviderMiniMax(t *testing.T) {
	t.Parallel()
	f := minimax.New(t, fakeupstream.Options{})
	runCloudSuite(t, cloudCase{
		ID: "minimax", Fake: f, Key: minimax.Key,
		Model: "speech-2.8-hd", Voice: minimax.VoiceNarrator,
		Streams: true,
	})
}
