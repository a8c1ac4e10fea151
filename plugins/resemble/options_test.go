package main

import (
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	fake "github.com/voxgate/voxgate/internal/fakeupstream/resemble"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// TestOptionsCheckedBeforeTheCall: providerOptions outside what Resemble
// documents (its synthesis reference) are refused naming the field, and Resemble is not
// called; the values at the edges of each range reach it.
func TestOptionsCheckedBeforeTheCall(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, settings(srv), nil)
	for _, tt := range []struct{ options, field string }{
		{`{"use_hd": "yes"}`, "use_hd"},
		{`{"voice_uuid": "x"}`, "voice_uuid"},
	} {
		req := request(fake.Key)
		req.Options = []byte(tt.options)
		_, err := p.Synthesize(t.Context(), req)
		if e := sdktest.AsError(t, err); e.Kind != sdk.KindInvalidRequest || e.Field != tt.field {
			t.Errorf("%s: got %#v, want invalid_request naming %s", tt.options, e, tt.field)
		}
	}
	if n := srv.Calls(); n != 0 {
		t.Errorf("%d calls to Resemble for refused options", n)
	}
	for _, options := range []string{
		`{"use_hd": true, "apply_custom_pronunciations": false, "title": "Clip"}`,
	} {
		req := request(fake.Key)
		req.Options = []byte(options)
		if _, err := p.Synthesize(t.Context(), req); err != nil {
			t.Errorf("%s: %v", options, err)
		}
	}
}
