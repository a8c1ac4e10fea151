package main

import (
	"os"
	"strings"
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

// TestReadmeShowsBeep keeps sdk/README.md's provider example equal to this
// plugin, which the tests above run through the conformance kit: every Go
// block the README marks as taken from beep.go must appear in it as is.
// (The README's example once left out the cancelled-context check, and a
// plugin copied from it failed the kit.)
func TestReadmeShowsBeep(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("beep.go")
	if err != nil {
		t.Fatal(err)
	}
	const mark = "<!-- from sdk/examples/beep/beep.go"
	blocks := 0
	for rest := string(readme); ; {
		i := strings.Index(rest, mark)
		if i < 0 {
			break
		}
		rest = rest[i:]
		start := strings.Index(rest, "```go\n")
		end := strings.Index(rest[start+6:], "```")
		if start < 0 || end < 0 {
			t.Fatal("a marked block is not a ```go block")
		}
		code := rest[start+6 : start+6+end]
		rest = rest[start+6+end:]
		blocks++
		if !strings.Contains(string(src), code) {
			t.Errorf("sdk/README.md shows code that is not in beep.go:\n%s", code)
		}
		if strings.Contains(code, "func (*Beep) Synthesize") && !strings.Contains(code, "ctx.Err()") {
			t.Error("the README's Synthesize does not check for a cancelled context")
		}
	}
	if blocks < 2 {
		t.Fatalf("found %d marked blocks in sdk/README.md, want the type, Describe and Synthesize", blocks)
	}
}
