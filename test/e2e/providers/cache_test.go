package providers

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
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
	"github.com/voxgate/voxgate/test/e2e/harness"
)

func TestResponseCache(t *testing.T) {
	t.Parallel()
	oai := openai.New(t, fakeupstream.Options{})
	el := elevenlabs.New(t, fakeupstream.Options{})
	tg := harness.Start(t, harness.CacheConfig(oai, el, "cache: {driver: disk}"))
	tg.Secrets = append(tg.Secrets, openai.Key, elevenlabs.Key)
	body := map[string]any{"model": "openai/gpt-4o-mini-tts", "voice": "alloy", "text": "Cache me if you can.", "providerOptions": map[string]any{"instructions": "Calm."}}

	first := tg.Do("POST", "/v1/audio/speech", "acme", body)
	if first.Status != 200 || first.Header.Get("X-Voxgate-Cache") != "miss" {
		t.Fatalf("first: %d %q", first.Status, first.Header.Get("X-Voxgate-Cache"))
	}
	if row := tg.LastLog("acme"); row.CreditsUsed == 0 {
		t.Fatalf("a miss is billed: %+v", row)
	}
	calls := oai.Calls()
	// The same request, its options spelled differently: served from the
	// cache (the same audio; its provenance mark names its own request).
	again := `{"text":"Cache me if you can.","voice":"alloy","providerOptions":{ "instructions" :  "Calm." },"model":"openai/gpt-4o-mini-tts"}`
	var hit *harness.Response
	for range 50 { // the first answer is written in the background
		if hit = tg.Do("POST", "/v1/audio/speech", "acme", again); hit.Header.Get("X-Voxgate-Cache") == "hit" {
			break
		}
	}
	if hit.Status != 200 || hit.Header.Get("X-Voxgate-Cache") != "hit" || !bytes.Equal(harness.Unmarked(hit.Body), harness.Unmarked(first.Body)) || hit.Header.Get("Content-Type") != first.Header.Get("Content-Type") {
		t.Fatalf("hit: %d %q, %d bytes (first %d)", hit.Status, hit.Header.Get("X-Voxgate-Cache"), len(hit.Body), len(first.Body))
	}
	if oai.Calls() != calls {
		t.Errorf("a hit called the provider (%d calls)", oai.Calls()-calls)
	}
	if row := tg.LastLog("acme"); row.CreditsUsed != 0 || row.ModerationDecision != "allow" {
		t.Errorf("hit row: %d credits, moderation %q (a hit is free and still moderated)", row.CreditsUsed, row.ModerationDecision)
	}
	// Moderation still runs on a hit.
	tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "VOXGATE-MODERATION-TEST"})
	if r := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "VOXGATE-MODERATION-TEST"}); r.Status != 422 {
		t.Errorf("a blocked text: %d", r.Status)
	}
	// no-cache renders afresh.
	calls = oai.Calls()
	if r := tg.Do("POST", "/v1/audio/speech", "acme", again, "Cache-Control", "no-cache"); r.Status != 200 || r.Header.Get("X-Voxgate-Cache") != "bypass" || oai.Calls() != calls+1 {
		t.Errorf("no-cache: %d %q, %d upstream calls", r.Status, r.Header.Get("X-Voxgate-Cache"), oai.Calls()-calls)
	}
	// Another organization has its own entries.
	if r := tg.Do("POST", "/v1/audio/speech", "globex", again); r.Header.Get("X-Voxgate-Cache") != "miss" {
		t.Errorf("globex got %q from acme's entry", r.Header.Get("X-Voxgate-Cache"))
	}
	// Any change to what is spoken misses: the voice, speed, output.
	for _, change := range []map[string]any{{"voice": "echo"}, {"speed": 1.5}, {"output": map[string]any{"format": "mp3"}}, {"volumeDbfs": -20}} {
		b := map[string]any{"model": "openai/gpt-4o-mini-tts", "voice": "alloy", "text": "Cache me if you can.", "providerOptions": map[string]any{"instructions": "Calm."}}
		for k, v := range change {
			b[k] = v
		}
		if r := tg.Do("POST", "/v1/audio/speech", "acme", b); r.Status != 200 || r.Header.Get("X-Voxgate-Cache") != "miss" {
			t.Errorf("changed %v: %d %q", change, r.Status, r.Header.Get("X-Voxgate-Cache"))
		}
	}
	// A failure is never cached.
	fail := map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "failure first"}
	oai.FailNext(1, fakeupstream.Fault{Status: 400})
	tg.Do("POST", "/v1/audio/speech", "acme", fail).Problem(t, 422, "provider_rejected_request")
	if r := tg.Do("POST", "/v1/audio/speech", "acme", fail); r.Status != 200 || r.Header.Get("X-Voxgate-Cache") != "miss" {
		t.Errorf("after a failure: %d %q", r.Status, r.Header.Get("X-Voxgate-Cache"))
	}

	// Timestamps are cached with the clip.
	voice := el.VoiceIDs()[0]
	ts := map[string]any{"model": "elevenlabs", "voice": voice, "text": "Words with times."}
	firstTS := tg.Do("POST", "/v1/audio/speech/with-timestamps", "acme", ts)
	var hitTS *harness.Response
	for range 50 {
		if hitTS = tg.Do("POST", "/v1/audio/speech/with-timestamps", "acme", ts); hitTS.Header.Get("X-Voxgate-Cache") == "hit" {
			break
		}
	}
	// The same audio and timestamps; each answer's provenance mark names
	// its own request.
	envelope := func(r *harness.Response) (audio []byte, rest string) {
		var e map[string]any
		if err := json.Unmarshal(r.Body, &e); err != nil {
			t.Fatalf("with-timestamps: %v: %s", err, r.Body)
		}
		b, _ := base64.StdEncoding.DecodeString(e["audio"].(string))
		delete(e, "audio")
		j, _ := json.Marshal(e)
		return harness.Unmarked(b), string(j)
	}
	a1, r1 := envelope(firstTS)
	a2, r2 := envelope(hitTS)
	if firstTS.Status != 200 || hitTS.Header.Get("X-Voxgate-Cache") != "hit" || !bytes.Equal(a1, a2) || r1 != r2 {
		t.Errorf("with-timestamps: %d then %q, same audio %v, same rest %v", firstTS.Status, hitTS.Header.Get("X-Voxgate-Cache"), bytes.Equal(a1, a2), r1 == r2)
	}

	// Conversations cache per turn.
	conv := map[string]any{"turns": []any{
		map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "Turn one."},
		map[string]any{"model": "elevenlabs", "voice": voice, "text": "Turn two."},
	}}
	c1 := tg.Do("POST", "/v1/audio/conversation", "acme", conv)
	before := oai.Calls() + el.Calls()
	var c2 *harness.Response
	for range 50 {
		c2 = tg.Do("POST", "/v1/audio/conversation", "acme", conv)
		if oai.Calls()+el.Calls() == before {
			break
		}
		before = oai.Calls() + el.Calls()
	}
	if c1.Status != 200 || c2.Status != 200 || !bytes.Equal(harness.Unmarked(c1.Body), harness.Unmarked(c2.Body)) || oai.Calls()+el.Calls() != before {
		t.Errorf("conversation again: %d, same bytes %v, %d more upstream calls", c2.Status, bytes.Equal(harness.Unmarked(c1.Body), harness.Unmarked(c2.Body)), oai.Calls()+el.Calls()-before)
	}
	if row := tg.LastLog("acme"); row.CreditsUsed != 0 {
		t.Errorf("a conversation of cached turns was billed %d", row.CreditsUsed)
	}
}

func TestCachedStreams(t *testing.T) {
	t.Parallel()
	oai := openai.New(t, fakeupstream.Options{})
	el := elevenlabs.New(t, fakeupstream.Options{})
	tg := harness.Start(t, harness.CacheConfig(oai, el, "cache: {driver: disk}"))
	body := map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "A stream worth keeping, long enough for several chunks of audio."}

	// A stream the client left is not kept.
	oai.HoldStreams()
	req, _ := http.NewRequest("POST", tg.Base+"/v1/audio/speech/stream", bytes.NewReader(harness.MustJSON(body)))
	req.Header.Set("Authorization", "Bearer "+tg.Keys["acme"])
	req.Header.Set("Content-Type", "application/json")
	resp, err := tg.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	io.ReadFull(resp.Body, buf)
	resp.Body.Close()
	oai.ReleaseStreams()

	status, first, err := harness.ReadStreamPath(t, tg, "/v1/audio/speech/stream", body)
	if status != 200 || err != nil {
		t.Fatalf("stream: %d %v", status, err)
	}
	calls := oai.Calls()
	var again []byte
	for range 50 {
		_, again, _ = harness.ReadStreamPath(t, tg, "/v1/audio/speech/stream", body)
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
	t.Parallel()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	oai := openai.New(t, fakeupstream.Options{})
	el := elevenlabs.New(t, fakeupstream.Options{})
	tg := harness.Start(t, harness.CacheConfig(oai, el, "shared: {redis_url: redis://"+dead+"/0}\ncache: {driver: redis}"))
	body := map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "No cache today."}
	for range 2 {
		if r := tg.Do("POST", "/v1/audio/speech", "acme", body); r.Status != 200 {
			t.Fatalf("with the cache down: %d %s", r.Status, r.Body)
		}
	}
	m := string(tg.MetricsBody())
	if !strings.Contains(m, `voxgate_cache_requests_total{result="error"} 2`) {
		t.Errorf("cache errors not counted:\n%s", harness.Grep(m, "voxgate_cache"))
	}
}

// TestCacheDiskFailingIsAMiss: a disk cache that cannot write (its
// directory replaced by a file, as a full or broken disk would fail) never
// fails a request: answers come from the provider, the failed writes are
// counted.
func TestCacheDiskFailingIsAMiss(t *testing.T) {
	t.Parallel()
	oai := openai.New(t, fakeupstream.Options{})
	el := elevenlabs.New(t, fakeupstream.Options{})
	dir := filepath.Join(t.TempDir(), "cache")
	tg := harness.Start(t, harness.CacheConfig(oai, el, "cache: {driver: disk, path: "+dir+"}"))
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "A disk that cannot keep it."}
	for i := range 3 {
		if r := tg.Do("POST", "/v1/audio/speech", "acme", body); r.Status != 200 || r.Header.Get("X-Voxgate-Cache") == "hit" {
			t.Fatalf("request %d with a failing disk cache: %d %q %s", i, r.Status, r.Header.Get("X-Voxgate-Cache"), r.Body)
		}
	}
	// The counter starts at 0 (series are initialised), so wait for it to
	// move.
	harness.WaitFor(t, "the failed cache writes to be counted", func() bool {
		line := harness.Grep(string(tg.MetricsBody()), `voxgate_cache_requests_total{result="write_error"}`)
		return line != "" && !strings.HasSuffix(line, " 0")
	})
}

// TestCacheSharedForManagedCredentials: with share_managed, organizations
// share the entries of requests made with the gateway's own key.
func TestCacheSharedForManagedCredentials(t *testing.T) {
	t.Parallel()
	oai := openai.New(t, fakeupstream.Options{})
	el := elevenlabs.New(t, fakeupstream.Options{})
	tg := harness.Start(t, harness.CacheConfig(oai, el, "cache: {driver: disk, share_managed: true}"))
	body := map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "Shared between organizations."}
	if r := tg.Do("POST", "/v1/audio/speech", "acme", body); r.Status != 200 {
		t.Fatal(r.Status)
	}
	var r *harness.Response
	for range 50 {
		if r = tg.Do("POST", "/v1/audio/speech", "globex", body); r.Header.Get("X-Voxgate-Cache") == "hit" {
			break
		}
	}
	if r.Header.Get("X-Voxgate-Cache") != "hit" {
		t.Fatalf("globex: %q, want acme's entry", r.Header.Get("X-Voxgate-Cache"))
	}
	if row := tg.LastLog("globex"); row.Cache != "hit" || row.CreditsUsed != 0 {
		t.Errorf("the hit's row: cache %q, %d credits", row.Cache, row.CreditsUsed)
	}

	// Moderation runs on a hit: globex (no moderation) caches a text that
	// acme's ruleset blocks; acme asking for it is blocked, although the
	// entry it would hit is there.
	blocked := map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "VOXGATE-MODERATION-TEST"}
	for range 50 {
		if r = tg.Do("POST", "/v1/audio/speech", "globex", blocked); r.Header.Get("X-Voxgate-Cache") == "hit" {
			break
		}
	}
	if r.Status != 200 || r.Header.Get("X-Voxgate-Cache") != "hit" {
		t.Fatalf("globex's entry of the text: %d %q", r.Status, r.Header.Get("X-Voxgate-Cache"))
	}
	calls := oai.Calls()
	if r := tg.Do("POST", "/v1/audio/speech", "acme", blocked); r.Status != 422 || !strings.Contains(string(r.Body), "content_moderation_blocked") {
		t.Errorf("acme's request of a cached, blocked text: %d %s", r.Status, r.Body)
	}
	if oai.Calls() != calls {
		t.Error("the blocked request reached the provider")
	}
}
