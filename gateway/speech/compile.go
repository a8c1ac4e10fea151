package speech

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/voxgate/voxgate/gateway/speech/phonetic"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/sdk"
)

// Phoneme rules are compiled per provider, from what the model declares
// it takes (sdk.Model.Phonemes), in two steps:
//
//  1. When the rules are applied (ruleSet.apply), a word a phoneme rule
//     matches stays in the spoken text as written, between two private-use
//     marks that also carry the rule's number: markOpen, the word, the
//     rule's number as one rune from markIndexBase, markClose. The marks
//     are not word characters, so the spoken text has the same words as
//     the written one (word timestamps map back one to one), moderation
//     reads the word itself, and cutting a long text into pieces never
//     cuts a rule apart.
//  2. Each provider request renders its text (piece) from the marks
//     (compiler.render): eSpeak phoneme input [[...]], Cartesia's
//     <<p|h|o|n|e|m|e|s>>, an SSML document with <phoneme> elements, or
//     the word as written for a model that applies PLS lexicons, which go
//     with the request.
//
// A model that takes no phonemes, and a pronunciation a model cannot take
// (IPA eSpeak has no phoneme for), gets the rule's stand-in text
// (Replacement) or the word as written, and the answer a warning naming
// the words so approximated.

const (
	markOpen      = '\uE000'
	markClose     = '\uE001'
	markIndexBase = 0xF0000 // Supplementary Private Use Area-A: 65,534 rule numbers
	maxMarked     = 0xFFFD
)

// compiler is how one model takes phoneme rules, and what a text's
// application of rules produced for it.
type compiler struct {
	input sdk.PhonemeInput
	// rules are the phoneme rules marked in the spoken text, by number.
	rules []*PronunciationRule
	// approximated are the words of phoneme rules the model could not
	// take, in order of first use.
	approximated []string
	// lexicons are the PLS documents of a PhonemesPLS model.
	lexicons []sdk.Lexicon
}

// newCompiler returns the compiler of model m (nil: a model that takes no
// phonemes).
func newCompiler(m *sdk.Model) *compiler {
	c := &compiler{}
	if m != nil {
		c.input = m.Phonemes
	}
	return c
}

// takes reports whether the model can speak r's pronunciation natively.
func (c *compiler) takes(r *PronunciationRule) bool {
	switch c.input.Kind {
	case sdk.PhonemesESpeak:
		_, _, ok := phonetic.ToESpeak(phonetic.ToIPA(r.Alphabet, r.Phoneme))
		return ok
	case sdk.PhonemesSSML, sdk.PhonemesCartesia:
		return true
	case sdk.PhonemesPLS:
		return c.input.MaxLexicons > 0
	}
	return false
}

// mark returns what the spoken text holds for a phoneme rule matched on
// the written words orig: the marked word, or the stand-in for a model
// that cannot take it (recorded as approximated).
func (c *compiler) mark(r *PronunciationRule, orig string) string {
	if c == nil {
		return cmpOr(r.Replacement, orig)
	}
	if !c.takes(r) || len(c.rules) >= maxMarked {
		if !slices.Contains(c.approximated, orig) {
			c.approximated = append(c.approximated, orig)
		}
		if r.Replacement != "" {
			return r.Replacement
		}
		return orig
	}
	n := slices.Index(c.rules, r)
	if n < 0 {
		n = len(c.rules)
		c.rules = append(c.rules, r)
	}
	var b strings.Builder
	b.WriteRune(markOpen)
	b.WriteString(orig)
	b.WriteRune(rune(markIndexBase + n))
	b.WriteRune(markClose)
	return b.String()
}

// warning is the answer's warning naming the approximated words, or "".
func (c *compiler) warning(model string) string {
	if len(c.approximated) == 0 {
		return ""
	}
	return fmt.Sprintf("pronunciations: %s cannot take the phonemes of %s; spoken by the rule's stand-in text, or as written",
		model, strings.Join(quoteAll(c.approximated), ", "))
}

func quoteAll(ws []string) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = fmt.Sprintf("%q", w)
	}
	return out
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// render turns a spoken text (or a piece of it) into the provider's text
// and markup; marked reports whether it held a phoneme rule. A text
// without marks goes as it is, with no markup.
func (c *compiler) render(text string) (out, markup string, marked bool) {
	if c == nil || !strings.ContainsRune(text, markOpen) {
		return text, "", false
	}
	var b strings.Builder
	switch c.input.Kind {
	case sdk.PhonemesSSML:
		markup = sdk.MarkupSSML
		b.WriteString("<speak>")
	case sdk.PhonemesESpeak:
		markup = sdk.MarkupESpeak
	}
	for text != "" {
		i := strings.IndexRune(text, markOpen)
		if i < 0 {
			c.literal(&b, text)
			break
		}
		c.literal(&b, text[:i])
		rest := text[i+utf8.RuneLen(markOpen):]
		j := strings.IndexRune(rest, markClose)
		if j < 0 { // a mark cut apart: cannot happen, as the cutter never cuts inside a word; speak what is there
			c.literal(&b, rest)
			break
		}
		inner := rest[:j]
		text = rest[j+utf8.RuneLen(markClose):]
		idx, size := utf8.DecodeLastRuneInString(inner)
		word := inner[:len(inner)-size]
		n := int(idx) - markIndexBase
		if n < 0 || n >= len(c.rules) {
			c.literal(&b, word)
			continue
		}
		c.phoneme(&b, c.rules[n], word)
	}
	if markup == sdk.MarkupSSML {
		b.WriteString("</speak>")
	}
	return b.String(), markup, true
}

// plain is text with its marked words as written: for a caller that can
// send no markup (a realtime socket's input stream), unless the model
// reads phonemes inline in plain text (Cartesia).
func (c *compiler) plain(text string) string {
	if c == nil || !strings.ContainsRune(text, markOpen) {
		return text
	}
	if c.input.Kind == sdk.PhonemesCartesia {
		out, _, _ := c.render(text)
		return out
	}
	return stripMarks(text)
}

// stripMarks is text with its phoneme marks taken out, the marked words
// as written: for what goes to a provider as context rather than as the
// text to speak (neighbouring pieces), or to the alignment reference.
func stripMarks(text string) string {
	if !strings.ContainsRune(text, markOpen) {
		return text
	}
	return strings.Map(func(r rune) rune {
		if r == markOpen || r == markClose || r >= markIndexBase && r < markIndexBase+maxMarked {
			return -1
		}
		return r
	}, text)
}

// literal writes text that is no rule's, escaped for the markup: XML
// escaping for SSML; "[[" broken up for eSpeak and "<<" for Cartesia, so
// that the caller's text is never read as phonemes.
func (c *compiler) literal(b *strings.Builder, text string) {
	switch c.input.Kind {
	case sdk.PhonemesSSML:
		_ = xml.EscapeText(b, []byte(text))
	case sdk.PhonemesESpeak:
		b.WriteString(strings.ReplaceAll(text, "[[", "[ ["))
	case sdk.PhonemesCartesia:
		b.WriteString(cartesiaLiteral.Replace(text))
	default:
		b.WriteString(text)
	}
}

// cartesiaLiteral breaks up the caller's own "<<" and ">>", so that only
// the rules' groups read as pronunciations.
var cartesiaLiteral = strings.NewReplacer("<<", "< <", ">>", "> >")

// phoneme writes a rule's pronunciation of word in the model's form.
func (c *compiler) phoneme(b *strings.Builder, r *PronunciationRule, word string) {
	ipa := phonetic.ToIPA(r.Alphabet, r.Phoneme)
	switch c.input.Kind {
	case sdk.PhonemesESpeak:
		es, _, _ := phonetic.ToESpeak(ipa)
		b.WriteString("[[")
		b.WriteString(strings.ReplaceAll(es, " ", ""))
		b.WriteString("]]")
	case sdk.PhonemesCartesia:
		b.WriteString("<<")
		b.WriteString(strings.Join(phonetic.Segments(ipa), "|"))
		b.WriteString(">>")
	case sdk.PhonemesSSML:
		alphabet, ph := "ipa", ipa
		if r.Alphabet == phonetic.CMU && slices.Contains(c.input.Alphabets, phonetic.CMU) {
			alphabet, ph = "x-arpabet", r.Phoneme
		}
		b.WriteString(`<phoneme alphabet="`)
		b.WriteString(alphabet)
		b.WriteString(`" ph="`)
		_ = xml.EscapeText(b, []byte(ph))
		b.WriteString(`">`)
		_ = xml.EscapeText(b, []byte(word))
		b.WriteString("</phoneme>")
	default: // PLS: the lexicon says how; the text keeps the word
		b.WriteString(word)
	}
}

// buildLexicons makes the PLS lexicons of a PhonemesPLS model from the
// rule sources (lowest precedence first), once a text has used a phoneme
// rule: one lexicon per source holding phoneme rules, each with the rules
// no later source overrides, so the lexicons never disagree; sources
// beyond the model's MaxLexicons are merged into the last lexicon. A
// lexicon's version is its content's hash: a changed dictionary is a new
// version, which the plugin uploads once per provider key.
func (c *compiler) buildLexicons(sources [][]PronunciationRule) {
	if c.input.Kind != sdk.PhonemesPLS || len(c.rules) == 0 || c.input.MaxLexicons <= 0 {
		return
	}
	seen := map[string]bool{}
	var groups [][]*PronunciationRule
	for i := len(sources) - 1; i >= 0; i-- {
		var g []*PronunciationRule
		for k := len(sources[i]) - 1; k >= 0; k-- {
			r := &sources[i][k]
			key := store.WordKey(r.Word)
			if seen[key] {
				continue
			}
			seen[key] = true
			if r.isPhoneme() {
				g = append(g, r)
			}
		}
		if len(g) > 0 {
			slices.Reverse(g)
			groups = append(groups, g)
		}
	}
	slices.Reverse(groups) // lowest precedence first again
	if len(groups) > c.input.MaxLexicons {
		keep := c.input.MaxLexicons - 1
		var merged []*PronunciationRule
		for _, g := range groups[keep:] {
			merged = append(merged, g...)
		}
		groups = append(groups[:keep:keep], merged)
	}
	for _, g := range groups {
		doc := PLS(g, "en-US")
		sum := sha256.Sum256(doc)
		v := hex.EncodeToString(sum[:12])
		c.lexicons = append(c.lexicons, sdk.Lexicon{ID: "voxgate-" + v, Version: v, Document: doc})
	}
}
