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
	for _, tt := range []struct{ options, field string }{
		{`{"language": "xx"}`, "language"},
		{`{"number_pronunciation_language": "english"}`, "number_pronunciation_language"},
		{`{"pronunciation_dicts": "d1"}`, "pronunciation_dicts"},
		{`{"temperature": 1}`, "temperature"},
	} {
		req := request(fake.Key)
		req.Options = []byte(tt.options)
		_, err := p.Synthesize(t.Context(), req)
		if e := sdktest.AsError(t, err); e.Kind != sdk.KindInvalidRequest || e.Field != tt.field {
			t.Errorf("%s: got %#v, want invalid_request naming %s", tt.options, e, tt.field)
		}
	}
	if n := srv.Calls(); n != 0 {
		t.Errorf("%d calls to Smallest AI for refused options", n)
	}
	for _, options := range []string{
		`{"language": "auto", "number_pronunciation_language": "hi", "math_notation": true, "pronunciation_dicts": ["d1"]}`,
		`{"language": "en"}`,
	} {
		req := request(fake.Key)
		req.Options = []byte(options)
		if _, err := p.Synthesize(t.Context(), req); err != nil {
			t.Errorf("%s: %v", options, err)
		}
	}
}
