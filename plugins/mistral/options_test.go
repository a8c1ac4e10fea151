package main

import (
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	fake "github.com/voxgate/voxgate/internal/fakeupstream/mistral"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// TestOptionsCheckedBeforeTheCall: providerOptions outside what Mistral
// documents (its OpenAPI document's SpeechRequest, whose ref_audio its reference calls base64-encoded audio) are refused naming the field, and Mistral is not
// called; the values at the edges of each range reach it (and the published document, which judges the fake, accepts
// them).
func TestOptionsCheckedBeforeTheCall(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	sdktest.CheckOptions(t, p, func() *sdk.SynthesizeRequest { return request(fake.Key) }, srv.Calls, map[string]string{
		`{"ref_audio": "!!"}`: "ref_audio",
		`{"speed": 1.2}`:      "speed",
		`{"metadata": "x"}`:   "metadata",
	}, []string{
		`{"metadata": {"user": "u1"}}`,
		`{"ref_audio": "UklGRg=="}`,
	})
}
