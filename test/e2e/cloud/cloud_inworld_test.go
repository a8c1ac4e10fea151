package cloud

import (
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/inworld"
)

// TestCloudProviderInworld runs the provider suite over the inworld
// plugin against its fake: JSON clips with word timestamps, NDJSON
// streams, the Voices API list.
func TestCloudProviderInworld(t *testing.T) {
	t.Parallel()
	f := inworld.New(t, fakeupstream.Options{})
	runCloudSuite(t, cloudCase{
		ID: "inworld", Fake: f, Key: inworld.Key,
		Model: "inworld-tts-1.5-max", Voice: inworld.VoiceDennis,
		Streams: true, Timestamps: true,
	})
}
