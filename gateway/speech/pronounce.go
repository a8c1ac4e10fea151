package speech

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/sdk"
)

// Pronunciations is the request's pronunciations object.
type Pronunciations struct {
	Rules []PronunciationRule
}

// PronunciationRule replaces a whole word before synthesis.
type PronunciationRule struct {
	Word          string
	Replacement   string
	CaseSensitive bool
}

const maxPronunciationRules = 500

// Validate checks the rules; path is where the object sits in the body.
func (p *Pronunciations) Validate(path ...string) []problem.FieldError {
	if p == nil {
		return nil
	}
	var fe []problem.FieldError
	at := func(i int, f string) []string {
		return append(append(append([]string(nil), path...), "rules", strconv.Itoa(i)), f)
	}
	if len(p.Rules) > maxPronunciationRules {
		fe = append(fe, problem.Field(fmt.Sprintf("at most %d rules", maxPronunciationRules), append(path, "rules")...))
	}
	for i, r := range p.Rules {
		if strings.TrimSpace(r.Word) == "" || utf8.RuneCountInString(r.Word) > 100 {
			fe = append(fe, problem.Field("must be 1 to 100 characters", at(i, "word")...))
		}
		if strings.TrimSpace(r.Replacement) == "" || utf8.RuneCountInString(r.Replacement) > 200 {
			fe = append(fe, problem.Field("must be 1 to 200 characters", at(i, "replacement")...))
		}
	}
	return fe
}

// word is a word of a text with its byte span.
type word struct {
	start, end int
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' || r == '’' || r == '-' || unicode.Is(unicode.Mn, r)
}

// words splits text into words (runs of letters, digits, apostrophes and
// hyphens), the same way providers report word timestamps. Audio tags
// ("[laughs]") are not words.
func words(text string) []word {
	var out []word
	tags := tagPattern.FindAllStringIndex(text, -1)
	start := -1
	for i, r := range text {
		for len(tags) > 0 && i >= tags[0][1] {
			tags = tags[1:]
		}
		inTag := len(tags) > 0 && i >= tags[0][0]
		if isWordRune(r) && !inTag {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, word{start, i})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, word{start, len(text)})
	}
	return out
}

// substitution is the result of applying rules to a text: the text to
// synthesize and, for every word of it, the original word it came from.
type substitution struct {
	text string
	// origin[i] is the index into origWords of the i-th word of text.
	origin    []int
	origWords []string
}

// apply substitutes whole words. A rule's word may span several words
// ("New York"); matching is case-insensitive unless the rule says not.
func (p *Pronunciations) apply(text string) *substitution {
	ow := words(text)
	s := &substitution{origWords: make([]string, len(ow))}
	for i, w := range ow {
		s.origWords[i] = text[w.start:w.end]
	}
	// spans records, in the new text, the byte span produced from each
	// original word (or matched group of words).
	type span struct{ start, end, orig int }
	var spans []span
	var b strings.Builder
	last := 0
	for i := 0; i < len(ow); {
		b.WriteString(text[last:ow[i].start])
		rule, n := p.match(text, ow, i)
		if rule == nil {
			spans = append(spans, span{b.Len(), b.Len() + ow[i].end - ow[i].start, i})
			b.WriteString(text[ow[i].start:ow[i].end])
			last = ow[i].end
			i++
			continue
		}
		spans = append(spans, span{b.Len(), b.Len() + len(rule.Replacement), i})
		b.WriteString(rule.Replacement)
		// A multi-word match reports as one original word.
		s.origWords[i] = text[ow[i].start:ow[i+n-1].end]
		last = ow[i+n-1].end
		i += n
	}
	b.WriteString(text[last:])
	s.text = b.String()
	nw := words(s.text)
	s.origin = make([]int, len(nw))
	si := 0
	for j, w := range nw {
		for si < len(spans)-1 && spans[si].end <= w.start {
			si++
		}
		s.origin[j] = spans[si].orig
	}
	return s
}

// match returns the rule matching at word i and how many words it covers.
func (p *Pronunciations) match(text string, ow []word, i int) (*PronunciationRule, int) {
	for ri := range p.Rules {
		r := &p.Rules[ri]
		rw := words(r.Word)
		if len(rw) == 0 || i+len(rw) > len(ow) {
			continue
		}
		ok := true
		for k := range rw {
			a, b := text[ow[i+k].start:ow[i+k].end], r.Word[rw[k].start:rw[k].end]
			if r.CaseSensitive && a != b || !r.CaseSensitive && !strings.EqualFold(a, b) {
				ok = false
				break
			}
		}
		if ok {
			return r, len(rw)
		}
	}
	return nil, 0
}

// mapTimestamps turns timestamps of the substituted text into timestamps
// of the original words: consecutive entries that came from one original
// word merge into one. When the provider's words do not line up with ours
// the timestamps are returned as they are, with ok false.
func (s *substitution) mapTimestamps(ts []sdk.WordTimestamp) (out []sdk.WordTimestamp, ok bool) {
	if len(ts) != len(s.origin) {
		return ts, false
	}
	for i, t := range ts {
		o := s.origin[i]
		if len(out) > 0 && i > 0 && s.origin[i-1] == o {
			out[len(out)-1].End = t.End
			continue
		}
		out = append(out, sdk.WordTimestamp{Text: s.origWords[o], Start: t.Start, End: t.End})
	}
	return out, true
}
