package gateway_test

import (
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/resemble"
)

// TestCloudProviderResemble runs the provider suite over the resemble
// plugin against its fake. Resemble has two hosts: the suite points
// base_url (the API host: voices) at the fake, and synthesis_url (the
// synthesis host) goes in the provider's settings, at the same fake.
func TestCloudProviderResemble(t *testing.T) {
	f := resemble.New(t, fakeupstream.Options{})
	runCloudSuite(t, cloudCase{
		ID: "resemble", Fake: f, Key: resemble.Key,
		Model: "chatterbox", Voice: resemble.VoiceLucy,
		Streams: true, Timestamps: true,
		Settings: []string{"synthesis_url: " + f.SynthesisURL()},
	})
}
