package gateway_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/elevenlabs"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
)

// cacheConfig runs OpenAI (managed) and ElevenLabs behind a disk cache.
func cacheConfig(oai *openai.Server, el *elevenlabs.Server, cacheBlock string) string {
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

func TestResponseCache(t *testing.T) {
	oai := openai.New(t, fakeupstream.Options{})
	el := elevenlabs.New(t, fakeupstream.Options{})
	tg := startGateway(t, cacheConfig(oai, el, "cache: {driver: disk}"))
	tg.secrets = append(tg.secrets, openai.Key, elevenlabs.Key)
	body := map[string]any{"model": "openai/gpt-4o-mini-tts", "voice": "alloy", "text": "Cache me if you can.", "providerOptions": map[string]any{"instructions": "Calm."}}

	first := tg.do("POST", "/v1/audio/speech", "acme", body)
	if first.status != 200 || first.header.Get("X-Voxgate-Cache") != "miss" {
		t.Fatalf("first: %d %q", first.status, first.header.Get("X-Voxgate-Cache"))
	}
	if row := tg.lastLog("acme"); row.CreditsUsed == 0 {
		t.Fatalf("a miss is billed: %+v", row)
	}
	calls := oai.Calls()
	// The same request, its options spelled differently: served from the
	// cache.
	again := `{"text":"Cache me if you can.","voice":"alloy","providerOptions":{ "instructions" :  "Calm." },"model":"openai/gpt-4o-mini-tts"}`
	var hit *response
	for range 50 { // the first answer is written in the background
		if hit = tg.do("POST", "/v1/audio/speech", "acme", again); hit.header.Get("X-Voxgate-Cache") == "hit" {
			break
		}
	}
	if hit.status != 200 || hit.header.Get("X-Voxgate-Cache") != "hit" || !bytes.Equal(hit.body, first.body) || hit.header.Get("Content-Type") != first.header.Get("Content-Type") {
		t.Fatalf("hit: %d %q, %d bytes (first %d)", hit.status, hit.header.Get("X-Voxgate-Cache"), len(hit.body), len(first.body))
	}
	if oai.Calls() != calls {
		t.Errorf("a hit called the provider (%d calls)", oai.Calls()-calls)
	}
	if row := tg.lastLog("acme"); row.CreditsUsed != 0 || row.ModerationDecision != "allow" {
		t.Errorf("hit row: %d credits, moderation %q (a hit is free and still moderated)", row.CreditsUsed, row.ModerationDecision)
	}
	// Moderation still runs on a hit.
	tg.do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "VOXGATE-MODERATION-TEST"})
	if r := tg.do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "VOXGATE-MODERATION-TEST"}); r.status != 422 {
		t.Errorf("a blocked text: %d", r.status)
	}
	// no-cache renders afresh.
	calls = oai.Calls()
	if r := tg.do("POST", "/v1/audio/speech", "acme", again, "Cache-Control", "no-cache"); r.status != 200 || r.header.Get("X-Voxgate-Cache") != "bypass" || oai.Calls() != calls+1 {
		t.Errorf("no-cache: %d %q, %d upstream calls", r.status, r.header.Get("X-Voxgate-Cache"), oai.Calls()-calls)
	}
	// Another organization has its own entries.
	if r := tg.do("POST", "/v1/audio/speech", "globex", again); r.header.Get("X-Voxgate-Cache") != "miss" {
		t.Errorf("globex got %q from acme's entry", r.header.Get("X-Voxgate-Cache"))
	}
	// Any change to what is spoken misses: the voice, speed, output.
	for _, change := range []map[string]any{{"voice": "echo"}, {"speed": 1.5}, {"output": map[string]any{"format": "mp3"}}, {"volumeDbfs": -20}} {
		b := map[string]any{"model": "openai/gpt-4o-mini-tts", "voice": "alloy", "text": "Cache me if you can.", "providerOptions": map[string]any{"instructions": "Calm."}}
		for k, v := range change {
			b[k] = v
		}
		if r := tg.do("POST", "/v1/audio/speech", "acme", b); r.status != 200 || r.header.Get("X-Voxgate-Cache") != "miss" {
			t.Errorf("changed %v: %d %q", change, r.status, r.header.Get("X-Voxgate-Cache"))
		}
	}
	// A failure is never cached.
	fail := map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "failure first"}
	oai.FailNext(1, fakeupstream.Fault{Status: 400})
	tg.do("POST", "/v1/audio/speech", "acme", fail).problem(t, 422, "provider_rejected_request")
	if r := tg.do("POST", "/v1/audio/speech", "acme", fail); r.status != 200 || r.header.Get("X-Voxgate-Cache") != "miss" {
		t.Errorf("after a failure: %d %q", r.status, r.header.Get("X-Voxgate-Cache"))
	}

	// Timestamps are cached with the clip.
	voice := el.VoiceIDs()[0]
	ts := map[string]any{"model": "elevenlabs", "voice": voice, "text": "Words with times."}
	firstTS := tg.do("POST", "/v1/audio/speech/with-timestamps", "acme", ts)
	var hitTS *response
	for range 50 {
		if hitTS = tg.do("POST", "/v1/audio/speech/with-timestamps", "acme", ts); hitTS.header.Get("X-Voxgate-Cache") == "hit" {
			break
		}
	}
	if firstTS.status != 200 || hitTS.header.Get("X-Voxgate-Cache") != "hit" || !bytes.Equal(firstTS.body, hitTS.body) {
		t.Errorf("with-timestamps: %d then %q, same body %v", firstTS.status, hitTS.header.Get("X-Voxgate-Cache"), bytes.Equal(firstTS.body, hitTS.body))
	}

	// Conversations cache per turn.
	conv := map[string]any{"turns": []any{
		map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "Turn one."},
		map[string]any{"model": "elevenlabs", "voice": voice, "text": "Turn two."},
	}}
	c1 := tg.do("POST", "/v1/audio/conversation", "acme", conv)
	before := oai.Calls() + el.Calls()
	var c2 *response
	for range 50 {
		c2 = tg.do("POST", "/v1/audio/conversation", "acme", conv)
		if oai.Calls()+el.Calls() == before {
			break
		}
		before = oai.Calls() + el.Calls()
	}
	if c1.status != 200 || c2.status != 200 || !bytes.Equal(c1.body, c2.body) || oai.Calls()+el.Calls() != before {
		t.Errorf("conversation again: %d, same bytes %v, %d more upstream calls", c2.status, bytes.Equal(c1.body, c2.body), oai.Calls()+el.Calls()-before)
	}
	if row := tg.lastLog("acme"); row.CreditsUsed != 0 {
		t.Errorf("a conversation of cached turns was billed %d", row.CreditsUsed)
	}
}

func TestCachedStreams(t *testing.T) {
	oai := openai.New(t, fakeupstream.Options{})
	el := elevenlabs.New(t, fakeupstream.Options{})
	tg := startGateway(t, cacheConfig(oai, el, "cache: {driver: disk}"))
	body := map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "A stream worth keeping, long enough for several chunks of audio."}

	// A stream the client left is not kept.
	oai.HoldStreams()
	req, _ := http.NewRequest("POST", tg.base+"/v1/audio/speech/stream", bytes.NewReader(mustJSON(body)))
	req.Header.Set("Authorization", "Bearer "+tg.keys["acme"])
	req.Header.Set("Content-Type", "application/json")
	resp, err := tg.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	io.ReadFull(resp.Body, buf)
	resp.Body.Close()
	oai.ReleaseStreams()

	status, first, err := readStreamPath(t, tg, "/v1/audio/speech/stream", body)
	if status != 200 || err != nil {
		t.Fatalf("stream: %d %v", status, err)
	}
	calls := oai.Calls()
	var again []byte
	for range 50 {
		_, again, _ = readStreamPath(t, tg, "/v1/audio/speech/stream", body)
		if oai.Calls() == calls {
			break
		}
		calls = oai.Calls()
	}
	if !bytes.Equal(first, again) || oai.Calls() != calls {
		t.Errorf("the replayed stream: same bytes %v (%d vs %d), %d more upstream calls", bytes.Equal(first, again), len(again), len(first), oai.Calls()-calls)
	}
}

// TestCacheBackendDownIsAMiss: a cache that cannot be reached never fails
// a request; it is counted.
func TestCacheBackendDownIsAMiss(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	oai := openai.New(t, fakeupstream.Options{})
	el := elevenlabs.New(t, fakeupstream.Options{})
	tg := startGateway(t, cacheConfig(oai, el, "shared: {redis_url: redis://"+dead+"/0}\ncache: {driver: redis}"))
	body := map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "No cache today."}
	for range 2 {
		if r := tg.do("POST", "/v1/audio/speech", "acme", body); r.status != 200 {
			t.Fatalf("with the cache down: %d %s", r.status, r.body)
		}
	}
	m := string(tg.metricsBody())
	if !strings.Contains(m, `voxgate_cache_requests_total{result="error"} 2`) {
		t.Errorf("cache errors not counted:\n%s", grep(m, "voxgate_cache"))
	}
}

// TestCacheDiskFailingIsAMiss: a disk cache that cannot write (its
// directory replaced by a file, as a full or broken disk would fail) never
// fails a request: answers come from the provider, the failed writes are
// counted.
func TestCacheDiskFailingIsAMiss(t *testing.T) {
	oai := openai.New(t, fakeupstream.Options{})
	el := elevenlabs.New(t, fakeupstream.Options{})
	dir := filepath.Join(t.TempDir(), "cache")
	tg := startGateway(t, cacheConfig(oai, el, "cache: {driver: disk, path: "+dir+"}"))
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "A disk that cannot keep it."}
	for i := range 3 {
		if r := tg.do("POST", "/v1/audio/speech", "acme", body); r.status != 200 || r.header.Get("X-Voxgate-Cache") == "hit" {
			t.Fatalf("request %d with a failing disk cache: %d %q %s", i, r.status, r.header.Get("X-Voxgate-Cache"), r.body)
		}
	}
	// The counter starts at 0 (series are initialised), so wait for it to
	// move.
	waitFor(t, "the failed cache writes to be counted", func() bool {
		line := grep(string(tg.metricsBody()), `voxgate_cache_requests_total{result="write_error"}`)
		return line != "" && !strings.HasSuffix(line, " 0")
	})
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestCacheSharedForManagedCredentials: with share_managed, organizations
// share the entries of requests made with the gateway's own key.
func TestCacheSharedForManagedCredentials(t *testing.T) {
	oai := openai.New(t, fakeupstream.Options{})
	el := elevenlabs.New(t, fakeupstream.Options{})
	tg := startGateway(t, cacheConfig(oai, el, "cache: {driver: disk, share_managed: true}"))
	body := map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "Shared between organizations."}
	if r := tg.do("POST", "/v1/audio/speech", "acme", body); r.status != 200 {
		t.Fatal(r.status)
	}
	var r *response
	for range 50 {
		if r = tg.do("POST", "/v1/audio/speech", "globex", body); r.header.Get("X-Voxgate-Cache") == "hit" {
			break
		}
	}
	if r.header.Get("X-Voxgate-Cache") != "hit" {
		t.Fatalf("globex: %q, want acme's entry", r.header.Get("X-Voxgate-Cache"))
	}
	if row := tg.lastLog("globex"); row.Cache != "hit" || row.CreditsUsed != 0 {
		t.Errorf("the hit's row: cache %q, %d credits", row.Cache, row.CreditsUsed)
	}

	// Moderation runs on a hit: globex (no moderation) caches a text that
	// acme's ruleset blocks; acme asking for it is blocked, although the
	// entry it would hit is there.
	blocked := map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "VOXGATE-MODERATION-TEST"}
	for range 50 {
		if r = tg.do("POST", "/v1/audio/speech", "globex", blocked); r.header.Get("X-Voxgate-Cache") == "hit" {
			break
		}
	}
	if r.status != 200 || r.header.Get("X-Voxgate-Cache") != "hit" {
		t.Fatalf("globex's entry of the text: %d %q", r.status, r.header.Get("X-Voxgate-Cache"))
	}
	calls := oai.Calls()
	if r := tg.do("POST", "/v1/audio/speech", "acme", blocked); r.status != 422 || !strings.Contains(string(r.body), "content_moderation_blocked") {
		t.Errorf("acme's request of a cached, blocked text: %d %s", r.status, r.body)
	}
	if oai.Calls() != calls {
		t.Error("the blocked request reached the provider")
	}
}
