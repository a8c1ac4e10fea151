package cloud

import (
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/smallestai"
)

// TestCloudProviderSmallestAI runs the provider suite over the Smallest AI
// plugin against its fake: clips planned through POST /tts, streams from
// the server-sent events of /tts/live, the catalog and cloned voices.
func TestCloudProviderSmallestAI(t *testing.T) {
	t.Parallel()
	f := smallestai.New(t, fakeupstream.Options{})
	runCloudSuite(t, cloudCase{
		ID: "smallest-ai", Fake: f, Key: smallestai.Key,
		Model: "lightning_v3.1", Voice: smallestai.VoiceMagnus,
		Streams: true,
	})
}
