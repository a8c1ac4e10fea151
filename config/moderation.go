package config

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Moderation holds the moderation rulesets and moderation plugins.
type Moderation struct {
	Rulesets map[string]*Ruleset   `yaml:"rulesets"`
	Plugins  map[string]*Moderator `yaml:"plugins"`
}

// Moderator configures one moderation plugin.
type Moderator struct {
	Plugin    string   `yaml:"plugin"`
	Instances int      `yaml:"instances"`
	APIKey    Secret   `yaml:"api_key"`
	Timeout   Duration `yaml:"timeout"`
	// Settings: as Provider.Settings.
	Settings map[string]string `yaml:"-"`
}

// Ruleset is one moderation ruleset.
type Ruleset struct {
	// Mode is "fail_closed", "fail_open" or "off".
	Mode    string   `yaml:"mode"`
	Timeout Duration `yaml:"timeout"`
	Checks  []Check  `yaml:"checks"`
}

// Check is one moderation check: exactly one of Builtin or Plugin.
type Check struct {
	Builtin *BuiltinCheck `yaml:"builtin"`
	// Plugin names an entry of Moderation.Plugins.
	Plugin string `yaml:"plugin"`
	// Rules are custom rules in plain English that the plugin evaluates
	// with a model instead of its own checks (plugin checks only; see
	// docs/moderation.md). A check whose rules are all disabled is
	// skipped.
	Rules []CustomRule `yaml:"rules"`
}

// CustomRule is one custom moderation rule.
type CustomRule struct {
	// Name identifies the rule in a block's reason.rule_name and the
	// request log: 1 to 64 of a-z, 0-9, '-', '_'.
	Name string `yaml:"name"`
	// Prompt says what to block, in plain English ("Block any text that
	// promotes a specific publicly traded stock").
	Prompt string `yaml:"prompt"`
	// Enabled defaults to true.
	Enabled *bool `yaml:"enabled"`
}

// On reports whether the rule is enabled.
func (r CustomRule) On() bool { return r.Enabled == nil || *r.Enabled }

// Bounds of custom moderation rules: every enabled rule is sent to the
// model with every moderated text.
const (
	MaxCustomRules      = 50
	MaxCustomRulePrompt = 2000
)

// BuiltinCheck configures the built-in term and pattern check.
type BuiltinCheck struct {
	// Categories maps a category name to its terms and patterns.
	Categories map[string]*Category `yaml:"categories"`
}

// Category is a named group of blocked terms and regular expressions.
type Category struct {
	Terms    []string `yaml:"terms"`
	Patterns []string `yaml:"patterns"`
}

// moderatorKnown lists the keys of a moderation plugin block the gateway
// consumes; every other key is a plugin setting.
var moderatorKnown = map[string]bool{"plugin": true, "instances": true, "api_key": true, "timeout": true}

// UnmarshalYAML decodes the known keys strictly and keeps the rest as
// plugin settings.
func (m *Moderator) UnmarshalYAML(n *yaml.Node) error {
	known, settings, err := splitKnown(n, moderatorKnown)
	if err != nil {
		return err
	}
	type plain Moderator
	if err := known.Decode((*plain)(m)); err != nil {
		return err
	}
	m.Settings = settings
	return nil
}

// customRuleName is the form of a custom moderation rule's name.
var customRuleName = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

func (m *Moderation) defaults() {
	// Empty blocks are skipped here and named by validateModeration.
	for _, p := range m.Plugins {
		if p == nil {
			continue
		}
		if p.Instances == 0 {
			p.Instances = 1
		}
		if p.Timeout == 0 {
			p.Timeout = Duration(2 * time.Second)
		}
	}
	for _, r := range m.Rulesets {
		if r == nil {
			continue
		}
		if r.Mode == "" {
			r.Mode = "fail_closed"
		}
		if r.Timeout == 0 {
			r.Timeout = Duration(500 * time.Millisecond)
		}
	}
}

// validateModeration checks the moderation section: plugins name their
// binary; every ruleset has a known mode, and each of its checks is
// either the built-in one (whose patterns compile) or a configured
// plugin, with custom rules only on a plugin.
func (c *Config) validateModeration(bad report) {
	for _, name := range sortedKeys(c.Moderation.Plugins) {
		m := c.Moderation.Plugins[name]
		if m == nil || m.Plugin == "" {
			bad("moderation.plugins."+name+".plugin", "required: the plugin binary name")
		}
		if m != nil {
			gatewayKeyTypos("moderation.plugins."+name, m.Settings, moderatorKnown, bad)
		}
	}
	for _, name := range sortedKeys(c.Moderation.Rulesets) {
		r := c.Moderation.Rulesets[name]
		key := "moderation.rulesets." + name
		if r == nil {
			bad(key, "empty ruleset")
			continue
		}
		switch r.Mode {
		case "fail_closed", "fail_open", "off":
		default:
			bad(key+".mode", "must be fail_closed, fail_open or off, got %q", r.Mode)
		}
		for i := range r.Checks {
			c.checkModerationCheck(fmt.Sprintf("%s.checks[%d]", key, i), &r.Checks[i], bad)
		}
	}
}

// checkModerationCheck checks one check of a ruleset, at key ck.
func (c *Config) checkModerationCheck(ck string, ch *Check, bad report) {
	switch {
	case ch.Builtin != nil && ch.Plugin != "":
		bad(ck, "name either builtin or plugin, not both")
	case ch.Builtin == nil && ch.Plugin == "":
		bad(ck, "name builtin or plugin")
	case ch.Plugin != "" && c.Moderation.Plugins[ch.Plugin] == nil:
		bad(ck+".plugin", "unknown moderation plugin %q", ch.Plugin)
	}
	if len(ch.Rules) > 0 && ch.Plugin == "" {
		bad(ck+".rules", "custom rules are evaluated by a plugin: give plugin too")
	}
	if len(ch.Rules) > MaxCustomRules {
		bad(ck+".rules", "at most %d custom rules per check", MaxCustomRules)
	}
	seenRule := map[string]bool{}
	for j, cr := range ch.Rules {
		rk := fmt.Sprintf("%s.rules[%d]", ck, j)
		switch {
		case !customRuleName.MatchString(cr.Name):
			bad(rk+".name", "must be 1 to 64 of a-z, 0-9, '-' and '_', got %q", cr.Name)
		case seenRule[cr.Name]:
			bad(rk+".name", "%q is used twice in this check", cr.Name)
		}
		seenRule[cr.Name] = true
		if strings.TrimSpace(cr.Prompt) == "" || utf8.RuneCountInString(cr.Prompt) > MaxCustomRulePrompt {
			bad(rk+".prompt", "must be 1 to %d characters", MaxCustomRulePrompt)
		}
	}
	if ch.Builtin != nil {
		for cat, cc := range ch.Builtin.Categories {
			for j, p := range cc.Patterns {
				if _, err := regexp.Compile(p); err != nil {
					bad(fmt.Sprintf("%s.builtin.categories.%s.patterns[%d]", ck, cat, j), "%v", err)
				}
			}
		}
	}
}
