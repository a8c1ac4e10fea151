package config

import (
	"strings"
	"testing"
)

// TestCustomRulesConfigErrors: custom moderation rules are checked where
// the file is read: a plugin evaluates them, names are ids used once per
// check, prompts are not empty.
func TestCustomRulesConfigErrors(t *testing.T) {
	base := "orgs:\n  acme: {}\nmoderation:\n  plugins:\n    llm: {plugin: x}\n  rulesets:\n    r:\n      checks:\n"
	for _, tc := range []struct{ name, checks, want string }{
		{"rules without a plugin", "        - builtin: {}\n          rules: [{name: a, prompt: p}]\n", "give plugin too"},
		{"bad name", "        - plugin: llm\n          rules: [{name: 'No Spaces', prompt: p}]\n", ".name"},
		{"same name twice", "        - plugin: llm\n          rules: [{name: a, prompt: p}, {name: a, prompt: q}]\n", "used twice"},
		{"empty prompt", "        - plugin: llm\n          rules: [{name: a, prompt: ' '}]\n", ".prompt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(base+tc.checks), func(string) (string, bool) { return "", false })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
