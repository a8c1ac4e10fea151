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
	sdktest.CheckOptions(t, p, func() *sdk.SynthesizeRequest { return request(fake.Key) }, srv.Calls, map[string]string{
		`{"voice_setting": {"speed": 2.5}}`:       "voice_setting.speed",
		`{"voice_setting": {"vol": 0}}`:           "voice_setting.vol",
		`{"voice_setting": {"pitch": 13}}`:        "voice_setting.pitch",
		`{"voice_setting": {"emotion": "bored"}}`: "voice_setting.emotion",
		`{"timber_weights": [{"voice_id": "Wise_Woman", "weight": 10},{"voice_id": "Wise_Woman", "weight": 10},{"voice_id": "Wise_Woman", "weight": 10},{"voice_id": "Wise_Woman", "weight": 10},{"voice_id": "Wise_Woman", "weight": 10}]}`: "timber_weights",
		`{"timber_weights": [{"voice_id": "Wise_Woman", "weight": 0}]}`: "timber_weights.0.weight",
		`{"voice_modify": {"timbre": 101}}`:                             "voice_modify.timbre",
		`{"voice_setting": {"voice_id": "x"}}`:                          "voice_setting.voice_id",
	}, []string{
		`{"voice_setting": {"speed": 0.5, "vol": 10, "pitch": -12, "emotion": "calm"}, "voice_modify": {"pitch": -100, "intensity": 100}}`,
		`{"voice_setting": {"speed": 2, "vol": 0.1, "pitch": 12}}`,
		`{"timber_weights": [{"voice_id": "Wise_Woman", "weight": 100},{"voice_id": "Wise_Woman", "weight": 10},{"voice_id": "Wise_Woman", "weight": 10},{"voice_id": "Wise_Woman", "weight": 10}]}`,
	})
}
