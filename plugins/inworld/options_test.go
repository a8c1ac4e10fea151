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
	for _, tt := range []struct{ options, field string }{
		{`{"temperature": 2.1}`, "temperature"},
		{`{"applyTextNormalization": "AUTO"}`, "applyTextNormalization"},
		{`{"deliveryMode": "FAST"}`, "deliveryMode"},
		{`{"bitRate": 128000}`, "bitRate"},
		{`{"pitch": 1}`, "pitch"},
	} {
		req := request(fake.Key)
		req.Options = []byte(tt.options)
		_, err := p.Synthesize(t.Context(), req)
		if e := sdktest.AsError(t, err); e.Kind != sdk.KindInvalidRequest || e.Field != tt.field {
			t.Errorf("%s: got %#v, want invalid_request naming %s", tt.options, e, tt.field)
		}
	}
	if n := srv.Calls(); n != 0 {
		t.Errorf("%d calls to Inworld for refused options", n)
	}
	for _, options := range []string{
		`{"temperature": 0, "applyTextNormalization": "OFF", "deliveryMode": "STABLE"}`,
		`{"temperature": 2, "deliveryMode": "CREATIVE"}`,
	} {
		req := request(fake.Key)
		req.Options = []byte(options)
		if _, err := p.Synthesize(t.Context(), req); err != nil {
			t.Errorf("%s: %v", options, err)
		}
	}
}
