package main

import (
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	fake "github.com/voxgate/voxgate/internal/fakeupstream/fishaudio"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// TestOptionsCheckedBeforeTheCall: providerOptions outside what Fish Audio
// documents (its OpenAPI document's minimum, maximum and enum for POST /v1/tts) are refused naming the field, and Fish Audio is not
// called; the values at the edges of each range reach it (and the published document, which judges the fake, accepts
// them).
func TestOptionsCheckedBeforeTheCall(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	for _, tt := range []struct{ options, field string }{
		{`{"temperature": 1.5}`, "temperature"},
		{`{"top_p": -0.1}`, "top_p"},
		{`{"chunk_length": 301}`, "chunk_length"},
		{`{"min_chunk_length": 101}`, "min_chunk_length"},
		{`{"early_stop_threshold": 2}`, "early_stop_threshold"},
		{`{"latency": "fast"}`, "latency"},
		{`{"mp3_bitrate": 96}`, "mp3_bitrate"},
		{`{"prosody": {"pitch": 2}}`, "prosody.pitch"},
		{`{"temperature": "hot"}`, "temperature"},
	} {
		req := request(fake.Key)
		req.Options = []byte(tt.options)
		_, err := p.Synthesize(t.Context(), req)
		if e := sdktest.AsError(t, err); e.Kind != sdk.KindInvalidRequest || e.Field != tt.field {
			t.Errorf("%s: got %#v, want invalid_request naming %s", tt.options, e, tt.field)
		}
	}
	if n := srv.Calls(); n != 0 {
		t.Errorf("%d calls to Fish Audio for refused options", n)
	}
	for _, options := range []string{
		`{"temperature": 1, "top_p": 0, "chunk_length": 100, "min_chunk_length": 0, "early_stop_threshold": 1}`,
		`{"chunk_length": 300, "min_chunk_length": 100, "latency": "balanced"}`,
	} {
		req := request(fake.Key)
		req.Options = []byte(options)
		if _, err := p.Synthesize(t.Context(), req); err != nil {
			t.Errorf("%s: %v", options, err)
		}
	}
}
