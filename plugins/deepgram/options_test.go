package main

import (
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	fake "github.com/voxgate/voxgate/internal/fakeupstream/deepgram"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// TestOptionsCheckedBeforeTheCall: providerOptions outside what Deepgram
// documents (the query parameters of POST /v1/speak in its OpenAPI document; the others are the request's own) are refused naming the field, and Deepgram is not
// called; the values at the edges of each range reach it (and the published document, which judges the fake, accepts
// them).
func TestOptionsCheckedBeforeTheCall(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	sdktest.CheckOptions(t, p, func() *sdk.SynthesizeRequest { return request(fake.Key) }, srv.Calls, map[string]string{
		`{"mip_opt_out": "yes"}`:      "mip_opt_out",
		`{"model": "aura-2-zeus-en"}`: "model",
	}, []string{
		`{"mip_opt_out": true, "tag": "batch-7"}`,
	})
}
