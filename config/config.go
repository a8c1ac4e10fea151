// Package config loads and validates gateway.yaml.
//
// The file is decoded into typed structs at the edge of the program (strict:
// unknown keys are errors that name the key and its line), `${ENV}`
// references are expanded, defaults are filled in and every value is
// validated before anything starts. Code deeper in the gateway never sees an
// untyped map.
package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Config is a whole gateway.yaml.
type Config struct {
	Server     Server               `yaml:"server"`
	Storage    Storage              `yaml:"storage"`
	Shared     Shared               `yaml:"shared"`
	Plugins    Plugins              `yaml:"plugins"`
	Providers  map[string]*Provider `yaml:"providers"`
	Orgs       map[string]*Org      `yaml:"orgs"`
	Moderation Moderation           `yaml:"moderation"`
	Limits     Limits               `yaml:"limits"`
	Admin      Admin                `yaml:"admin"`
	Secrets    Secrets              `yaml:"secrets"`

	// Dir is the directory of the config file; relative paths in the file
	// are resolved against it.
	Dir string `yaml:"-"`

	// lines maps dotted key paths to their line in the file, so that
	// validation errors can point at it.
	lines map[string]int
}

// Server holds the HTTP edge settings.
type Server struct {
	// Listen is the TCP address to serve on.
	Listen string `yaml:"listen"`
	// MaxBodyBytes caps request bodies (413 past it).
	MaxBodyBytes int `yaml:"max_body_bytes"`
	// ReadTimeout bounds reading one request (headers and body).
	ReadTimeout Duration `yaml:"read_timeout"`
	// WriteTimeout bounds writing one non-streaming response.
	WriteTimeout Duration `yaml:"write_timeout"`
	// IdleTimeout closes keep-alive connections idle for longer.
	IdleTimeout Duration `yaml:"idle_timeout"`
	// RequestTimeout bounds the whole handling of a synthesis request.
	RequestTimeout Duration `yaml:"request_timeout"`
	// ShutdownTimeout bounds the graceful drain on SIGINT/SIGTERM.
	ShutdownTimeout Duration `yaml:"shutdown_timeout"`
	// AccessLog turns the per-request zap line on or off.
	AccessLog *bool `yaml:"access_log"`
	// MaxConns bounds open client connections; past it a new connection
	// gets a 503 and is closed. 0 means derived from the open-files limit
	// at start, keeping descriptors for the store and the plugins.
	MaxConns int `yaml:"max_conns"`
	// MaxConnsPerIP bounds open connections from one client address (0 =
	// no per-address bound: behind a load balancer every connection
	// comes from its address).
	MaxConnsPerIP int `yaml:"max_conns_per_ip"`
}

// Storage selects the storage backend and tunes the request-log writer.
type Storage struct {
	// Driver is "bolt" (one bbolt file, the single-machine default) or
	// "postgres" (shared by several instances).
	Driver string `yaml:"driver"`
	// Path is the bbolt file (driver bolt). With driver postgres it still
	// places the admin socket and the default secrets key file.
	Path string `yaml:"path"`
	// DSN is the PostgreSQL connection string (driver postgres), usually
	// "${DATABASE_URL}". It holds a password, so it is a Secret.
	DSN Secret `yaml:"dsn"`
	// MaxConns bounds the PostgreSQL connection pool (default 16).
	MaxConns      int `yaml:"max_conns"`
	LogQueueSize  int `yaml:"log_queue_size"`
	LogBatchSize  int `yaml:"log_batch_size"`
	LogRetainDays int `yaml:"log_retain_days"`
}

// Shared configures what several gateway instances share besides storage.
type Shared struct {
	// RedisURL is a redis:// URL; with it, per-org rate limits hold across
	// every instance that uses the same Redis. Usually "${REDIS_URL}".
	RedisURL Secret `yaml:"redis_url"`
	// RateLimitOnError says what a request gets when Redis cannot be
	// asked: "allow" (the default: a limiter outage must not become a
	// speech outage) or "deny" (429).
	RateLimitOnError string `yaml:"rate_limit_on_error"`
}

// Storage drivers.
const (
	DriverBolt     = "bolt"
	DriverPostgres = "postgres"
)

// Plugins holds where plugin binaries live.
type Plugins struct {
	// Dir is the directory that holds plugin binaries.
	Dir string `yaml:"dir"`
	// StartTimeout bounds waiting for one plugin at start-up.
	StartTimeout Duration `yaml:"start_timeout"`
	// HealthInterval is how often plugins are pinged.
	HealthInterval Duration `yaml:"health_interval"`
}

// Provider configures one provider plugin.
type Provider struct {
	// Plugin is the binary name under Plugins.Dir (or an absolute path).
	Plugin string `yaml:"plugin"`
	// Instances is how many plugin processes to run (CPU-bound engines).
	Instances int `yaml:"instances"`
	// Managed says the gateway's own credentials (APIKey) may be used by
	// orgs that enable the provider without bringing their own key.
	Managed bool `yaml:"managed"`
	// APIKey is the managed credential; usually "${ENV_VAR}".
	APIKey Secret `yaml:"api_key"`
	// Timeout bounds one plugin call (504 provider_timeout past it).
	Timeout Duration `yaml:"timeout"`
	// CreditsPer1kChars is the credit rate charged per 1,000 characters.
	CreditsPer1kChars float64 `yaml:"credits_per_1k_chars"`
	// ModelCredits overrides the rate per model id.
	ModelCredits map[string]float64 `yaml:"model_credits"`
	// DirectHTTP, on by default, lets the gateway send the upstream
	// requests a plugin plans (sdk.Planner) itself, so audio skips the
	// plugin process. Off keeps every call inside the plugin, e.g. where
	// only the plugin's sandbox may reach the provider.
	DirectHTTP *bool `yaml:"direct_http"`
	// Settings are passed to the plugin's Configure untouched, e.g.
	// base_url. Any key not listed above lands here.
	Settings map[string]string `yaml:"-"`
}

// Direct reports whether planned requests are sent by the gateway
// (DirectHTTP, default true).
func (p *Provider) Direct() bool { return p.DirectHTTP == nil || *p.DirectHTTP }

// Org configures one organization.
type Org struct {
	// Moderation names the org's default moderation ruleset ("" = off).
	Moderation string `yaml:"moderation"`
	// Rulesets lists further rulesets a request may pick with
	// moderation_ruleset_id; the default is always allowed.
	Rulesets []string `yaml:"rulesets"`
	// Providers holds the org's per-provider flags.
	Providers map[string]*OrgProvider `yaml:"providers"`
	// RateLimit caps the org's requests per second (0 = unlimited).
	RateLimit float64 `yaml:"rate_limit"`
	// RateBurst is the token-bucket burst (default: max(1, RateLimit)).
	RateBurst int `yaml:"rate_burst"`
	// ReadRateLimit caps the org's other API requests per second (listing
	// voices, logs, providers; voice and media writes): a budget of its
	// own, so reads never spend the synthesis budget (0 = unlimited).
	ReadRateLimit float64 `yaml:"read_rate_limit"`
	// ReadRateBurst is the read budget's burst (default: max(1, rate)).
	ReadRateBurst int `yaml:"read_rate_burst"`
	// DevKey asks the gateway to create a key for this org at first start
	// and print it once (for the offline default deployment).
	DevKey bool `yaml:"dev_key"`
}

// OrgProvider holds one org's flags for one provider.
type OrgProvider struct {
	Enabled bool `yaml:"enabled"`
	// BYOK says the org brings its own provider key (from APIKey below or
	// stored with `voxgate secrets set`).
	BYOK bool `yaml:"byok"`
	// APIKey is the org's own provider key when given in config.
	APIKey Secret `yaml:"api_key"`
	// Managed lets the org use the gateway's managed credential; defaults
	// to the provider's Managed flag.
	Managed *bool `yaml:"managed"`
}

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

// Limits holds request limits.
type Limits struct {
	// MaxTextChars is the default text limit when a model states none.
	MaxTextChars int `yaml:"max_text_chars"`
	// MaxMediaBytes caps uploads to /v1/media.
	MaxMediaBytes int `yaml:"max_media_bytes"`
	// Conversation limits.
	MaxTurns                int `yaml:"max_turns"`
	MaxConversationChars    int `yaml:"max_conversation_chars"`
	ConversationConcurrency int `yaml:"conversation_concurrency"`
}

// Admin holds the admin socket used by `voxgate keys` while serving.
type Admin struct {
	// Socket is a unix socket path; "" = next to the storage file.
	Socket string `yaml:"socket"`
}

// Secrets holds where the key that encrypts stored BYOK keys comes from.
type Secrets struct {
	// KeyEnv names an environment variable holding a base64 32-byte key.
	KeyEnv string `yaml:"key_env"`
	// KeyFile is a file holding the key; created (0600) when missing.
	KeyFile string `yaml:"key_file"`
}

// Secret is a string that never prints: fmt and zap see "[redacted]".
type Secret string

// String redacts the value.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return "[redacted]"
}

// GoString redacts the value.
func (s Secret) GoString() string { return s.String() }

// MarshalText redacts the value, so it never reaches JSON or YAML output.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Value returns the secret itself; call it only where it is used.
func (s Secret) Value() string { return string(s) }

// Duration is a time.Duration written as "500ms", "60s" in YAML.
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %q is not a duration like 500ms or 60s", n.Line, s)
	}
	if v < 0 {
		return fmt.Errorf("line %d: duration %q must not be negative", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// providerKnown lists the keys of a provider block the gateway consumes;
// every other key is a plugin setting.
var providerKnown = map[string]bool{"plugin": true, "instances": true, "managed": true, "api_key": true, "timeout": true, "credits_per_1k_chars": true, "model_credits": true, "direct_http": true}

var moderatorKnown = map[string]bool{"plugin": true, "instances": true, "api_key": true, "timeout": true}

// UnmarshalYAML decodes the known keys strictly and keeps the rest as
// plugin settings.
func (p *Provider) UnmarshalYAML(n *yaml.Node) error {
	known, settings, err := splitKnown(n, providerKnown)
	if err != nil {
		return err
	}
	type plain Provider
	if err := known.Decode((*plain)(p)); err != nil {
		return err
	}
	p.Settings = settings
	return nil
}

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

// splitKnown separates a mapping node into the known keys (as a node) and
// the other keys rendered as strings.
func splitKnown(n *yaml.Node, known map[string]bool) (*yaml.Node, map[string]string, error) {
	if n.Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("line %d: expected a mapping", n.Line)
	}
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: n.Line, Column: n.Column}
	settings := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if known[k.Value] {
			out.Content = append(out.Content, k, v)
			continue
		}
		if v.Kind != yaml.ScalarNode {
			return nil, nil, fmt.Errorf("line %d: plugin setting %q must be a plain value", v.Line, k.Value)
		}
		settings[k.Value] = v.Value
	}
	return out, settings, nil
}

// Load reads, expands, decodes and validates a config file.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cfg, err := Parse(data, os.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	cfg.Dir = dirOf(path)
	return cfg, nil
}

func dirOf(path string) string {
	i := strings.LastIndexByte(path, '/')
	if i < 0 {
		return "."
	}
	if i == 0 {
		return "/"
	}
	return path[:i]
}

// customRuleName is the form of a custom moderation rule's name.
var customRuleName = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// Parse decodes and validates config text. lookup resolves ${ENV}
// references (os.LookupEnv in production); an unset variable without a
// `${NAME:-default}` default expands to "".
func Parse(data []byte, lookup func(string) (string, bool)) (*Config, error) {
	// Expand inside scalar values only, after parsing, so that a secret
	// containing YAML syntax cannot change the document's structure.
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	expandNode(&root, lookup)
	cfg := &Config{lines: map[string]int{}}
	if doc := documentBody(&root); doc != nil {
		if err := walkKnown(doc, reflect.TypeOf(cfg).Elem(), "", cfg.lines); err != nil {
			return nil, err
		}
		if err := doc.Decode(cfg); err != nil {
			return nil, cfg.nameKeys(err)
		}
	}
	cfg.applyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

func expandNode(n *yaml.Node, lookup func(string) (string, bool)) {
	if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "${") {
		n.Value = envRef.ReplaceAllStringFunc(n.Value, func(m string) string {
			sub := envRef.FindStringSubmatch(m)
			if v, ok := lookup(sub[1]); ok && v != "" {
				return v
			}
			return sub[3]
		})
	}
	for _, c := range n.Content {
		expandNode(c, lookup)
	}
}

func (c *Config) applyDefaults() {
	s := &c.Server
	if s.Listen == "" {
		s.Listen = "127.0.0.1:8080"
	}
	if s.MaxBodyBytes == 0 {
		s.MaxBodyBytes = 10 << 20
	}
	if s.ReadTimeout == 0 {
		s.ReadTimeout = Duration(30 * time.Second)
	}
	if s.WriteTimeout == 0 {
		s.WriteTimeout = Duration(120 * time.Second)
	}
	if s.IdleTimeout == 0 {
		s.IdleTimeout = Duration(120 * time.Second)
	}
	if s.RequestTimeout == 0 {
		s.RequestTimeout = Duration(120 * time.Second)
	}
	if s.ShutdownTimeout == 0 {
		s.ShutdownTimeout = Duration(30 * time.Second)
	}
	if s.AccessLog == nil {
		t := true
		s.AccessLog = &t
	}
	if c.Storage.Driver == "" {
		c.Storage.Driver = DriverBolt
	}
	if c.Storage.Path == "" {
		c.Storage.Path = "./data/voxgate.db"
	}
	if c.Storage.MaxConns == 0 {
		c.Storage.MaxConns = 16
	}
	if c.Storage.LogQueueSize == 0 {
		c.Storage.LogQueueSize = 8192
	}
	if c.Storage.LogBatchSize == 0 {
		c.Storage.LogBatchSize = 512
	}
	if c.Storage.LogRetainDays == 0 {
		c.Storage.LogRetainDays = 30
	}
	if c.Plugins.Dir == "" {
		c.Plugins.Dir = "./bin/plugins"
	}
	if c.Plugins.StartTimeout == 0 {
		c.Plugins.StartTimeout = Duration(30 * time.Second)
	}
	if c.Plugins.HealthInterval == 0 {
		c.Plugins.HealthInterval = Duration(5 * time.Second)
	}
	for _, p := range c.Providers {
		if p.Instances == 0 {
			p.Instances = 1
		}
		if p.Timeout == 0 {
			p.Timeout = Duration(60 * time.Second)
		}
	}
	for _, m := range c.Moderation.Plugins {
		if m.Instances == 0 {
			m.Instances = 1
		}
		if m.Timeout == 0 {
			m.Timeout = Duration(2 * time.Second)
		}
	}
	for _, r := range c.Moderation.Rulesets {
		if r.Mode == "" {
			r.Mode = "fail_closed"
		}
		if r.Timeout == 0 {
			r.Timeout = Duration(500 * time.Millisecond)
		}
	}
	l := &c.Limits
	if l.MaxTextChars == 0 {
		l.MaxTextChars = 5000
	}
	if l.MaxMediaBytes == 0 {
		l.MaxMediaBytes = 10 << 20
	}
	if l.MaxTurns == 0 {
		l.MaxTurns = 50
	}
	if l.MaxConversationChars == 0 {
		l.MaxConversationChars = 20000
	}
	if l.ConversationConcurrency == 0 {
		l.ConversationConcurrency = 4
	}
}

// Validate checks values and cross-references. Errors name the key.
func (c *Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		where := key
		if line := c.lineOf(key); line > 0 {
			where = fmt.Sprintf("line %d: %s", line, key)
		}
		errs = append(errs, fmt.Errorf("%s: %s", where, fmt.Sprintf(format, args...)))
	}
	if !strings.Contains(c.Server.Listen, ":") {
		bad("server.listen", "%q is not host:port", c.Server.Listen)
	}
	if c.Server.MaxBodyBytes < 1024 {
		bad("server.max_body_bytes", "must be at least 1024, got %d", c.Server.MaxBodyBytes)
	}
	if c.Server.MaxConns < 0 {
		bad("server.max_conns", "must be 0 (derived from the open-files limit) or more, got %d", c.Server.MaxConns)
	}
	if c.Server.MaxConnsPerIP < 0 {
		bad("server.max_conns_per_ip", "must be 0 (no bound) or more, got %d", c.Server.MaxConnsPerIP)
	}
	if c.Storage.LogQueueSize < 1 || c.Storage.LogBatchSize < 1 {
		bad("storage", "log_queue_size and log_batch_size must be positive")
	}
	switch c.Shared.RateLimitOnError {
	case "", "allow", "deny":
	default:
		bad("shared.rate_limit_on_error", "must be allow or deny, got %q", c.Shared.RateLimitOnError)
	}
	if u := c.Shared.RedisURL.Value(); u != "" && !strings.HasPrefix(u, "redis://") && !strings.HasPrefix(u, "rediss://") {
		bad("shared.redis_url", "must be a redis:// or rediss:// URL")
	}
	switch c.Storage.Driver {
	case DriverBolt:
	case DriverPostgres:
		if c.Storage.DSN == "" {
			bad("storage.dsn", "is required with driver postgres (e.g. ${DATABASE_URL})")
		}
	default:
		bad("storage.driver", "must be %q or %q, got %q", DriverBolt, DriverPostgres, c.Storage.Driver)
	}
	if c.Storage.MaxConns < 1 {
		bad("storage.max_conns", "must be positive, got %d", c.Storage.MaxConns)
	}
	if c.Storage.LogRetainDays < 1 || c.Storage.LogRetainDays > 3650 {
		bad("storage.log_retain_days", "must be 1..3650 (days), got %d", c.Storage.LogRetainDays)
	}
	if c.Limits.MaxTextChars < 1 || c.Limits.MaxTurns < 1 || c.Limits.MaxConversationChars < 1 || c.Limits.ConversationConcurrency < 1 || c.Limits.MaxMediaBytes < 1 {
		bad("limits", "every limit must be positive")
	}
	for _, name := range sortedKeys(c.Providers) {
		p := c.Providers[name]
		key := "providers." + name
		if p == nil {
			bad(key, "empty provider block")
			continue
		}
		if !validID(name) {
			bad(key, "provider id must be lower-case letters, digits, - or _")
		}
		if p.Plugin == "" {
			bad(key+".plugin", "required: the plugin binary name")
		}
		if p.Instances < 1 || p.Instances > 64 {
			bad(key+".instances", "must be 1..64, got %d", p.Instances)
		}
		if p.CreditsPer1kChars < 0 {
			bad(key+".credits_per_1k_chars", "must not be negative")
		}
	}
	for _, name := range sortedKeys(c.Moderation.Plugins) {
		m := c.Moderation.Plugins[name]
		if m == nil || m.Plugin == "" {
			bad("moderation.plugins."+name+".plugin", "required: the plugin binary name")
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
		for i, ch := range r.Checks {
			ck := fmt.Sprintf("%s.checks[%d]", key, i)
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
	}
	if len(c.Orgs) == 0 {
		bad("orgs", "at least one organization is required")
	}
	for _, name := range sortedKeys(c.Orgs) {
		o := c.Orgs[name]
		key := "orgs." + name
		if o == nil {
			bad(key, "empty org block")
			continue
		}
		if !validID(name) {
			bad(key, "org id must be lower-case letters, digits, - or _")
		}
		if o.Moderation != "" && c.Moderation.Rulesets[o.Moderation] == nil {
			bad(key+".moderation", "unknown ruleset %q", o.Moderation)
		}
		for _, r := range o.Rulesets {
			if c.Moderation.Rulesets[r] == nil {
				bad(key+".rulesets", "unknown ruleset %q", r)
			}
		}
		for _, pn := range sortedKeys(o.Providers) {
			if c.Providers[pn] == nil {
				bad(key+".providers."+pn, "unknown provider %q (not under providers:)", pn)
			}
			if o.Providers[pn] == nil {
				o.Providers[pn] = &OrgProvider{}
			}
		}
		if o.RateLimit < 0 {
			bad(key+".rate_limit", "must not be negative")
		}
		if o.ReadRateLimit < 0 {
			bad(key+".read_rate_limit", "must not be negative")
		}
	}
	return errors.Join(errs...)
}

var lineRef = regexp.MustCompile(`line (\d+): `)

// nameKeys adds the key path to yaml.v3's "line N: cannot unmarshal"
// messages, which name only the line.
func (c *Config) nameKeys(err error) error {
	byLine := map[string]string{}
	for k, l := range c.lines {
		if old, ok := byLine[strconv.Itoa(l)]; !ok || len(k) > len(old) {
			byLine[strconv.Itoa(l)] = k
		}
	}
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = lineRef.ReplaceAllStringFunc(msg, func(m string) string {
		n := lineRef.FindStringSubmatch(m)[1]
		if k, ok := byLine[n]; ok {
			return "line " + n + ": " + k + ": "
		}
		return m
	})
	return errors.New(msg)
}

// lineOf returns the line of key or of its nearest parent, 0 if unknown.
func (c *Config) lineOf(key string) int {
	for key != "" {
		if l, ok := c.lines[key]; ok {
			return l
		}
		i := strings.LastIndexAny(key, ".[")
		if i < 0 {
			break
		}
		key = key[:i]
	}
	return 0
}

func validID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Resolve returns path relative to the config file's directory unless it
// is absolute.
func (c *Config) Resolve(path string) string {
	if path == "" || filepath.IsAbs(path) || c.Dir == "" {
		return path
	}
	return filepath.Join(c.Dir, path)
}
