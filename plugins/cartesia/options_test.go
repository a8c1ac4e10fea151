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
	for _, tt := range []struct{ options, field string }{
		{`{"language": "english"}`, "language"},
		{`{"generation_config": {"speed": 1.6}}`, "generation_config.speed"},
		{`{"generation_config": {"volume": 0.4}}`, "generation_config.volume"},
		{`{"generation_config": {"emotion": "gleeful"}}`, "generation_config.emotion"},
		{`{"duration": 3}`, "duration"},
		{`{"generation_config": {"pitch": 1}}`, "generation_config.pitch"},
	} {
		req := request(fake.Key)
		req.Options = []byte(tt.options)
		_, err := p.Synthesize(t.Context(), req)
		if e := sdktest.AsError(t, err); e.Kind != sdk.KindInvalidRequest || e.Field != tt.field {
			t.Errorf("%s: got %#v, want invalid_request naming %s", tt.options, e, tt.field)
		}
	}
	if n := srv.Calls(); n != 0 {
		t.Errorf("%d calls to Cartesia for refused options", n)
	}
	for _, options := range []string{
		`{"language": "en", "generation_config": {"speed": 0.6, "volume": 2.0, "emotion": "calm"}}`,
		`{"language": "no", "generation_config": {"speed": 1.5, "volume": 0.5}}`,
	} {
		req := request(fake.Key)
		req.Options = []byte(options)
		if _, err := p.Synthesize(t.Context(), req); err != nil {
			t.Errorf("%s: %v", options, err)
		}
	}
}
