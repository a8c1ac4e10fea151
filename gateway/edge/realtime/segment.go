package realtime

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Segmenting thresholds, in characters (docs/realtime.md, "Sentences").
const (
	// firstClauseAfter is how long a context's first segment must be before
	// a clause boundary cuts it: the first audio is what a listener waits
	// for, so it starts at the first comma of a long opening sentence.
	firstClauseAfter = 40
	// clauseAfter is the same for later segments, which can afford longer
	// stretches of prosody.
	clauseAfter = 120
	// maxSegment is where a segment is cut at the last space whatever the
	// punctuation, which also bounds what one segment buffers.
	maxSegment = 300
	// clauseModeAfter is the shortest segment a clause boundary cuts in
	// the clause aggregation: long enough for a provider to give the
	// clause its own intonation, short enough that an LLM's first clause
	// is spoken before its sentence ends.
	clauseModeAfter = 15
)

// Aggregation modes of a context (the start message's aggregation field,
// docs/realtime.md "Input aggregation").
const (
	// aggSentence cuts at sentence ends, and at clauses of long
	// sentences: the best prosody of the three, the longest wait.
	aggSentence = "sentence"
	// aggClause cuts at every clause boundary past clauseModeAfter.
	aggClause = "clause"
	// aggImmediate passes each text message on as it is, for providers
	// that take partial input (their own buffering decides when to
	// speak).
	aggImmediate = "immediate"
)

// segmenter cuts a context's incoming text into segments to speak:
// sentences, clauses of long sentences, or pieces of run-on text. It is
// fed with write as text arrives and returns each segment as soon as it is
// complete; rest returns what is left, for flush and close. Not safe for
// concurrent use.
type segmenter struct {
	buf []byte
	// emitted counts the segments returned, so the first one can be cut
	// early.
	emitted int
	// clause is the clause aggregation: every clause boundary past
	// clauseModeAfter cuts.
	clause bool
	// consumed is the number of bytes of input taken out of the buffer
	// so far; ends holds, for each segment the last write or rest
	// returned, consumed after it: where its text ends in the context's
	// whole input.
	consumed int
	ends     []int
}

// write appends text and returns the segments it completed, trimmed of
// surrounding whitespace, in order.
func (s *segmenter) write(text string, out []string) []string {
	s.ends = s.ends[:0]
	s.buf = append(s.buf, text...)
	for {
		cut := s.cut()
		if cut <= 0 {
			return out
		}
		out = s.emit(cut, out)
	}
}

// rest returns everything buffered as one segment ("" if only whitespace
// is left) and empties the buffer.
func (s *segmenter) rest() string {
	s.ends = s.ends[:0]
	out := s.emit(len(s.buf), nil)
	if len(out) == 0 {
		return ""
	}
	return out[0]
}

// buffered is the number of bytes waiting for the end of their segment.
func (s *segmenter) buffered() int { return len(s.buf) }

func (s *segmenter) emit(cut int, out []string) []string {
	seg := strings.TrimSpace(string(s.buf[:cut]))
	// Keep the buffer's memory: the next segment is written into it.
	n := copy(s.buf, s.buf[cut:])
	s.buf = s.buf[:n]
	s.consumed += cut
	if seg == "" {
		return out
	}
	s.emitted++
	s.ends = append(s.ends, s.consumed)
	return append(out, seg)
}

// cut returns the byte offset that ends the first complete segment of the
// buffer, or 0 if none is complete yet.
func (s *segmenter) cut() int {
	b := s.buf
	threshold := clauseAfter
	if s.emitted == 0 {
		threshold = firstClauseAfter
	}
	var (
		chars      int // characters before i
		lastClause int // end of the last clause boundary seen
		lastSpace  int // offset of the last whitespace within maxSegment
		maxAt      int // offset after maxSegment characters
	)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		next := i + size
		chars++
		if chars == maxSegment {
			maxAt = next
		}
		switch {
		case unicode.IsSpace(r):
			if chars <= maxSegment {
				lastSpace = i
			}
		case isCJKTerminator(r):
			// No spaces in CJK text: the terminator itself ends the
			// sentence, once something follows it.
			end := skipClosers(b, next)
			if end < len(b) {
				return end
			}
		case isTerminator(r):
			end := skipClosers(b, next)
			if end < len(b) && isSpaceAt(b, end) && !(r == '.' && abbreviation(b[:i])) {
				return end
			}
		case isClause(r):
			end := skipClosers(b, next)
			if end < len(b) && isSpaceAt(b, end) {
				if s.clause && chars >= clauseModeAfter {
					// The clause aggregation cuts at the first boundary
					// past its minimum.
					return end
				}
				lastClause = end
			}
		}
		i = next
	}
	if chars >= threshold && lastClause > 0 && !s.clause {
		return lastClause
	}
	if chars >= maxSegment {
		if lastSpace > 0 {
			return lastSpace
		}
		return maxAt
	}
	return 0
}

func isTerminator(r rune) bool { return r == '.' || r == '!' || r == '?' || r == '…' }

func isCJKTerminator(r rune) bool { return r == '。' || r == '！' || r == '？' }

func isClause(r rune) bool {
	return r == ',' || r == ';' || r == ':' || r == '—' || r == '–' || r == '،' || r == '、'
}

// skipClosers returns the offset after any closing quotes or brackets
// at i.
func skipClosers(b []byte, i int) int {
	for i < len(b) {
		r, size := utf8.DecodeRune(b[i:])
		switch r {
		case '"', '\'', '”', '’', ')', ']', '}', '»', '」', '』':
			i += size
		default:
			return i
		}
	}
	return i
}

func isSpaceAt(b []byte, i int) bool {
	r, _ := utf8.DecodeRune(b[i:])
	return unicode.IsSpace(r)
}

// abbreviations end in a period without ending a sentence (compared in
// lower case, without the final period).
var abbreviations = map[string]bool{
	"mr": true, "mrs": true, "ms": true, "dr": true, "prof": true, "sr": true, "jr": true, "st": true,
	"vs": true, "e.g": true, "i.e": true, "approx": true, "fig": true, "mt": true, "u.s": true,
}

// abbreviation reports whether the word that ends before (just before a
// period) is an abbreviation or a single initial ("J. R. R.").
func abbreviation(before []byte) bool {
	start := len(before)
	for start > 0 {
		r, size := utf8.DecodeLastRune(before[:start])
		if unicode.IsSpace(r) || r == '(' || r == '"' {
			break
		}
		start -= size
	}
	word := string(before[start:])
	if utf8.RuneCountInString(word) == 1 {
		r, _ := utf8.DecodeRuneInString(word)
		return unicode.IsUpper(r)
	}
	return abbreviations[strings.ToLower(word)]
}
