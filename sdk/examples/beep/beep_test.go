package main

import (
	"os"
	"testing"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// binary is the plugin built once for this test binary by TestMain.
var pluginPath string

func TestMain(m *testing.M) { os.Exit(sdktest.MainWithPlugin(m, &pluginPath)) }

// config is what the kit needs to know about beep.
var config = sdktest.Config{Voice: "high", InvalidVoice: "no-such-voice"}

// TestConformance runs the kit against the real plugin process, as the
// gateway would see it.
func TestConformance(t *testing.T) {
	sdktest.Run(t, sdktest.StartPlugin(t, pluginPath), config)
}

// TestConformanceInProcess runs the kit against Beep directly: quicker to
// debug, and `go test -race` sees the provider's own code.
func TestConformanceInProcess(t *testing.T) {
	sdktest.Run(t, &Beep{}, config)
}

func TestTimestampsAreExact(t *testing.T) {
	resp, err := (&Beep{}).Synthesize(t.Context(), &sdk.SynthesizeRequest{Model: "beep-1", Text: "a bb", Timestamps: true})
	if err != nil {
		t.Fatal(err)
	}
	// "a": 0.08+0.03 = 0.11 s of beep, then 0.05 s of pause; "bb" starts at 0.16.
	want := []sdk.WordTimestamp{{Text: "a", Start: 0, End: 0.11}, {Text: "bb", Start: 0.16, End: 0.30}}
	if len(resp.Timestamps) != len(want) {
		t.Fatalf("got %v, want %v", resp.Timestamps, want)
	}
	for i, w := range want {
		got := resp.Timestamps[i]
		if got.Text != w.Text || !near(got.Start, w.Start) || !near(got.End, w.End) {
			t.Errorf("timestamp %d = %+v, want %+v", i, got, w)
		}
	}
	if wantBytes := 2 * (4000 + 2*800); len(resp.Audio) != wantBytes {
		t.Errorf("audio is %d bytes, want %d", len(resp.Audio), wantBytes)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
