package moderation

import "time"

// Options are a deployment's moderation settings, as the gateway's
// assembly reads them from the configuration: the rulesets by name, the
// moderation plugins their checks call, and the rulesets each
// organization may use.
type Options struct {
	Rulesets map[string]Ruleset
	Plugins  map[string]Plugin
	Orgs     map[string]OrgRulesets
}

// Ruleset is one configured ruleset: its checks, run in order, and what
// a failing check means.
type Ruleset struct {
	// Mode is ModeFailClosed (the default), ModeFailOpen or ModeOff.
	Mode string
	// Timeout bounds the ruleset's checks (default 500ms).
	Timeout time.Duration
	Checks  []Check
}

// Check is one check of a ruleset: the built-in one, or one answered by
// a moderation plugin.
type Check struct {
	// Builtin makes this the built-in term and pattern check over
	// Categories (none: DefaultCategories).
	Builtin    bool
	Categories map[string]*Category
	// Plugin names the moderation plugin (Options.Plugins) that answers
	// the check.
	Plugin string
	// Rules are custom rules in plain English the plugin evaluates with
	// a model instead of its own checks. A check whose rules are all
	// disabled does not run.
	Rules []CustomRule
}

// Category is a named group of blocked terms and regular expressions.
type Category struct {
	Terms    []string
	Patterns []string
}

// CustomRule is one custom rule of a plugin check; only enabled rules
// are sent.
type CustomRule struct {
	Name, Prompt string
	Enabled      bool
}

// Plugin is how the checks call one moderation plugin.
type Plugin struct {
	// APIKey is sent with every call ("" for a plugin that needs none).
	APIKey string
	// Timeout bounds one call (0: the ruleset's timeout only).
	Timeout time.Duration
}

// OrgRulesets are the rulesets one organization may use: its Default
// ("" = no moderation unless a request picks one) and the others a
// request may pick.
type OrgRulesets struct {
	Default  string
	Rulesets []string
}
