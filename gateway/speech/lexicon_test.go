package speech

import (
	"strings"
	"testing"
)

func TestValidateRuleKinds(t *testing.T) {
	for _, c := range []struct {
		name string
		rule PronunciationRule
		// field is where the first error points; "" for none.
		field string
	}{
		{"alias, kind left out", PronunciationRule{Word: "AWS", Replacement: "A W S"}, ""},
		{"alias", PronunciationRule{Word: "AWS", Replacement: "A W S", Kind: "alias"}, ""},
		{"ipa", PronunciationRule{Word: "Nguyen", Kind: "phoneme", Alphabet: "ipa", Phoneme: "ŋwɪn"}, ""},
		{"cmu with a stand-in", PronunciationRule{Word: "tomato", Kind: "phoneme", Alphabet: "cmu", Phoneme: "T AH0 M EY1 T OW2", Replacement: "tomayto"}, ""},
		{"alias without replacement", PronunciationRule{Word: "AWS", Kind: "alias"}, "rules/0/replacement"},
		{"phoneme without phoneme", PronunciationRule{Word: "x", Kind: "phoneme", Alphabet: "ipa"}, "rules/0/phoneme"},
		{"x-sampa", PronunciationRule{Word: "x", Kind: "phoneme", Alphabet: "x-sampa", Phoneme: "t@"}, "rules/0/alphabet"},
		{"cmu digit on a consonant", PronunciationRule{Word: "x", Kind: "phoneme", Alphabet: "cmu", Phoneme: "K1 AE1 T"}, "rules/0/phoneme"},
		{"ipa with markup", PronunciationRule{Word: "x", Kind: "phoneme", Alphabet: "ipa", Phoneme: `"/><b>`}, "rules/0/phoneme"},
		{"other kind", PronunciationRule{Word: "x", Kind: "sub", Replacement: "y"}, "rules/0/kind"},
	} {
		p := &Pronunciations{Rules: []PronunciationRule{c.rule}}
		fe := p.Validate()
		got := ""
		if len(fe) > 0 {
			got = strings.Join(fe[0].Path, "/")
		}
		if got != c.field {
			t.Errorf("%s: errors %+v, want the first at %q", c.name, fe, c.field)
		}
	}
}
