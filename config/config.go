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
	"math"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
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
	Alignment  Alignment            `yaml:"alignment"`
	Admin      Admin                `yaml:"admin"`
	Secrets    Secrets              `yaml:"secrets"`
	Cache      Cache                `yaml:"cache"`
	// Fallbacks maps "provider/model" to the targets a request for it
	// falls back to, in order, when its provider fails.
	Fallbacks map[string][]*FallbackTarget `yaml:"fallbacks"`
	Metrics   Metrics                      `yaml:"metrics"`
	Tracing   Tracing                      `yaml:"tracing"`
	CORS      CORS                         `yaml:"cors"`
	Aliases   Aliases                      `yaml:"aliases"`

	// Dir is the directory of the config file; relative paths in the file
	// are resolved against it.
	Dir string `yaml:"-"`

	// Warnings are things that are allowed but probably not meant, each
	// naming its line and key: a ${VAR} reference to a variable that is
	// not set, say. serve logs them and `config check` prints them.
	Warnings []string `yaml:"-"`

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
	// MaxBodyMemory caps the bytes of request bodies held at once, over
	// all connections; a body that would pass it gets a 503. Bodies of
	// up to 8 KiB, which arrive with their headers, are not counted.
	MaxBodyMemory int `yaml:"max_body_memory"`
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
	// Driver is "bolt" (one bbolt file, the single-machine default),
	// "postgres" (shared by several instances) or "memory" (nothing kept
	// past the process: for tests and trying the gateway out).
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
	// BudgetOnError says what a request gets when the shared budget
	// counter cannot be asked: "deny" (the default: a budget that cannot
	// be checked is not spent, 503 budget_unavailable) or "allow".
	BudgetOnError string `yaml:"budget_on_error"`
}

// Cache configures the response cache.
type Cache struct {
	// Driver is "off" (the default), "disk" (one machine) or "redis"
	// (shared by instances, at shared.redis_url).
	Driver string `yaml:"driver"`
	// Path is the disk cache's directory (default: cache/ beside the
	// storage file).
	Path string `yaml:"path"`
	// MaxBytes bounds the disk cache (default 1 GiB); MaxEntryBytes one
	// entry in either (default 32 MiB).
	MaxBytes      int64 `yaml:"max_bytes"`
	MaxEntryBytes int64 `yaml:"max_entry_bytes"`
	// TTL is how long an entry is served (default 24h).
	TTL Duration `yaml:"ttl"`
	// ShareManaged shares entries of requests made with the gateway's
	// own provider credentials across organizations.
	ShareManaged bool `yaml:"share_managed"`
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

// Cache drivers.
const (
	CacheOff   = "off"
	CacheDisk  = "disk"
	CacheRedis = "redis"
)

// Storage drivers.
const (
	DriverBolt     = "bolt"
	DriverPostgres = "postgres"
	DriverMemory   = "memory"
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
	// Budget caps the credits the org spends per period (nil: none).
	Budget *Budget `yaml:"budget"`
	// Aliases are the org's own model and voice names; they win over the
	// top-level aliases of the same name.
	Aliases Aliases `yaml:"aliases"`
}

// Budget is a credit budget: Credits per Period ("day" or "month", UTC).
type Budget struct {
	Credits int64  `yaml:"credits"`
	Period  string `yaml:"period"`
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
	// MaxTextChars is the longest text one speech request may have
	// (422 past it). Texts longer than a model accepts are split into
	// pieces up to this ceiling.
	MaxTextChars int `yaml:"max_text_chars"`
	// PieceConcurrency is how many pieces of one long text render at
	// once.
	PieceConcurrency int `yaml:"piece_concurrency"`
	// MaxMediaBytes caps uploads to /v1/media.
	MaxMediaBytes int `yaml:"max_media_bytes"`
	// Conversation limits.
	MaxTurns                int `yaml:"max_turns"`
	MaxConversationChars    int `yaml:"max_conversation_chars"`
	ConversationConcurrency int `yaml:"conversation_concurrency"`
	// Whole-clip processing (volumeDbfs, output, speed the provider cannot
	// do, conversations). MaxOutputSeconds and MaxOutputBytes bound one
	// answer (422 output_too_large past them); WholeClipConcurrency is how
	// many such requests of one organization run at once, and
	// WholeClipWait how long one more waits for a turn before it is
	// refused with 429 rate_limited.
	MaxOutputSeconds     int      `yaml:"max_output_seconds"`
	MaxOutputBytes       int      `yaml:"max_output_bytes"`
	WholeClipConcurrency int      `yaml:"whole_clip_concurrency"`
	WholeClipWait        Duration `yaml:"whole_clip_wait"`
	// StreamsPerOrg is how many streams (the /stream endpoints) one
	// organization holds open at once per instance; one more is refused
	// with 429 rate_limited. A stream holds a provider call (for eSpeak,
	// a render slot of the plugin's) for as long as its client reads, so
	// one organization's many slow listeners must not take them all.
	StreamsPerOrg int `yaml:"streams_per_org"`
	// BodyMemoryPerOrg is the share of server.max_body_memory one
	// organization's request bodies may hold at once (per instance); a
	// body past it is refused with 429 rate_limited, so that one
	// organization's slow uploads cannot leave none for the others.
	// Default: a quarter of server.max_body_memory, at least the largest
	// body a route takes.
	BodyMemoryPerOrg int `yaml:"body_memory_per_org"`
}

// Alignment configures word timestamps for models that return none.
type Alignment struct {
	// Method is how words are timed for models without timestamps of
	// their own (and providers whose timestamps setting is "auto"):
	// "aligned" (the default: the offline aligner), "stt" (a
	// speech-to-text provider, STT) or "off" (503 timestamps_unavailable).
	Method string `yaml:"method"`
	// Reference is the provider whose plugin renders the reference
	// speech the aligner matches against; it must report word
	// timestamps. Default: "espeak" when that provider is configured.
	Reference string `yaml:"reference"`
	// STT names the speech-to-text provider and model of method stt.
	STT AlignmentSTT `yaml:"stt"`
	// Concurrency bounds the alignments running at once (each takes a
	// core for a fraction of a second per minute of audio). Default: the
	// number of CPUs.
	Concurrency int `yaml:"concurrency"`
}

// AlignmentSTT names a provider that transcribes (sdk.Transcriber) and its
// model.
type AlignmentSTT struct {
	Provider string `yaml:"provider"`
	// Model defaults to whisper-1.
	Model string `yaml:"model"`
}

// Alignment methods and provider timestamp sources.
const (
	TimestampsAuto    = "auto"
	TimestampsNative  = "native"
	TimestampsAligned = "aligned"
	TimestampsSTT     = "stt"
	TimestampsOff     = "off"
)

// Admin holds the admin socket used by `voxgate keys` while serving.
type Admin struct {
	// Socket is a unix socket path; "" = next to the storage file.
	Socket string `yaml:"socket"`
}

// Metrics says where /metrics is served. It is always on the admin
// socket. With neither key set it is not on the public listener: the
// public listener faces API clients, and what Prometheus reads (providers,
// routes, traffic, failures) is the operator's, not theirs.
type Metrics struct {
	// Listen is a separate TCP address for /metrics (with /healthz and
	// /readyz), e.g. 127.0.0.1:9464 or an internal interface's address;
	// /metrics then is not on the public listener at all.
	Listen string `yaml:"listen"`
	// Token, when set, must come as `Authorization: Bearer <token>` on
	// every /metrics request. Without Listen it puts /metrics on the
	// public listener behind this token. Usually "${METRICS_TOKEN}".
	Token Secret `yaml:"token"`
}

// Tracing configures OpenTelemetry traces, exported over OTLP. Off while
// Endpoint is empty.
type Tracing struct {
	// Endpoint is the OTLP receiver's base URL: http://collector:4318 for
	// http/protobuf, http://collector:4317 for grpc; https:// for TLS.
	Endpoint string `yaml:"endpoint"`
	// Protocol is "http/protobuf" (the default) or "grpc".
	Protocol string `yaml:"protocol"`
	// Headers are sent with every export, e.g. a vendor's API key as
	// "${HONEYCOMB_KEY}".
	Headers map[string]Secret `yaml:"headers"`
	// SampleRatio is the share of new traces kept, 0 to 1 (default 1); a
	// request with a sampled traceparent is always kept.
	SampleRatio *float64 `yaml:"sample_ratio"`
	// ServiceName is the service.name of the spans (default voxgate).
	ServiceName string `yaml:"service_name"`
}

// Secrets holds where the key that encrypts stored BYOK keys comes from.
type Secrets struct {
	// KeyEnv names an environment variable holding a base64 32-byte key.
	KeyEnv string `yaml:"key_env"`
	// KeyFile is a file holding the key; created (0600) when missing.
	KeyFile string `yaml:"key_file"`
}

// CORS says which browser origins may call the API (none by default).
type CORS struct {
	// AllowedOrigins lists origins as a browser sends them
	// ("https://app.example.com", "http://localhost:3000"), or "*" for
	// any origin. API keys travel in headers, never cookies, so an
	// allowed origin gains nothing a page could not do with its key.
	AllowedOrigins []string `yaml:"allowed_origins"`
	// MaxAge is how long a browser may cache a preflight answer
	// (default 10m; browsers cap it, Chromium at 2h).
	MaxAge Duration `yaml:"max_age"`
}

// Aliases map the names that code written for another API uses onto this
// gateway's models and voices, so that code moves provider unchanged.
// Organizations may add their own and override these (Org.Aliases).
type Aliases struct {
	// Models maps a model name ("tts-1") to a "provider/model" or
	// "provider" reference ("openai/tts-1", "espeak").
	Models map[string]string `yaml:"models"`
	// Voices maps a voice name ("alloy") to a provider voice or a saved
	// voice.
	Voices map[string]*VoiceAlias `yaml:"voices"`
}

// VoiceAlias is what a voice name stands for: a provider voice (Voice,
// with Model, or the request's model when Model is empty) or a saved
// voice of the organization (SavedVoice), never both.
type VoiceAlias struct {
	// Model is a "provider/model" or "provider" reference, or a model
	// alias; empty keeps the request's model.
	Model string `yaml:"model"`
	// Voice is the provider's voice id.
	Voice string `yaml:"voice"`
	// SavedVoice is the uuid of a saved voice (per-organization aliases
	// only: saved voices belong to one organization).
	SavedVoice string `yaml:"saved_voice"`
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
	// Errors are *yaml.TypeError values: yaml.v3 then goes on decoding the
	// rest of the file, so one run reports every mistake.
	v, err := time.ParseDuration(s)
	if err != nil {
		return typeError("line %d: %q is not a duration like 500ms or 60s", n.Line, s)
	}
	if v < 0 {
		return typeError("line %d: duration %q must not be negative", n.Line, s)
	}
	*d = Duration(v)
	return nil
}

// typeError is a decoding error yaml.v3 collects instead of stopping at.
func typeError(format string, args ...any) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf(format, args...)}}
}

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// providerKnown lists the keys of a provider block the gateway consumes;
// every other key is a plugin setting.
var providerKnown = map[string]bool{"plugin": true, "instances": true, "managed": true, "api_key": true, "timeout": true, "credits_per_1k_chars": true, "model_credits": true, "direct_http": true, "api_keys": true, "queue_wait": true, "timestamps": true}

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
		return nil, nil, typeError("line %d: expected a mapping", n.Line)
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
			return nil, nil, typeError("line %d: plugin setting %q must be a plain value", v.Line, k.Value)
		}
		settings[k.Value] = v.Value
	}
	return out, settings, nil
}

// Load reads, expands, decodes and validates a config file. A file with
// mistakes gives an *Errors naming every one of them.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	cfg, err := Parse(data, os.LookupEnv)
	if err != nil {
		var es *Errors
		if errors.As(err, &es) {
			es.File = path
			if es.Partial != nil {
				es.Partial.Dir = dirOf(path)
			}
		}
		return nil, err
	}
	cfg.Dir = dirOf(path)
	return cfg, nil
}

// Errors is every mistake found in a config file, each naming its line
// and key, in file order where the line is known.
type Errors struct {
	// File is the config file's path ("" for Parse).
	File string
	// Errs are the mistakes.
	Errs []error
	// Warnings are as Config.Warnings.
	Warnings []string
	// Partial is the config as far as it decoded, defaults applied, for
	// checks of what it names (`voxgate config check` looks for its
	// plugin binaries); nil when the text is not YAML. Never start from
	// it.
	Partial *Config
}

// Error lists the mistakes, one a line.
func (e *Errors) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if len(e.Errs) == 1 {
		b.WriteString(e.Errs[0].Error())
		return b.String()
	}
	fmt.Fprintf(&b, "%d mistakes:", len(e.Errs))
	for _, err := range e.Errs {
		b.WriteString("\n  ")
		b.WriteString(err.Error())
	}
	return b.String()
}

// Unwrap returns the mistakes.
func (e *Errors) Unwrap() []error { return e.Errs }

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
// `${NAME:-default}` default expands to "" and gives a warning. Every
// mistake is reported, in one *Errors.
func Parse(data []byte, lookup func(string) (string, bool)) (*Config, error) {
	// Expand inside scalar values only, after parsing, so that a secret
	// containing YAML syntax cannot change the document's structure.
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, &Errors{Errs: []error{errors.New(strings.TrimPrefix(err.Error(), "yaml: "))}}
	}
	cfg := &Config{lines: map[string]int{}}
	var errs []error
	if doc := documentBody(&root); doc != nil {
		expandNode(doc, "", lookup, func(line int, key, name string) {
			cfg.Warnings = append(cfg.Warnings, fmt.Sprintf("line %d: %s: ${%s} is not set, so the value is empty", line, key, name))
		})
		errs = append(errs, walkKnown(doc, reflect.TypeOf(cfg).Elem(), "", cfg.lines)...)
		if err := doc.Decode(cfg); err != nil {
			errs = append(errs, cfg.decodeErrors(err)...)
		}
	}
	cfg.applyDefaults()
	if err := cfg.Validate(); err != nil {
		errs = append(errs, unjoin(err)...)
	}
	if len(errs) > 0 {
		sortByLine(errs)
		return nil, &Errors{Errs: errs, Warnings: cfg.Warnings, Partial: cfg}
	}
	return cfg, nil
}

// unjoin splits an errors.Join error into its parts.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// sortByLine orders errors by the line they name; those naming none go
// last, in the order they came.
func sortByLine(errs []error) {
	line := func(err error) int {
		if m := lineRef.FindStringSubmatch(err.Error()); m != nil && strings.HasPrefix(err.Error(), "line ") {
			n, _ := strconv.Atoi(m[1])
			return n
		}
		return math.MaxInt
	}
	sort.SliceStable(errs, func(i, j int) bool { return line(errs[i]) < line(errs[j]) })
}

// expandNode replaces ${NAME} and ${NAME:-default} in the scalar values
// under n (whose key path is path) and calls unset for each variable that
// is not set and has no default.
func expandNode(n *yaml.Node, path string, lookup func(string) (string, bool), unset func(line int, key, name string)) {
	switch n.Kind {
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "${") {
			return
		}
		n.Value = envRef.ReplaceAllStringFunc(n.Value, func(m string) string {
			sub := envRef.FindStringSubmatch(m)
			if v, ok := lookup(sub[1]); ok && v != "" {
				return v
			}
			if sub[2] == "" {
				unset(n.Line, path, sub[1])
			}
			return sub[3]
		})
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			expandNode(n.Content[i+1], join(path, n.Content[i].Value), lookup, unset)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			expandNode(c, fmt.Sprintf("%s[%d]", path, i), lookup, unset)
		}
	default:
		for _, c := range n.Content {
			expandNode(c, path, lookup, unset)
		}
	}
}

func (c *Config) applyDefaults() {
	if c.Cache.Driver == "" {
		c.Cache.Driver = CacheOff
	}
	if c.Cache.MaxBytes == 0 {
		c.Cache.MaxBytes = 1 << 30
	}
	if c.Cache.MaxEntryBytes == 0 {
		c.Cache.MaxEntryBytes = 32 << 20
	}
	if c.Cache.TTL == 0 {
		c.Cache.TTL = Duration(24 * time.Hour)
	}
	s := &c.Server
	if s.Listen == "" {
		s.Listen = "127.0.0.1:8080"
	}
	if s.MaxBodyBytes == 0 {
		s.MaxBodyBytes = 10 << 20
	}
	if s.MaxBodyMemory == 0 {
		s.MaxBodyMemory = 256 << 20
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
		if p.QueueWait == 0 {
			p.QueueWait = Duration(5 * time.Second)
		}
		if p.Timestamps == "" {
			p.Timestamps = TimestampsAuto
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
	if c.CORS.MaxAge == 0 {
		c.CORS.MaxAge = Duration(10 * time.Minute)
	}
	l := &c.Limits
	if l.MaxTextChars == 0 {
		l.MaxTextChars = 100000
	}
	if l.PieceConcurrency == 0 {
		l.PieceConcurrency = 3
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
	if l.MaxOutputSeconds == 0 {
		l.MaxOutputSeconds = 1200 // 5,000 characters at speed 0.25
	}
	if l.MaxOutputBytes == 0 {
		l.MaxOutputBytes = 128 << 20
	}
	if l.WholeClipConcurrency == 0 {
		l.WholeClipConcurrency = 2
	}
	if l.WholeClipWait == 0 {
		l.WholeClipWait = Duration(10 * time.Second)
	}
	if l.StreamsPerOrg == 0 {
		l.StreamsPerOrg = 64
	}
	if l.BodyMemoryPerOrg == 0 {
		l.BodyMemoryPerOrg = max(c.Server.MaxBodyMemory/4, c.Server.MaxBodyBytes, l.MaxMediaBytes+64<<10)
	}
	a := &c.Alignment
	if a.Method == "" {
		a.Method = TimestampsAligned
	}
	if a.Reference == "" && c.Providers["espeak"] != nil {
		a.Reference = "espeak"
	}
	if a.STT.Model == "" {
		a.STT.Model = "whisper-1"
	}
	if a.Concurrency == 0 {
		a.Concurrency = runtime.NumCPU()
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
	if err := CheckListen(c.Server.Listen); err != nil {
		bad("server.listen", "%v", err)
	}
	if l := c.Metrics.Listen; l != "" {
		if err := CheckListen(l); err != nil {
			bad("metrics.listen", "%v", err)
		} else if l == c.Server.Listen && !strings.HasSuffix(l, ":0") {
			bad("metrics.listen", "must differ from server.listen (%s): it is a listener of its own", l)
		}
	}
	if t := c.Metrics.Token.Value(); t != "" && len(t) < 16 {
		bad("metrics.token", "must be at least 16 characters (e.g. `openssl rand -hex 16`)")
	}
	if e := c.Tracing.Endpoint; e != "" {
		if u, err := url.Parse(e); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("tracing.endpoint", "%q is not an http:// or https:// URL of an OTLP receiver", e)
		}
	}
	switch c.Tracing.Protocol {
	case "", "http/protobuf", "grpc":
	default:
		bad("tracing.protocol", "must be http/protobuf or grpc, got %q", c.Tracing.Protocol)
	}
	if r := c.Tracing.SampleRatio; r != nil && (*r < 0 || *r > 1) {
		bad("tracing.sample_ratio", "must be from 0 to 1, got %g", *r)
	}
	if c.Server.MaxBodyBytes < 1024 {
		bad("server.max_body_bytes", "must be at least 1024, got %d", c.Server.MaxBodyBytes)
	}
	// The largest body a route takes (an upload's multipart framing is
	// allowed 64 KiB) must fit in the memory for bodies, or it never would.
	largest := max(c.Server.MaxBodyBytes, c.Limits.MaxMediaBytes+64<<10)
	if c.Server.MaxBodyMemory < largest {
		bad("server.max_body_memory", "must be at least the largest body a route takes (%d bytes: server.max_body_bytes, or limits.max_media_bytes plus 64 KiB), got %d", largest, c.Server.MaxBodyMemory)
	}
	if c.Limits.BodyMemoryPerOrg < largest || c.Limits.BodyMemoryPerOrg > c.Server.MaxBodyMemory {
		bad("limits.body_memory_per_org", "must be from the largest body a route takes (%d bytes) to server.max_body_memory (%d), got %d", largest, c.Server.MaxBodyMemory, c.Limits.BodyMemoryPerOrg)
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
	switch c.Cache.Driver {
	case CacheOff, CacheDisk:
	case CacheRedis:
		if c.Shared.RedisURL.Value() == "" {
			bad("cache.driver", "redis needs shared.redis_url")
		}
	default:
		bad("cache.driver", "must be off, disk or redis, got %q", c.Cache.Driver)
	}
	if c.Cache.MaxBytes < 0 || c.Cache.MaxEntryBytes < 0 || c.Cache.TTL < 0 {
		bad("cache", "max_bytes, max_entry_bytes and ttl must not be negative")
	}
	switch c.Shared.BudgetOnError {
	case "", "allow", "deny":
	default:
		bad("shared.budget_on_error", "must be allow or deny, got %q", c.Shared.BudgetOnError)
	}
	if u := c.Shared.RedisURL.Value(); u != "" && !strings.HasPrefix(u, "redis://") && !strings.HasPrefix(u, "rediss://") {
		bad("shared.redis_url", "must be a redis:// or rediss:// URL")
	}
	switch c.Storage.Driver {
	case DriverBolt, DriverMemory:
	case DriverPostgres:
		if c.Storage.DSN == "" {
			bad("storage.dsn", "is required with driver postgres (e.g. ${DATABASE_URL})")
		}
	default:
		bad("storage.driver", "must be %q, %q or %q, got %q", DriverBolt, DriverPostgres, DriverMemory, c.Storage.Driver)
	}
	if c.Storage.MaxConns < 1 {
		bad("storage.max_conns", "must be positive, got %d", c.Storage.MaxConns)
	}
	if c.Storage.LogRetainDays < 1 || c.Storage.LogRetainDays > 3650 {
		bad("storage.log_retain_days", "must be 1..3650 (days), got %d", c.Storage.LogRetainDays)
	}
	if c.Limits.MaxTextChars < 1 || c.Limits.MaxTurns < 1 || c.Limits.MaxConversationChars < 1 || c.Limits.ConversationConcurrency < 1 || c.Limits.MaxMediaBytes < 1 ||
		c.Limits.MaxOutputSeconds < 1 || c.Limits.MaxOutputBytes < 1 || c.Limits.WholeClipConcurrency < 1 || c.Limits.WholeClipWait < 0 || c.Limits.PieceConcurrency < 1 || c.Limits.StreamsPerOrg < 1 {
		bad("limits", "every limit must be positive")
	}
	if c.Limits.MaxTextChars > 1_000_000 {
		bad("limits.max_text_chars", "must be at most 1000000 (a text that long is hours of audio held in memory), got %d", c.Limits.MaxTextChars)
	}
	switch c.Alignment.Method {
	case TimestampsAligned, TimestampsSTT, TimestampsOff:
	default:
		bad("alignment.method", "must be aligned, stt or off, got %q", c.Alignment.Method)
	}
	if r := c.Alignment.Reference; r != "" && c.Providers[r] == nil {
		bad("alignment.reference", "unknown provider %q (not under providers:)", r)
	}
	if p := c.Alignment.STT.Provider; p != "" && c.Providers[p] == nil {
		bad("alignment.stt.provider", "unknown provider %q (not under providers:)", p)
	}
	if c.Alignment.Method == TimestampsSTT && c.Alignment.STT.Provider == "" {
		bad("alignment.stt.provider", "is required with method stt (e.g. openai)")
	}
	if c.Alignment.Concurrency < 1 {
		bad("alignment.concurrency", "must be positive, got %d", c.Alignment.Concurrency)
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
	for i, o := range c.CORS.AllowedOrigins {
		if msg := checkOrigin(o); msg != "" {
			bad(fmt.Sprintf("cors.allowed_origins[%d]", i), "%q %s", o, msg)
		}
	}
	if c.CORS.MaxAge.D() > 24*time.Hour {
		bad("cors.max_age", "must be at most 24h, got %s", c.CORS.MaxAge.D())
	}
	c.validateAliases("aliases", &c.Aliases, false, bad)
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
		c.validateAliases(key+".aliases", &o.Aliases, true, bad)
		if o.RateLimit < 0 {
			bad(key+".rate_limit", "must not be negative")
		}
		if o.ReadRateLimit < 0 {
			bad(key+".read_rate_limit", "must not be negative")
		}
		if b := o.Budget; b != nil {
			if b.Credits < 1 {
				bad(key+".budget.credits", "must be at least 1, got %d", b.Credits)
			}
			if b.Period != "day" && b.Period != "month" {
				bad(key+".budget.period", "must be day or month, got %q", b.Period)
			}
		}
	}
	return errors.Join(errs...)
}

var lineRef = regexp.MustCompile(`line (\d+): `)

// decodeErrors splits yaml.v3's decoding error into one error per
// mistake and adds the key path to its "line N: cannot unmarshal"
// messages, which name only the line.
func (c *Config) decodeErrors(err error) []error {
	// A line names the deepest key on it, unless it holds several keys
	// side by side ({a: 1, b: 2}): then the message cannot tell which.
	byLine := map[string]string{}
	ambiguous := map[string]bool{}
	for _, k := range sortedKeys(c.lines) {
		if k == "" {
			continue // the document itself
		}
		l := strconv.Itoa(c.lines[k])
		old, ok := byLine[l]
		switch {
		case !ok || strings.HasPrefix(k, old+".") || strings.HasPrefix(k, old+"["):
			byLine[l] = k
		case !strings.HasPrefix(old, k+".") && !strings.HasPrefix(old, k+"["):
			ambiguous[l] = true
		}
	}
	for l := range ambiguous {
		delete(byLine, l)
	}
	msgs := []string{strings.TrimPrefix(err.Error(), "yaml: ")}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	errs := make([]error, 0, len(msgs))
	for _, msg := range msgs {
		msg = lineRef.ReplaceAllStringFunc(msg, func(m string) string {
			n := lineRef.FindStringSubmatch(m)[1]
			if k, ok := byLine[n]; ok {
				return "line " + n + ": " + k + ": "
			}
			return m
		})
		errs = append(errs, errors.New(msg))
	}
	return errs
}

// CheckListen checks a TCP listen address: host:port (the host may be
// empty, meaning every interface), with a port from 0 (any free port) to
// 65535.
func CheckListen(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port (e.g. 127.0.0.1:8080, or :8080 for every interface)", addr)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q: the port must be a number from 0 to 65535", addr)
	}
	if strings.ContainsAny(host, " /") {
		return fmt.Errorf("%q: %q is not a host name or IP address", addr, host)
	}
	return nil
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

// checkOrigin returns what is wrong with an allowed origin, "" if
// nothing: a browser's Origin is scheme://host[:port], without a path.
func checkOrigin(o string) string {
	if o == "*" {
		return ""
	}
	u, err := url.Parse(o)
	switch {
	case err != nil:
		return "is not a URL: " + err.Error()
	case u.Scheme != "http" && u.Scheme != "https":
		return "must start with http:// or https://"
	case u.Host == "":
		return "has no host"
	case u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return "must be scheme://host[:port] only, as a browser sends it (no path, query or user)"
	case strings.ToLower(o) != o:
		return "must be lower case, as a browser sends it"
	}
	return ""
}

// validateAliases checks an aliases block: model references are
// "provider[/model]" of a configured provider (or another model alias),
// and each voice alias names either a provider voice or, in an
// organization's block only, a saved voice.
func (c *Config) validateAliases(key string, a *Aliases, perOrg bool, bad func(key, format string, args ...any)) {
	checkModel := func(k, ref string) {
		target := ref
		if t, ok := a.Models[ref]; ok {
			target = t
		} else if t, ok := c.Aliases.Models[ref]; ok {
			target = t
		}
		pid, _, _ := strings.Cut(target, "/")
		if c.Providers[pid] == nil {
			bad(k, "%q names no provider under providers:", ref)
		}
	}
	for _, name := range sortedKeys(a.Models) {
		k := key + ".models." + name
		if name == "" || strings.TrimSpace(name) != name {
			bad(k, "alias names must not be empty or padded")
		}
		if a.Models[name] == "" {
			bad(k, "is empty: give provider/model")
			continue
		}
		pid, _, _ := strings.Cut(a.Models[name], "/")
		if c.Providers[pid] == nil {
			bad(k, "%q names no provider under providers:", a.Models[name])
		}
	}
	for _, name := range sortedKeys(a.Voices) {
		k := key + ".voices." + name
		v := a.Voices[name]
		switch {
		case v == nil:
			bad(k, "is empty: give voice (with model) or saved_voice")
		case v.SavedVoice != "" && (v.Voice != "" || v.Model != ""):
			bad(k, "give either saved_voice or voice and model, not both")
		case v.SavedVoice != "" && !perOrg:
			bad(k+".saved_voice", "saved voices belong to one organization: set this alias under orgs.<id>.aliases")
		case v.SavedVoice != "" && !uuidLike(v.SavedVoice):
			bad(k+".saved_voice", "%q is not a saved voice's uuid", v.SavedVoice)
		case v.SavedVoice == "" && v.Voice == "":
			bad(k, "give voice (with model) or saved_voice")
		case v.Model != "":
			checkModel(k+".model", v.Model)
		}
	}
}

// uuidLike reports whether s has the form of a uuid.
func uuidLike(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, r := range s {
		switch i {
		case 8, 13, 18, 23:
			if r != '-' {
				return false
			}
		default:
			if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
				return false
			}
		}
	}
	return true
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
