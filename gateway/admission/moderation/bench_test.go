package moderation_test

import (
	"context"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/gateway/admission/moderation"
)

// The built-in check runs on every moderated request, over texts up to the
// default model limit of 5,000 characters. These benchmarks are its
// budget: run with
//
//	go test -run '^$' -bench . -benchmem ./gateway/admission/moderation/
func BenchmarkBuiltin(b *testing.B) {
	cases := map[string]string{
		"ascii-5000":     asciiText(5000),
		"unicode-5000":   sampleText(5000),
		"spaced-5000":    spacedText(5000),
		"leetspeak-5000": strings.Repeat("Th1s 1s 4 t3st 0f l33t sp34k, n0th1ng m0r3. ", 120)[:5000],
		"short":          "Hello, this is a short sentence to speak.",
	}
	builtin, err := moderation.NewBuiltin(nil)
	if err != nil {
		b.Fatal(err)
	}
	for name, text := range cases {
		if _, ok := builtin.Match(text); ok {
			b.Fatalf("%s is blocked", name)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				builtin.Match(text)
			}
		})
	}
}

// BenchmarkEngineCheck is a whole Check of the default ruleset (test
// phrase, built-in defaults, metrics) as the speech service makes it.
func BenchmarkEngineCheck(b *testing.B) {
	f := newEngineB(b)
	text := sampleText(5000)
	b.ReportAllocs()
	for b.Loop() {
		if v := f.Check(context.Background(), "standard", text); v.Decision != moderation.DecisionAllow {
			b.Fatalf("verdict %+v", v)
		}
	}
}

func asciiText(n int) string {
	const para = "The committee met on the twelfth of March to review the new menu, which features grilled " +
		"vegetables and a selection of teas. Everyone agreed the prices were fair; still, several members " +
		"asked whether the kitchen could handle two hundred guests at once. "
	return strings.Repeat(para, n/len(para)+1)[:n]
}

// spacedText is the worst case for the matcher: every character is a
// one-letter word.
func spacedText(n int) string {
	return strings.Repeat("a b c d e f g h ", n/16+1)[:n]
}

// BenchmarkBuiltinPatterns shows what configured regular expressions add
// to the term matching above: RE2 is linear in the text, but it is slower
// per byte than the term matcher, so prefer terms where a term will do.
func BenchmarkBuiltinPatterns(b *testing.B) {
	builtin, err := moderation.NewBuiltin(map[string]*moderation.Category{
		"spam": {Patterns: []string{`\bbuy\s+(?:cheap\s+)?followers\b`, `\bfree\s+crypto\s+giveaway\b`}},
	})
	if err != nil {
		b.Fatal(err)
	}
	// Absent, the patterns' leading literals let them be skipped; present,
	// the expressions run over the whole text.
	for name, text := range map[string]string{
		"literal-absent-5000":  asciiText(5000),
		"literal-present-5000": "free buy " + asciiText(4991),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if _, ok := builtin.Match(text); ok {
					b.Fatal("blocked")
				}
			}
		})
	}
}
