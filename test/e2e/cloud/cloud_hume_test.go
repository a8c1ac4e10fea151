package cloud

import (
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/hume"
)

// TestCloudProviderHume runs the provider suite over the Hume Octave
// plugin: planned clips and streams, word timestamps from Octave 2, and
// the voice list of the Voice Library and the account.
func TestCloudProviderHume(t *testing.T) {
	t.Parallel()
	f := hume.New(t, fakeupstream.Options{})
	runCloudSuite(t, cloudCase{ID: "hume", Fake: f, Key: hume.Key, Model: "octave-2", Voice: hume.VoiceAva, Streams: true, Timestamps: true})
}
