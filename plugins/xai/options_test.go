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
	sdktest.CheckOptions(t, p, func() *sdk.SynthesizeRequest { return request(fake.Key) }, srv.Calls, map[string]string{
		`{"language": "klingon"}`:           "language",
		`{"optimize_streaming_latency": 2}`: "optimize_streaming_latency",
		`{"speed": 1.1}`:                    "speed",
	}, []string{
		`{"language": "pt-br", "optimize_streaming_latency": 1, "text_normalization": true}`,
		`{"language": "auto", "optimize_streaming_latency": 0}`,
	})
}
