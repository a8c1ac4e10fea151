package config

import (
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
		{"unknown ruleset", strings.Replace(minimal, "  acme:\n", "  acme:\n    moderation: strict\n", 1), []string{"orgs.acme.moderation", `unknown ruleset "strict"`}},
		{"unknown provider in org", minimal + "      openai: {enabled: true}\n", []string{"orgs.acme.providers.openai", "unknown provider"}},
		{"no plugin", "providers:\n  espeak: {instances: 2}\norgs:\n  a: {}\n", []string{"line 2", "providers.espeak.plugin", "required"}},
		{"bad mode", minimal + "moderation:\n  rulesets:\n    r: {mode: maybe}\n", []string{"line 10", "moderation.rulesets.r.mode"}},
		{"bad regexp", minimal + "moderation:\n  rulesets:\n    r:\n      checks:\n        - builtin: {categories: {x: {patterns: ['(']}}}\n", []string{"patterns[0]"}},
		{"no orgs", "providers: {}\n", []string{"orgs"}},
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
