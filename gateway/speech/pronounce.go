package speech

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/speech/phonetic"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/sdk"
)

// Pronunciations is the request's pronunciations object: inline rules and
// the organization's dictionaries to apply, on top of its default
// dictionary (which always applies).
type Pronunciations struct {
	Rules         []PronunciationRule
	DictionaryIDs []string
}

// PronunciationRule says how a whole word is spoken: an alias rule
// (Kind store.RuleAlias, or empty) replaces it by Replacement before
// synthesis; a phoneme rule (store.RulePhoneme) gives its pronunciation
// in Alphabet (phonetic.IPA or phonetic.CMU), compiled per provider
// (compile.go), with Replacement as an optional stand-in where the
// provider takes no phonemes.
type PronunciationRule struct {
	Word          string
	Replacement   string
	CaseSensitive bool
	Kind          string
	Alphabet      string
	Phoneme       string
}

// isPhoneme reports whether r gives a pronunciation rather than text.
func (r *PronunciationRule) isPhoneme() bool { return r.Kind == store.RulePhoneme }

// Bounds of a request's pronunciations (the hosted service's documented
// limits) and of a rule's strings.
const (
	MaxInlineRules      = 200
	MaxDictionaryIDs    = 20
	MaxWordChars        = 100
	MaxReplacementChars = 200
)

// Validate checks the rules; path is where the object sits in the body.
func (p *Pronunciations) Validate(path ...string) []problem.FieldError {
	if p == nil {
		return nil
	}
	var fe []problem.FieldError
	at := func(f ...string) []string {
		return append(append([]string(nil), path...), f...)
	}
	if len(p.Rules) > MaxInlineRules {
		fe = append(fe, problem.Field(fmt.Sprintf("at most %d inline rules per request (put more in a dictionary)", MaxInlineRules), at("rules")...))
	}
	for i, r := range p.Rules {
		for _, e := range ValidateRule(r) {
			fe = append(fe, problem.Field(e.Message, at("rules", strconv.Itoa(i), e.Path[0])...))
		}
	}
	if len(p.DictionaryIDs) > MaxDictionaryIDs {
		fe = append(fe, problem.Field(fmt.Sprintf("at most %d dictionaries per request", MaxDictionaryIDs), at("dictionaryIds")...))
	}
	seen := make(map[string]bool, len(p.DictionaryIDs))
	for i, id := range p.DictionaryIDs {
		switch {
		case uuid.Validate(id) != nil:
			fe = append(fe, problem.Field("must be a dictionary id (uuid)", at("dictionaryIds", strconv.Itoa(i))...))
		case seen[id]:
			fe = append(fe, problem.Field("is listed twice", at("dictionaryIds", strconv.Itoa(i))...))
		}
		seen[id] = true
	}
	return fe
}

// ValidateRule checks a rule, with errors at ["word"], ["replacement"],
// ["kind"], ["alphabet"] and ["phoneme"]: an alias rule needs a
// replacement and no phoneme; a phoneme rule an alphabet and a phoneme
// valid in it (phonetic.Check), and may have a replacement.
func ValidateRule(r PronunciationRule) []problem.FieldError {
	var fe []problem.FieldError
	if strings.TrimSpace(r.Word) == "" || utf8.RuneCountInString(r.Word) > MaxWordChars || len(words(r.Word)) == 0 {
		fe = append(fe, problem.Field(fmt.Sprintf("must be 1 to %d characters with at least one letter or digit", MaxWordChars), "word"))
	}
	badReplacement := strings.TrimSpace(r.Replacement) == "" || utf8.RuneCountInString(r.Replacement) > MaxReplacementChars
	switch r.Kind {
	case "", store.RuleAlias:
		if badReplacement {
			fe = append(fe, problem.Field(fmt.Sprintf("must be 1 to %d characters", MaxReplacementChars), "replacement"))
		}
		if r.Alphabet != "" || r.Phoneme != "" {
			fe = append(fe, problem.Field(`an alias rule has no alphabet or phoneme (use "kind": "phoneme")`, "kind"))
		}
	case store.RulePhoneme:
		if r.Replacement != "" && badReplacement {
			fe = append(fe, problem.Field(fmt.Sprintf("must be empty or 1 to %d characters (what providers without phonemes speak)", MaxReplacementChars), "replacement"))
		}
		switch {
		case r.Alphabet != phonetic.IPA && r.Alphabet != phonetic.CMU:
			fe = append(fe, problem.Field(fmt.Sprintf("must be %q or %q", phonetic.IPA, phonetic.CMU), "alphabet"))
		default:
			if err := phonetic.Check(r.Alphabet, r.Phoneme); err != nil {
				fe = append(fe, problem.Field(err.Error(), "phoneme"))
			}
		}
	default:
		fe = append(fe, problem.Field(fmt.Sprintf("must be %q or %q", store.RuleAlias, store.RulePhoneme), "kind"))
	}
	return fe
}

// ValidateStoredRule is ValidateRule for a dictionary's rule
// (resources.Deps.CheckRule).
func ValidateStoredRule(r *store.PronunciationRule) []problem.FieldError {
	return ValidateRule(fromStored(r))
}

// fromStored is the pipeline's form of a dictionary's rule.
func fromStored(r *store.PronunciationRule) PronunciationRule {
	return PronunciationRule{Word: r.Word, Replacement: r.Replacement, CaseSensitive: r.CaseSensitive,
		Kind: r.Kind, Alphabet: r.Alphabet, Phoneme: r.Phoneme}
}

// ruleSet is the rules a request applies, compiled for matching: each
// rule's words split once, the rules indexed by their first word (folded
// to lower case), each list in precedence order. Matching a text is then
// one map probe per word of the text, however many rules apply.
type ruleSet struct {
	byFirst map[string][]*compiledRule
}

// compiledRule is a rule with its words split.
type compiledRule struct {
	rule  PronunciationRule
	words []string // the rule's words, as written
}

// layerRules builds the rules a text applies from a request's sources,
// lowest precedence first (the default dictionary, the listed
// dictionaries in order, the inline rules): a later source wins on the
// same word (store.WordKey), and the winners are tried first where rules
// overlap. Only rules whose first word occurs in text are kept, and nil
// means none can match: a request whose text holds none of its
// dictionaries' words costs one pass over the text, whatever the
// dictionaries' size, and no substitution at all.
func layerRules(text string, sources ...[]PronunciationRule) *ruleSet {
	n := 0
	for _, src := range sources {
		n += len(src)
	}
	if n == 0 {
		return nil
	}
	tw := words(text)
	present := make(map[string]struct{}, len(tw))
	var buf []byte
	for _, w := range tw {
		word := text[w.start:w.end]
		if !isLower(word) {
			buf = appendLower(buf[:0], word)
			word = string(buf)
		}
		present[word] = struct{}{} // most words are lower case already: a substring, no copy
	}
	var rs *ruleSet
	var seen map[string]bool
	for i := len(sources) - 1; i >= 0; i-- {
		src := sources[i]
		for k := len(src) - 1; k >= 0; k-- {
			r := src[k]
			ws := words(r.Word)
			if len(ws) == 0 {
				continue
			}
			buf = appendLower(buf[:0], r.Word[ws[0].start:ws[0].end])
			if _, ok := present[string(buf)]; !ok {
				continue // cannot match this text (nor can any rule of its word)
			}
			key := store.WordKey(r.Word)
			if seen[key] {
				continue // a later source, or a later rule of this one, has the word
			}
			if rs == nil {
				rs = &ruleSet{byFirst: map[string][]*compiledRule{}}
				seen = map[string]bool{}
			}
			seen[key] = true
			cr := &compiledRule{rule: r, words: make([]string, len(ws))}
			for j, w := range ws {
				cr.words[j] = r.Word[w.start:w.end]
			}
			first := string(buf)
			rs.byFirst[first] = append(rs.byFirst[first], cr)
		}
	}
	return rs
}

// isLower reports whether s has no upper-case letter, looking at ASCII
// bytes only and giving up (false) at the first other byte.
func isLower(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			return false
		}
	}
	return true
}

// appendLower appends s in lower case to b (the case folding of
// strings.ToLower, without allocating a string).
func appendLower(b []byte, s string) []byte {
	for _, r := range s {
		b = utf8.AppendRune(b, unicode.ToLower(r))
	}
	return b
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
//
// A phoneme rule's word is marked for c to render per provider request
// (compile.go), or replaced by its stand-in where the model cannot take
// it.
func (p *ruleSet) apply(text string, c *compiler) *substitution {
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
		// A multi-word match reports as one original word.
		s.origWords[i] = text[ow[i].start:ow[i+n-1].end]
		repl := rule.Replacement
		if rule.isPhoneme() {
			repl = c.mark(rule, s.origWords[i])
		}
		spans = append(spans, span{b.Len(), b.Len() + len(repl), i})
		b.WriteString(repl)
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

// match returns the rule matching at word i and how many words it covers:
// the first, in precedence order, of the rules whose first word is word
// i's.
func (p *ruleSet) match(text string, ow []word, i int) (*PronunciationRule, int) {
	var buf [64]byte
	cands := p.byFirst[string(appendLower(buf[:0], text[ow[i].start:ow[i].end]))]
	for _, cr := range cands {
		if i+len(cr.words) > len(ow) {
			continue
		}
		ok := true
		for k, rw := range cr.words {
			a := text[ow[i+k].start:ow[i+k].end]
			if cr.rule.CaseSensitive && a != rw || !cr.rule.CaseSensitive && !strings.EqualFold(a, rw) {
				ok = false
				break
			}
		}
		if ok {
			return &cr.rule, len(cr.words)
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
