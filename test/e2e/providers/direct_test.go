package providers

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// gatewayAgent is the User-Agent of requests the gateway sends itself
// (direct HTTP); the plugins' net/http client sends Go's default.
const gatewayAgent = "voxgate"

// planCount reads voxgate_provider_plans_total for provider and result.
func planCount(t testing.TB, tg *harness.Gateway, provider, result string) int {
	t.Helper()
	m := string(tg.MetricsBody())
	re := regexp.MustCompile(`voxgate_provider_plans_total\{provider="` + provider + `",result="` + result + `"\} (\d+)`)
	sm := re.FindStringSubmatch(m)
	if sm == nil {
		return 0
	}
	n, _ := strconv.Atoi(sm[1])
	return n
}

// TestDirectHTTP runs planned requests end to end: the real OpenAI and
// ElevenLabs plugin processes plan them, the gateway sends them to fakes
// of those providers' APIs.
func TestDirectHTTP(t *testing.T) {
	t.Parallel()
	c := harness.StartCloud(t)
	body := func(text string) map[string]any {
		return map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": text}
	}

	t.Run("sent by the gateway, plan reused", func(t *testing.T) {
		c.OpenAI.Reset()
		planned := planCount(t, c.Gateway, "openai", "planned")
		reused := planCount(t, c.Gateway, "openai", "reused")
		for i, text := range []string{"First request.", "A second, different text."} {
			r := c.Do("POST", "/v1/audio/speech", "acme", body(text))
			if r.Status != 200 || r.Header.Get("Content-Type") != "audio/wav" || len(r.Body) < 1000 { // pcm by default, behind a wav header
				t.Fatalf("request %d: %d %s", i, r.Status, r.Body[:min(200, len(r.Body))])
			}
			last, _ := c.OpenAI.LastRequest()
			if ua := last.Header.Get("User-Agent"); ua != gatewayAgent {
				t.Errorf("request %d sent by %q, want the gateway", i, ua)
			}
		}
		if p, r := planCount(t, c.Gateway, "openai", "planned")-planned, planCount(t, c.Gateway, "openai", "reused")-reused; p > 1 || p+r != 2 {
			t.Errorf("two requests of one shape: %d planned, %d reused; want at most one plugin call", p, r)
		}
	})

	t.Run("text reaches the provider intact", func(t *testing.T) {
		texts := []string{
			`She said "hi" \ then left.`,
			"Line one\nline two\ttabbed\r\n",
			"Ünïcödé, 日本語, emoji 🎙️, <b>&amp;</b>",
			"Separators\u2028and\u2029too, and a control \u0001 char.",
		}
		for _, text := range texts {
			if r := c.Do("POST", "/v1/audio/speech", "acme", body(text)); r.Status != 200 {
				t.Fatalf("%q: %d %s", text, r.Status, r.Body)
			}
			last, _ := c.OpenAI.LastRequest()
			var sent struct {
				Input string `json:"input"`
			}
			if err := last.JSON(&sent); err != nil || sent.Input != text {
				t.Errorf("sent %q (%v), want %q; body %s", sent.Input, err, text, last.Body)
			}
		}
	})

	t.Run("each key its own plan", func(t *testing.T) {
		// Managed key for acme, its own for globex: a cached plan carries
		// credentials, so it must never serve another key.
		for _, tt := range []struct{ org, key string }{{"acme", openai.Key}, {"globex", harness.GlobexOpenAIKey}, {"acme", openai.Key}} {
			if r := c.Do("POST", "/v1/audio/speech", tt.org, body("Same text, same voice.")); r.Status != 200 {
				t.Fatalf("%s: %d %s", tt.org, r.Status, r.Body)
			}
			last, _ := c.OpenAI.LastRequest()
			if got := last.Header.Get("Authorization"); got != "Bearer "+tt.key {
				t.Errorf("%s sent %q", tt.org, harness.Redact(got))
			}
		}
		// A BYOK key changed at run time is used at once.
		voice := c.ElevenLabs.VoiceIDs()[0]
		el := map[string]any{"model": "elevenlabs", "voice": voice, "text": "Key rotation."}
		if r := c.Do("POST", "/v1/audio/speech", "acme", el); r.Status != 200 {
			t.Fatalf("elevenlabs: %d %s", r.Status, r.Body)
		}
		if last, _ := c.ElevenLabs.LastRequest(); last.Header.Get("User-Agent") != gatewayAgent || last.Header.Get("xi-api-key") != harness.AcmeElevenKey {
			t.Fatalf("elevenlabs request: agent %q, key %q", last.Header.Get("User-Agent"), harness.Redact(last.Header.Get("xi-api-key")))
		}
		const rotated = "xi-acme-rotated-key-2222222222222222"
		c.Secrets = append(c.Secrets, rotated)
		if err := c.Core.SetSecret(context.Background(), "acme", "elevenlabs", rotated); err != nil {
			t.Fatal(err)
		}
		// The fake knows only the old key: the new one is refused upstream.
		p := c.Do("POST", "/v1/audio/speech", "acme", el).Problem(t, 502, "provider_error")
		if last, _ := c.ElevenLabs.LastRequest(); last.Header.Get("xi-api-key") != rotated || p.UpstreamStatus != 401 {
			t.Errorf("after rotation: sent %q, problem %+v", harness.Redact(last.Header.Get("xi-api-key")), p)
		}
		if err := c.Core.SetSecret(context.Background(), "acme", "elevenlabs", harness.AcmeElevenKey); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("what a plan cannot express goes through the plugin", func(t *testing.T) {
		voice := c.ElevenLabs.VoiceIDs()[0]
		r := c.Do("POST", "/v1/audio/speech/with-timestamps", "acme", map[string]any{"model": "elevenlabs", "voice": voice, "text": "Timed words."})
		if r.Status != 200 {
			t.Fatalf("timestamps: %d %s", r.Status, r.Body)
		}
		if last, _ := c.ElevenLabs.LastRequest(); last.Header.Get("User-Agent") == gatewayAgent || !strings.HasSuffix(last.Path, "/with-timestamps") {
			t.Errorf("timestamps request %s sent by %q, want the plugin", last.Path, last.Header.Get("User-Agent"))
		}
	})

	t.Run("upstream errors keep their meaning", func(t *testing.T) {
		tests := []struct {
			path   string
			fault  fakeupstream.Fault
			status int
			code   string
		}{
			{"/v1/audio/speech", fakeupstream.Fault{Status: 401}, 502, "provider_error"},
			{"/v1/audio/speech/stream", fakeupstream.Fault{Status: 401}, 502, "provider_error"},
			{"/v1/audio/speech", fakeupstream.Fault{Status: 400, Code: "invalid_value"}, 422, "provider_rejected_request"},
			{"/v1/audio/speech/stream", fakeupstream.Fault{Status: 429, RetryAfter: "30"}, 502, "provider_error"},
		}
		for _, tt := range tests {
			c.OpenAI.Reset()
			c.OpenAI.FailAlways(tt.fault)
			r := c.Do("POST", tt.path, "acme", body("Failing."))
			p := r.Problem(t, tt.status, tt.code)
			if p.Provider != "openai" || p.UpstreamStatus != tt.fault.Status {
				t.Errorf("%s %d: problem %+v", tt.path, tt.fault.Status, p)
			}
			if tt.fault.Code != "" && p.UpstreamCode != tt.fault.Code {
				t.Errorf("%s: upstream code %q, want the plugin's reading of the error body", tt.path, p.UpstreamCode)
			}
			if strings.Contains(string(r.Body), openai.Key) {
				t.Errorf("%s: the problem leaks the key", tt.path)
			}
		}
		c.OpenAI.Reset()
	})

	t.Run("stream passes through and stops when the client leaves", func(t *testing.T) {
		c.OpenAI.Reset()
		c.OpenAI.HoldStreams() // the fake sends one chunk, then waits
		defer c.OpenAI.Reset()
		conn, err := net.Dial("tcp", c.Core.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		payload, _ := json.Marshal(body(strings.Repeat("A long stream of words. ", 30)))
		_, err = io.WriteString(conn, "POST /v1/audio/speech/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+c.Keys["acme"]+
			"\r\nContent-Type: application/json\r\nContent-Length: "+strconv.Itoa(len(payload))+"\r\n\r\n"+string(payload))
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		br := bufio.NewReader(conn)
		status, _ := br.ReadString('\n')
		if !strings.Contains(status, " 200 ") {
			t.Fatalf("status line %q", status)
		}
		for { // headers
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if line == "\r\n" {
				break
			}
		}
		// Audio arrives while the provider is held after its first chunk:
		// nothing waits for the end of the answer.
		if _, err := br.Peek(64); err != nil {
			t.Fatalf("no audio while the provider is still sending: %v", err)
		}
		conn.Close()
		// The rest comes at a pace (otherwise the fake could write it
		// all into socket buffers before anyone notices the client).
		c.OpenAI.SetChunkDelay(20 * time.Millisecond)
		c.OpenAI.ReleaseStreams()
		// The gateway notices the client on its next write and closes the
		// upstream connection, which ends the fake's answer early.
		for deadline := time.Now().Add(10 * time.Second); c.OpenAI.Aborted() == 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the upstream request went on after the client left")
			}
		}
		if row := c.LastLog("acme"); row.Path != "/v1/audio/speech/stream" || row.ErrorCode != "client_disconnected" {
			t.Errorf("log row %+v", row)
		}
	})
}

// TestDirectHTTPOff checks direct_http: false keeps a planning plugin's
// calls inside the plugin.
func TestDirectHTTPOff(t *testing.T) {
	t.Parallel()
	c := harness.StartCloudWith(t, "    direct_http: false\n")
	body := map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "Through the plugin."}
	for _, path := range []string{"/v1/audio/speech", "/v1/audio/speech/stream"} {
		if r := c.Do("POST", path, "acme", body); r.Status != 200 || len(r.Body) < 1000 {
			t.Fatalf("%s: %d %s", path, r.Status, r.Body)
		}
		if last, _ := c.OpenAI.LastRequest(); last.Header.Get("User-Agent") == gatewayAgent {
			t.Errorf("%s was sent by the gateway with direct_http off", path)
		}
	}
	if n := planCount(t, c.Gateway, "openai", "planned") + planCount(t, c.Gateway, "openai", "reused"); n != 0 {
		t.Errorf("%d plans with direct_http off", n)
	}
}
