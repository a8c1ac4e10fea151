package harness

import (
	"context"
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/elevenlabs"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
)

// CacheConfig runs OpenAI (managed) and ElevenLabs behind a disk cache.
func CacheConfig(oai *openai.Server, el *elevenlabs.Server, cacheBlock string) string {
	return `
server:
  listen: 127.0.0.1:0
storage:
  path: %DIR%/voxgate.db
  log_batch_size: 8
plugins:
  dir: %BIN%/plugins
` + cacheBlock + `
providers:
  openai:
    plugin: voxgate-openai
    base_url: ` + oai.BaseURL() + `
    api_key: ` + openai.Key + `
    managed: true
    credits_per_1k_chars: 1000
  elevenlabs:
    plugin: voxgate-elevenlabs
    base_url: ` + el.BaseURL() + `
    api_key: ` + elevenlabs.Key + `
    managed: true
moderation:
  rulesets:
    standard: {mode: fail_closed, checks: [{builtin: {}}]}
orgs:
  acme:
    moderation: standard
    providers:
      openai: {enabled: true}
      elevenlabs: {enabled: true}
  globex:
    providers:
      openai: {enabled: true}
`
}

// The org keys of the BYOK cases; never in a log, never in the database in
// plain text.
const (
	GlobexOpenAIKey = "sk-globex-byok-key-0000000000000000"
	AcmeElevenKey   = "xi-acme-byok-key-1111111111111111"
)

// Cloud is a gateway whose OpenAI and ElevenLabs plugins talk to fakes
// of those providers' APIs.
type Cloud struct {
	*Gateway
	OpenAI     *openai.Server
	ElevenLabs *elevenlabs.Server
}

// StartCloud runs the gateway with the real OpenAI and ElevenLabs plugin
// processes pointed at fakes that follow those providers' wire formats.
func StartCloud(t *testing.T) *Cloud { return StartCloudWith(t, "") }

// StartCloudWith is StartCloud with extra lines (indented by four spaces)
// in the openai provider's block.
func StartCloudWith(t *testing.T, openaiExtra string) *Cloud {
	oai := openai.New(t, fakeupstream.Options{Keys: []string{openai.Key, GlobexOpenAIKey}})
	el := elevenlabs.New(t, fakeupstream.Options{Keys: []string{AcmeElevenKey}})
	cfg := `
server:
  listen: 127.0.0.1:0
storage:
  path: %DIR%/voxgate.db
plugins:
  dir: %BIN%/plugins
providers:
  espeak: {plugin: voxgate-espeak, managed: true}
  openai:
    plugin: voxgate-openai
    base_url: ` + oai.BaseURL() + `
    api_key: ` + openai.Key + `
    managed: true
    timeout: 1s
    credits_per_1k_chars: 15
` + openaiExtra + `  elevenlabs:
    plugin: voxgate-elevenlabs
    base_url: ` + el.BaseURL() + `
    timeout: 5s
orgs:
  acme:
    providers:
      espeak: {enabled: true}
      openai: {enabled: true}
      elevenlabs: {enabled: true, byok: true}
  globex:
    providers:
      openai: {enabled: true, byok: true, api_key: ` + GlobexOpenAIKey + `}
  initech:
    providers:
      elevenlabs: {enabled: true, byok: true}
`
	tg := Start(t, cfg)
	tg.Secrets = append(tg.Secrets, openai.Key, GlobexOpenAIKey, AcmeElevenKey)
	if err := tg.Core.SetSecret(context.Background(), "acme", "elevenlabs", AcmeElevenKey); err != nil {
		t.Fatal(err)
	}
	return &Cloud{Gateway: tg, OpenAI: oai, ElevenLabs: el}
}

// Redact cuts a secret to its first 12 characters, for messages.
func Redact(s string) string {
	if len(s) > 12 {
		return s[:12] + "…"
	}
	return s
}
