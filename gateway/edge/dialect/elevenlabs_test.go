package dialect

import (
	"strings"
	"testing"

	"github.com/voxgate/voxgate/sdk"
)

func TestParseOutputFormat(t *testing.T) {
	tests := []struct {
		in   string
		want OutputFormat
		ok   bool
	}{
		{"", OutputFormat{"mp3", 44100, 128}, true},
		{"mp3_22050_32", OutputFormat{"mp3", 22050, 32}, true},
		{"pcm_16000", OutputFormat{"pcm", 16000, 0}, true},
		{"ulaw_8000", OutputFormat{"ulaw", 8000, 0}, true},
		{"alaw_8000", OutputFormat{"alaw", 8000, 0}, true},
		{"opus_48000_64", OutputFormat{"opus", 48000, 64}, true},
		{"wav_44100", OutputFormat{"wav", 44100, 0}, true},
		{"ogg_44100", OutputFormat{}, false},
		{"mp3", OutputFormat{}, false},
		{"pcm_x", OutputFormat{}, false},
		{"mp3_44100_0", OutputFormat{}, false},
		{"mp3_44100_128_1", OutputFormat{}, false},
	}
	for _, tt := range tests {
		got, err := ParseOutputFormat(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseOutputFormat(%q) = %+v, %v", tt.in, got, err)
		}
	}
}

func TestCharacterAlignment(t *testing.T) {
	words := []sdk.WordTimestamp{{Text: "Two", Start: 0.1, End: 0.4}, {Text: "missing", Start: 0.4, End: 0.5}, {Text: "words", Start: 0.6, End: 1.1}}
	a := CharacterAlignment("Two wörds, words.", words)
	if strings.Join(a.Characters, "") != "Two wörds, words." || len(a.Starts) != len(a.Characters) {
		t.Fatalf("%+v", a)
	}
	// "Two" spans 0.1 to 0.4; the unmatched "wörds, " lies in the gap;
	// "words" spans 0.6 to 1.1; the final "." sits at the end.
	if a.Starts[0] != 0.1 || a.Ends[2] != 0.4 || a.Starts[11] != 0.6 || a.Ends[15] != 1.1 || a.Starts[16] != 1.1 {
		t.Errorf("starts %v ends %v", a.Starts, a.Ends)
	}
	for i := range a.Starts {
		if a.Ends[i] < a.Starts[i] || (i > 0 && a.Starts[i] < a.Starts[i-1]) {
			t.Fatalf("not monotonic at %d: %v %v", i, a.Starts, a.Ends)
		}
	}
	if e := CharacterAlignment("", nil); len(e.Characters) != 0 {
		t.Errorf("empty: %+v", e)
	}
}
