package gateway

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/voxgate/voxgate/config"
	"github.com/voxgate/voxgate/gateway/admission/moderation"
	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/providers/catalog"
	"github.com/voxgate/voxgate/gateway/providers/credentials"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/sdk"
)

// optionsYAML sets a value in every section the options read, each
// different from its default, so that a value dropped on the way shows.
const optionsYAML = `
server:
  request_timeout: 90s
storage:
  path: data/v.db
  log_queue_size: 100
  log_batch_size: 10
  log_retain_days: 7
shared:
  redis_url: redis://127.0.0.1:1
  rate_limit_on_error: deny
  budget_on_error: allow
plugins:
  dir: bin
  start_timeout: 3s
  health_interval: 4s
secrets:
  key_file: keys/k
cache:
  driver: disk
  ttl: 1h
  max_entry_bytes: 1000
  share_managed: true
providers:
  espeak: {plugin: voxgate-espeak, timestamps: native, timeout: 10s, credits_per_1k_chars: 2, direct_http: false, voice_dir: /v}
  openai:
    plugin: /abs/voxgate-openai
    managed: true
    api_keys:
      - {name: a, key: ka, weight: 2, max_concurrency: 3}
      - {name: b, key: kb}
    queue_wait: 1s
    timeout: 120s
    model_credits: {tts-1: 5}
orgs:
  acme:
    moderation: strict
    rulesets: [lenient]
    budget: {credits: 100, period: day}
    providers:
      espeak: {enabled: true}
      openai: {enabled: true, byok: true, api_key: own, managed: false}
  globex: {}
moderation:
  plugins:
    llm: {plugin: voxgate-x, api_key: mk, timeout: 3s}
  rulesets:
    strict:
      timeout: 200ms
      checks:
        - builtin: {categories: {insult: {terms: [idiot], patterns: ['\bfoo\b']}}}
        - plugin: llm
          rules:
            - {name: on, prompt: p1}
            - {name: off, prompt: p2, enabled: false}
    lenient:
      mode: fail_open
      checks: [{builtin: {}}]
limits:
  max_text_chars: 500
  piece_concurrency: 5
  max_turns: 6
  max_conversation_chars: 700
  conversation_concurrency: 8
  max_output_seconds: 9
  max_output_bytes: 10000000
  whole_clip_concurrency: 11
  whole_clip_wait: 12s
  streams_per_org: 13
alignment:
  method: stt
  reference: espeak
  stt: {provider: openai, model: m}
  concurrency: 14
tracing:
  endpoint: http://127.0.0.1:4318
  sample_ratio: 0
  headers: {x-key: secret}
`

func optionsConfig(t *testing.T) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(optionsYAML), os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Dir = "/etc/voxgate"
	return cfg
}

// TestOptions: each component's options carry what the config says.
func TestOptions(t *testing.T) {
	cfg := optionsConfig(t)
	tests := []struct {
		name      string
		got, want any
	}{
		{"storage path", StorageConfig(cfg).Path, "/etc/voxgate/data/v.db"},
		{"storage retention", StorageConfig(cfg).LogRetention, 7 * 24 * time.Hour},
		{"request log", [3]any{RequestLogOptions(cfg).QueueSize, RequestLogOptions(cfg).BatchSize, RequestLogOptions(cfg).Retention}, [3]any{100, 10, 7 * 24 * time.Hour}},
		{"admin socket", AdminSocket(cfg), "/etc/voxgate/data/v.db.sock"},
		{"secrets key file", SecretsKeyFile(cfg), "/etc/voxgate/keys/k"},
		{"cache", CacheOptions(cfg), speech.CacheOptions{TTL: time.Hour, MaxEntryBytes: 1000, ShareManaged: true}},
		{"cache dir", cacheDir(cfg), "/etc/voxgate/data/cache"},
		{"shared", sharedOptions(cfg), shared{redisURL: "redis://127.0.0.1:1", rateLimitFailOpen: false, budgetFailOpen: true}},
		{"plugin host", [2]time.Duration{PluginHostOptions(cfg).StartTimeout, PluginHostOptions(cfg).HealthInterval}, [2]time.Duration{3 * time.Second, 4 * time.Second}},
		{"plugin paths", [2]string{PluginSpecs(cfg)[0].Path, PluginSpecs(cfg)[1].Path}, [2]string{"/etc/voxgate/bin/voxgate-espeak", "/abs/voxgate-openai"}},
		{"plugin settings", PluginSpecs(cfg)[0].Settings, map[string]string{"voice_dir": "/v"}},
		{"moderation plugin spec", [2]string{PluginSpecs(cfg)[2].Name, PluginSpecs(cfg)[2].Path}, [2]string{"moderation.llm", "/etc/voxgate/bin/voxgate-x"}},
		{"budgets", len(OrgBudgets(cfg)), 1},
		{"budget", OrgBudgets(cfg)["acme"].Credits, int64(100)},
		{"speech limits", SpeechLimits(cfg), speech.Limits{
			MaxTextChars: 500, PieceConcurrency: 5, MaxTurns: 6, MaxConversationChars: 700, ConversationConcurrency: 8,
			Output:               audio.Limits{MaxDuration: 9 * time.Second, MaxBytes: 10000000},
			WholeClipConcurrency: 11, WholeClipWait: 12 * time.Second, StreamsPerOrg: 13,
		}},
		{"alignment", Alignment(cfg), speech.Alignment{Method: speech.TimingSTT, Reference: "espeak", STTProvider: "openai", STTModel: "m", Concurrency: 14}},
		{"espeak policy", ProviderPolicies(cfg)["espeak"], catalog.Policy{Timeout: 10 * time.Second, CreditsPer1kChars: 2, Direct: false, Timestamps: speech.TimingNative, Currency: "USD"}},
		{"openai policy", ProviderPolicies(cfg)["openai"], catalog.Policy{Timeout: 120 * time.Second, ModelCredits: map[string]float64{"tts-1": 5}, Direct: true, Timestamps: speech.TimingAuto, Currency: "USD"}},
		{"server request timeout", ServerOptions(cfg).RequestTimeout, 90 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.got, tt.want) {
				t.Errorf("got %+v, want %+v", tt.got, tt.want)
			}
		})
	}
}

// TestKeyPoolOptions: a pool's keys keep their order, weights and bounds,
// and a slot is held for the longest a call can take plus a minute.
func TestKeyPoolOptions(t *testing.T) {
	pools := KeyPools(optionsConfig(t))
	if len(pools) != 1 {
		t.Fatalf("pools %v, want openai's only", pools)
	}
	p := pools["openai"]
	if len(p.Keys) != 2 || p.Keys[0].Name != "a" || p.Keys[0].Secret != "ka" || p.Keys[0].Weight != 2 || p.Keys[0].MaxConcurrency != 3 || p.Keys[1].Name != "b" {
		t.Errorf("keys %+v", p.Keys)
	}
	if p.Wait != time.Second || p.Hold != 3*time.Minute {
		t.Errorf("wait %s hold %s, want 1s and 3m (the provider's 120s timeout, over the 90s request timeout, plus a minute)", p.Wait, p.Hold)
	}
}

// TestTracingOptions: no endpoint is off; a sample ratio of 0 keeps no
// new trace (the tracer's -1: its 0 is the default, all); headers are the
// secrets' values.
func TestTracingOptions(t *testing.T) {
	cfg := optionsConfig(t)
	o, on := TracingOptions(cfg, "v1")
	if !on || o.Endpoint != "http://127.0.0.1:4318" || o.SampleRatio != -1 || o.Headers["x-key"] != "secret" || o.Version != "v1" {
		t.Errorf("options %+v on %v", o, on)
	}
	cfg.Tracing.Endpoint = ""
	if _, on := TracingOptions(cfg, "v1"); on {
		t.Error("tracing on without an endpoint")
	}
}

// TestCredentialsPolicyOptions: an organization's flags follow its entry,
// narrowed by the provider's managed flag; its own key in the config is
// used; a provider it does not list is off for it.
func TestCredentialsPolicyOptions(t *testing.T) {
	r := credentials.NewResolver(CredentialsPolicy(optionsConfig(t)), nil, nil)
	for _, tt := range []struct {
		org, provider string
		want          credentials.Flags
	}{
		{"acme", "espeak", credentials.Flags{Enabled: true}},
		{"acme", "openai", credentials.Flags{Enabled: true, BYOK: true}},
		{"globex", "openai", credentials.Flags{Managed: true}},
	} {
		if got := r.Flags(tt.org, tt.provider); got != tt.want {
			t.Errorf("%s/%s: %+v, want %+v", tt.org, tt.provider, got, tt.want)
		}
	}
	c, err := r.For(context.Background(), "acme", "openai")
	if err != nil || c.APIKey != "own" || !c.BYOK {
		t.Errorf("acme's openai credentials %+v, %v: want its own key", c, err)
	}
}

// TestModerationOptions: the rulesets reach the engine as configured: an
// organization's default and choices, a builtin check's own categories,
// a plugin check's key and enabled rules only.
func TestModerationOptions(t *testing.T) {
	o := ModerationOptions(optionsConfig(t))
	strict := o.Rulesets["strict"]
	if strict.Mode != moderation.ModeFailClosed || strict.Timeout != 200*time.Millisecond || len(strict.Checks) != 2 {
		t.Fatalf("strict %+v", strict)
	}
	if b := strict.Checks[0]; !b.Builtin || !reflect.DeepEqual(b.Categories["insult"], &moderation.Category{Terms: []string{"idiot"}, Patterns: []string{`\bfoo\b`}}) {
		t.Errorf("builtin check %+v", b)
	}
	if l := o.Rulesets["lenient"]; l.Mode != moderation.ModeFailOpen || !l.Checks[0].Builtin || l.Checks[0].Categories != nil {
		t.Errorf("lenient %+v: builtin: {} must leave the categories to the defaults", l)
	}
	if o.Plugins["llm"] != (moderation.Plugin{APIKey: "mk", Timeout: 3 * time.Second}) {
		t.Errorf("plugin %+v", o.Plugins["llm"])
	}
	if !reflect.DeepEqual(o.Orgs["acme"], moderation.OrgRulesets{Default: "strict", Rulesets: []string{"lenient"}}) {
		t.Errorf("acme %+v", o.Orgs["acme"])
	}
	if _, ok := o.Orgs["globex"]; !ok {
		t.Error("globex has no entry")
	}

	p := &recordingModerator{}
	e, err := moderation.New(o, func(string) sdk.Moderator { return p }, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if v := e.Check(ctx, "strict", "you idiot"); v.Decision != moderation.DecisionBlock || v.ReasonDetail != "insult" {
		t.Errorf("the configured term: %+v", v)
	}
	if v := e.Check(ctx, "strict", "fine text"); v.Decision != moderation.DecisionAllow {
		t.Errorf("fine text: %+v", v)
	}
	if p.key != "mk" || len(p.rules) != 1 || p.rules[0].Name != "on" || p.rules[0].Prompt != "p1" {
		t.Errorf("the plugin got key %q and rules %+v: want mk and the enabled rule only", p.key, p.rules)
	}
	if got, err := e.Ruleset("acme", ""); err != nil || got != "strict" {
		t.Errorf("acme's default: %q, %v", got, err)
	}
	if _, err := e.Ruleset("globex", "strict"); err == nil {
		t.Error("globex may pick strict")
	}
}

// recordingModerator allows everything and keeps what the last call
// carried.
type recordingModerator struct {
	key   string
	rules []sdk.ModerationRule
}

func (m *recordingModerator) Configure(context.Context, map[string]string) error { return nil }

func (m *recordingModerator) Moderate(_ context.Context, req *sdk.ModerationRequest) (*sdk.ModerationResult, error) {
	m.key, m.rules = req.Credentials.APIKey, req.Rules
	return &sdk.ModerationResult{Decision: sdk.DecisionAllow}, nil
}

// TestSecretsKeyFileDefault: without secrets.key_file the key lives
// beside the database.
func TestSecretsKeyFileDefault(t *testing.T) {
	cfg := optionsConfig(t)
	cfg.Secrets.KeyFile = ""
	if got, want := SecretsKeyFile(cfg), filepath.Join("/etc/voxgate/data", "secrets.key"); got != want {
		t.Errorf("%s, want %s", got, want)
	}
}
