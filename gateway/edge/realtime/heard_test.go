package realtime

import (
	"testing"

	"github.com/voxgate/voxgate/sdk"
)

func TestHeardOf(t *testing.T) {
	text := "Hello there, my friend. How are you today? "
	words := []sdk.WordTimestamp{
		{Text: "Hello", Start: 0, End: 0.3}, {Text: "there", Start: 0.35, End: 0.6}, {Text: "my", Start: 0.7, End: 0.8},
		{Text: "friend", Start: 0.85, End: 1.2}, {Text: "How", Start: 1.5, End: 1.7}, {Text: "are", Start: 1.75, End: 1.9},
	}
	tests := []struct {
		name     string
		text     string
		words    []sdk.WordTimestamp
		audio    float64
		textEnd  int
		want     string
		wantLast int
	}{
		{"nothing sent", text, words, 0, 0, "", -1},
		{"inside the first word", text, words, 0.2, 0, "", -1},
		{"two words, with their comma", text, words, 0.65, 0, "Hello there,", 1},
		{"a word's end within rounding", text, words, 1.1985, 0, "Hello there, my friend.", 3},
		{"into the second sentence", text, words, 1.8, 0, "Hello there, my friend. How", 4},
		{"no timings: the segments written whole", text, nil, 1.8, len("Hello there, my friend."), "Hello there, my friend.", 3},
		{"no timings, nothing whole", text, nil, 0.5, 0, "", -1},
		{"all of it", text, words, 2, len(text), "Hello there, my friend. How are you today?", 5},
		// A failover to a fallback without timings: the first provider's
		// two words, then seconds of audio with none.
		{"all of it, the rest without timings", text, words[:2], 3.5, len(text), "Hello there, my friend. How are you today?", 7},
		{"provider words not in the text", "Straße", []sdk.WordTimestamp{{Text: "Strasse", End: 0.4}}, 0.5, 0, "Strasse", 0},
		{"case and punctuation", "WELL... okay", []sdk.WordTimestamp{{Text: "well", End: 0.2}}, 0.3, 0, "WELL...", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := heardOf(tt.text, tt.words, tt.audio, tt.textEnd)
			if h.SpokenText != tt.want || h.LastWordIndex != tt.wantLast {
				t.Errorf("heard %q (last word %d), want %q (%d)", h.SpokenText, h.LastWordIndex, tt.want, tt.wantLast)
			}
			if want := int64(tt.audio*1000 + 0.5); h.AudioMs != want {
				t.Errorf("audioMs %d, want %d", h.AudioMs, want)
			}
		})
	}
}
