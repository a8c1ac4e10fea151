package config

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/voxgate/voxgate/sdk"
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
	// Timestamps says where this provider's word timestamps come from:
	// "auto" (the default: the model's own when it has them, else the
	// deployment's alignment.method), "native" (only the model's own;
	// models without answer 501), "aligned" (the offline aligner, even
	// for models with their own) or "stt" (speech-to-text).
	Timestamps string `yaml:"timestamps"`
	// DirectHTTP, on by default, lets the gateway send the upstream
	// requests a plugin plans (sdk.Planner) itself, so audio skips the
	// plugin process. Off keeps every call inside the plugin, e.g. where
	// only the plugin's sandbox may reach the provider.
	DirectHTTP *bool `yaml:"direct_http"`
	// APIKeys is a pool of managed keys, used instead of APIKey: calls
	// spread over them by weight, a throttled or refused key rests.
	APIKeys []*PooledKey `yaml:"api_keys"`
	// QueueWait bounds how long a call waits for a pooled key's
	// concurrency slot (429 rate_limited past it; default 5s).
	QueueWait Duration `yaml:"queue_wait"`
	// Settings are passed to the plugin's Configure untouched, e.g.
	// base_url. Any key not listed above lands here.
	Settings map[string]string `yaml:"-"`
}

// PooledKey is one key of a provider's pool.
type PooledKey struct {
	// Name labels the key in metrics, logs and /readyz (never the key).
	Name string `yaml:"name"`
	// Key is the API key, usually "${ENV_VAR}".
	Key Secret `yaml:"key"`
	// Weight is its share of calls (default 1).
	Weight int `yaml:"weight"`
	// MaxConcurrency bounds its calls in flight across instances (0: no
	// bound).
	MaxConcurrency int `yaml:"max_concurrency"`
}

// Direct reports whether planned requests are sent by the gateway
// (DirectHTTP, default true).
func (p *Provider) Direct() bool { return p.DirectHTTP == nil || *p.DirectHTTP }

// providerKnown lists the keys of a provider block the gateway consumes;
// every other key is a plugin setting.
var providerKnown = map[string]bool{"plugin": true, "instances": true, "managed": true, "api_key": true, "timeout": true, "credits_per_1k_chars": true, "model_credits": true, "direct_http": true, "api_keys": true, "queue_wait": true, "timestamps": true}

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

// FallbackTarget is one target of a fallback route.
type FallbackTarget struct {
	// Model is "provider/model".
	Model string `yaml:"model"`
	// Voices maps the failing request's voice to this target's; Voice is
	// the target's voice for any voice not in Voices.
	Voices map[string]string `yaml:"voices"`
	Voice  string            `yaml:"voice"`
}

func (p *Plugins) defaults() {
	if p.Dir == "" {
		p.Dir = "./bin/plugins"
	}
	if p.StartTimeout == 0 {
		p.StartTimeout = Duration(30 * time.Second)
	}
	if p.HealthInterval == 0 {
		p.HealthInterval = Duration(5 * time.Second)
	}
}

func (p *Provider) defaults() {
	if p == nil {
		return // an empty block: validateProviders names it
	}
	if p.Instances == 0 {
		p.Instances = 1
	}
	if p.Timeout == 0 {
		p.Timeout = Duration(60 * time.Second)
	}
	if p.QueueWait == 0 {
		p.QueueWait = Duration(5 * time.Second)
	}
	if p.Timestamps == "" {
		p.Timestamps = TimestampsAuto
	}
}

// validateProviders checks the providers section.
func (c *Config) validateProviders(bad report) {
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
		gatewayKeyTypos(key, p.Settings, providerKnown, bad)
		if len(p.APIKeys) > 0 && p.APIKey != "" {
			bad(key+".api_keys", "give api_key or api_keys, not both")
		}
		names := map[string]bool{}
		for i, k := range p.APIKeys {
			kk := fmt.Sprintf("%s.api_keys[%d]", key, i)
			switch {
			case k == nil || k.Name == "" || !validID(k.Name):
				bad(kk+".name", "required: lower-case letters, digits, - or _ (it labels the key in metrics)")
			case names[k.Name]:
				bad(kk+".name", "%q is used twice", k.Name)
			case k.Key.Value() == "":
				bad(kk+".key", "is empty (an unset ${VAR}?)")
			case k.Weight < 0 || k.MaxConcurrency < 0:
				bad(kk, "weight and max_concurrency must not be negative")
			}
			if k != nil {
				names[k.Name] = true
			}
		}
		if p.QueueWait < 0 {
			bad(key+".queue_wait", "must not be negative")
		}
		if p.Instances < 1 || p.Instances > 64 {
			bad(key+".instances", "must be 1..64, got %d", p.Instances)
		}
		if p.CreditsPer1kChars < 0 {
			bad(key+".credits_per_1k_chars", "must not be negative")
		}
		switch p.Timestamps {
		case TimestampsAuto, TimestampsNative, TimestampsAligned:
		case TimestampsSTT:
			if c.Alignment.STT.Provider == "" {
				bad(key+".timestamps", "stt needs alignment.stt.provider")
			}
		default:
			bad(key+".timestamps", "must be auto, native, aligned or stt, got %q", p.Timestamps)
		}
	}
}

// validateFallbacks checks the fallbacks section: every route is from
// and to a model of a configured provider.
func (c *Config) validateFallbacks(bad report) {
	providerOf := func(model string) string {
		p, m, ok := strings.Cut(model, "/")
		if !ok || p == "" || m == "" {
			return ""
		}
		return p
	}
	for _, from := range sortedKeys(c.Fallbacks) {
		key := "fallbacks." + from
		if p := providerOf(from); p == "" || c.Providers[p] == nil {
			bad(key, "must be provider/model of a configured provider")
		}
		for i, t := range c.Fallbacks[from] {
			tk := fmt.Sprintf("%s[%d]", key, i)
			switch {
			case t == nil:
				bad(tk, "empty target")
			case providerOf(t.Model) == "" || c.Providers[providerOf(t.Model)] == nil:
				bad(tk+".model", "must be provider/model of a configured provider, got %q", t.Model)
			case t.Voice == "" && len(t.Voices) == 0:
				bad(tk, "give voice, or voices mapping the request's voices to this target's")
			}
		}
	}
}

// gatewayKeyTypos reports the keys of a plugin block's settings that are
// misspellings of the gateway's own keys of the block (known), such as
// "instanses" or "manged", and takes them out of settings: the plugin
// would refuse them too, but only the gateway can say which of its keys
// was meant, and a plugin that does not check its settings would ignore
// them silently.
func gatewayKeyTypos(block string, settings map[string]string, known map[string]bool, bad report) {
	keys := make([]string, 0, len(known))
	for k := range known {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range sortedKeys(settings) {
		if near := sdk.Closest(k, keys); near != "" {
			bad(block+"."+k, "unknown key (did you mean %s?)", near)
			delete(settings, k)
		}
	}
}

// SettingProblems turns the problems a plugin found in the settings of
// block ("providers.openai") into errors naming the line and key, as the
// config's own mistakes are named, in file order.
func (c *Config) SettingProblems(block string, problems []sdk.SettingProblem) []error {
	errs := make([]error, 0, len(problems))
	for _, p := range problems {
		key := block
		if p.Path != "" {
			key += "." + p.Path
		}
		where := key
		if line := c.lineOf(key); line > 0 {
			where = fmt.Sprintf("line %d: %s", line, key)
		}
		errs = append(errs, fmt.Errorf("%s: %s", where, p.Message))
	}
	sortByLine(errs)
	return errs
}
