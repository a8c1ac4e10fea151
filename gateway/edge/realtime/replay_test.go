package realtime

import (
	"strings"
	"testing"

	"github.com/voxgate/voxgate/sdk"
)

func TestReplayCut(t *testing.T) {
	text := "The second one is spoken elsewhere. "
	words := []sdk.WordTimestamp{
		{Text: "The", End: 0.2}, {Text: "second", End: 0.6}, {Text: "one", End: 0.8},
		{Text: "is", End: 0.95}, {Text: "spoken", End: 1.4}, {Text: "elsewhere.", End: 2},
	}
	tests := []struct {
		name       string
		text       string
		inputWords int
		timed      bool
		sec        float64
		rate       float64
		want       string // the replay
	}{
		{"timed: nothing heard", text, 6, true, 0.1, 0, "The second one is spoken elsewhere. "},
		{"timed: inside the third word", text, 6, true, 0.7, 0, "one is spoken elsewhere. "},
		{"timed: a word's end within rounding", text, 6, true, 0.7995, 0, "is spoken elsewhere. "},
		{"timed: all heard", text, 6, true, 2.1, 0, ""},
		{"timed: the provider's words differ (a tag removed)", "The second [laughs] one is spoken. ", 5, true, 0.7, 0, "[laughs] one is spoken. "},
		// 0.7 s at 12 characters a second is 8 characters: inside
		// "second"; the replay starts a word before it.
		{"timed: pieces, a word split between two", "The fir" + "st one. ", -1, true, 0.7, 0, "first one. "},
		{"timed: pieces, a word whole with its period", "The" + " first. Then", -1, true, 0.7, 0, "Then"},
		{"untimed: a word before the estimate", text, -1, false, 0.7, 12, "The second one is spoken elsewhere. "},
		// 1.2 s: 14 characters, inside "one": from "second".
		{"untimed: further in", text, -1, false, 1.2, 12, "second one is spoken elsewhere. "},
		{"untimed: past the end: the last two words", text, -1, false, 10, 12, "spoken elsewhere. "},
		{"untimed: no rate", text, -1, false, 1.2, 0, "The second one is spoken elsewhere. "},
		{"untimed: pieces joined as sent", "Hel" + "lo there, my fr" + "iend.", -1, false, 1.2, 12, "there, my friend."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var heard []sdk.WordTimestamp
			switch {
			case tt.timed && tt.inputWords < 0:
				// The provider spoke the pieces apart.
				heard = []sdk.WordTimestamp{{Text: "The", End: 0.2}, {Text: "fir", End: 0.4}}
				if strings.Contains(tt.text, "first.") {
					heard = []sdk.WordTimestamp{{Text: "The", End: 0.2}, {Text: "first.", End: 0.6}}
				}
			case tt.timed:
				heard = heardWords(words, tt.sec)
			}
			cut := replayCut(tt.text, tt.inputWords, tt.timed, heard, tt.sec, tt.rate)
			if got := rest(tt.text, cut); got != tt.want {
				t.Errorf("replay %q, want %q", got, tt.want)
			}
		})
	}
}

// The estimate never starts the replay after a word the audio has not
// finished at the assumed rate, for any length of audio: a word may be
// repeated, never lost.
func TestEstimateCutNeverSkipsAWord(t *testing.T) {
	text := "One two three four five six seven eight nine ten eleven twelve."
	starts := fieldStarts(text)
	for ms := 0; ms <= 6000; ms += 10 {
		sec := float64(ms) / 1000
		cut := estimateCut(text, sec, assumedCharsPerSecond)
		heardChars := int(sec * assumedCharsPerSecond)
		// The first word not heard whole starts at or after the cut.
		for i, s := range starts {
			end := len(text)
			if i+1 < len(starts) {
				end = starts[i+1] - 1
			}
			if end > heardChars && s < cut {
				t.Fatalf("at %v s the replay starts at %d, after the unfinished word at %d", sec, cut, s)
			}
		}
	}
}
