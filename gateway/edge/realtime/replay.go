package realtime

import (
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/voxgate/voxgate/sdk"
)

// Where a failover's replay starts (docs/realtime.md, "Mid-utterance
// failover"): the provider failed after some of the text's audio was
// sent, and the fallback must speak the rest from the first word the
// listener has not heard. The audio already queued for the client goes
// out whatever happens, so "heard" here is the audio the context queued.
//
// With word timings of that audio (native, or the input stream's, which
// the gateway asks for whenever the model has them) the words whose audio
// ended within it are heard, and the replay starts after the last of
// them. Without (Deepgram's Aura, or a segment streamed without
// timestamps) nothing says where the audio stopped in the text: the
// gateway's aligner needs the whole clip of the whole text (its DTW pins
// both ends), and a failed provider sends neither. The cut is then
// estimated from the audio's length at assumedCharsPerSecond, and the
// replay starts a word before the estimate, so that a word is repeated
// rather than lost.

// assumedCharsPerSecond is the speaking rate a cut is estimated with when
// the audio has no word timings: about 130 words a minute, slower than
// the voices of the providers without timings (Deepgram's Aura speaks
// 150 to 180). A slower assumption places the estimate earlier in the
// text, so the replay repeats more rather than skips: a voice would have
// to speak more slowly than this, by more than the word the replay steps
// back, for a word to be lost.
const assumedCharsPerSecond = 12.0

// replayCut returns the byte offset in text where a replay starts, given
// the text's provider-side word count (inputWords: what the provider's
// timings count up to over all of text; -1 when unknown) and, with
// timings, the provider's words whose audio was all sent (heard); timed
// says whether the audio had timings at all. Without them, sec is the
// seconds of text's audio sent and rate the speaking rate to estimate
// with (0: the cut cannot be estimated, everything is replayed).
func replayCut(text string, inputWords int, timed bool, heard []sdk.WordTimestamp, sec, rate float64) int {
	if timed {
		return cutAfterWords(text, inputWords, heard)
	}
	return estimateCut(text, sec, rate)
}

// cutAfterWords is the offset just after the last heard word in text, with
// the punctuation that follows it. When the provider's words are the
// text's own (as many as its whitespace-separated words: no audio tag
// removed, no pronunciation rule changed the count), it counts them;
// otherwise it finds the heard words in the text (cutAfterHeard).
func cutAfterWords(text string, inputWords int, heard []sdk.WordTimestamp) int {
	n := len(heard)
	if n == 0 {
		return 0
	}
	if inputWords >= 0 && inputWords == countFields(text) {
		return afterField(text, n)
	}
	return cutAfterHeard(text, heard)
}

// cutAfterHeard finds heard, the provider's words, in text in order
// (case-insensitively, punctuation aside, as wordsEnd does) and returns
// the offset after the last one found, with the punctuation after it.
// When that falls inside one of text's words (the provider spoke a piece
// of it: "fir" of "fir"+"st" sent as two pieces), the cut moves back to
// that word's start, so the word is spoken again whole; 0 when none is
// found. A word not found is skipped, which can only place the cut
// earlier: repeated, not lost.
func cutAfterHeard(text string, heard []sdk.WordTimestamp) int {
	cursor, found := findWords(text, heard)
	if !found {
		return 0
	}
	// The punctuation after the word ("end.", "well...").
	for cursor < len(text) {
		r, size := utf8.DecodeRuneInString(text[cursor:])
		if unicode.IsSpace(r) || !notWordRune(r) {
			break
		}
		cursor += size
	}
	if cursor == len(text) {
		return cursor
	}
	if r, _ := utf8.DecodeRuneInString(text[cursor:]); unicode.IsSpace(r) {
		return cursor
	}
	// Inside a word: back to its start.
	for cursor > 0 {
		r, size := utf8.DecodeLastRuneInString(text[:cursor])
		if unicode.IsSpace(r) {
			break
		}
		cursor -= size
	}
	return cursor
}

func notWordRune(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }

// estimateCut is the start of the word before the one an audio of sec
// seconds at rate characters a second reaches in text: the replay of a
// stream without word timings starts there.
func estimateCut(text string, sec, rate float64) int {
	if rate <= 0 || sec <= 0 {
		return 0
	}
	chars := int(math.Floor(sec * rate))
	// The word the estimate falls in, then the one before it.
	starts := fieldStarts(text)
	at := len(text)
	for i := range text {
		if chars == 0 {
			at = i
			break
		}
		chars--
	}
	w := -1 // the word at or before the estimate
	for i, s := range starts {
		if s <= at {
			w = i
		}
	}
	if w <= 0 {
		return 0
	}
	return starts[w-1]
}

// countFields is the number of whitespace-separated words of text.
func countFields(text string) int {
	n, in := 0, false
	for _, r := range text {
		sp := unicode.IsSpace(r)
		if !sp && !in {
			n++
		}
		in = !sp
	}
	return n
}

// afterField is the offset just after the n-th whitespace-separated word
// of text (n >= 1), or len(text) past the last.
func afterField(text string, n int) int {
	in := false
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		sp := unicode.IsSpace(r)
		if sp && in {
			n--
			if n == 0 {
				return i
			}
		}
		in = !sp
		i += size
	}
	return len(text)
}

// fieldStarts are the offsets where text's whitespace-separated words
// start.
func fieldStarts(text string) []int {
	var starts []int
	in := false
	for i, r := range text {
		sp := unicode.IsSpace(r)
		if !sp && !in {
			starts = append(starts, i)
		}
		in = !sp
	}
	return starts
}

// heardWords are the words of timings whose audio ended within sec
// seconds (with heardSlack for rounding), in order.
func heardWords(timings []sdk.WordTimestamp, sec float64) []sdk.WordTimestamp {
	n := 0
	for n < len(timings) && timings[n].End <= sec+heardSlack {
		n++
	}
	return timings[:n]
}

// rest is text from cut on, without its leading whitespace.
func rest(text string, cut int) string {
	return strings.TrimLeftFunc(text[min(cut, len(text)):], unicode.IsSpace)
}
