package cloud

import (
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/deepgram"
)

// TestCloudProviderDeepgram runs the provider suite over the Deepgram
// Aura plugin, whose clips and streams the gateway sends itself (planned
// requests); Aura gives no word timestamps.
func TestCloudProviderDeepgram(t *testing.T) {
	t.Parallel()
	f := deepgram.New(t, fakeupstream.Options{})
	runCloudSuite(t, cloudCase{ID: "deepgram", Fake: f, Key: deepgram.Key, Model: "aura-2", Voice: "thalia-en", Streams: true})
}
