package speech

import (
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/voxgate/voxgate/sdk"
)

// Caption formats of the with-timestamps endpoints' captions field.
const (
	CaptionsSRT = "srt"
	CaptionsVTT = "vtt"
)

// Caption layout, the public client's defaults for its own
// timestampsToCaptions: two lines of at most 42 characters (the usual
// broadcast subtitle line), a cue at most 7 s long, and a long phrase
// broken after a comma once the cue holds 60 characters.
const (
	captionLineChars   = 42
	captionLines       = 2
	captionCueSeconds  = 7.0
	captionCommaBreak  = 60
	captionMinDuration = 0.001
)

// captionWord is a timed word as a caption shows it: as written in the
// text, with the punctuation around it.
type captionWord struct {
	text       string
	start, end float64
	// group separates words that never share a cue (conversation turns).
	group int
}

// captionWords dresses timestamps in the text's own spelling: each word
// is found in text, in order, and shown with the punctuation attached to
// it ("Hello," and "world." rather than Hello and world); a word not
// found is shown as the timestamp has it.
func captionWords(text string, ts []sdk.WordTimestamp, group int) []captionWord {
	out := make([]captionWord, 0, len(ts))
	pos := 0
	for _, w := range ts {
		cw := captionWord{text: w.Text, start: w.Start, end: w.End, group: group}
		if i := findWord(text[pos:], w.Text); i >= 0 {
			from, to := pos+i, pos+i+len(w.Text)
			// Punctuation before the word back to the whitespace, and
			// after it up to the whitespace or the next word.
			for from > pos {
				r, n := utf8.DecodeLastRuneInString(text[:from])
				if unicode.IsSpace(r) || !isPunctuation(r) {
					break
				}
				from -= n
			}
			to = punctuationRun(text, to)
			// Punctuation standing alone after the word ("Fish & chips",
			// "yes - no") is shown with it rather than lost.
			for {
				gap := to
				for gap < len(text) && (text[gap] == ' ' || text[gap] == '\t') {
					gap++
				}
				end := punctuationRun(text, gap)
				if end == gap || (end < len(text) && !unicode.IsSpace(rune(text[end]))) {
					break
				}
				to = end
			}
			cw.text = text[from:to]
			pos = to
		}
		cw.text = strings.Map(func(r rune) rune {
			if unicode.IsControl(r) {
				return -1
			}
			return r
		}, cw.text)
		out = append(out, cw)
	}
	return out
}

// punctuationRun returns the end of the punctuation that starts at from
// in text (from itself when there is none); an audio tag is not
// punctuation.
func punctuationRun(text string, from int) int {
	to := from
	for to < len(text) {
		r, n := utf8.DecodeRuneInString(text[to:])
		if unicode.IsSpace(r) || !isPunctuation(r) || r == '[' {
			break
		}
		to += n
	}
	return to
}

// findWord returns where word occurs in text as a whole word (not inside
// a longer one), or -1. The search is bounded: a word the provider
// reported but the text lacks must not make the rest of the text
// unreachable.
func findWord(text, word string) int {
	if word == "" {
		return -1
	}
	limit := min(len(text), 4*len(word)+256)
	for off := 0; off < limit; {
		i := strings.Index(text[off:limit], word)
		if i < 0 {
			return -1
		}
		at := off + i
		before, _ := utf8.DecodeLastRuneInString(text[:at])
		after, _ := utf8.DecodeRuneInString(text[at+len(word):])
		if (at == 0 || !isWordRune(before)) && (at+len(word) == len(text) || !isWordRune(after)) {
			return at
		}
		off = at + 1
	}
	return -1
}

// captions lays timed words out as SRT or WebVTT cues: words are grouped
// by sentence (and never across groups), a sentence is split into cues
// of at most two lines of 42 characters and 7 s, breaking after a comma
// once a cue is long, and each cue's text is wrapped into its lines.
func captions(format string, words []captionWord) string {
	w := NewCaptionWriter(format)
	return w.Header() + w.cues(words)
}

// CaptionWriter lays out the captions of a long recording a segment at a
// time (long-form jobs: a chunk at a time, so that the whole recording's
// words are never in memory): cues are numbered on across segments and
// never overlap, and no cue spans two segments.
type CaptionWriter struct {
	format  string
	n       int
	prevEnd float64
}

// NewCaptionWriter returns a writer of captions in format (srt or vtt).
func NewCaptionWriter(format string) *CaptionWriter { return &CaptionWriter{format: format} }

// Header is what the captions start with ("WEBVTT" and a blank line for
// WebVTT, nothing for SRT).
func (w *CaptionWriter) Header() string {
	if w.format == CaptionsVTT {
		return "WEBVTT\n\n"
	}
	return ""
}

// Segment returns the cues of a segment whose text is text and whose
// words are ts, already shifted to their place in the recording.
func (w *CaptionWriter) Segment(text string, ts []sdk.WordTimestamp) string {
	return w.cues(captionWords(text, ts, 0))
}

func (w *CaptionWriter) cues(words []captionWord) string {
	var cues [][]captionWord
	var cur []captionWord
	flush := func() {
		if len(cur) > 0 {
			cues = append(cues, cur)
			cur = nil
		}
	}
	for i, w := range words {
		if len(cur) > 0 && cur[0].group != w.group {
			flush()
		}
		if len(cur) > 0 && (!fitsCue(append(cur, w)) || w.end-cur[0].start > captionCueSeconds) {
			flush()
		}
		cur = append(cur, w)
		t := strings.TrimRight(w.text, "\"'”’»)]」』")
		last, _ := utf8.DecodeLastRuneInString(t)
		switch {
		case isSentenceEnd(last):
			flush()
		case isClauseEnd(last) && cueChars(cur)+1 >= captionCommaBreak:
			flush()
		case i+1 < len(words) && words[i+1].group != w.group:
			flush()
		}
	}
	flush()
	var b strings.Builder
	sep := ","
	if w.format == CaptionsVTT {
		sep = "."
	}
	for _, cue := range cues {
		start := max(cue[0].start, w.prevEnd)
		end := max(cue[len(cue)-1].end, start+captionMinDuration)
		w.prevEnd = end
		texts := make([]string, len(cue))
		for i, cw := range cue {
			texts[i] = cw.text
			if w.format == CaptionsVTT {
				texts[i] = vttEscape.Replace(cw.text)
			}
		}
		w.n++
		fmt.Fprintf(&b, "%d\n%s --> %s\n%s\n\n", w.n, captionClock(start, sep), captionClock(end, sep), wrapCue(texts))
	}
	return b.String()
}

var vttEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// fitsCue reports whether cue's words wrap into the cue's lines without
// any line running long.
func fitsCue(cue []captionWord) bool {
	lines, n := 1, 0
	for _, w := range cue {
		l := utf8.RuneCountInString(w.text)
		switch {
		case n == 0:
			n = l
		case n+1+l <= captionLineChars:
			n += 1 + l
		default:
			lines, n = lines+1, l
		}
		if n > captionLineChars && len(cue) > 1 {
			return false
		}
	}
	return lines <= captionLines
}

func cueChars(cue []captionWord) int {
	n := len(cue) - 1
	for _, w := range cue {
		n += utf8.RuneCountInString(w.text)
	}
	return n
}

// wrapCue fills lines of at most captionLineChars, greedily; a word that
// does not fit opens the next line, up to captionLines; what is left goes
// on the last line.
func wrapCue(words []string) string {
	lines := []string{""}
	for _, w := range words {
		last := lines[len(lines)-1]
		switch {
		case last == "":
			lines[len(lines)-1] = w
		case utf8.RuneCountInString(last)+1+utf8.RuneCountInString(w) <= captionLineChars || len(lines) >= captionLines:
			lines[len(lines)-1] = last + " " + w
		default:
			lines = append(lines, w)
		}
	}
	return strings.Join(lines, "\n")
}

// captionClock formats seconds as HH:MM:SS,mmm (SRT) or HH:MM:SS.mmm
// (WebVTT).
func captionClock(sec float64, sep string) string {
	ms := int64(math.Round(max(sec, 0) * 1000))
	return fmt.Sprintf("%02d:%02d:%02d%s%03d", ms/3600000, ms/60000%60, ms/1000%60, sep, ms%1000)
}

// Captions returns the captions of a clip's timestamps in format (srt or
// vtt), text being what was asked to be spoken.
func Captions(format, text string, ts []sdk.WordTimestamp) string {
	return captions(format, captionWords(text, ts, 0))
}

// ConversationCaptions returns the captions of a conversation: each
// turn's words dressed in its own text, cues never spanning two turns.
func ConversationCaptions(format string, turns []string, ts []ConversationTimestamp) string {
	var words []captionWord
	for i := 0; i < len(ts); {
		k := i
		for k < len(ts) && ts[k].TurnIndex == ts[i].TurnIndex {
			k++
		}
		turn := ts[i].TurnIndex
		wts := make([]sdk.WordTimestamp, 0, k-i)
		for _, t := range ts[i:k] {
			wts = append(wts, sdk.WordTimestamp{Text: t.Text, Start: t.Start, End: t.End})
		}
		text := ""
		if turn >= 0 && turn < len(turns) {
			text = turns[turn]
		}
		words = append(words, captionWords(text, wts, turn)...)
		i = k
	}
	return captions(format, words)
}
