package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

const minimal = `
providers:
  espeak: {plugin: voxgate-espeak}
orgs:
  acme:
    providers:
      espeak: {enabled: true}
`

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestParseErrorsNameKeyAndLine(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"unknown top key", "serverr:\n  listen: x:1\n" + minimal, []string{"line 1", `"serverr"`}},
		{"unknown nested key", "server:\n  listen: 127.0.0.1:1\n  max_bodybytes: 5\n" + minimal, []string{"line 3", `"server.max_bodybytes"`}},
		{"unknown org key", minimal + "    colour: red\n", []string{"line 8", `"orgs.acme.colour"`}},
		{"bad duration", "server:\n  read_timeout: soon\n" + minimal, []string{"line 2", "not a duration"}},
		{"wrong type", "server:\n  max_body_bytes: lots\n" + minimal, []string{"line 2", "max_body_bytes", "lots"}},
		{"bad listen", "server:\n  listen: nowhere\n" + minimal, []string{"line 2", "server.listen"}},
		{"body memory under a body", "server:\n  max_body_bytes: 20000000\n  max_body_memory: 1000000\n" + minimal, []string{"line 3", "server.max_body_memory", "20000000", "1000000"}},
		{"body memory per org over all", "server:\n  max_body_memory: 20000000\nlimits:\n  body_memory_per_org: 30000000\n" + minimal, []string{"limits.body_memory_per_org", "20000000", "30000000"}},
		{"body memory per org under a body", "limits:\n  body_memory_per_org: 1000000\n" + minimal, []string{"limits.body_memory_per_org", "10551296", "1000000"}},
		{"body memory under an upload", "server:\n  max_body_memory: 10485760\n" + minimal, []string{"server.max_body_memory", "10551296"}},
		{"listen port out of range", "server:\n  listen: 127.0.0.1:99999\n" + minimal, []string{"line 2", "server.listen", "0 to 65535"}},
		{"listen port not a number", "server:\n  listen: 127.0.0.1:http\n" + minimal, []string{"line 2", "server.listen"}},
		{"unknown ruleset", strings.Replace(minimal, "  acme:\n", "  acme:\n    moderation: strict\n", 1), []string{"orgs.acme.moderation", `unknown ruleset "strict"`}},
		{"unknown provider in org", minimal + "      openai: {enabled: true}\n", []string{"orgs.acme.providers.openai", "unknown provider"}},
		{"bad consent setting", strings.Replace(minimal, "  acme:\n", "  acme:\n    provenance: {consent: sometimes}\n", 1), []string{"orgs.acme.provenance.consent", `"sometimes"`}},
		{"provenance key twice", "provenance:\n  key_env: K\n  key_file: k.key\n" + minimal, []string{"provenance.key_file", "not both"}},
		{"no plugin", "providers:\n  espeak: {instances: 2}\norgs:\n  a: {}\n", []string{"line 2", "providers.espeak.plugin", "required"}},
		{"bad mode", minimal + "moderation:\n  rulesets:\n    r: {mode: maybe}\n", []string{"line 10", "moderation.rulesets.r.mode"}},
		{"bad regexp", minimal + "moderation:\n  rulesets:\n    r:\n      checks:\n        - builtin: {categories: {x: {patterns: ['(']}}}\n", []string{"patterns[0]"}},
		{"no orgs", "providers: {}\n", []string{"orgs"}},
		{"tracing protocol", minimal + "tracing:\n  endpoint: http://127.0.0.1:4318\n  protocol: zipkin\n", []string{"tracing.protocol", "zipkin"}},
		{"tracing endpoint", minimal + "tracing:\n  endpoint: collector:4318\n", []string{"tracing.endpoint"}},
		{"tracing sample ratio", minimal + "tracing:\n  endpoint: http://x:4318\n  sample_ratio: 2\n", []string{"tracing.sample_ratio"}},
		{"metrics token too short", minimal + "metrics:\n  token: abc\n", []string{"metrics.token", "16"}},
		{"metrics listen", minimal + "metrics:\n  listen: 127.0.0.1:70000\n", []string{"metrics.listen", "65535"}},
		{"cors origin with path", minimal + "cors:\n  allowed_origins: [\"https://app.example.com/ui\"]\n", []string{"line 9", "cors.allowed_origins[0]", "no path"}},
		{"cors origin no scheme", minimal + "cors:\n  allowed_origins: [app.example.com]\n", []string{"cors.allowed_origins[0]", "http://"}},
		{"cors max age", minimal + "cors:\n  max_age: 48h\n", []string{"cors.max_age"}},
		{"alias unknown provider", minimal + "aliases:\n  models:\n    tts-1: openai/tts-1\n", []string{"line 10", "aliases.models.tts-1", "no provider"}},
		{"voice alias empty", minimal + "aliases:\n  voices:\n    alloy: {model: espeak}\n", []string{"aliases.voices.alloy", "give voice"}},
		{"voice alias both", strings.Replace(minimal, "  acme:\n", "  acme:\n    aliases: {voices: {alloy: {voice: en, saved_voice: 0b0c5d4e-1f2a-4b3c-8d9e-0f1a2b3c4d5e}}}\n", 1), []string{"orgs.acme.aliases.voices.alloy", "not both"}},
		{"saved voice alias at top", minimal + "aliases:\n  voices:\n    alloy: {saved_voice: 0b0c5d4e-1f2a-4b3c-8d9e-0f1a2b3c4d5e}\n", []string{"aliases.voices.alloy.saved_voice", "one organization"}},
		{"saved voice not uuid", strings.Replace(minimal, "  acme:\n", "  acme:\n    aliases: {voices: {alloy: {saved_voice: nope}}}\n", 1), []string{"orgs.acme.aliases.voices.alloy.saved_voice", "uuid"}},
		{"voice alias unknown model", minimal + "aliases:\n  voices:\n    alloy: {model: nope/x, voice: en}\n", []string{"aliases.voices.alloy.model", "no provider"}},
		{"bad alignment method", minimal + "alignment: {method: guess}\n", []string{"alignment.method", "aligned, stt or off"}},
		{"unknown reference", minimal + "alignment: {reference: festival}\n", []string{"alignment.reference", `unknown provider "festival"`}},
		{"stt without provider", minimal + "alignment: {method: stt}\n", []string{"alignment.stt.provider", "required"}},
		{"bad provider timestamps", strings.Replace(minimal, "plugin: voxgate-espeak", "plugin: voxgate-espeak, timestamps: maybe", 1), []string{"providers.espeak.timestamps"}},
		{"text ceiling too high", minimal + "limits: {max_text_chars: 5000000}\n", []string{"limits.max_text_chars"}},
		{"bad yaml", "server: [\n", []string{"line"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), env(nil))
			if err == nil {
				t.Fatal("Parse succeeded, want error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestEveryMistakeInOneRun: an operator fixing a config sees all of its
// mistakes at once, in file order, not one per run.
func TestEveryMistakeInOneRun(t *testing.T) {
	y := `server:
  listen: 127.0.0.1:99999
  colour: red
  read_timeout: soon
  max_body_bytes: lots
storage:
  log_retain_days: 0
  frobnicate: true
providers:
  espeak: {plugin: voxgate-espeak, instances: 0, timeout: later, base_url: x}
orgs:
  acme:
    moderation: strict
    providers:
      openai: {enabled: true}
`
	_, err := Parse([]byte(y), env(nil))
	var es *Errors
	if !errors.As(err, &es) {
		t.Fatalf("err = %v, want *Errors", err)
	}
	want := []string{
		`line 2: server.listen`,
		`line 3: unknown key "server.colour"`,
		`line 4: server.read_timeout: "soon" is not a duration`,
		`line 5: server.max_body_bytes`,
		`unknown key "storage.frobnicate"`,
		`line 10: "later" is not a duration`,
		`orgs.acme.moderation: unknown ruleset "strict"`,
		`orgs.acme.providers.openai: unknown provider`,
	}
	msg := err.Error()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("the error does not mention %q:\n%s", w, msg)
		}
	}
	if len(es.Errs) < len(want) {
		t.Errorf("%d mistakes reported, want at least %d:\n%s", len(es.Errs), len(want), msg)
	}
	// In file order: each line number is at least the one before.
	last := 0
	for _, e := range es.Errs {
		var n int
		if _, err := fmt.Sscanf(e.Error(), "line %d:", &n); err == nil {
			if n < last {
				t.Errorf("mistakes out of order:\n%s", msg)
			}
			last = n
		}
	}
}

// TestUnsetVariablesWarn: ${VAR} of an unset variable is allowed (a
// provider may be configured but unused) but named in a warning, with its
// line and key; a default or a set variable gives none.
func TestUnsetVariablesWarn(t *testing.T) {
	y := `
providers:
  openai:
    plugin: voxgate-openai
    api_key: ${OPENAI_API_KEY}
    base_url: ${OPENAI_URL:-https://example.invalid/v1}
    project: ${SET_ONE}
orgs:
  acme:
    providers:
      openai: {enabled: true, byok: true, api_key: "${ACME_KEY}"}
`
	cfg, err := Parse([]byte(y), env(map[string]string{"SET_ONE": "p"}))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"line 5: providers.openai.api_key: ${OPENAI_API_KEY} is not set",
		"line 11: orgs.acme.providers.openai.api_key: ${ACME_KEY} is not set",
	}
	if strings.Join(cfg.Warnings, "\n") != strings.Join([]string{want[0] + ", so the value is empty", want[1] + ", so the value is empty"}, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(cfg.Warnings, "\n"), strings.Join(want, "\n"))
	}
}

func TestEnvExpansionAndSettings(t *testing.T) {
	y := `
providers:
  openai:
    plugin: voxgate-openai
    base_url: ${OPENAI_URL:-https://example.invalid/v1}
    api_key: ${OPENAI_API_KEY}
    timeout: 60s
    voice_cache: "on"
orgs:
  acme:
    providers:
      openai: {enabled: true, byok: true, api_key: "${ACME_KEY}"}
`
	cfg, err := Parse([]byte(y), env(map[string]string{"OPENAI_API_KEY": "sk-secret: {not yaml}", "ACME_KEY": "acme-key"}))
	if err != nil {
		t.Fatal(err)
	}
	p := cfg.Providers["openai"]
	if p.APIKey.Value() != "sk-secret: {not yaml}" {
		t.Errorf("api_key = %q", p.APIKey.Value())
	}
	if p.Settings["base_url"] != "https://example.invalid/v1" || p.Settings["voice_cache"] != "on" {
		t.Errorf("settings = %v", p.Settings)
	}
	if _, ok := p.Settings["api_key"]; ok {
		t.Error("api_key leaked into plugin settings")
	}
	if p.Timeout.D().Seconds() != 60 || p.Instances != 1 {
		t.Errorf("timeout %v instances %d", p.Timeout.D(), p.Instances)
	}
	if got := cfg.Orgs["acme"].Providers["openai"].APIKey.Value(); got != "acme-key" {
		t.Errorf("org key = %q", got)
	}
	if s := p.APIKey.String(); strings.Contains(s, "sk-") {
		t.Errorf("Secret.String leaks: %q", s)
	}
}

func TestCommittedGatewayYAMLLoads(t *testing.T) {
	cfg, err := Load("../gateway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Providers["espeak"] == nil || cfg.Orgs["default"] == nil || !cfg.Orgs["default"].DevKey {
		t.Fatalf("default deployment incomplete: %+v", cfg)
	}
	if cfg.Resolve(cfg.Storage.Path) != "../data/voxgate.db" {
		t.Errorf("storage path not resolved against the config dir: %s", cfg.Resolve(cfg.Storage.Path))
	}
}

func TestAliasesAndCORS(t *testing.T) {
	y := minimal + `
aliases:
  models: {tts-1: espeak/espeak-ng, fast: espeak}
  voices:
    alloy: {model: tts-1, voice: en-us}
    nova: {voice: en-gb}
cors:
  allowed_origins: ["http://localhost:3000", "*"]
`
	y = strings.Replace(y, "  acme:\n", "  acme:\n    aliases: {voices: {alloy: {saved_voice: 0b0c5d4e-1f2a-4b3c-8d9e-0f1a2b3c4d5e}}}\n", 1)
	cfg, err := Parse([]byte(y), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Aliases.Models["tts-1"] != "espeak/espeak-ng" || cfg.Aliases.Voices["alloy"].Voice != "en-us" {
		t.Errorf("aliases %+v", cfg.Aliases)
	}
	if cfg.Orgs["acme"].Aliases.Voices["alloy"].SavedVoice == "" {
		t.Errorf("org aliases %+v", cfg.Orgs["acme"].Aliases)
	}
	if len(cfg.CORS.AllowedOrigins) != 2 || cfg.CORS.MaxAge.D().Minutes() != 10 {
		t.Errorf("cors %+v", cfg.CORS)
	}
}

func TestAlignmentAndLimitDefaults(t *testing.T) {
	cfg, err := Parse([]byte(minimal), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Alignment
	if a.Method != TimestampsAligned || a.Reference != "espeak" || a.STT.Model != "whisper-1" || a.Concurrency < 1 {
		t.Errorf("alignment defaults %+v", a)
	}
	if cfg.Limits.MaxTextChars != 100000 || cfg.Limits.PieceConcurrency != 3 || cfg.Providers["espeak"].Timestamps != TimestampsAuto {
		t.Errorf("limits %+v, timestamps %q", cfg.Limits, cfg.Providers["espeak"].Timestamps)
	}
	// Without an espeak provider there is no reference unless named.
	cfg, err = Parse([]byte("providers:\n  openai: {plugin: voxgate-openai}\norgs:\n  a: {}\n"), env(nil))
	if err != nil || cfg.Alignment.Reference != "" {
		t.Errorf("reference %q, %v", cfg.Alignment.Reference, err)
	}
}

// TestEmptyBlocks: a block left empty (`espeak:` with nothing under it)
// is a mistake named like any other, not a crash while defaults are
// filled in.
func TestEmptyBlocks(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"provider", "providers:\n  espeak:\norgs:\n  acme: {}\n", "line 2: providers.espeak: empty provider block"},
		{"moderation plugin", minimal + "moderation:\n  plugins:\n    p:\n", "line 10: moderation.plugins.p.plugin: required"},
		{"ruleset", minimal + "moderation:\n  rulesets:\n    r:\n", "line 10: moderation.rulesets.r: empty ruleset"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), env(nil))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestTracingProtocolDefault: a config that names no tracing protocol
// says the one the exporter uses, not "".
func TestTracingProtocolDefault(t *testing.T) {
	cfg, err := Parse([]byte("tracing:\n  endpoint: http://127.0.0.1:4318\norgs:\n  acme: {}\n"), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Tracing.Protocol != "http/protobuf" {
		t.Errorf("protocol %q, want http/protobuf", cfg.Tracing.Protocol)
	}
}
