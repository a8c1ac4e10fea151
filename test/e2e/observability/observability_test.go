package observability

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/elevenlabs"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestStreamObservedToItsEnd: a stream's latency histogram, access-log
// duration and size cover the whole stream, not the time to its headers;
// the in-flight gauge counts it until its last byte; and its time to first
// audio is recorded per provider and model.
func TestStreamObservedToItsEnd(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.SpeechConfig)
	const pause = 150 * time.Millisecond
	words := "one two three four five"
	body := harness.MustJSON(map[string]any{"model": "testkit/test", "voice": "alpha", "text": words,
		"providerOptions": map[string]any{"slow_stream_ms": pause.Milliseconds()}})
	req, _ := http.NewRequest("POST", tg.Base+"/v1/audio/speech/stream", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tg.Keys["acme"])
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := tg.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 1)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatal(err)
	}
	during := tg.Scrape()
	rest, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("stream: %d %v", resp.StatusCode, err)
	}
	elapsed := time.Since(start)
	sent := len(rest) + 1
	// (The scrape goes through the admin socket, not the edge.)
	if v := harness.MustSample(t, during, "voxgate_http_requests_in_flight"); v != 1 {
		t.Errorf("in flight during the stream = %v, want 1", v)
	}
	minimum := 4 * pause // four pauses between five words
	// The row is recorded and the request observed just before the last
	// chunk goes out; wait for it rather than race it.
	var after []harness.Sample
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		after = tg.Scrape()
		if n, _ := harness.SampleValue(after, "voxgate_http_request_duration_seconds_count", "route", "speech.stream"); n == 1 || time.Now().After(deadline) {
			break
		}
	}
	if v := harness.MustSample(t, after, "voxgate_http_requests_in_flight"); v != 0 {
		t.Errorf("in flight after the stream = %v, want 0", v)
	}
	if n := harness.MustSample(t, after, "voxgate_http_request_duration_seconds_count", "route", "speech.stream"); n != 1 {
		t.Fatalf("stream latency observations = %v, want 1", n)
	}
	sum := harness.MustSample(t, after, "voxgate_http_request_duration_seconds_sum", "route", "speech.stream")
	if sum < minimum.Seconds() || sum > elapsed.Seconds()+0.5 {
		t.Errorf("stream latency %.3fs; the stream took %.3fs (at least %.3fs): the histogram must cover the whole stream", sum, elapsed.Seconds(), minimum.Seconds())
	}
	if n := harness.MustSample(t, after, "voxgate_http_requests_total", "route", "speech.stream", "status", "200"); n != 1 {
		t.Errorf("stream requests = %v, want 1", n)
	}
	ttfa := harness.MustSample(t, after, "voxgate_time_to_first_audio_seconds_sum", "provider", "testkit", "model", "test", "cache", "miss")
	if n := harness.MustSample(t, after, "voxgate_time_to_first_audio_seconds_count", "provider", "testkit", "model", "test", "cache", "miss"); n != 1 || ttfa <= 0 || ttfa >= sum-pause.Seconds() {
		t.Errorf("time to first audio: %v observations, %.3fs (stream %.3fs): want one, well under the whole stream", n, ttfa, sum)
	}
	var line map[string]any
	for _, e := range tg.Logs.FilterMessage("request").All() {
		if m := e.ContextMap(); m["path"] == "/v1/audio/speech/stream" {
			line = m
		}
	}
	if line == nil {
		t.Fatal("no access log line for the stream")
	}
	if d, _ := line["duration"].(time.Duration); d < minimum {
		t.Errorf("access log duration %v, want at least %v: the whole stream", d, minimum)
	}
	if b, _ := line["bytes"].(int64); b != int64(sent) {
		t.Errorf("access log bytes %v, want %d sent", line["bytes"], sent)
	}
	if line["status"] != int64(200) || line["stream_error"] != nil {
		t.Errorf("access log %v", line)
	}
	// What the edge learned on the way (its access record): the request
	// id it answered with and the organization of the key.
	if line["request_id"] != resp.Header.Get("X-Request-Id") || line["org"] != "acme" {
		t.Errorf("access log request_id %v (answered %q), org %v (want acme)", line["request_id"], resp.Header.Get("X-Request-Id"), line["org"])
	}
}

// TestMetricsStartAtZero: a dashboard shows zeros, not "no data", before
// the first request: every route, provider model, plugin and the build
// have their series from the start, and provider calls carry the model.
func TestMetricsStartAtZero(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.SpeechConfig)
	m := tg.Scrape()
	if v := harness.MustSample(t, m, "voxgate_build_info", "version", "dev"); v != 1 {
		t.Errorf("build info = %v", v)
	}
	if _, ok := harness.SampleValue(m, "voxgate_build_info", "goversion", ""); ok {
		t.Error("build info lacks the Go version")
	}
	for _, route := range []string{"speech", "speech.stream", "speech.timestamps", "conversation", "voices.list", "logs.list"} {
		if v := harness.MustSample(t, m, "voxgate_http_requests_total", "route", route, "status", "200"); v != 0 {
			t.Errorf("%s requests = %v before any", route, v)
		}
		harness.MustSample(t, m, "voxgate_http_request_duration_seconds_count", "route", route)
	}
	for _, pm := range [][2]string{{"espeak", "espeak-ng"}, {"testkit", "test"}} {
		harness.MustSample(t, m, "voxgate_provider_calls_total", "provider", pm[0], "model", pm[1], "op", "synthesize", "outcome", "ok")
		harness.MustSample(t, m, "voxgate_provider_call_duration_seconds_count", "provider", pm[0], "model", pm[1], "op", "stream")
		harness.MustSample(t, m, "voxgate_time_to_first_audio_seconds_count", "provider", pm[0], "model", pm[1])
	}
	for _, p := range []string{"espeak", "testkit"} {
		if up, want := harness.MustSample(t, m, "voxgate_plugin_instances_up", "plugin", p), harness.MustSample(t, m, "voxgate_plugin_instances", "plugin", p); up != 1 || want != 1 {
			t.Errorf("%s: %v of %v instances up, want 1 of 1", p, up, want)
		}
		harness.MustSample(t, m, "voxgate_plugin_restarts_total", "plugin", p)
	}

	if r := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "Counted."}); r.Status != 200 {
		t.Fatalf("speech: %d %s", r.Status, r.Body)
	}
	m = tg.Scrape()
	if v := harness.MustSample(t, m, "voxgate_provider_calls_total", "provider", "testkit", "model", "test", "op", "synthesize", "outcome", "ok"); v != 1 {
		t.Errorf("testkit/test synthesize calls = %v, want 1", v)
	}
}

// TestUpstreamRetriesCounted: a planned request the gateway retries (the
// provider answered 503 once) is counted by provider and reason.
func TestUpstreamRetriesCounted(t *testing.T) {
	t.Parallel()
	c := harness.StartCloud(t)
	m := c.Scrape()
	for _, reason := range []string{"429", "503", "transport"} {
		if v := harness.MustSample(t, m, "voxgate_upstream_retries_total", "provider", "openai", "reason", reason); v != 0 {
			t.Errorf("retries before any request: %s = %v", reason, v)
		}
	}
	c.OpenAI.Reset()
	c.OpenAI.FailNext(1, fakeupstream.Fault{Status: 503})
	r := c.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "Retried once."})
	if r.Status != 200 {
		t.Fatalf("speech after one 503: %d %s", r.Status, r.Body)
	}
	if calls := c.OpenAI.Calls(); calls != 2 {
		t.Fatalf("the fake saw %d calls, want 2 (a 503, then the retry)", calls)
	}
	if v := harness.MustSample(t, c.Scrape(), "voxgate_upstream_retries_total", "provider", "openai", "reason", "503"); v != 1 {
		t.Errorf("retries of 503 = %v, want 1", v)
	}
}

// TestMetricsExposure: /metrics is never open on the public listener by
// default; a token puts it there behind the token; metrics.listen moves it
// to a listener of its own; the admin socket always has it.
func TestMetricsExposure(t *testing.T) {
	t.Parallel()
	const token = "metrics-token-0123456789"
	tests := []struct {
		name, extra string
		// public is the status of an unauthenticated GET /metrics on the
		// public listener; withToken the same with the token.
		public, withToken int
		// own is whether a metrics listener runs, and ownOpen whether it
		// answers without the token.
		own, ownOpen bool
	}{
		{"default: admin socket only", "", 404, 404, false, false},
		{"token: public listener, behind it", "metrics:\n  token: " + token + "\n", 401, 200, false, false},
		{"listen: a listener of its own", "metrics:\n  listen: 127.0.0.1:0\n", 404, 404, true, true},
		{"listen and token", "metrics:\n  listen: 127.0.0.1:0\n  token: " + token + "\n", 404, 404, true, false},
	}
	get := func(t *testing.T, url, bearer string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg := harness.Start(t, harness.BaseConfig+tt.extra)
			if st, body := get(t, tg.Base+"/metrics", ""); st != tt.public || strings.Contains(body, "voxgate_") {
				t.Errorf("public /metrics without a token: %d, want %d (%.80s)", st, tt.public, body)
			}
			if st, _ := get(t, tg.Base+"/metrics", "wrong-token-0123456789"); st != tt.public {
				t.Errorf("public /metrics with a wrong token: %d, want %d", st, tt.public)
			}
			if st, body := get(t, tg.Base+"/metrics", token); st != tt.withToken || (st == 200) != strings.Contains(body, "voxgate_build_info") {
				t.Errorf("public /metrics with the token: %d, want %d", st, tt.withToken)
			}
			if tt.public == 401 {
				tg.Do("GET", "/metrics", "", nil).Problem(t, 401, "unauthorized")
			}
			addr := tg.Core.MetricsAddr()
			if (addr != "") != tt.own {
				t.Fatalf("metrics listener %q, want one: %v", addr, tt.own)
			}
			if tt.own {
				want := 401
				if tt.ownOpen {
					want = 200
				}
				if st, _ := get(t, "http://"+addr+"/metrics", ""); st != want {
					t.Errorf("metrics listener without a token: %d, want %d", st, want)
				}
				if st, body := get(t, "http://"+addr+"/metrics", token); st != 200 || !strings.Contains(body, "voxgate_http_requests_total") {
					t.Errorf("metrics listener with the token: %d", st)
				}
				if st, _ := get(t, "http://"+addr+"/readyz", ""); st != 200 {
					t.Errorf("metrics listener /readyz: %d", st)
				}
				if st, _ := get(t, "http://"+addr+"/v1/voices", tg.Keys["acme"]); st != 404 {
					t.Errorf("the metrics listener serves the API: %d", st)
				}
			}
			// The admin socket always has them (0600: the operator's).
			if !bytes.Contains(tg.MetricsBody(), []byte("voxgate_build_info")) {
				t.Error("no metrics on the admin socket")
			}
		})
	}
}

// TestTimeToFirstAudioEveryPath: voxgate_time_to_first_audio_seconds
// counts every request that produced audio: a clip and a stream the
// gateway sends itself (planned), a clip and a stream through the plugin,
// a realtime context, and a response-cache hit, which is counted apart
// (cache="hit") so that it does not flatter the provider's figure.
func TestTimeToFirstAudioEveryPath(t *testing.T) {
	t.Parallel()
	oai := openai.New(t, fakeupstream.Options{})
	el := elevenlabs.New(t, fakeupstream.Options{})
	cfg := harness.CacheConfig(oai, el, "cache: {driver: disk}")
	cfg = strings.Replace(cfg, "providers:\n  openai:", "providers:\n  espeak: {plugin: voxgate-espeak, managed: true}\n  openai:", 1)
	cfg = strings.Replace(cfg, "      openai: {enabled: true}\n      elevenlabs: {enabled: true}", "      openai: {enabled: true}\n      elevenlabs: {enabled: true}\n      espeak: {enabled: true}", 1)
	tg := harness.Start(t, cfg)
	tg.Secrets = append(tg.Secrets, openai.Key, elevenlabs.Key)
	count := func(provider, model, cache string) float64 {
		return harness.MustSample(t, tg.Scrape(), "voxgate_time_to_first_audio_seconds_count", "provider", provider, "model", model, "cache", cache)
	}
	planned := map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "Timed from the start."}
	plugin := map[string]any{"model": "espeak/espeak-ng", "voice": "en", "text": "Timed through the plugin."}
	steps := []struct {
		name, path             string
		body                   map[string]any
		provider, model, cache string
	}{
		{"planned clip", "/v1/audio/speech", planned, "openai", "tts-1", "miss"},
		{"planned stream", "/v1/audio/speech/stream", map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "A planned stream."}, "openai", "tts-1", "miss"},
		{"plugin clip", "/v1/audio/speech", plugin, "espeak", "espeak-ng", "miss"},
		{"plugin stream", "/v1/audio/speech/stream", map[string]any{"model": "espeak/espeak-ng", "voice": "en", "text": "A plugin stream."}, "espeak", "espeak-ng", "miss"},
	}
	for _, s := range steps {
		before := count(s.provider, s.model, s.cache)
		if r := tg.Do("POST", s.path, "acme", s.body); r.Status != 200 {
			t.Fatalf("%s: %d %s", s.name, r.Status, r.Body)
		}
		if after := count(s.provider, s.model, s.cache); after != before+1 {
			t.Errorf("%s: count %v -> %v, want one more", s.name, before, after)
		}
	}

	// The planned clip again, from the cache (written in the background).
	hits := count("openai", "tts-1", "hit")
	for range 50 {
		if r := tg.Do("POST", "/v1/audio/speech", "acme", planned); r.Header.Get("X-Voxgate-Cache") == "hit" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if after := count("openai", "tts-1", "hit"); after != hits+1 {
		t.Errorf("cache hit: count %v -> %v, want one more", hits, after)
	}

	// A realtime context, from its first text to its first audio.
	before := count("espeak", "espeak-ng", "miss")
	rc := tg.DialRealtime("acme")
	rc.Send(map[string]any{"type": "start", "contextId": "a", "model": "espeak", "voice": "en"})
	rc.Expect("started", "a")
	rc.Send(map[string]any{"type": "text", "contextId": "a", "text": "Timed on the socket. "})
	rc.Send(map[string]any{"type": "close", "contextId": "a"})
	if done := rc.Until(harness.IsType("done", "a")); done[len(done)-1].TTFA == nil {
		t.Fatal("the context's done has no time to first audio")
	}
	if after := count("espeak", "espeak-ng", "miss"); after != before+1 {
		t.Errorf("realtime: count %v -> %v, want one more", before, after)
	}
}
