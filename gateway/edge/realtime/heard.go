package realtime

import (
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/voxgate/voxgate/sdk"
)

// What was heard (docs/realtime.md, "Interruptions"): when a context ends,
// its cancelled and done messages say how much of its text the client was
// sent as audio, so an agent can trim its transcript to what the user
// heard. The writer keeps what it wrote of each context (heardState): the
// audio's length, the word timings it sent (or the gateway noted, when the
// client did not ask for timestamps), and the ends of segments all of whose
// audio it wrote.

// heardSlack is how far a word's end may lie past the audio written and
// still count as heard: timings are rounded to milliseconds.
const heardSlack = 0.0015

// untimedTail is how much audio may follow a context's last timed word
// before the words are taken to have stopped early: more than any
// provider's closing silence.
const untimedTail = 1.0

// heardOf says what was heard of input text, given the word timings words
// (on the context's timeline, in order), the seconds of audio written and
// the end of the input whose segments' audio was all written. With word
// timings, the words whose audio ended within audioSec are heard, and the
// text is cut after the last of them found in the input; without, the
// text is cut at the end of the last segment written whole.
func heardOf(text string, words []sdk.WordTimestamp, audioSec float64, textEnd int) heardJSON {
	h := heardJSON{LastWordIndex: -1, AudioMs: int64(math.Round(audioSec * 1000))}
	textEnd = min(textEnd, len(text))
	n := 0 // words heard
	for n < len(words) && words[n].End <= audioSec+heardSlack {
		n++
	}
	if n == 0 || textEnd == len(text) && textEnd > 0 {
		// No word timings (or the whole text was spoken): segments say it.
		h.SpokenText = strings.TrimSpace(text[:textEnd])
		h.LastWordIndex = max(n, len(strings.Fields(h.SpokenText))) - 1
		if len(words) > 0 && textEnd == len(text) {
			h.LastWordIndex = len(words) - 1
			if audioSec-words[len(words)-1].End > untimedTail {
				// Audio went on well after the last timed word: the rest
				// came without timings (a fallback that has none took
				// over), so the provider's words are not all of it.
				h.LastWordIndex = max(len(words), len(strings.Fields(h.SpokenText))) - 1
			}
		}
		return h
	}
	h.LastWordIndex = n - 1
	cut := max(textEnd, wordsEnd(text, words[:n]))
	if cut == 0 {
		// The provider's words are not the input's (a dictionary, a
		// transliteration): its own words are the best account.
		parts := make([]string, n)
		for i, w := range words[:n] {
			parts[i] = w.Text
		}
		h.SpokenText = strings.Join(parts, " ")
		return h
	}
	h.SpokenText = strings.TrimSpace(text[:cut])
	return h
}

// wordsEnd returns the byte offset in text just after the last of words,
// found in order (case-insensitively, punctuation aside), with the
// punctuation that follows it; 0 when none is found. A word not found
// within a short distance of the previous one is skipped.
func wordsEnd(text string, words []sdk.WordTimestamp) int {
	cursor, found := findWords(text, words)
	if !found {
		return 0
	}
	// The rest of the word and the punctuation after it ("don't", "end.").
	for cursor < len(text) {
		r, size := utf8.DecodeRuneInString(text[cursor:])
		if unicode.IsSpace(r) {
			break
		}
		cursor += size
	}
	return cursor
}

// findWords finds words in text in order (case-insensitively, the
// punctuation around each word aside) and returns the offset just after
// the last one found, and whether any was. A word not found within a
// short distance of the previous one is skipped.
func findWords(text string, words []sdk.WordTimestamp) (cursor int, found bool) {
	lower := strings.ToLower(text)
	for _, w := range words {
		core := strings.ToLower(strings.TrimFunc(w.Text, notWordRune))
		if core == "" {
			continue
		}
		i := strings.Index(lower[cursor:], core)
		if i < 0 || i > 200 {
			continue
		}
		cursor += i + len(core)
		found = true
	}
	return cursor, found
}
