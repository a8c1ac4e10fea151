package main

import (
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	fake "github.com/voxgate/voxgate/internal/fakeupstream/smallestai"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// TestOptionsCheckedBeforeTheCall: providerOptions outside what Smallest AI
// documents (the enumerations of its OpenAPI document) are refused naming the field, and Smallest AI is not
// called; the values at the edges of each range reach it (and the published document, which judges the fake, accepts
// them).
func TestOptionsCheckedBeforeTheCall(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	sdktest.CheckOptions(t, p, func() *sdk.SynthesizeRequest { return request(fake.Key) }, srv.Calls, map[string]string{
		`{"language": "xx"}`:                           "language",
		`{"number_pronunciation_language": "english"}`: "number_pronunciation_language",
		`{"pronunciation_dicts": "d1"}`:                "pronunciation_dicts",
		`{"temperature": 1}`:                           "temperature",
	}, []string{
		`{"language": "auto", "number_pronunciation_language": "hi", "math_notation": true, "pronunciation_dicts": ["d1"]}`,
		`{"language": "en"}`,
	})
}
