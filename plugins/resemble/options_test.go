package main

import (
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	fake "github.com/voxgate/voxgate/internal/fakeupstream/resemble"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// TestOptionsCheckedBeforeTheCall: providerOptions outside what Resemble
// documents (its synthesis reference) are refused naming the field, and Resemble is not
// called; the values at the edges of each range reach it.
func TestOptionsCheckedBeforeTheCall(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, settings(srv), nil)
	sdktest.CheckOptions(t, p, func() *sdk.SynthesizeRequest { return request(fake.Key) }, srv.Calls, map[string]string{
		`{"use_hd": "yes"}`:   "use_hd",
		`{"voice_uuid": "x"}`: "voice_uuid",
	}, []string{
		`{"use_hd": true, "apply_custom_pronunciations": false, "title": "Clip"}`,
	})
}
