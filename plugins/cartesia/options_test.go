package main

import (
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	fake "github.com/voxgate/voxgate/internal/fakeupstream/cartesia"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// TestOptionsCheckedBeforeTheCall: providerOptions outside what Cartesia
// documents (its OpenAPI document's enumerations and generation_config's stated ranges) are refused naming the field, and Cartesia is not
// called; the values at the edges of each range reach it (and the published document, which judges the fake, accepts
// them).
func TestOptionsCheckedBeforeTheCall(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	sdktest.CheckOptions(t, p, func() *sdk.SynthesizeRequest { return request(fake.Key) }, srv.Calls, map[string]string{
		`{"language": "english"}`:                       "language",
		`{"generation_config": {"speed": 1.6}}`:         "generation_config.speed",
		`{"generation_config": {"volume": 0.4}}`:        "generation_config.volume",
		`{"generation_config": {"emotion": "gleeful"}}`: "generation_config.emotion",
		`{"duration": 3}`:                               "duration",
		`{"generation_config": {"pitch": 1}}`:           "generation_config.pitch",
	}, []string{
		`{"language": "en", "generation_config": {"speed": 0.6, "volume": 2.0, "emotion": "calm"}}`,
		`{"language": "no", "generation_config": {"speed": 1.5, "volume": 0.5}}`,
	})
}
