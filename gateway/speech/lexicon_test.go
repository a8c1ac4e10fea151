package speech

import (
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/gateway/providers/catalog"
	"github.com/voxgate/voxgate/sdk"
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

// compileJob is a job of a model taking phonemes as in, with rules.
func compileJob(in sdk.PhonemeInput, text string, sources ...[]PronunciationRule) *Job {
	j := &Job{Provider: &catalog.Provider{ID: "p"}, Model: &sdk.Model{ID: "m", Phonemes: in}, rules: sources}
	j.setText(text)
	return j
}

var nguyen = PronunciationRule{Word: "Nguyen", Kind: "phoneme", Alphabet: "ipa", Phoneme: "ŋwɪn", Replacement: "win"}

func TestCompilePerProvider(t *testing.T) {
	const text = "Ask Mr nguyen about [[this]] & <b>that</b>, AWS."
	alias := PronunciationRule{Word: "AWS", Replacement: "A W S"}
	for _, c := range []struct {
		name           string
		in             sdk.PhonemeInput
		want, markup   string
		warns, lexicon bool
	}{
		{"espeak", sdk.PhonemeInput{Kind: sdk.PhonemesESpeak}, "Ask Mr [[NwIn]] about [ [this]] & <b>that</b>, A W S.", sdk.MarkupESpeak, false, false},
		{"cartesia", sdk.PhonemeInput{Kind: sdk.PhonemesCartesia}, "Ask Mr <<ŋ|w|ɪ|n>> about [[this]] & <b>that</b>, A W S.", "", false, false},
		{"ssml", sdk.PhonemeInput{Kind: sdk.PhonemesSSML}, `<speak>Ask Mr <phoneme alphabet="ipa" ph="ŋwɪn">nguyen</phoneme> about [[this]] &amp; &lt;b&gt;that&lt;/b&gt;, A W S.</speak>`, sdk.MarkupSSML, false, false},
		{"pls", sdk.PhonemeInput{Kind: sdk.PhonemesPLS, MaxLexicons: 3}, "Ask Mr nguyen about [[this]] & <b>that</b>, A W S.", "", false, true},
		{"none: the stand-in, and a warning", sdk.PhonemeInput{}, "Ask Mr win about [[this]] & <b>that</b>, A W S.", "", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := compileJob(c.in, text, []PronunciationRule{alias, nguyen})
			req := j.request()
			if req.Text != c.want || req.Markup != c.markup {
				t.Errorf("text %q markup %q, want %q %q", req.Text, req.Markup, c.want, c.markup)
			}
			if c.markup == sdk.MarkupSSML {
				if err := wellFormed(req.Text); err != nil {
					t.Errorf("SSML not well-formed: %v", err)
				}
			}
			warned := len(j.Warnings) > 0 && strings.Contains(j.Warnings[0], `"nguyen"`)
			if warned != c.warns {
				t.Errorf("warnings %q, want a warning naming the word: %v", j.Warnings, c.warns)
			}
			if (len(req.Lexicons) == 1) != c.lexicon {
				t.Errorf("lexicons %d, want one: %v", len(req.Lexicons), c.lexicon)
			}
			// Word timestamps map back: the spoken text has the written
			// text's words, however the provider gets the rule.
			if c.name != "none: the stand-in, and a warning" {
				if got, want := len(words(j.spokenText())), len(words(text))-1+3; got != want { // AWS is three words spoken
					t.Errorf("spoken text has %d words, want %d", got, want)
				}
			}
		})
	}
}

func TestCompileNoPhonemeRuleUsed(t *testing.T) {
	j := compileJob(sdk.PhonemeInput{Kind: sdk.PhonemesESpeak}, "say [[h@'loU]] as it is", []PronunciationRule{nguyen})
	if req := j.request(); req.Text != "say [[h@'loU]] as it is" || req.Markup != "" || len(j.Warnings) > 0 {
		t.Errorf("a text without phoneme rules changed: %+v %q", req, j.Warnings)
	}
}

func TestCompileESpeakMissingSymbolFallsBack(t *testing.T) {
	click := PronunciationRule{Word: "Xhosa", Kind: "phoneme", Alphabet: "ipa", Phoneme: "ǁʰoːsa"}
	j := compileJob(sdk.PhonemeInput{Kind: sdk.PhonemesESpeak}, "Xhosa", []PronunciationRule{click})
	if req := j.request(); req.Text != "Xhosa" || req.Markup != "" || len(j.Warnings) != 1 {
		t.Errorf("a pronunciation eSpeak has no phonemes for: %+v %q", req, j.Warnings)
	}
}

// TestCompileLexicons: one lexicon per dictionary holding phoneme rules,
// a later dictionary's rule winning over an earlier one's, the ones past
// the cap merged into the last; a valid PLS document each, whose version
// changes with its content only.
func TestCompileLexicons(t *testing.T) {
	in := sdk.PhonemeInput{Kind: sdk.PhonemesPLS, MaxLexicons: 3}
	rule := func(w, ph string) PronunciationRule {
		return PronunciationRule{Word: w, Kind: "phoneme", Alphabet: "cmu", Phoneme: ph}
	}
	src := [][]PronunciationRule{
		{rule("tomato", "T AH0 M EY1 T OW2")},
		{rule("tomato", "T AH0 M AA1 T OW2")}, // overrides the first: that lexicon is then empty
		{rule("a", "EY1")},
		{rule("b", "B IY1")},
		{rule("c", "S IY1")},
	}
	j := compileJob(in, "tomato", src...)
	ls := j.request().Lexicons
	if len(ls) != 3 {
		t.Fatalf("%d lexicons, want 3", len(ls))
	}
	var all []PronunciationRule
	for _, l := range ls {
		rs, err := ParsePLS(l.Document)
		if err != nil {
			t.Fatalf("lexicon %s: %v\n%s", l.ID, err, l.Document)
		}
		all = append(all, rs...)
	}
	got := map[string]string{}
	for _, r := range all {
		got[strings.ToLower(r.Word)] = r.Phoneme
	}
	if got["tomato"] != "təmˈɑtˌoʊ" || got["b"] == "" || got["c"] == "" || len(got) != 4 {
		t.Errorf("lexicon rules %v", got)
	}
	again := compileJob(in, "tomato", src...).request().Lexicons
	if again[0].Version != ls[0].Version {
		t.Error("the same rules gave another version")
	}
	src[0] = []PronunciationRule{rule("tomato", "T AH0 M EY1 T OW2"), rule("potato", "P AH0 T EY1 T OW2")}
	if changed := compileJob(in, "tomato", src...).request().Lexicons; changed[0].Version == ls[0].Version {
		t.Error("a changed dictionary kept its version")
	}
}

func wellFormed(doc string) error {
	d := xml.NewDecoder(strings.NewReader(doc))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// TestMarksStayInside: the texts that go to a provider as context, or to
// moderation, carry the words as written, never the phoneme marks.
// TestCallerMarksIgnored: a caller who writes the private-use marks the
// rules use gets no rule's pronunciation for its own word.
func TestCallerMarksIgnored(t *testing.T) {
	text := "Ask Mr Nguyen about \uE000tomato\U000F0000\uE001."
	j := compileJob(sdk.PhonemeInput{Kind: sdk.PhonemesESpeak}, text, []PronunciationRule{nguyen})
	if got, want := j.request().Text, "Ask Mr [[NwIn]] about tomato."; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
}

func TestMarksStayInside(t *testing.T) {
	j := compileJob(sdk.PhonemeInput{Kind: sdk.PhonemesESpeak}, "Ask Mr Nguyen.", []PronunciationRule{nguyen})
	j.pieces = []string{j.spokenText(), "Then more."}
	n := j.neighbours(1, nil)
	if n.PreviousText != "Ask Mr Nguyen." {
		t.Errorf("previous text %q", n.PreviousText)
	}
	if got := j.inputText(); got != "Ask Mr Nguyen." {
		t.Errorf("input-stream text %q", got)
	}
	c := compileJob(sdk.PhonemeInput{Kind: sdk.PhonemesCartesia}, "Ask Mr Nguyen.", []PronunciationRule{nguyen})
	if got := c.inputText(); got != "Ask Mr <<ŋ|w|ɪ|n>>." {
		t.Errorf("Cartesia's input-stream text %q", got)
	}
}
