package speech

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/voxgate/voxgate/gateway/speech/phonetic"
	"github.com/voxgate/voxgate/gateway/store"
)

// W3C Pronunciation Lexicon Specification 1.0 documents: what the gateway
// uploads to providers that take lexicons (ElevenLabs), and what the
// dictionary routes export and import. encoding/xml writes and reads them:
// the format is small, and the reader refuses DTDs before parsing (see
// ParsePLS).

// PLSNamespace is the PLS 1.0 namespace.
const PLSNamespace = "http://www.w3.org/2005/01/pronunciation-lexicon"

// PLSMediaType is the media type of a PLS document.
const PLSMediaType = "application/pls+xml"

// cmuPLSAlphabet is how a PLS document names CMU/ARPAbet in a phoneme's
// alphabet attribute (the PLS and SSML specifications reserve "x-" names
// for alphabets of their own).
const cmuPLSAlphabet = "x-cmu"

type plsLexicon struct {
	XMLName  xml.Name    `xml:"lexicon"`
	Version  string      `xml:"version,attr"`
	NS       string      `xml:"xmlns,attr,omitempty"`
	Alphabet string      `xml:"alphabet,attr"`
	Lang     string      `xml:"http://www.w3.org/XML/1998/namespace lang,attr"`
	Lexemes  []plsLexeme `xml:"lexeme"`
}

type plsLexeme struct {
	Graphemes []string     `xml:"grapheme"`
	Phonemes  []plsPhoneme `xml:"phoneme"`
	Aliases   []string     `xml:"alias"`
}

type plsPhoneme struct {
	Alphabet string `xml:"alphabet,attr,omitempty"`
	Text     string `xml:",chardata"`
}

// PLS writes rules as a PLS document in language lang. Every pronunciation
// is IPA (CMU converted), since providers read IPA lexicons; a rule that
// ignores case gets its word as written, in lower case, capitalized and
// in upper case, since PLS graphemes match case-sensitively.
func PLS(rules []*PronunciationRule, lang string) []byte {
	return writePLS(rules, lang, false)
}

// ExportPLS writes a dictionary's rules as a PLS document, alias rules as
// <alias>, CMU pronunciations kept in CMU (alphabet="x-cmu"), so that
// ImportPLS reads back the same rules.
func ExportPLS(rules []*PronunciationRule, lang string) []byte {
	return writePLS(rules, lang, true)
}

func writePLS(rules []*PronunciationRule, lang string, export bool) []byte {
	lx := plsLexicon{Version: "1.0", NS: PLSNamespace, Alphabet: "ipa", Lang: lang}
	for _, r := range rules {
		le := plsLexeme{Graphemes: graphemes(r)}
		switch {
		case r.isPhoneme() && export && r.Alphabet == phonetic.CMU:
			le.Phonemes = []plsPhoneme{{Alphabet: cmuPLSAlphabet, Text: r.Phoneme}}
		case r.isPhoneme():
			le.Phonemes = []plsPhoneme{{Text: phonetic.ToIPA(r.Alphabet, r.Phoneme)}}
		}
		if r.Replacement != "" && (export || !r.isPhoneme()) {
			le.Aliases = []string{r.Replacement}
		}
		lx.Lexemes = append(lx.Lexemes, le)
	}
	var b bytes.Buffer
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	enc.Indent("", "  ")
	if err := enc.Encode(lx); err != nil {
		// Only an io error of the buffer could fail, and it has none.
		panic(fmt.Sprintf("speech: write PLS: %v", err))
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// graphemes are the spellings a PLS lexeme lists for r's word.
func graphemes(r *PronunciationRule) []string {
	out := []string{r.Word}
	if r.CaseSensitive {
		return out
	}
	add := func(w string) {
		for _, x := range out {
			if x == w {
				return
			}
		}
		out = append(out, w)
	}
	add(strings.ToLower(r.Word))
	add(capitalize(strings.ToLower(r.Word)))
	add(strings.ToUpper(r.Word))
	return out
}

func capitalize(s string) string {
	for i, c := range s {
		return string(unicode.ToUpper(c)) + s[i+len(string(c)):]
	}
	return s
}

// MaxPLSBytes bounds a PLS document the gateway imports.
const MaxPLSBytes = 1 << 20

// ErrPLSDoctype is returned for a PLS document with a document type
// declaration: DTDs declare entities, and a lexicon needs none.
var ErrPLSDoctype = errors.New("a PLS document may not have a <!DOCTYPE> (or <!ENTITY>) declaration")

// ParsePLS reads a PLS document into rules: a lexeme with a phoneme
// becomes a phoneme rule (its alias, if any, the stand-in), one with only
// an alias an alias rule, one rule per grapheme-spelled word (graphemes
// that differ only in case become one rule that ignores case). Documents
// over MaxPLSBytes and documents declaring a DTD or entities are
// refused before anything is parsed: encoding/xml never expands external
// entities, but refusing them explicitly keeps that a decision here
// rather than a library's.
func ParsePLS(doc []byte) ([]PronunciationRule, error) {
	if len(doc) > MaxPLSBytes {
		return nil, fmt.Errorf("a PLS document may have at most %d bytes", MaxPLSBytes)
	}
	dec := xml.NewDecoder(bytes.NewReader(doc))
	dec.Strict = true
	dec.Entity = nil
	// Walk the tokens first: a directive (<!DOCTYPE>, <!ENTITY>) anywhere
	// refuses the document.
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("not a well-formed XML document: %w", err)
		}
		if _, ok := tok.(xml.Directive); ok {
			return nil, ErrPLSDoctype
		}
	}
	var lx plsLexicon
	if err := xml.Unmarshal(doc, &lx); err != nil {
		return nil, fmt.Errorf("not a PLS document: %w", err)
	}
	if lx.XMLName.Space != PLSNamespace && lx.XMLName.Space != "" {
		return nil, fmt.Errorf("the root element is not a PLS lexicon (namespace %s)", PLSNamespace)
	}
	docAlphabet := normalAlphabet(lx.Alphabet)
	var out []PronunciationRule
	for i, le := range lx.Lexemes {
		if len(le.Graphemes) == 0 {
			return nil, fmt.Errorf("lexeme %d has no grapheme", i+1)
		}
		r := PronunciationRule{Kind: store.RuleAlias}
		if len(le.Aliases) > 0 {
			r.Replacement = strings.TrimSpace(le.Aliases[0])
		}
		if len(le.Phonemes) > 0 {
			p := le.Phonemes[0]
			alphabet := docAlphabet
			if p.Alphabet != "" {
				alphabet = normalAlphabet(p.Alphabet)
			}
			if alphabet == "" {
				return nil, fmt.Errorf("lexeme %d: alphabet %q is not ipa or CMU/ARPAbet", i+1, cmpOr(p.Alphabet, lx.Alphabet))
			}
			r.Kind, r.Alphabet, r.Phoneme = store.RulePhoneme, alphabet, strings.TrimSpace(p.Text)
		}
		// Graphemes differing only in case are one case-insensitive rule;
		// others are rules of their own.
		var words []string
		for _, g := range le.Graphemes {
			g = strings.TrimSpace(g)
			dup := false
			for _, w := range words {
				dup = dup || strings.EqualFold(w, g)
			}
			if !dup {
				words = append(words, g)
			}
		}
		for _, w := range words {
			rr := r
			rr.Word = w
			out = append(out, rr)
		}
	}
	return out, nil
}

// normalAlphabet maps a PLS alphabet name to a rule's, or "".
func normalAlphabet(a string) string {
	switch strings.ToLower(strings.TrimSpace(a)) {
	case "ipa":
		return phonetic.IPA
	case cmuPLSAlphabet, "cmu", "cmu-arpabet", "x-arpabet", "arpabet":
		return phonetic.CMU
	}
	return ""
}

// ExportDictionaryPLS is ExportPLS for a stored dictionary's rules.
func ExportDictionaryPLS(rules []store.PronunciationRule, lang string) []byte {
	rs := make([]*PronunciationRule, len(rules))
	for i := range rules {
		r := fromStored(&rules[i])
		rs[i] = &r
	}
	return ExportPLS(rs, lang)
}
