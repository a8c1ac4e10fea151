package main

import (
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	fake "github.com/voxgate/voxgate/internal/fakeupstream/xai"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// TestOptionsCheckedBeforeTheCall: providerOptions outside what xAI
// documents (its TTS reference; xAI publishes no machine-readable document for it) are refused naming the field, and xAI is not
// called; the values at the edges of each range reach it.
func TestOptionsCheckedBeforeTheCall(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	for _, tt := range []struct{ options, field string }{
		{`{"language": "klingon"}`, "language"},
		{`{"optimize_streaming_latency": 2}`, "optimize_streaming_latency"},
		{`{"speed": 1.1}`, "speed"},
	} {
		req := request(fake.Key)
		req.Options = []byte(tt.options)
		_, err := p.Synthesize(t.Context(), req)
		if e := sdktest.AsError(t, err); e.Kind != sdk.KindInvalidRequest || e.Field != tt.field {
			t.Errorf("%s: got %#v, want invalid_request naming %s", tt.options, e, tt.field)
		}
	}
	if n := srv.Calls(); n != 0 {
		t.Errorf("%d calls to xAI for refused options", n)
	}
	for _, options := range []string{
		`{"language": "pt-br", "optimize_streaming_latency": 1, "text_normalization": true}`,
		`{"language": "auto", "optimize_streaming_latency": 0}`,
	} {
		req := request(fake.Key)
		req.Options = []byte(options)
		if _, err := p.Synthesize(t.Context(), req); err != nil {
			t.Errorf("%s: %v", options, err)
		}
	}
}
