package gateway_test

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
)

// gatewayAgent is the User-Agent of requests the gateway sends itself
// (direct HTTP); the plugins' net/http client sends Go's default.
const gatewayAgent = "voxgate"

// planCount reads voxgate_provider_plans_total for provider and result.
func (tg *testGateway) planCount(provider, result string) int {
	tg.t.Helper()
	m := string(tg.metricsBody())
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
	c := startCloud(t)
	body := func(text string) map[string]any {
		return map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": text}
	}

	t.Run("sent by the gateway, plan reused", func(t *testing.T) {
		c.oai.Reset()
		planned := c.planCount("openai", "planned")
		reused := c.planCount("openai", "reused")
		for i, text := range []string{"First request.", "A second, different text."} {
			r := c.do("POST", "/v1/audio/speech", "acme", body(text))
			if r.status != 200 || r.header.Get("Content-Type") != "audio/wav" || len(r.body) < 1000 { // pcm by default, behind a wav header
				t.Fatalf("request %d: %d %s", i, r.status, r.body[:min(200, len(r.body))])
			}
			last, _ := c.oai.LastRequest()
			if ua := last.Header.Get("User-Agent"); ua != gatewayAgent {
				t.Errorf("request %d sent by %q, want the gateway", i, ua)
			}
		}
		if p, r := c.planCount("openai", "planned")-planned, c.planCount("openai", "reused")-reused; p > 1 || p+r != 2 {
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
			if r := c.do("POST", "/v1/audio/speech", "acme", body(text)); r.status != 200 {
				t.Fatalf("%q: %d %s", text, r.status, r.body)
			}
			last, _ := c.oai.LastRequest()
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
		for _, tt := range []struct{ org, key string }{{"acme", openai.Key}, {"globex", globexOpenAIKey}, {"acme", openai.Key}} {
			if r := c.do("POST", "/v1/audio/speech", tt.org, body("Same text, same voice.")); r.status != 200 {
				t.Fatalf("%s: %d %s", tt.org, r.status, r.body)
			}
			last, _ := c.oai.LastRequest()
			if got := last.Header.Get("Authorization"); got != "Bearer "+tt.key {
				t.Errorf("%s sent %q", tt.org, redact(got))
			}
		}
		// A BYOK key changed at run time is used at once.
		voice := c.el.VoiceIDs()[0]
		el := map[string]any{"model": "elevenlabs", "voice": voice, "text": "Key rotation."}
		if r := c.do("POST", "/v1/audio/speech", "acme", el); r.status != 200 {
			t.Fatalf("elevenlabs: %d %s", r.status, r.body)
		}
		if last, _ := c.el.LastRequest(); last.Header.Get("User-Agent") != gatewayAgent || last.Header.Get("xi-api-key") != acmeElevenKey {
			t.Fatalf("elevenlabs request: agent %q, key %q", last.Header.Get("User-Agent"), redact(last.Header.Get("xi-api-key")))
		}
		const rotated = "xi-acme-rotated-key-2222222222222222"
		c.secrets = append(c.secrets, rotated)
		if err := c.g.SetSecret(context.Background(), "acme", "elevenlabs", rotated); err != nil {
			t.Fatal(err)
		}
		// The fake knows only the old key: the new one is refused upstream.
		p := c.do("POST", "/v1/audio/speech", "acme", el).problem(t, 502, "provider_error")
		if last, _ := c.el.LastRequest(); last.Header.Get("xi-api-key") != rotated || p.UpstreamStatus != 401 {
			t.Errorf("after rotation: sent %q, problem %+v", redact(last.Header.Get("xi-api-key")), p)
		}
		if err := c.g.SetSecret(context.Background(), "acme", "elevenlabs", acmeElevenKey); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("what a plan cannot express goes through the plugin", func(t *testing.T) {
		voice := c.el.VoiceIDs()[0]
		r := c.do("POST", "/v1/audio/speech/with-timestamps", "acme", map[string]any{"model": "elevenlabs", "voice": voice, "text": "Timed words."})
		if r.status != 200 {
			t.Fatalf("timestamps: %d %s", r.status, r.body)
		}
		if last, _ := c.el.LastRequest(); last.Header.Get("User-Agent") == gatewayAgent || !strings.HasSuffix(last.Path, "/with-timestamps") {
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
			c.oai.Reset()
			c.oai.FailAlways(tt.fault)
			r := c.do("POST", tt.path, "acme", body("Failing."))
			p := r.problem(t, tt.status, tt.code)
			if p.Provider != "openai" || p.UpstreamStatus != tt.fault.Status {
				t.Errorf("%s %d: problem %+v", tt.path, tt.fault.Status, p)
			}
			if tt.fault.Code != "" && p.UpstreamCode != tt.fault.Code {
				t.Errorf("%s: upstream code %q, want the plugin's reading of the error body", tt.path, p.UpstreamCode)
			}
			if strings.Contains(string(r.body), openai.Key) {
				t.Errorf("%s: the problem leaks the key", tt.path)
			}
		}
		c.oai.Reset()
	})

	t.Run("stream passes through and stops when the client leaves", func(t *testing.T) {
		c.oai.Reset()
		c.oai.HoldStreams() // the fake sends one chunk, then waits
		defer c.oai.Reset()
		conn, err := net.Dial("tcp", c.g.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		payload, _ := json.Marshal(body(strings.Repeat("A long stream of words. ", 30)))
		_, err = io.WriteString(conn, "POST /v1/audio/speech/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+c.keys["acme"]+
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
		c.oai.SetChunkDelay(20 * time.Millisecond)
		c.oai.ReleaseStreams()
		// The gateway notices the client on its next write and closes the
		// upstream connection, which ends the fake's answer early.
		for deadline := time.Now().Add(10 * time.Second); c.oai.Aborted() == 0; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the upstream request went on after the client left")
			}
		}
		if row := c.lastLog("acme"); row.Path != "/v1/audio/speech/stream" || row.ErrorCode != "client_disconnected" {
			t.Errorf("log row %+v", row)
		}
	})
}

// TestDirectHTTPOff checks direct_http: false keeps a planning plugin's
// calls inside the plugin.
func TestDirectHTTPOff(t *testing.T) {
	c := startCloudWith(t, "    direct_http: false\n")
	body := map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "Through the plugin."}
	for _, path := range []string{"/v1/audio/speech", "/v1/audio/speech/stream"} {
		if r := c.do("POST", path, "acme", body); r.status != 200 || len(r.body) < 1000 {
			t.Fatalf("%s: %d %s", path, r.status, r.body)
		}
		if last, _ := c.oai.LastRequest(); last.Header.Get("User-Agent") == gatewayAgent {
			t.Errorf("%s was sent by the gateway with direct_http off", path)
		}
	}
	if n := c.planCount("openai", "planned") + c.planCount("openai", "reused"); n != 0 {
		t.Errorf("%d plans with direct_http off", n)
	}
}
