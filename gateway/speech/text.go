package speech

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// DefaultModelTextChars is the text limit of a model that states none
// (sdk.Model.MaxTextChars 0).
const DefaultModelTextChars = 5000

// splitText cuts text into pieces of at most limit characters (Unicode
// code points), for a model that accepts no more in one call. Each cut is
// at the last boundary of the best kind within the limit: the end of a
// paragraph, then of a sentence, then of a clause (a comma, semicolon,
// colon or dash), then a space; only a run of limit characters without
// any space is cut inside, and never inside an audio tag. Whitespace at
// the cuts is dropped, so a piece neither starts nor ends with it. Text
// within the limit is returned whole.
func splitText(text string, limit int) []string {
	text = strings.TrimSpace(text)
	if utf8.RuneCountInString(text) <= limit {
		return []string{text}
	}
	var pieces []string
	for text != "" {
		if utf8.RuneCountInString(text) <= limit {
			pieces = append(pieces, text)
			break
		}
		// end is the byte offset just past the first limit runes.
		end, n := 0, 0
		for i := range text {
			if n == limit {
				end = i
				break
			}
			n++
		}
		cut := bestCut(text[:end], text[end:])
		pieces = append(pieces, strings.TrimSpace(text[:cut]))
		text = strings.TrimSpace(text[cut:])
	}
	return pieces
}

// Boundary kinds, best first.
const (
	cutParagraph = iota
	cutSentence
	cutClause
	cutSpace
	cutKinds
)

// bestCut returns where to cut window (the first limit characters of the
// text; rest follows it): after the last boundary of the best kind that
// leaves at least a fifth of the window before it, so that pieces stay
// long; any boundary at all beats a cut inside a word.
func bestCut(window, rest string) int {
	var last [cutKinds]int
	inTag := false
	runes := []rune(window)
	at := 0 // byte offset of runes[i]
	offsets := make([]int, len(runes)+1)
	for i, r := range runes {
		offsets[i] = at
		at += utf8.RuneLen(r)
	}
	offsets[len(runes)] = at
	next := func(i int) rune {
		if i+1 < len(runes) {
			return runes[i+1]
		}
		r, _ := utf8.DecodeRuneInString(rest)
		return r
	}
	for i, r := range runes {
		switch {
		case r == '[':
			inTag = true
		case r == ']':
			inTag = false
		}
		if inTag {
			continue
		}
		after := next(i)
		spaceAfter := unicode.IsSpace(after) || after == utf8.RuneError
		switch {
		case r == '\n' && after == '\n':
			last[cutParagraph] = offsets[i+1]
		case isSentenceEnd(r) && (spaceAfter || isCJKStop(r)):
			last[cutSentence] = offsets[i+1]
		case isClauseEnd(r) && (spaceAfter || isCJKStop(r)):
			last[cutClause] = offsets[i+1]
		case unicode.IsSpace(r):
			last[cutSpace] = offsets[i]
		}
	}
	floor := len(window) / 5
	for k := range cutKinds {
		if last[k] > floor {
			return last[k]
		}
	}
	for k := range cutKinds {
		if last[k] > 0 {
			return last[k]
		}
	}
	return len(window)
}

func isSentenceEnd(r rune) bool {
	return strings.ContainsRune(".!?…。！？؟।", r)
}

func isClauseEnd(r rune) bool {
	return strings.ContainsRune(",;:—–、，；：", r)
}

// isCJKStop reports punctuation after which scripts without spaces may
// be cut.
func isCJKStop(r rune) bool {
	return strings.ContainsRune("。！？、，；：", r)
}

// spokenWords splits text into the words a timestamp is given for, the
// way eSpeak's word timestamps do: runs between whitespace, with the
// punctuation around them trimmed; runs that are only punctuation are not
// words.
func spokenWords(text string) []string {
	var out []string
	for _, f := range strings.Fields(text) {
		if w := strings.TrimFunc(f, isPunctuation); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// isPunctuation reports whether r is trimmed from the ends of a word, as
// eSpeak's timestamps trim it.
func isPunctuation(r rune) bool {
	return unicode.IsPunct(r) || unicode.In(r, unicode.Sm, unicode.Sk, unicode.Cf) ||
		unicode.IsSpace(r) || unicode.IsControl(r)
}
