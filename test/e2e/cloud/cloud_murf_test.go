package cloud

import (
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/murf"
)

// TestCloudProviderMurf runs the provider suite over the murf plugin
// against its fake, once per model: GEN2's clips and timestamps go
// through the plugin (JSON answers) and its streams are planned; FALCON's
// clips and streams are all planned, so the gateway itself sends them,
// retries them and passes their errors on.
func TestCloudProviderMurf(t *testing.T) {
	t.Parallel()
	t.Run("GEN2", func(t *testing.T) {
		f := murf.New(t, fakeupstream.Options{})
		runCloudSuite(t, cloudCase{
			ID: "murf", Fake: f, Key: murf.Key, Model: "GEN2", Voice: murf.VoiceNatalie,
			Streams: true, Timestamps: true,
		})
	})
	t.Run("FALCON", func(t *testing.T) {
		f := murf.New(t, fakeupstream.Options{})
		runCloudSuite(t, cloudCase{
			ID: "murf", Fake: f, Key: murf.Key, Model: "FALCON", Voice: murf.VoiceKen,
			Streams: true,
		})
	})
}
