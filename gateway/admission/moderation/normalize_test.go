package moderation

import (
	"strings"
	"testing"
)

// TestNormalizeViews pins down what the matcher sees: the normalized text
// (norm), its letters and digits with word starts marked by "|" (plain),
// and the look-alike view (alt, "" when it equals plain).
func TestNormalizeViews(t *testing.T) {
	tests := []struct {
		in, norm, plain, alt string
	}{
		{"Hello, World!", "hello, world!", "|hello|world", ""},
		{"ＦＵＬＬ－ｗｉｄｔｈ", "full-width", "|full|width", ""},
		{"zero\u200bwidth\u200d\ufeff\u00ad!", "zerowidth!", "|zerowidth", ""},
		{"ǖber Éclair İstanbul", "uber eclair istanbul", "|uber|eclair|istanbul", ""},
		{"z\u0336a\u0301l\u0315g\u0358o", "zalgo", "|zalgo", ""},
		{"ﬁne ① ㎏", "fine 1 kg", "|fine|1|kg", "|fine|i|kg"},
		{"h4x0r $ucks @ll", "h4x0r $ucks @ll", "|h4x0r|ucks|ll", "|haxor|sucks|all"},
		{"s.p.a.c.e", "s.p.a.c.e", "|s|p|a|c|e", ""},
		{"ΣΟΦΟΣ", "σοφοσ", "|σοφοσ", "|σoφoσ"},
		{"Привет", "привет", "|привет", "|пpиbet"},
		{"한국어", "한국어", "|한국어", ""},
		{"\u3164hidden\u3164filler", "hiddenfiller", "|hiddenfiller", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			var v views
			v.build(tt.in)
			if got := string(v.norm); got != tt.norm {
				t.Errorf("norm = %q, want %q", got, tt.norm)
			}
			if got := marked(&v.plain); got != tt.plain {
				t.Errorf("plain = %q, want %q", got, tt.plain)
			}
			alt := ""
			if v.altDiffers {
				alt = marked(&v.alt)
			}
			if alt != tt.alt {
				t.Errorf("alt = %q, want %q", alt, tt.alt)
			}
		})
	}
}

// marked renders a view with "|" before every word start.
func marked(v *view) string {
	var sb strings.Builder
	for i := range v.s {
		if v.start[i] {
			sb.WriteByte('|')
		}
		sb.WriteByte(v.s[i])
	}
	return sb.String()
}
