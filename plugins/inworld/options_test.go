package main

import (
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	fake "github.com/voxgate/voxgate/internal/fakeupstream/inworld"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// TestOptionsCheckedBeforeTheCall: providerOptions outside what Inworld
// documents (its TTS reference; Inworld publishes no machine-readable document) are refused naming the field, and Inworld is not
// called; the values at the edges of each range reach it.
func TestOptionsCheckedBeforeTheCall(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	sdktest.CheckOptions(t, p, func() *sdk.SynthesizeRequest { return request(fake.Key) }, srv.Calls, map[string]string{
		`{"temperature": 2.1}`:               "temperature",
		`{"applyTextNormalization": "AUTO"}`: "applyTextNormalization",
		`{"deliveryMode": "FAST"}`:           "deliveryMode",
		`{"bitRate": 128000}`:                "bitRate",
		`{"pitch": 1}`:                       "pitch",
	}, []string{
		`{"temperature": 0, "applyTextNormalization": "OFF", "deliveryMode": "STABLE"}`,
		`{"temperature": 2, "deliveryMode": "CREATIVE"}`,
	})
}
