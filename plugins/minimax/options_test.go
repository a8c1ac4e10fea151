package main

import (
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	fake "github.com/voxgate/voxgate/internal/fakeupstream/minimax"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// TestOptionsCheckedBeforeTheCall: providerOptions outside what MiniMax
// documents (its T2A reference; MiniMax publishes no machine-readable document) are refused naming the field, and MiniMax is not
// called; the values at the edges of each range reach it.
func TestOptionsCheckedBeforeTheCall(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), map[string]string{"group_id": fake.GroupID})
	for _, tt := range []struct{ options, field string }{
		{`{"voice_setting": {"speed": 2.5}}`, "voice_setting.speed"},
		{`{"voice_setting": {"vol": 0}}`, "voice_setting.vol"},
		{`{"voice_setting": {"pitch": 13}}`, "voice_setting.pitch"},
		{`{"voice_setting": {"emotion": "bored"}}`, "voice_setting.emotion"},
		{`{"timber_weights": [{"voice_id": "Wise_Woman", "weight": 10},{"voice_id": "Wise_Woman", "weight": 10},{"voice_id": "Wise_Woman", "weight": 10},{"voice_id": "Wise_Woman", "weight": 10},{"voice_id": "Wise_Woman", "weight": 10}]}`, "timber_weights"},
		{`{"timber_weights": [{"voice_id": "Wise_Woman", "weight": 0}]}`, "timber_weights.0.weight"},
		{`{"voice_modify": {"timbre": 101}}`, "voice_modify.timbre"},
		{`{"voice_setting": {"voice_id": "x"}}`, "voice_setting.voice_id"},
	} {
		req := request(fake.Key)
		req.Options = []byte(tt.options)
		_, err := p.Synthesize(t.Context(), req)
		if e := sdktest.AsError(t, err); e.Kind != sdk.KindInvalidRequest || e.Field != tt.field {
			t.Errorf("%s: got %#v, want invalid_request naming %s", tt.options, e, tt.field)
		}
	}
	if n := srv.Calls(); n != 0 {
		t.Errorf("%d calls to MiniMax for refused options", n)
	}
	for _, options := range []string{
		`{"voice_setting": {"speed": 0.5, "vol": 10, "pitch": -12, "emotion": "calm"}, "voice_modify": {"pitch": -100, "intensity": 100}}`,
		`{"voice_setting": {"speed": 2, "vol": 0.1, "pitch": 12}}`,
		`{"timber_weights": [{"voice_id": "Wise_Woman", "weight": 100},{"voice_id": "Wise_Woman", "weight": 10},{"voice_id": "Wise_Woman", "weight": 10},{"voice_id": "Wise_Woman", "weight": 10}]}`,
	} {
		req := request(fake.Key)
		req.Options = []byte(options)
		if _, err := p.Synthesize(t.Context(), req); err != nil {
			t.Errorf("%s: %v", options, err)
		}
	}
}
