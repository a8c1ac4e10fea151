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
	for _, tt := range []struct{ options, field string }{
		{`{"ref_audio": "!!"}`, "ref_audio"},
		{`{"speed": 1.2}`, "speed"},
		{`{"metadata": "x"}`, "metadata"},
	} {
		req := request(fake.Key)
		req.Options = []byte(tt.options)
		_, err := p.Synthesize(t.Context(), req)
		if e := sdktest.AsError(t, err); e.Kind != sdk.KindInvalidRequest || e.Field != tt.field {
			t.Errorf("%s: got %#v, want invalid_request naming %s", tt.options, e, tt.field)
		}
	}
	if n := srv.Calls(); n != 0 {
		t.Errorf("%d calls to Mistral for refused options", n)
	}
	for _, options := range []string{
		`{"metadata": {"user": "u1"}}`,
		`{"ref_audio": "UklGRg=="}`,
	} {
		req := request(fake.Key)
		req.Options = []byte(options)
		if _, err := p.Synthesize(t.Context(), req); err != nil {
			t.Errorf("%s: %v", options, err)
		}
	}
}
