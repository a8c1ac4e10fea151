package gateway_test

import (
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/fal"
)

// TestCloudProviderFal runs the provider suite over the fal plugin against
// its fake: a model id with slashes (fal/fal-ai/kokoro/american-english),
// the JSON answer and the download of the file it names. fal's sync API
// does not stream, so the suite expects streaming_unsupported. The models
// setting lists a built-in model (as deployments written before Orpheus
// was built in do) and an MP3 one, which the plugin must accept.
func TestCloudProviderFal(t *testing.T) {
	f := fal.New(t, fakeupstream.Options{})
	runCloudSuite(t, cloudCase{
		ID: "fal", Fake: f, Key: fal.Key,
		Model: fal.KokoroUS, Voice: "af_heart",
		Settings: []string{"models: " + fal.Orpheus + ", " + fal.ElevenV3 + "=mp3"},
	})
}
