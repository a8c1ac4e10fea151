package moderation_test

import (
	"strings"
	"testing"

	"github.com/voxgate/voxgate/gateway/admission/moderation"
)

// testCategories exercise each matching rule: long one-word terms (matched
// anywhere), short ones (whole words only), a multi-word term and a
// pattern.
func testCategories() map[string]*moderation.Category {
	return map[string]*moderation.Category{
		"insult": {Terms: []string{"idiot"}},
		"short":  {Terms: []string{"ass", "hate"}},
		"threat": {Terms: []string{"kill yourself"}},
		"spam":   {Patterns: []string{`\bbuy\s+followers\b`}},
	}
}

func newBuiltin(t testing.TB, cats map[string]*moderation.Category) *moderation.Builtin {
	t.Helper()
	b, err := moderation.NewBuiltin(cats)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBuiltinBlocksEvasions(t *testing.T) {
	b := newBuiltin(t, testCategories())
	tests := []struct {
		name, text, category string
	}{
		{"plain", "you are an idiot", "insult"},
		{"upper case", "YOU ARE AN IDIOT", "insult"},
		{"mixed case", "You Are An IdIoT", "insult"},
		{"inside a longer word", "what an idiotic idea", "insult"},
		{"glued to other words", "youidiotyou", "insult"},
		{"full-width", "ｙｏｕ ａｒｅ ａｎ ｉｄｉｏｔ", "insult"},
		{"zero-width space", "id\u200biot", "insult"},
		{"zero-width joiner and non-joiner", "i\u200dd\u200ci\u200do\u200ct", "insult"},
		{"soft hyphen", "idi\u00adot", "insult"},
		{"byte order mark and word joiner", "\ufeffid\u2060iot", "insult"},
		{"dotted", "i.d.i.o.t", "insult"},
		{"spaced", "i d i o t", "insult"},
		{"hyphenated", "i-d-i-o-t", "insult"},
		{"mixed separators", "i_d*i/o t", "insult"},
		{"split unevenly", "idi ot", "insult"},
		{"leetspeak digits", "1d10t", "insult"},
		{"leetspeak symbols", "h@te", "short"},
		{"leetspeak short word", "h4te", "short"},
		{"precomposed diacritics", "ídíót", "insult"},
		{"combining marks", "i\u0301d\u0336i\u0308o\u0303t", "insult"},
		{"zalgo stack", "h\u0315\u0334\u0358a\u0360\u0322t\u035de\u0317", "short"},
		{"cyrillic look-alikes", "\u0456d\u0456\u043et", "insult"},
		{"greek look-alikes", "\u03b9d\u03b9\u03bft", "insult"},
		{"full-width leetspeak", "ｈ４ｔｅ", "short"},
		{"short word", "I hate mondays", "short"},
		{"short word spaced", "I h a t e mondays", "short"},
		{"short word dotted at the end", "you're an a.s.s.", "short"},
		{"short word punctuated", "(ass)", "short"},
		{"multi-word term", "just kill yourself", "threat"},
		{"multi-word term shouted", "KILL   YOURSELF!!!", "threat"},
		{"multi-word term re-split", "kill your self", "threat"},
		{"multi-word term glued", "killyourself", "threat"},
		{"multi-word term dotted", "k.i.l.l y.o.u.r.s.e.l.f", "threat"},
		{"multi-word term leetspeak", "k1ll y0ur5elf", "threat"},
		{"pattern", "buy followers here", "spam"},
		{"pattern upper case", "BUY FOLLOWERS", "spam"},
		{"pattern across line break", "buy\nfollowers", "spam"},
		{"pattern with zero-width space", "b\u200buy followers", "spam"},
		{"pattern full-width", "ｂｕｙ ｆｏｌｌｏｗｅｒｓ", "spam"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat, ok := b.Match(tt.text)
			if !ok || cat != tt.category {
				t.Errorf("Match(%q) = %q, %v; want %q", tt.text, cat, ok, tt.category)
			}
		})
	}
}

func TestBuiltinAllowsInnocentText(t *testing.T) {
	b := newBuiltin(t, testCategories())
	tests := []struct{ name, text string }{
		{"empty", ""},
		{"ordinary sentence", "The quick brown fox jumps over the lazy dog."},
		{"short term inside words", "The class passed the assessment; the bass player was embarrassed."},
		{"short term inside a word 2", "Whatever happens, chase the dream and never hesitate."},
		{"short term across two words", "Look at that email."},
		{"short term across a word and a letter", "What a hat e-mail!"},
		{"short term glued to its neighbour", "hateful"},
		{"multi-word term not on a boundary", "Learn the skill yourself."},
		{"pattern near miss", "I am buying followers of the band a drink."},
		{"numbers", "In 2024, 1337 people paid 45.70 dollars each."},
		{"accents", "Café crème, naïve façade, jalapeño."},
		{"cyrillic", "Привет, как дела? Всё хорошо."},
		{"greek", "Καλημέρα, τι κάνεις;"},
		{"cjk", "今日はいい天気ですね。"},
		{"hangul", "안녕하세요, 반갑습니다."},
		{"emoji", "Great job 👍🏽 see you 🙂"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if cat, ok := b.Match(tt.text); ok {
				t.Errorf("Match(%q) blocked it as %q", tt.text, cat)
			}
		})
	}
}

func TestBuiltinDefaults(t *testing.T) {
	b := newBuiltin(t, nil)
	for _, text := range []string{"kys", "K Y S", "just kill yourself", "go die in a fire", "heil hitler", "child porn", "CSAM links"} {
		if _, ok := b.Match(text); !ok {
			t.Errorf("defaults let %q through", text)
		}
	}
	for _, text := range []string{
		"The keys are on the table.", "cp a.txt b.txt", "Skills you learn yourself last longest.",
		"She was killed yourself? No, by accident.", sampleText(5000),
	} {
		if cat, ok := b.Match(text); ok {
			t.Errorf("defaults blocked %q as %q", text[:min(len(text), 60)], cat)
		}
	}
}

func TestBuiltinPatterns(t *testing.T) {
	b := newBuiltin(t, map[string]*moderation.Category{
		"upper":   {Patterns: []string{`\bBUY\s+Followers\b`}},
		"accent":  {Patterns: []string{`café\s+scam`}},
		"anyof":   {Patterns: []string{`(?:free|cheap)\s+crypto`}},
		"classes": {Patterns: []string{`\d{3}-\d{4}`}},
	})
	tests := []struct{ text, category string }{
		{"buy followers", "upper"},
		{"BUY  FOLLOWERS now", "upper"},
		{"Café scam", "accent"},
		{"cafe scam", "accent"},
		{"CHEAP crypto", "anyof"},
		{"call 555-1234", "classes"},
		{"ｃａｌｌ ５５５-１２３４", "classes"},
		{"rebuy followers", ""},
		{"crypto is free", ""},
	}
	for _, tt := range tests {
		cat, _ := b.Match(tt.text)
		if cat != tt.category {
			t.Errorf("Match(%q) = %q, want %q", tt.text, cat, tt.category)
		}
	}
}

func TestBuiltinRejectsBadConfig(t *testing.T) {
	for name, cats := range map[string]map[string]*moderation.Category{
		"term without letters": {"x": {Terms: []string{" -- "}}},
		"bad pattern":          {"x": {Patterns: []string{"(unclosed"}}},
		"backreference":        {"x": {Patterns: []string{`(a)\1`}}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := moderation.NewBuiltin(cats); err == nil {
				t.Error("NewBuiltin accepted it")
			}
		})
	}
}

// sampleText returns n characters of ordinary prose with punctuation,
// digits and a few accented words: what a TTS request looks like.
func sampleText(n int) string {
	const para = "The committee met on 12 March to review the café's new menu, which features crème brûlée, " +
		"grilled vegetables and a selection of teas. Everyone agreed the prices (around 14.50 each) were fair; " +
		"still, several members asked whether the kitchen could handle two hundred guests at once. "
	var sb strings.Builder
	for sb.Len() < n {
		sb.WriteString(para)
	}
	return string([]rune(sb.String())[:n])
}
