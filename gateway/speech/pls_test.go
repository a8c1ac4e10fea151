package speech

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestPLSRoundTrip(t *testing.T) {
	rules := []*PronunciationRule{
		{Word: "AWS", Replacement: "A W S", Kind: "alias", CaseSensitive: true},
		{Word: "Nguyen", Kind: "phoneme", Alphabet: "ipa", Phoneme: "ŋwɪn", Replacement: "win", CaseSensitive: true},
		{Word: "tomato", Kind: "phoneme", Alphabet: "cmu", Phoneme: "T AH0 M EY1 T OW2", CaseSensitive: true},
		{Word: "a<b & \"c\"", Replacement: "x > y", Kind: "alias", CaseSensitive: true},
	}
	doc := ExportPLS(rules, "en-US")
	got, err := ParsePLS(doc)
	if err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	if len(got) != len(rules) {
		t.Fatalf("%d rules back, want %d:\n%s", len(got), len(rules), doc)
	}
	for i, r := range rules {
		want := *r
		want.CaseSensitive = false // PLS has no such flag; import reads graphemes as given
		if !reflect.DeepEqual(got[i], want) {
			t.Errorf("rule %d back as %+v, want %+v", i, got[i], want)
		}
	}
	// Rules that ignore case list their spellings; they come back as one rule.
	ci := ExportPLS([]*PronunciationRule{{Word: "Nguyen", Kind: "phoneme", Alphabet: "ipa", Phoneme: "ŋwɪn"}}, "en-US")
	if !strings.Contains(string(ci), "<grapheme>NGUYEN</grapheme>") {
		t.Errorf("a case-insensitive rule's spellings are missing:\n%s", ci)
	}
	if back, err := ParsePLS(ci); err != nil || len(back) != 1 {
		t.Errorf("case spellings read back as %+v, %v", back, err)
	}
}

func TestPLSRefused(t *testing.T) {
	const head = `<?xml version="1.0"?>`
	for name, doc := range map[string]string{
		"doctype":         head + `<!DOCTYPE lexicon [<!ENTITY x "boom">]><lexicon version="1.0" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon" alphabet="ipa"><lexeme><grapheme>&x;</grapheme><alias>y</alias></lexeme></lexicon>`,
		"external entity": head + `<!DOCTYPE lexicon SYSTEM "file:///etc/passwd"><lexicon version="1.0" alphabet="ipa"/>`,
		"billion laughs":  head + `<!DOCTYPE l [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;&a;">]><lexicon version="1.0" alphabet="ipa"><lexeme><grapheme>&b;</grapheme><alias>x</alias></lexeme></lexicon>`,
	} {
		if _, err := ParsePLS([]byte(doc)); !errors.Is(err, ErrPLSDoctype) {
			t.Errorf("%s: %v, want ErrPLSDoctype", name, err)
		}
	}
	for name, doc := range map[string]string{
		"too big":          head + `<lexicon version="1.0" alphabet="ipa">` + strings.Repeat(" ", MaxPLSBytes) + `</lexicon>`,
		"not xml":          "word,phoneme",
		"undefined entity": head + `<lexicon version="1.0" alphabet="ipa"><lexeme><grapheme>&x;</grapheme><alias>y</alias></lexeme></lexicon>`,
		"other alphabet":   head + `<lexicon version="1.0" alphabet="x-sampa"><lexeme><grapheme>a</grapheme><phoneme>t@</phoneme></lexeme></lexicon>`,
		"no grapheme":      head + `<lexicon version="1.0" alphabet="ipa"><lexeme><alias>y</alias></lexeme></lexicon>`,
	} {
		if _, err := ParsePLS([]byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
