package providers

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

const (
	poolKeyA = "sk-pool-key-a-000000000000000000"
	poolKeyB = "sk-pool-key-b-111111111111111111"
	poolKeyC = "sk-pool-key-c-222222222222222222" // unknown to the fake
)

func poolConfig(oai *openai.Server, keys string) string {
	return `
server:
  listen: 127.0.0.1:0
storage:
  path: %DIR%/voxgate.db
plugins:
  dir: %BIN%/plugins
providers:
  openai:
    plugin: voxgate-openai
    base_url: ` + oai.BaseURL() + `
    managed: true
    queue_wait: 300ms
    api_keys:
` + keys + `orgs:
  acme:
    providers:
      openai: {enabled: true}
`
}

func TestKeyPool(t *testing.T) {
	t.Parallel()
	oai := openai.New(t, fakeupstream.Options{Keys: []string{poolKeyA, poolKeyB}})
	tg := harness.Start(t, poolConfig(oai, `      - {name: refused, key: `+poolKeyC+`, weight: 100}
      - {name: a, key: `+poolKeyA+`}
      - {name: b, key: `+poolKeyB+`}
`))
	tg.Secrets = append(tg.Secrets, poolKeyA, poolKeyB, poolKeyC)
	body := map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "Spread over keys."}
	usedKey := func() string {
		last, _ := oai.LastRequest()
		return strings.TrimPrefix(last.Header.Get("Authorization"), "Bearer ")
	}

	// The refused key (most weight) is rested on its first 401, and the
	// call moves on to a key that works. The pool picks by weight, so the
	// refused key is almost always the first one tried, but not always:
	// call until it has been (each call answered all the same).
	var ready *harness.Response
	for i := 0; i < 20; i++ {
		if r := tg.Do("POST", "/v1/audio/speech", "acme", body); r.Status != 200 {
			t.Fatalf("with a refused key in the pool: %d %s", r.Status, r.Body)
		}
		if k := usedKey(); k != poolKeyA && k != poolKeyB {
			t.Fatalf("served with %q", harness.Redact(k))
		}
		if ready = tg.Do("GET", "/readyz", "", nil); strings.Contains(string(ready.Body), `"refused":"resting until`) {
			break
		}
	}
	if !strings.Contains(string(ready.Body), `"refused":"resting until`) || strings.Contains(string(ready.Body), "sk-pool") {
		t.Errorf("readyz: %s", ready.Body)
	}
	if m := string(tg.MetricsBody()); !strings.Contains(m, `voxgate_provider_key_resting{key="refused",provider="openai"} 1`) {
		t.Errorf("metrics:\n%s", harness.Grep(m, "key_resting"))
	}

	// A 429 on one key moves the call to the other.
	first := usedKey()
	oai.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "30"})
	if r := tg.Do("POST", "/v1/audio/speech", "acme", body); r.Status != 200 {
		t.Fatalf("after a 429: %d %s", r.Status, r.Body)
	}
	second := usedKey()
	for range 10 { // the throttled key rests: every call now uses the other
		if r := tg.Do("POST", "/v1/audio/speech", "acme", body); r.Status != 200 || usedKey() != second {
			t.Fatalf("a throttled key was used again (%d)", r.Status)
		}
	}
	_ = first
}

func TestKeyPoolConcurrency(t *testing.T) {
	t.Parallel()
	oai := openai.New(t, fakeupstream.Options{Keys: []string{poolKeyA}})
	tg := harness.Start(t, poolConfig(oai, `      - {name: a, key: `+poolKeyA+`, max_concurrency: 1}
`))
	body := map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "One at a time on this account, please."}
	// A stream holds the key's one slot while the provider holds it.
	oai.HoldStreams()
	req, _ := http.NewRequest("POST", tg.Base+"/v1/audio/speech/stream", bytes.NewReader(harness.MustJSON(body)))
	req.Header.Set("Authorization", "Bearer "+tg.Keys["acme"])
	req.Header.Set("Content-Type", "application/json")
	resp, err := tg.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadFull(resp.Body, make([]byte, 1))
	start := time.Now()
	r := tg.Do("POST", "/v1/audio/speech", "acme", body)
	p := r.Problem(t, 429, "rate_limited")
	if time.Since(start) < 250*time.Millisecond || r.Header.Get("Retry-After") == "" || !strings.Contains(p.Detail, "concurrency") {
		t.Errorf("a second call waited %s, Retry-After %q, detail %q", time.Since(start), r.Header.Get("Retry-After"), p.Detail)
	}
	oai.ReleaseStreams()
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	// The slot is free again once the stream ended.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if r := tg.Do("POST", "/v1/audio/speech", "acme", body); r.Status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the stream's slot never came back")
		}
	}
}
