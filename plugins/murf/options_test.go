package main

import (
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	fake "github.com/voxgate/voxgate/internal/fakeupstream/murf"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// TestOptionsCheckedBeforeTheCall: providerOptions outside what Murf
// documents (its API reference's ranges and the published document's shapes) are refused naming the field, and Murf is not
// called; the values at the edges of each range reach it (and the published document, which judges the fake, accepts
// them).
func TestOptionsCheckedBeforeTheCall(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	sdktest.CheckOptions(t, p, func() *sdk.SynthesizeRequest { return request(fake.Key) }, srv.Calls, map[string]string{
		`{"pitch": 51}`:    "pitch",
		`{"variation": 6}`: "variation",
		`{"pronunciationDictionary": {"live": {"type": "X", "pronunciation": "l"}}}`: "pronunciationDictionary.live.type",
		`{"pronunciationDictionary": {"live": {"type": "IPA"}}}`:                     "pronunciationDictionary.live.pronunciation",
		`{"pronunciationDictionary": ["live"]}`:                                      "pronunciationDictionary",
		`{"speed": 2}`:                                                               "speed",
	}, []string{
		`{"pitch": -50, "variation": 0, "pronunciationDictionary": {"live": {"type": "IPA", "pronunciation": "laɪv"}}}`,
		`{"pitch": 50, "variation": 5, "pronunciationDictionary": {"2022": {"type": "SAY_AS", "pronunciation": "twenty twenty two"}}}`,
	})
}
