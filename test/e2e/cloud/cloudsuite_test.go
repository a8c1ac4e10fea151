package cloud

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/cartesia"
	"github.com/voxgate/voxgate/internal/fakeupstream/elevenlabs"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
	"github.com/voxgate/voxgate/sdk/sdktest"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// cloudFake is what the provider suite steers of a provider's fake: every
// fake under internal/fakeupstream embeds a *fakeupstream.Control.
type cloudFake interface {
	BaseURL() string
	FailNext(n int, f fakeupstream.Fault)
	SetLatency(d time.Duration)
	Calls() int
	Reset()
	// HoldStreams stops audio bodies after their first chunk until
	// ReleaseStreams, so a test sees what arrives while the provider is
	// provably still sending.
	HoldStreams()
	ReleaseStreams()
	// LastAnswer is the audio the fake last answered.
	LastAnswer() []byte
}

// cloudCase is one cloud provider plugin run through the provider suite:
// a real plugin process behind a real gateway, pointed at its fake.
type cloudCase struct {
	// ID is the provider id (the plugin binary is voxgate-<ID>).
	ID string
	// Fake is the provider's fake; Key a key it accepts, used as the
	// managed credential.
	Fake cloudFake
	Key  string
	// Model and Voice are a model (without the provider prefix) and one
	// of its voices.
	Model, Voice string
	// Settings are extra lines of the provider's block, each a "key: value".
	Settings []string
	// Streams, Timestamps: the model claims them, so the suite checks them.
	Streams, Timestamps bool
	// NoVoiceList: the provider has no voice list endpoint.
	NoVoiceList bool
	// Derived are the native encodings the plugin makes itself from what
	// the provider sends (a WAV header on the provider's PCM, 16-bit
	// samples from its floats): the gateway passes the plugin's bytes
	// through, which are not the provider's.
	Derived []string
}

// startCloudCase runs a gateway with c's plugin as a managed provider of
// org acme, with a provider timeout of 3s: short, for the timeout case,
// but not so short that rendering an encoding on a loaded machine, beside
// the other suites running in parallel, runs out of it (1s did).
func startCloudCase(t *testing.T, c cloudCase) *harness.Gateway {
	t.Helper()
	var extra strings.Builder
	for _, s := range c.Settings {
		extra.WriteString("    " + s + "\n")
	}
	cfg := fmt.Sprintf(`
server:
  listen: 127.0.0.1:0
storage:
  path: %%DIR%%/voxgate.db
  log_batch_size: 16
plugins:
  dir: %%BIN%%/plugins
providers:
  %[1]s:
    plugin: voxgate-%[1]s
    base_url: %[2]s
    api_key: %[3]s
    managed: true
    timeout: 3s
    credits_per_1k_chars: 10
%[4]sorgs:
  acme:
    providers:
      %[1]s: {enabled: true}
  # plain has provenance marks off: its answers are the provider's bytes
  # exactly, which the native-encodings test compares.
  plain:
    provenance: {mark: false}
    providers:
      %[1]s: {enabled: true}
`, c.ID, c.Fake.BaseURL(), c.Key, extra.String())
	tg := harness.Start(t, cfg)
	tg.Secrets = append(tg.Secrets, c.Key)
	return tg
}

// runCloudSuite checks what every cloud provider plugin must do behind the
// gateway: a clip, a stream, word timestamps, the voice list, and the
// upstream's failures mapped to problems (401, 429 with Retry-After, a
// retried 5xx, a timeout), with the provider key never in a log line, a
// problem or a log row.
func runCloudSuite(t *testing.T, c cloudCase) {
	tg := startCloudCase(t, c)
	text := "The quick brown fox jumps over the lazy dog."
	body := map[string]any{"model": c.ID + "/" + c.Model, "voice": c.Voice, "text": text}

	assertNoKey := func(t *testing.T, r *harness.Response) {
		t.Helper()
		if bytes.Contains(r.Body, []byte(c.Key)) {
			t.Errorf("the answer contains the provider key")
		}
		for k, v := range r.Header {
			if strings.Contains(strings.Join(v, " "), c.Key) {
				t.Errorf("header %s contains the provider key", k)
			}
		}
	}

	t.Run("clip", func(t *testing.T) {
		r := tg.Do("POST", "/v1/audio/speech", "acme", body)
		if r.Status != 200 {
			t.Fatalf("speech: %d %s", r.Status, r.Body)
		}
		clip, err := sdktest.Decode(r.Header.Get("Content-Type"), r.Body)
		if err != nil {
			t.Fatalf("the clip does not decode as %s: %v", r.Header.Get("Content-Type"), err)
		}
		if s := clip.Seconds(); s < 0.5 || s > 20 {
			t.Errorf("the clip lasts %.2fs", s)
		}
		row := lastLogRow(t, tg, "acme")
		if row.Provider != c.ID || row.Model != c.Model || row.Status != 200 || row.CreditsUsed != 1 {
			t.Errorf("log row %+v", row)
		}
	})

	t.Run("stream", func(t *testing.T) {
		r := tg.Do("POST", "/v1/audio/speech/stream", "acme", body)
		if !c.Streams {
			r.Problem(t, 501, "streaming_unsupported")
			return
		}
		if r.Status != 200 {
			t.Fatalf("stream: %d %s", r.Status, r.Body)
		}
		if _, err := sdktest.Decode(r.Header.Get("Content-Type"), r.Body); err != nil {
			t.Fatalf("the stream does not decode as %s: %v", r.Header.Get("Content-Type"), err)
		}

		// The first bytes reach the client while the provider still holds
		// the rest.
		c.Fake.HoldStreams()
		defer c.Fake.ReleaseStreams()
		data, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", tg.Base+"/v1/audio/speech/stream", bytes.NewReader(data))
		req.Header.Set("Authorization", "Bearer "+tg.Keys["acme"])
		req.Header.Set("Content-Type", "application/json")
		resp, err := tg.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got := make(chan int, 1)
		go func() {
			buf := make([]byte, 1)
			n, _ := io.ReadFull(resp.Body, buf)
			got <- n
		}()
		select {
		case n := <-got:
			if n != 1 {
				t.Fatal("the held stream ended before any audio")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no audio reached the client while the provider held the rest of the stream")
		}
		c.Fake.ReleaseStreams()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("quote equals billed", func(t *testing.T) {
		// What the quote says a request costs is what its log row is
		// billed for the fake's answer: exactly, for a model priced by
		// its text (characters, bytes, tokens, requests); for one priced
		// by its audio, the row keeps the quote as its estimate and bills
		// the answer's length.
		var q harness.Quote
		qr := tg.Do("POST", "/v1/audio/speech/quote", "acme", body)
		qr.JSON(t, &q)
		if qr.Status != 200 || q.Data.Currency != "USD" || len(q.Data.Calls) != 1 || q.Data.Calls[0].Provider != c.ID || q.Data.Calls[0].Model != c.Model {
			t.Fatalf("quote: %d %s", qr.Status, qr.Body)
		}
		calls := c.Fake.Calls()
		if r := tg.Do("POST", "/v1/audio/speech", "acme", body); r.Status != 200 {
			t.Fatalf("speech: %d %s", r.Status, r.Body)
		}
		if c.Fake.Calls() != calls+1 {
			t.Errorf("the quote called the provider (%d calls for one request)", c.Fake.Calls()-calls)
		}
		row := lastLogRow(t, tg, "acme")
		_, bySeconds := q.Data.Calls[0].Units["audio_seconds"]
		_, byTokens := q.Data.Calls[0].Units["audio_tokens"]
		if row.Currency != "USD" || row.CostEstimate != q.Data.Cost {
			t.Errorf("row cost %s (estimate %s %s), quote %s", row.Cost, row.CostEstimate, row.Currency, q.Data.Cost)
		}
		if !bySeconds && !byTokens && row.Cost != q.Data.Cost {
			t.Errorf("billed %s, quoted %s (units %v)", row.Cost, q.Data.Cost, q.Data.Calls[0].Units)
		}
		// A stream is billed at its end the same way, from what the
		// provider said with it where it said (a header, a last message).
		if !c.Streams {
			return
		}
		if r := tg.Do("POST", "/v1/audio/speech/stream", "acme", body); r.Status != 200 {
			t.Fatalf("stream: %d %s", r.Status, r.Body)
		}
		for range 100 { // its row is recorded as its last bytes go
			if row = lastLogRow(t, tg, "acme"); row.Path == "/v1/audio/speech/stream" {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if row.Path != "/v1/audio/speech/stream" || row.CostEstimate != q.Data.Cost || (!bySeconds && !byTokens && row.Cost != q.Data.Cost) {
			t.Errorf("stream row %s billed %s (estimate %s), quoted %s", row.Path, row.Cost, row.CostEstimate, q.Data.Cost)
		}
	})

	t.Run("native encodings", func(t *testing.T) { runNativeEncodings(t, tg, c, text) })

	t.Run("timestamps", func(t *testing.T) {
		if !c.Timestamps {
			t.Skip("the model has no native timestamps")
		}
		r := tg.Do("POST", "/v1/audio/speech/with-timestamps", "acme", body)
		if r.Status != 200 {
			t.Fatalf("with-timestamps: %d %s", r.Status, r.Body)
		}
		var env harness.TimestampsEnvelope
		r.JSON(t, &env)
		audio, err := base64.StdEncoding.DecodeString(env.Audio)
		if err != nil {
			t.Fatal(err)
		}
		clip, err := sdktest.Decode(env.MediaType, audio)
		if err != nil {
			t.Fatalf("audio: %v", err)
		}
		words := strings.Fields(text)
		if len(env.Timestamps) != len(words) {
			t.Fatalf("%d timestamps for %d words: %+v", len(env.Timestamps), len(words), env.Timestamps)
		}
		prev := 0.0
		for i, w := range env.Timestamps {
			if strings.Trim(w.Text, ".,") != strings.Trim(words[i], ".,") {
				t.Errorf("word %d is %q, want %q", i, w.Text, words[i])
			}
			if w.Start < prev || w.End < w.Start || w.End > clip.Seconds()+0.05 {
				t.Errorf("word %d %+v is out of order or past the clip (%.2fs)", i, w, clip.Seconds())
			}
			prev = w.Start
		}
	})

	t.Run("voices", func(t *testing.T) {
		r := tg.Do("GET", "/v1/providers/"+c.ID+"/voices", "acme", nil)
		if c.NoVoiceList {
			return
		}
		if r.Status != 200 {
			t.Fatalf("voices: %d %s", r.Status, r.Body)
		}
		var list struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		r.JSON(t, &list)
		found := false
		for _, v := range list.Data {
			found = found || v.ID == c.Voice
		}
		if !found {
			t.Errorf("voice %q is not in the provider's list %s", c.Voice, r.Body)
		}
		assertNoKey(t, r)
	})

	t.Run("rejected key", func(t *testing.T) {
		c.Fake.Reset()
		c.Fake.FailNext(1, fakeupstream.Fault{Status: 401})
		r := tg.Do("POST", "/v1/audio/speech", "acme", body)
		p := r.Problem(t, 502, "provider_error")
		if p.Provider != c.ID || p.UpstreamStatus != 401 {
			t.Errorf("problem %+v", p)
		}
		if c.Fake.Calls() != 1 {
			t.Errorf("a rejected key was tried %d times", c.Fake.Calls())
		}
		assertNoKey(t, r)
	})

	t.Run("rate limited", func(t *testing.T) {
		// Once: retried after the Retry-After the provider gave.
		c.Fake.Reset()
		c.Fake.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "0.05"})
		if r := tg.Do("POST", "/v1/audio/speech", "acme", body); r.Status != 200 || c.Fake.Calls() != 2 {
			t.Fatalf("after one 429: %d %s, %d upstream calls", r.Status, r.Body, c.Fake.Calls())
		}
		// Always, with a wait beyond what a retry may spend: passed on.
		c.Fake.Reset()
		c.Fake.FailNext(10, fakeupstream.Fault{Status: 429, RetryAfter: "30"})
		defer c.Fake.Reset()
		r := tg.Do("POST", "/v1/audio/speech", "acme", body)
		p := r.Problem(t, 502, "provider_error")
		if p.UpstreamStatus != 429 || r.Header.Get("Retry-After") == "" {
			t.Errorf("problem %+v, Retry-After %q", p, r.Header.Get("Retry-After"))
		}
		assertNoKey(t, r)
	})

	t.Run("server error retried", func(t *testing.T) {
		c.Fake.Reset()
		c.Fake.FailNext(1, fakeupstream.Fault{Status: 503})
		if r := tg.Do("POST", "/v1/audio/speech", "acme", body); r.Status != 200 || c.Fake.Calls() != 2 {
			t.Fatalf("after one 503: %d %s, %d upstream calls", r.Status, r.Body, c.Fake.Calls())
		}
	})

	t.Run("timeout", func(t *testing.T) {
		c.Fake.Reset()
		c.Fake.SetLatency(6 * time.Second)
		defer c.Fake.SetLatency(0)
		r := tg.Do("POST", "/v1/audio/speech", "acme", body)
		r.Problem(t, 504, "provider_timeout")
		assertNoKey(t, r)
	})

	t.Run("no key in log rows", func(t *testing.T) {
		tg.FlushLogs()
		r := tg.Do("GET", "/v1/logs?limit=200", "acme", nil)
		if r.Status != 200 {
			t.Fatalf("logs: %d %s", r.Status, r.Body)
		}
		assertNoKey(t, r)
	})

	t.Run("no key in metrics", func(t *testing.T) {
		// After every call above (clips, streams, failures, retries): no
		// label or value of /metrics may carry the key, not even its
		// beginning.
		m := tg.MetricsBody()
		if bytes.Contains(m, []byte(c.Key)) || len(c.Key) >= 12 && bytes.Contains(m, []byte(c.Key[:12])) {
			t.Errorf("/metrics contains the provider key")
		}
		if !bytes.Contains(m, []byte(`provider="`+c.ID+`"`)) {
			t.Errorf("/metrics has no series of provider %s: the check above looked at nothing", c.ID)
		}
	})
}

// lastLogRow is org's newest request-log row, after a flush.
func lastLogRow(t *testing.T, tg *harness.Gateway, org string) harness.LogRow {
	t.Helper()
	tg.FlushLogs()
	r := tg.Do("GET", "/v1/logs?limit=1", org, nil)
	var page struct {
		Data []harness.LogRow `json:"data"`
	}
	r.JSON(t, &page)
	if len(page.Data) == 0 {
		t.Fatalf("no log rows for %s", org)
	}
	return page.Data[0]
}

// TestCloudProviderSuite runs the provider suite over every cloud plugin.
// A new plugin adds its case here.
func TestCloudProviderSuite(t *testing.T) {
	t.Parallel()
	cases := []func(t *testing.T) cloudCase{
		func(t *testing.T) cloudCase {
			f := openai.New(t, fakeupstream.Options{})
			return cloudCase{ID: "openai", Fake: f, Key: openai.Key, Model: "tts-1", Voice: "alloy", Streams: true}
		},
		func(t *testing.T) cloudCase {
			f := elevenlabs.New(t, fakeupstream.Options{})
			return cloudCase{ID: "elevenlabs", Fake: f, Key: elevenlabs.Key, Model: "eleven_multilingual_v2", Voice: f.VoiceIDs()[0], Streams: true, Timestamps: true}
		},
		func(t *testing.T) cloudCase {
			f := cartesia.New(t, fakeupstream.Options{})
			return cloudCase{ID: "cartesia", Fake: f, Key: cartesia.Key, Model: "sonic-2", Voice: cartesia.VoiceKatie, Streams: true, Timestamps: true}
		},
	}
	for _, mk := range cases {
		c := mk(t)
		t.Run(c.ID, func(t *testing.T) { runCloudSuite(t, c) })
	}
}

// runNativeEncodings asks for every encoding the model lists in the
// catalog as native, as a clip's output: each must come back as the
// provider's own bytes (the fake's last answer, byte for byte), with no
// X-Voxgate-Transcoded header and no conversion counted. What arrives
// upstream for each encoding is each plugin's own test.
func runNativeEncodings(t *testing.T, tg *harness.Gateway, c cloudCase, text string) {
	var cat struct {
		Data []struct {
			ID     string `json:"id"`
			Models []struct {
				ID              string   `json:"id"`
				NativeEncodings []string `json:"native_encodings"`
			} `json:"models"`
		} `json:"data"`
	}
	tg.Do("GET", "/v1/providers", "acme", nil).JSON(t, &cat)
	var encodings []string
	for _, p := range cat.Data {
		for _, m := range p.Models {
			if p.ID == c.ID && m.ID == c.Model {
				encodings = m.NativeEncodings
			}
		}
	}
	if len(encodings) == 0 {
		t.Fatalf("the catalog lists no native encodings for %s/%s", c.ID, c.Model)
	}
	conversions := func() float64 {
		var n float64
		for _, s := range tg.Scrape() {
			if s.Name == "voxgate_audio_conversions_total" {
				n += s.Value
			}
		}
		return n
	}
	before := conversions()
	for _, e := range encodings {
		t.Run(e, func(t *testing.T) {
			parts := strings.Split(e, "_")
			out := map[string]any{"format": parts[0]}
			if len(parts) > 1 && parts[1] != "0" {
				out["sampleRate"], _ = strconv.Atoi(parts[1])
			}
			if len(parts) > 2 {
				out["bitrate"], _ = strconv.Atoi(parts[2])
			}
			body := map[string]any{"model": c.ID + "/" + c.Model, "voice": c.Voice, "text": text, "output": out}
			r := tg.Do("POST", "/v1/audio/speech", "plain", body, "Cache-Control", "no-cache")
			if r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			if h := r.Header.Get("X-Voxgate-Mark"); !strings.HasPrefix(h, "off") && !strings.HasPrefix(h, "none") {
				t.Errorf("X-Voxgate-Mark %q for an organization with marks off", h)
			}
			if h := r.Header.Get("X-Voxgate-Transcoded"); h != "" {
				t.Errorf("converted (%s), want the provider's bytes", h)
			}
			if want := c.Fake.LastAnswer(); !slices.Contains(c.Derived, e) && !bytes.Equal(r.Body, want) {
				t.Errorf("answered %d bytes, not the %d the provider sent", len(r.Body), len(want))
			}
		})
	}
	if after := conversions(); after != before {
		t.Errorf("native encodings counted %v conversions", after-before)
	}
}
