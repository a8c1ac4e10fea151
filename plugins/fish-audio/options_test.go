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
	sdktest.CheckOptions(t, p, func() *sdk.SynthesizeRequest { return request(fake.Key) }, srv.Calls, map[string]string{
		`{"temperature": 1.5}`:        "temperature",
		`{"top_p": -0.1}`:             "top_p",
		`{"chunk_length": 301}`:       "chunk_length",
		`{"min_chunk_length": 101}`:   "min_chunk_length",
		`{"early_stop_threshold": 2}`: "early_stop_threshold",
		`{"latency": "fast"}`:         "latency",
		`{"mp3_bitrate": 96}`:         "mp3_bitrate",
		`{"prosody": {"pitch": 2}}`:   "prosody.pitch",
		`{"temperature": "hot"}`:      "temperature",
	}, []string{
		`{"temperature": 1, "top_p": 0, "chunk_length": 100, "min_chunk_length": 0, "early_stop_threshold": 1}`,
		`{"chunk_length": 300, "min_chunk_length": 100, "latency": "balanced"}`,
	})
}
