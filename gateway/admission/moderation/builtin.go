package moderation

import (
	"bytes"
	"fmt"
	"regexp"
	"regexp/syntax"
	"sort"
	"sync"
	"unicode/utf8"
)

// TestPhrase is blocked by every ruleset that is not off, whatever its
// checks, with reason type ReasonTestPhrase: like the EICAR file for virus
// scanners, it lets an operator prove end to end that moderation is on
// without writing anything offensive. It is matched after normalization,
// so "voxgate moderation test", "V0XGATE-M0DERATI0N-TEST" or a full-width
// spelling are blocked too.
const TestPhrase = "VOXGATE-MODERATION-TEST"

// testPhraseKey is TestPhrase as it appears in a normalized view.
const testPhraseKey = "voxgatemoderationtest"

// minSubstringLetters is the length from which a one-word term also
// matches inside longer words ("idiots", "xxidiotxx") and across any
// separators ("id-i ot"). Shorter terms match whole words only (after
// spaced-out letters are joined), because short terms hide inside
// innocent words far too often: "ass" in "class", "hate" in "whatever".
// Long terms can still occur inside innocent words (the Scunthorpe
// problem); pick them with that in mind, or write a pattern instead.
const minSubstringLetters = 5

// Builtin is a compiled built-in check: terms and regular expressions
// grouped in categories. It is safe for concurrent use.
type Builtin struct {
	terms    []term
	trie     trie
	patterns []categoryPattern
}

// term is one configured term in matching form.
type term struct {
	category string
	// key is the term's letters and digits after normalization.
	key []byte
	// multiWord: the term has several words; separators may then fall
	// anywhere inside a match ("kill your self"), but the match must start
	// and end on word boundaries.
	multiWord bool
	// substring: a long one-word term, matched anywhere.
	substring bool
}

// categoryPattern is one compiled pattern of a category. Patterns are kept
// apart rather than joined into one alternation: Go's regexp finds a
// pattern's literal prefix with a fast substring search, and an
// alternation has none.
type categoryPattern struct {
	category string
	re       *regexp.Regexp
	// need is a literal every match starts with, after leading assertions
	// such as \b; texts without it skip the expression. It matters because
	// a leading \b hides the literal from regexp's own prefix search and
	// makes the expression scan the text position by position.
	need []byte
}

// DefaultCategories returns the categories `builtin: {}` checks. They are a
// deliberately small baseline of clearly abusive phrases, so that the
// default deployment blocks obvious abuse without blocking ordinary text;
// an operator with real needs configures their own lists.
func DefaultCategories() map[string]*Category {
	return map[string]*Category{
		"self_harm": {
			Terms: []string{"kill yourself", "kys", "neck yourself", "drink bleach"},
		},
		"harassment": {
			Terms: []string{"go die in a fire", "i hope you die"},
		},
		"hate": {
			Terms: []string{"gas the jews", "heil hitler"},
		},
		"sexual_minors": {
			Terms: []string{"child porn", "child pornography", "csam links", "cp links"},
		},
	}
}

// NewBuiltin compiles categories; nil or empty means DefaultCategories.
// Patterns use Go's RE2 syntax, which matches in time linear in the text,
// so a configured expression cannot make a request hang. They run over the
// normalized text (lower case, diacritics stripped, invisible characters
// removed, separators kept) and match case-insensitively.
func NewBuiltin(categories map[string]*Category) (*Builtin, error) {
	if len(categories) == 0 {
		categories = DefaultCategories()
	}
	names := make([]string, 0, len(categories))
	for name := range categories {
		names = append(names, name)
	}
	sort.Strings(names) // deterministic: the first category wins a tie
	b := &Builtin{}
	var v views
	for _, name := range names {
		c := categories[name]
		if c == nil {
			continue
		}
		for _, t := range c.Terms {
			v.build(t)
			if len(v.plain.s) == 0 {
				return nil, fmt.Errorf("category %s: term %q has no letters or digits", name, t)
			}
			tm := term{category: name, key: bytes.Clone(v.plain.s)}
			for i := 1; i < len(v.plain.start); i++ {
				if v.plain.start[i] {
					tm.multiWord = true
				}
			}
			tm.substring = !tm.multiWord && utf8.RuneCount(tm.key) >= minSubstringLetters
			b.terms = append(b.terms, tm)
		}
		for _, p := range c.Patterns {
			re, need, err := compilePattern(p)
			if err != nil {
				return nil, fmt.Errorf("category %s: pattern %q: %w", name, p, err)
			}
			b.patterns = append(b.patterns, categoryPattern{category: name, re: re, need: need})
		}
	}
	for i := range b.terms {
		b.trie.insert(b.terms[i].key, int32(i))
	}
	return b, nil
}

// Match reports the category of the first term or pattern text matches.
// It normalizes text itself; the engine shares one normalization between
// the test phrase and all of a ruleset's built-in checks instead.
func (b *Builtin) Match(text string) (category string, ok bool) {
	v := getViews()
	defer putViews(v)
	v.build(text)
	return b.match(v)
}

// match runs the check over already normalized views. Hot path: no
// allocation.
func (b *Builtin) match(v *views) (string, bool) {
	if i := b.trie.find(b.terms, &v.plain); i >= 0 {
		return b.terms[i].category, true
	}
	if v.altDiffers {
		if i := b.trie.find(b.terms, &v.alt); i >= 0 {
			return b.terms[i].category, true
		}
	}
	for _, p := range b.patterns {
		if len(p.need) > 0 && !bytes.Contains(v.norm, p.need) {
			continue
		}
		if p.re.Match(v.norm) {
			return p.category, true
		}
	}
	return "", false
}

// hasTestPhrase reports whether the views contain TestPhrase.
func (v *views) hasTestPhrase() bool {
	if bytes.Contains(v.plain.s, []byte(testPhraseKey)) {
		return true
	}
	return v.altDiffers && bytes.Contains(v.alt.s, []byte(testPhraseKey))
}

// viewsPool recycles normalization buffers between requests.
var viewsPool = sync.Pool{New: func() any { return new(views) }}

// maxPooledBytes keeps one huge text from pinning its buffers forever.
const maxPooledBytes = 64 << 10

func getViews() *views { return viewsPool.Get().(*views) }

func putViews(v *views) {
	if cap(v.norm) > maxPooledBytes || cap(v.plain.start) > maxPooledBytes {
		return
	}
	viewsPool.Put(v)
}

// accept reports whether term t, found at v.s[i:j], is a match under the
// word-boundary rules.
func (t *term) accept(v *view, i, j int) bool {
	if t.substring {
		return true
	}
	if !v.boundary(i) || !v.boundary(j) {
		return false
	}
	if t.multiWord {
		return true
	}
	// A one-word term may only be split between one-character words:
	// "h a t e" is "hate", but "hat e" and "that email" are not.
	for p := i + 1; p < j; p++ {
		if v.start[p] && (!v.singleBefore(p) || !v.singleAt(p)) {
			return false
		}
	}
	return true
}

// trie is a byte trie over the terms' keys. Matching walks it from every
// position of a view, which costs about one table lookup per byte for
// ordinary text: a small hand-written structure, because the matcher must
// judge each candidate by word boundaries, which multi-pattern search
// libraries (Aho-Corasick) do not report for overlapping matches.
type trie struct {
	// root maps a key's first byte to its node; 0 means no key starts so.
	root  [256]int32
	nodes []trieNode
}

type trieNode struct {
	edges []trieEdge
	// terms are the indexes of the terms whose key ends here.
	terms []int32
}

type trieEdge struct {
	b    byte
	next int32
}

func (t *trie) child(n int32, b byte) int32 {
	for _, e := range t.nodes[n].edges {
		if e.b == b {
			return e.next
		}
	}
	return 0
}

func (t *trie) insert(key []byte, termIdx int32) {
	if len(t.nodes) == 0 {
		t.nodes = append(t.nodes, trieNode{}) // node 0: "none"
	}
	n := t.root[key[0]]
	if n == 0 {
		n = int32(len(t.nodes))
		t.nodes = append(t.nodes, trieNode{})
		t.root[key[0]] = n
	}
	for _, b := range key[1:] {
		next := t.child(n, b)
		if next == 0 {
			next = int32(len(t.nodes))
			t.nodes = append(t.nodes, trieNode{})
			t.nodes[n].edges = append(t.nodes[n].edges, trieEdge{b: b, next: next})
		}
		n = next
	}
	t.nodes[n].terms = append(t.nodes[n].terms, termIdx)
}

// find returns the index of the first term matched in v, or -1.
func (t *trie) find(terms []term, v *view) int {
	s := v.s
	for i := 0; i < len(s); i++ {
		n := t.root[s[i]]
		for j := i + 1; n != 0; j++ {
			for _, ti := range t.nodes[n].terms {
				if terms[ti].accept(v, i, j) {
					return int(ti)
				}
			}
			if j == len(s) {
				break
			}
			n = t.child(n, s[j])
		}
	}
	return -1
}

// compilePattern compiles a configured pattern to run over normalized
// text. Its literals are folded the way the text is (lower case, no
// diacritics), which makes it case-insensitive without (?i): a fold-case
// literal would cost the matcher its fast literal-prefix search.
func compilePattern(p string) (*regexp.Regexp, []byte, error) {
	re, err := syntax.Parse(p, syntax.Perl|syntax.FoldCase)
	if err != nil {
		return nil, nil, err
	}
	foldLiterals(re)
	compiled, err := regexp.Compile(re.String())
	if err != nil {
		return nil, nil, err
	}
	return compiled, leadingLiteral(re), nil
}

// leadingLiteral returns the literal every match of re starts with, past
// zero-width assertions, or nil.
func leadingLiteral(re *syntax.Regexp) []byte {
	for re.Op == syntax.OpCapture {
		re = re.Sub[0]
	}
	subs := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		subs = re.Sub
	}
	for _, sub := range subs {
		switch {
		case sub.Op == syntax.OpWordBoundary, sub.Op == syntax.OpNoWordBoundary,
			sub.Op == syntax.OpBeginLine, sub.Op == syntax.OpBeginText:
			continue
		case sub.Op == syntax.OpLiteral && sub.Flags&syntax.FoldCase == 0:
			return []byte(string(sub.Rune))
		}
		return nil
	}
	return nil
}

func foldLiterals(re *syntax.Regexp) {
	if re.Op == syntax.OpLiteral && re.Flags&syntax.FoldCase != 0 {
		runes := re.Rune[:0]
		for _, r := range re.Rune {
			if f, keep := fold(r); keep {
				runes = append(runes, f)
			}
		}
		re.Rune = runes
		re.Flags &^= syntax.FoldCase
		if len(runes) == 0 {
			re.Op = syntax.OpEmptyMatch
		}
	}
	for _, sub := range re.Sub {
		foldLiterals(sub)
	}
}
