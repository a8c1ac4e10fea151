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
	for _, tt := range []struct{ options, field string }{
		{`{"pitch": 51}`, "pitch"},
		{`{"variation": 6}`, "variation"},
		{`{"pronunciationDictionary": {"live": {"type": "X", "pronunciation": "l"}}}`, "pronunciationDictionary.live.type"},
		{`{"pronunciationDictionary": {"live": {"type": "IPA"}}}`, "pronunciationDictionary.live.pronunciation"},
		{`{"pronunciationDictionary": ["live"]}`, "pronunciationDictionary"},
		{`{"speed": 2}`, "speed"},
	} {
		req := request(fake.Key)
		req.Options = []byte(tt.options)
		_, err := p.Synthesize(t.Context(), req)
		if e := sdktest.AsError(t, err); e.Kind != sdk.KindInvalidRequest || e.Field != tt.field {
			t.Errorf("%s: got %#v, want invalid_request naming %s", tt.options, e, tt.field)
		}
	}
	if n := srv.Calls(); n != 0 {
		t.Errorf("%d calls to Murf for refused options", n)
	}
	for _, options := range []string{
		`{"pitch": -50, "variation": 0, "pronunciationDictionary": {"live": {"type": "IPA", "pronunciation": "laɪv"}}}`,
		`{"pitch": 50, "variation": 5, "pronunciationDictionary": {"2022": {"type": "SAY_AS", "pronunciation": "twenty twenty two"}}}`,
	} {
		req := request(fake.Key)
		req.Options = []byte(options)
		if _, err := p.Synthesize(t.Context(), req); err != nil {
			t.Errorf("%s: %v", options, err)
		}
	}
}
