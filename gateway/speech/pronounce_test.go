package speech

import (
	"fmt"
	"strings"
	"testing"
)

func rules(pairs ...string) []PronunciationRule {
	out := make([]PronunciationRule, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, PronunciationRule{Word: pairs[i], Replacement: pairs[i+1]})
	}
	return out
}

// TestLayerRules: later sources win on the same word (compared
// case-insensitively), within a source the later rule, and winners are
// tried first where rules overlap.
func TestLayerRules(t *testing.T) {
	def := rules("AWS", "default", "jq", "jay cue", "New", "knew")
	dictA := rules("aws", "a")
	dictB := rules("AWS", "b", "New York", "the big apple")
	tests := []struct {
		name    string
		sources [][]PronunciationRule
		text    string
		want    string
	}{
		{"default only", [][]PronunciationRule{def}, "AWS and jq", "default and jay cue"},
		{"a dictionary over the default", [][]PronunciationRule{def, dictA}, "AWS and jq", "a and jay cue"},
		{"the later dictionary wins", [][]PronunciationRule{def, dictA, dictB}, "AWS", "b"},
		{"listed the other way", [][]PronunciationRule{def, dictB, dictA}, "aws", "a"},
		{"inline wins", [][]PronunciationRule{def, dictA, rules("Aws", "inline")}, "AWS", "inline"},
		{"within a source the later rule", [][]PronunciationRule{rules("cat", "one", "CAT", "two")}, "cat", "two"},
		{"a multi-word rule of a later source beats a shorter one", [][]PronunciationRule{def, dictB}, "New York and New Delhi", "the big apple and knew Delhi"},
		{"nothing applies", [][]PronunciationRule{nil, nil}, "AWS", "AWS"},
		{"no rule's word in the text", [][]PronunciationRule{def, dictB}, "plain words", "plain words"},
		{"non-ASCII words fold like ASCII", [][]PronunciationRule{rules("Ärger", "trouble")}, "ÄRGER here", "trouble here"},
		{"whole words only", [][]PronunciationRule{def}, "AWSome jquery", "AWSome jquery"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := layerRules(tt.text, tt.sources...)
			got := tt.text
			if rs != nil {
				got = rs.apply(tt.text, nil).text
			}
			if got != tt.want {
				t.Errorf("%q -> %q, want %q", tt.text, got, tt.want)
			}
		})
	}
	cs := layerRules("Go go GO", []PronunciationRule{{Word: "Go", Replacement: "golang", CaseSensitive: true}})
	if got := cs.apply("Go go GO", nil).text; got != "golang go GO" {
		t.Errorf("case-sensitive: %q", got)
	}
}

// BenchmarkApplyManyRules is the worst a request can ask for: the default
// dictionary and 20 full dictionaries (1,000 rules each) plus 200 inline
// rules, layered and applied to a 5,000-character text. Layering is per
// request; matching is one map probe per word of the text.
func BenchmarkApplyManyRules(b *testing.B) {
	const rulesPerDictionary = 1000 // resources.MaxRulesPerDictionary
	sources := make([][]PronunciationRule, 0, MaxDictionaryIDs+2)
	for d := range MaxDictionaryIDs + 1 {
		src := make([]PronunciationRule, rulesPerDictionary)
		for i := range src {
			src[i] = PronunciationRule{Word: fmt.Sprintf("term%d", (d*rulesPerDictionary+i)%15000), Replacement: "spoken form"}
		}
		sources = append(sources, src)
	}
	inline := make([]PronunciationRule, MaxInlineRules)
	for i := range inline {
		inline[i] = PronunciationRule{Word: fmt.Sprintf("New York %d", i), Replacement: "the city"}
	}
	sources = append(sources, inline)
	var sb strings.Builder
	for i := 0; sb.Len() < 5000; i++ {
		fmt.Fprintf(&sb, "term%d says hello to New York %d. ", i*37%20000, i%300)
	}
	text := sb.String()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if rs := layerRules(text, sources...); rs != nil {
			_ = rs.apply(text, nil)
		}
	}
}

// BenchmarkApplyDefaultRules is the common case: a small default
// dictionary (cached between requests) and no inline rules, with words of
// it in the text.
func BenchmarkApplyDefaultRules(b *testing.B) {
	def := rules("AWS", "A W S", "jq", "jay cue", "SQL", "sequel", "k8s", "kubernetes", "GIF", "jif")
	text := strings.Repeat("Deploy the AWS stack with jq and SQL, then ship the GIF. ", 20)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if rs := layerRules(text, def); rs != nil {
			_ = rs.apply(text, nil)
		}
	}
}

// BenchmarkApplyDefaultRulesNoMatch: a default dictionary none of whose
// words the text holds: one pass over the text and no substitution.
func BenchmarkApplyDefaultRulesNoMatch(b *testing.B) {
	def := rules("AWS", "A W S", "jq", "jay cue", "SQL", "sequel", "k8s", "kubernetes", "GIF", "jif")
	text := strings.Repeat("Hello there, this is an ordinary sentence with nothing special. ", 20)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if layerRules(text, def) != nil {
			b.Fatal("a rule matched")
		}
	}
}
