package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// BenchmarkStreamFirstByte compares time-to-first-byte of a stream through
// the gateway (HTTP -> auth -> speech -> plugin pool -> gRPC -> plugin ->
// chunked HTTP) with calling the same plugin binary directly over gRPC, in
// the same run and interleaved, so machine noise hits both alike. The
// plugin renders silence so the figure is the path's cost, not synthesis.
func BenchmarkStreamFirstByte(b *testing.B) {
	tg := harness.Start(b, harness.SpeechConfig)
	direct := sdktest.StartPlugin(b, filepath.Join(harness.BinDir(b), "testplugins", "voxgate-testplugin"))
	text := "one two three four five six seven eight"
	opts := []byte(`{"silent":true}`)
	req := &sdk.SynthesizeRequest{Model: "test", Voice: "alpha", Text: text, Options: opts, Format: sdk.FormatPCM}
	body, _ := json.Marshal(map[string]any{"model": "testkit/test", "voice": "alpha", "text": text, "providerOptions": json.RawMessage(opts)})
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	buf := make([]byte, 64<<10)

	var directTTFB, gatewayTTFB time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		first := time.Duration(0)
		if err := direct.Stream(context.Background(), req, func(ch sdk.Chunk) error {
			if first == 0 {
				first = time.Since(start)
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
		directTTFB += first

		hreq, _ := http.NewRequest("POST", tg.Base+"/v1/audio/speech/stream", bytes.NewReader(body))
		hreq.Header.Set("Content-Type", "application/json")
		hreq.Header.Set("Authorization", "Bearer "+tg.Keys["acme"])
		start = time.Now()
		resp, err := hc.Do(hreq)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadAtLeast(resp.Body, buf, 1); err != nil {
			b.Fatal(err)
		}
		gatewayTTFB += time.Since(start)
		_, _ = io.CopyBuffer(io.Discard, resp.Body, buf)
		resp.Body.Close()
	}
	n := float64(b.N)
	d, g := float64(directTTFB.Microseconds())/n, float64(gatewayTTFB.Microseconds())/n
	b.ReportMetric(d, "direct-ttfb-µs")
	b.ReportMetric(g, "gateway-ttfb-µs")
	b.ReportMetric(g-d, "overhead-µs")
}

// BenchmarkConversationConcurrency renders a ten-turn eSpeak conversation
// through two gateways that differ only in limits.conversation_concurrency
// (1 versus 4; eSpeak runs 2 processes on this 2-core machine), with the
// requests interleaved in one run.
func BenchmarkConversationConcurrency(b *testing.B) {
	cfg := func(conc string) string {
		return strings.Replace(strings.Replace(harness.SpeechConfig, "instances: 1", "instances: 2", 1),
			"storage:", "limits: {conversation_concurrency: "+conc+"}\nstorage:", 1)
	}
	serial, parallel := harness.Start(b, cfg("1")), harness.Start(b, cfg("4"))
	turns := make([]any, 10)
	for i := range turns {
		turns[i] = map[string]any{"voice": []string{"en", "en-us", "de", "fr", "es"}[i%5], "text": "This is turn number " + strconv.Itoa(i) + " of a long conversation, spoken in full."}
	}
	body := map[string]any{"model": "espeak/espeak-ng", "turns": turns}
	var ts, tp time.Duration
	for b.Loop() {
		start := time.Now()
		if r := serial.Do("POST", "/v1/audio/conversation", "acme", body); r.Status != 200 {
			b.Fatalf("%d %s", r.Status, r.Body)
		}
		ts += time.Since(start)
		start = time.Now()
		if r := parallel.Do("POST", "/v1/audio/conversation", "acme", body); r.Status != 200 {
			b.Fatalf("%d %s", r.Status, r.Body)
		}
		tp += time.Since(start)
	}
	n := float64(b.N)
	b.ReportMetric(float64(ts.Milliseconds())/n, "concurrency1-ms")
	b.ReportMetric(float64(tp.Milliseconds())/n, "concurrency4-ms")
	b.ReportMetric(float64(ts)/float64(tp), "speedup-x")
}

// BenchmarkPlannedStreamFirstByte is BenchmarkStreamFirstByte for a
// planned request: the real OpenAI plugin plans, the gateway sends the
// request to a fake of OpenAI's API and relays the stream. Direct is the
// same request sent straight to the fake; both interleaved, same client.
func BenchmarkPlannedStreamFirstByte(b *testing.B) {
	oai := openai.New(b, fakeupstream.Options{MaxRecorded: -1})
	tg := harness.Start(b, `
server:
  listen: 127.0.0.1:0
storage:
  path: %DIR%/voxgate.db
plugins:
  dir: %BIN%/plugins
providers:
  openai:
    plugin: voxgate-openai
    base_url: `+oai.BaseURL()+`
    api_key: `+openai.Key+`
    managed: true
orgs:
  acme:
    providers:
      openai: {enabled: true}
`)
	text := "one two three four five six seven eight"
	direct, _ := json.Marshal(map[string]any{"model": "tts-1", "voice": "alloy", "input": text, "response_format": "pcm"})
	gw, _ := json.Marshal(map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": text})
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	buf := make([]byte, 64<<10)
	ttfb := func(url, key string, body []byte) time.Duration {
		req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+key)
		start := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		if _, err := io.ReadAtLeast(resp.Body, buf, 1); err != nil || resp.StatusCode != 200 {
			b.Fatalf("%s: %d %v", url, resp.StatusCode, err)
		}
		d := time.Since(start)
		_, _ = io.CopyBuffer(io.Discard, resp.Body, buf)
		return d
	}
	var directTTFB, gatewayTTFB time.Duration
	for b.Loop() {
		directTTFB += ttfb(oai.BaseURL()+"/audio/speech", openai.Key, direct)
		gatewayTTFB += ttfb(tg.Base+"/v1/audio/speech/stream", tg.Keys["acme"], gw)
	}
	n := float64(b.N)
	d, g := float64(directTTFB.Microseconds())/n, float64(gatewayTTFB.Microseconds())/n
	b.ReportMetric(d, "direct-ttfb-µs")
	b.ReportMetric(g, "gateway-ttfb-µs")
	b.ReportMetric(g-d, "overhead-µs")
}
