package engine

import (
	"encoding/binary"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/voxgate/voxgate/sdk"
)

// silenceThreshold is the sample magnitude at or below which audio counts as
// silence when trimming a word's end (about -60 dBFS). eSpeak renders pauses
// as exact zeros, so any small value works; a little headroom keeps a
// decaying tail from stretching a word.
const silenceThreshold = 32

// eventSpan is a word event that starts a new group of words.
type eventSpan struct {
	// from is where the event's word starts, in runes; to is where the
	// word it starts in ends (events starting before to belong to it).
	from, to int
	// start is the sample at which eSpeak starts speaking it.
	start int
}

// wordTimestamps turns eSpeak's events for text into one timestamp per
// spoken word of text, in order, each inside the clip pcm (16-bit
// little-endian mono at rate).
//
// eSpeak's word events do not map one-to-one onto the words of the input,
// so the events are first grouped:
//   - events that start inside a word already seen extend it (eSpeak reads
//     "1234" as several words, all pointing into "1234");
//   - an event owns the text from its position up to the next event's, so a
//     word eSpeak speaks together with the one before it, without an event
//     of its own ("from the", "out of"), joins that event's group, and a
//     word with two events ("well-known" read as two, markup like
//     "<b>bold</b>", a script written without spaces) is cut where the
//     second starts.
//
// A group's audio starts at its event's position and ends where the next
// group or clause starts, or at the end of the clip, less the silence before
// that point: eSpeak puts a clause's pause at the end of its last word, so
// without trimming a word before a full stop would last half a second too
// long. The words of a group share its audio in proportion to their length,
// an estimate where eSpeak gives none. Each timestamp's text is the word as
// written in text, with leading and trailing punctuation trimmed; words that
// are nothing but punctuation get no timestamp.
func wordTimestamps(text string, events []event, pcm []byte, rate int) []sdk.WordTimestamp {
	runes := []rune(text)
	samples := len(pcm) / 2
	toSample := func(e event) int {
		return min(int(e.audio.Seconds()*float64(rate)+0.5), samples)
	}

	var words []event
	var clauses []int // samples at which a clause ends or a sentence starts
	for _, e := range events {
		if e.kind == eventWord {
			words = append(words, e)
		} else {
			clauses = append(clauses, toSample(e))
		}
	}

	var spans []eventSpan
	for i, e := range words {
		from := min(e.offset, len(runes))
		if n := len(spans); n > 0 && from < spans[n-1].to {
			continue // more of a word already started
		}
		// The event's word runs to the next space (eSpeak's length for
		// "geht's" covers only "geht"), unless the next event starts
		// within it, past this event's own length.
		to := min(from+max(e.length, 1), len(runes))
		next := len(runes)
		if i+1 < len(words) {
			next = max(words[i+1].offset, to)
		}
		for to < next && !unicode.IsSpace(runes[to]) {
			to++
		}
		start := toSample(e)
		if n := len(spans); n > 0 {
			start = max(start, spans[n-1].start) // keep words in order
		}
		spans = append(spans, eventSpan{from: from, to: to, start: start})
	}

	var out []sdk.WordTimestamp
	for i, s := range spans {
		// The text this group owns: from its event (or the start of the
		// text, for the first) to the next group's event.
		textFrom, textTo := s.from, len(runes)
		if i == 0 {
			textFrom = 0
		}
		bound := samples
		if i+1 < len(spans) {
			textTo, bound = spans[i+1].from, spans[i+1].start
		}
		for _, c := range clauses {
			if c > s.start && c < bound {
				bound = c
				break
			}
		}
		group := splitWords(runes[textFrom:textTo])
		if len(group) == 0 {
			continue // punctuation eSpeak spoke as a pause
		}
		end := trimSilence(pcm, s.start, bound)
		total := 0
		for _, w := range group {
			total += utf8.RuneCountInString(w)
		}
		at, done := s.start, 0
		for _, w := range group {
			done += utf8.RuneCountInString(w)
			next := s.start + (end-s.start)*done/total
			out = append(out, sdk.WordTimestamp{
				Text:  w,
				Start: float64(at) / float64(rate),
				End:   float64(next) / float64(rate),
			})
			at = next
		}
	}
	return out
}

// splitWords returns the whitespace-separated words of text with their
// punctuation trimmed, leaving out those that are all punctuation.
func splitWords(text []rune) []string {
	var words []string
	for _, f := range strings.Fields(string(text)) {
		if w := strings.TrimFunc(f, isPunctuation); w != "" {
			words = append(words, w)
		}
	}
	return words
}

// trimSilence returns the sample just after the last sound in
// pcm[from:to) (counted in samples), or to if that stretch is all silence:
// a word eSpeak rendered silently keeps its whole slot.
func trimSilence(pcm []byte, from, to int) int {
	for i := to - 1; i >= from; i-- {
		v := int16(binary.LittleEndian.Uint16(pcm[2*i:]))
		if v > silenceThreshold || v < -silenceThreshold {
			return i + 1
		}
	}
	return to
}

// isPunctuation reports whether r is trimmed from the ends of a word:
// punctuation, and the symbols that act like it ("<", "=", "^"), spaces and
// invisible format characters. Letters, digits, combining marks, currency
// signs and pictographs ("$5", "❤️") stay: eSpeak speaks them.
func isPunctuation(r rune) bool {
	return unicode.IsPunct(r) || unicode.In(r, unicode.Sm, unicode.Sk, unicode.Cf) ||
		unicode.IsSpace(r) || unicode.IsControl(r)
}
