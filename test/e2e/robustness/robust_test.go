package robustness

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/test/e2e/harness"
)

// robustConfig runs the test plugin with a provider timeout of 2s under a
// request timeout of 3s and a write timeout of 1s (per write, so streams
// may last longer).
const robustConfig = `
server:
  listen: 127.0.0.1:0
  request_timeout: 3s
  write_timeout: 1s
storage:
  path: %DIR%/voxgate.db
  log_batch_size: 8
plugins:
  dir: %BIN%/plugins
  health_interval: 1s
providers:
  testkit:
    plugin: %BIN%/testplugins/voxgate-testplugin
    managed: true
    timeout: 2s
  slowkit:
    plugin: %BIN%/testplugins/voxgate-testplugin
    managed: true
    timeout: 10s
orgs:
  acme:
    providers:
      testkit: {enabled: true}
      slowkit: {enabled: true}
`

// readStream posts a stream request and reads the whole body, returning
// the status, the bytes and the error that ended the read (nil for a
// complete body).
func readStream(t *testing.T, tg *harness.Gateway, body map[string]any) (int, []byte, error) {
	t.Helper()
	return harness.ReadStreamPath(t, tg, "/v1/audio/speech/stream", body)
}

// TestStreamFailureIsNotACompleteResponse: once a stream's status line is
// out, a failure can only end the body; it must end it as incomplete (no
// terminating chunk), so that curl, fetch and every HTTP client see a
// broken transfer instead of a shorter clip, and the log row says why.
func TestStreamFailureIsNotACompleteResponse(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, robustConfig)
	words := strings.Repeat("word ", 20)
	tests := []struct {
		name, model string
		opts        map[string]any
		code        string
	}{
		{"plugin dies", "testkit/test", map[string]any{"crash": true, "after_chunks": 2}, "provider_unavailable"},
		{"provider fails", "testkit/test", map[string]any{"fail": map[string]any{"kind": "upstream", "message": "boom", "status": 500}, "after_chunks": 2}, "provider_error"},
		{"provider timeout", "testkit/test", map[string]any{"hang": true, "after_chunks": 2}, "provider_timeout"},
		{"request timeout", "slowkit/test", map[string]any{"hang": true, "after_chunks": 2}, "request_timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, data, err := readStream(t, tg, map[string]any{"model": tt.model, "voice": "alpha", "text": words, "providerOptions": tt.opts})
			if status != 200 || len(data) == 0 {
				t.Fatalf("stream: %d with %d bytes", status, len(data))
			}
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("the failed stream read as %v, want an incomplete transfer (unexpected EOF)", err)
			}
			// The row's status is the outcome (the failure's), so that
			// it never disagrees with its error code.
			row := tg.LastLog("acme")
			if row.ErrorCode != tt.code || row.Status < 500 || row.CreditsUsed != 0 {
				t.Errorf("log row: status %d, error %q (%s); want %s", row.Status, row.ErrorCode, row.ErrorDetail, tt.code)
			}
		})
	}

	// A stream that takes longer than server.write_timeout but keeps
	// writing completes: the write timeout bounds each write.
	status, data, err := readStream(t, tg, map[string]any{"model": "slowkit/test", "voice": "alpha", "text": strings.Repeat("word ", 16),
		"providerOptions": map[string]any{"slow_stream_ms": 100}})
	if status != 200 || err != nil || len(data) == 0 {
		t.Fatalf("a 1.5 s stream under a 1 s write timeout: %d, %d bytes, %v", status, len(data), err)
	}
	if row := tg.LastLog("acme"); row.ErrorCode != "" {
		t.Errorf("the complete stream's row has error %q", row.ErrorCode)
	}
}

// TestPluginFailureSaysWhatNotWhere: a plugin that dies under a call gives
// 503 provider_unavailable whose detail says what failed, never where the
// plugin listens (its socket path) or gRPC's internals.
func TestPluginFailureSaysWhatNotWhere(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, robustConfig)
	r := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "crash now",
		"providerOptions": map[string]any{"crash": true}})
	p := r.Problem(t, 503, "provider_unavailable")
	for _, leak := range []string{"unix", "/tmp", "sock", "dial", "transport", "rpc error"} {
		if strings.Contains(strings.ToLower(p.Detail), leak) {
			t.Errorf("the detail %q shows %q", p.Detail, leak)
		}
	}
	if !strings.Contains(p.Detail, "not reachable") {
		t.Errorf("the detail %q does not say the plugin is unreachable", p.Detail)
	}
}

// rawConn dials the gateway for a test that writes HTTP by hand (and
// closes the connection when the test ends), first writing raw if given.
func rawConn(t *testing.T, tg *harness.Gateway, raw string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(tg.Base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if raw != "" {
		if _, err := io.WriteString(c, raw); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// rawExchange writes raw to the gateway and returns everything it answers
// until it closes the connection (or 3 s pass).
func rawExchange(t *testing.T, tg *harness.Gateway, raw string, pause time.Duration) string {
	t.Helper()
	c := rawConn(t, tg, raw)
	time.Sleep(pause)
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	b, _ := io.ReadAll(c)
	return string(b)
}

func TestMalformedRequests(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, strings.Replace(robustConfig, "  write_timeout: 1s\n", "  write_timeout: 1s\n  read_timeout: 1s\n  max_body_bytes: 4096\n", 1))

	// Content-Length and Transfer-Encoding together: 400, and the
	// connection is closed, so the bytes after the chunked body are never
	// served as a second request.
	got := rawExchange(t, tg, "POST /v1/voices HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n"+
		"Content-Type: application/json\r\n\r\n0\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 0)
	if !strings.HasPrefix(got, "HTTP/1.1 400 ") || !strings.Contains(got, `"code":"bad_request"`) {
		t.Errorf("CL+TE request answered %q", got)
	}
	if n := strings.Count(got, "HTTP/1.1 "); n != 1 {
		t.Errorf("CL+TE request: %d responses on the connection, want 1 (the smuggled request must not be served):\n%s", n, got)
	}

	// Headers that do not fit the connection's read buffer: 431 with a
	// problem document (fasthttp's own answer is plain text).
	got = rawExchange(t, tg, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("b", 6000)+"\r\n\r\n", 0)
	if !strings.HasPrefix(got, "HTTP/1.1 431 ") || !strings.Contains(got, "application/problem+json") || !strings.Contains(got, `"code":"header_too_large"`) {
		t.Errorf("6 KB of headers answered %q", got)
	}

	// Headers that stop arriving: 408 with a problem document.
	got = rawExchange(t, tg, "POST /v1/voices HTTP/1.1\r\nHost: x\r\nContent-Ty", 1500*time.Millisecond)
	if !strings.HasPrefix(got, "HTTP/1.1 408 ") || !strings.Contains(got, "application/problem+json") || !strings.Contains(got, `"code":"read_timeout"`) {
		t.Errorf("stalled headers answered %q", got)
	}

	// A chunked JSON body past server.max_body_bytes is refused at that
	// limit, not at the media upload limit.
	var chunked strings.Builder
	chunked.WriteString("POST /v1/voices HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\nAuthorization: Bearer " + tg.Keys["acme"] + "\r\n\r\n")
	for range 3 {
		chunked.WriteString("800\r\n" + strings.Repeat(" ", 0x800) + "\r\n")
	}
	chunked.WriteString("0\r\n\r\n")
	got = rawExchange(t, tg, chunked.String(), 0)
	if !strings.HasPrefix(got, "HTTP/1.1 413 ") || !strings.Contains(got, `"code":"payload_too_large"`) {
		t.Errorf("a 6 KiB chunked body under a 4 KiB limit answered %q", got)
	}
}

// TestShutdownDoesNotWaitForUnusedConnections: a connection that never
// sent a byte (a client's spare keep-alive connection) holds no request,
// yet fasthttp counts it busy until server.read_timeout. A shutdown must
// not wait for it: with a read timeout longer than the shutdown's time,
// the drain still ends in time, with nothing closed by force, and the
// request log still gets its time to flush.
func TestShutdownDoesNotWaitForUnusedConnections(t *testing.T) {
	// Not parallel: a fixed pause stands for "the server has read the bytes".
	tg := harness.Start(t, strings.Replace(robustConfig, "  write_timeout: 1s\n", "  write_timeout: 1s\n  read_timeout: 5m\n", 1))
	if r := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "hi"}); r.Status != 200 {
		t.Fatalf("speech: %d %s", r.Status, r.Body)
	}
	for range 3 {
		rawConn(t, tg, "")
	}
	// A connection that has sent part of a request is one in flight: it
	// is waited for, then closed when the drain's time runs out.
	half := rawConn(t, tg, "GET /healthz HTTP/1.1\r\n")
	time.Sleep(200 * time.Millisecond) // the server has read the bytes
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Second)
	defer cancel()
	if err := tg.Core.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	forced := tg.Logs.FilterMessageSnippet("their connections were closed").All()
	if len(forced) != 1 || forced[0].ContextMap()["connections"] != int64(1) {
		t.Errorf("connections closed by force: %+v (want the half-sent one only)", forced)
	}
	// The half-sent request's connection was closed, not answered.
	_ = half.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := half.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) && !isReset(err) {
		t.Errorf("the half-sent connection: %d bytes, %v", n, err)
	}
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && strings.Contains(ne.Err.Error(), "reset")
}

// TestOversizedBodyGetsItsAnswer: a body refused for its size is not read,
// and a socket closed with unread data is reset by the kernel, which can
// destroy the 413 before the client reads it (the client sees
// "connection reset"). The gateway lingers instead: it reads and drops
// what the client still sends, so the client gets the problem.
func TestOversizedBodyGetsItsAnswer(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.ESpeakConfig)
	big := `{"title":"` + strings.Repeat("x", 3<<20) + `"}` // 3 MiB over a 64 KiB limit
	for i := range 5 {
		req, err := http.NewRequest("POST", tg.Base+"/v1/voices", strings.NewReader(big))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tg.Keys["acme"])
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 413 || !strings.Contains(string(b), `"payload_too_large"`) {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, b)
		}
	}
}

// TestStreamsPerOrg: an organization holds at most limits.streams_per_org
// streams open at once; one more is refused (429, Retry-After) while
// another organization still streams, and a closed stream frees its slot.
func TestStreamsPerOrg(t *testing.T) {
	t.Parallel()
	cfg := strings.Replace(robustConfig, "orgs:\n", "limits:\n  streams_per_org: 1\norgs:\n  globex:\n    providers:\n      slowkit: {enabled: true}\n", 1)
	tg := harness.Start(t, cfg)
	open := func(org string) (*http.Response, error) {
		body := map[string]any{"model": "slowkit/test", "voice": "alpha", "text": strings.Repeat("word ", 40),
			"providerOptions": map[string]any{"slow_stream_ms": 200}}
		req, _ := http.NewRequest("POST", tg.Base+"/v1/audio/speech/stream", bytes.NewReader(harness.MustJSON(body)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tg.Keys[org])
		return tg.Client.Do(req)
	}
	first, err := open("acme")
	if err != nil || first.StatusCode != 200 {
		t.Fatalf("first stream: %v %v", first, err)
	}
	if _, err := first.Body.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	r := tg.Do("POST", "/v1/audio/speech/stream", "acme", map[string]any{"model": "slowkit/test", "voice": "alpha", "text": "second"})
	p := r.Problem(t, 429, "rate_limited")
	if r.Header.Get("Retry-After") == "" || !strings.Contains(p.Detail, "streams_per_org") {
		t.Errorf("refusal: Retry-After %q, detail %q", r.Header.Get("Retry-After"), p.Detail)
	}
	// Clips are not streams: acme still gets them.
	if r := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "slowkit/test", "voice": "alpha", "text": "a clip"}); r.Status != 200 {
		t.Errorf("a clip while the stream is open: %d %s", r.Status, r.Body)
	}
	// Another organization streams meanwhile.
	other, err := open("globex")
	if err != nil || other.StatusCode != 200 {
		t.Fatalf("globex's stream: %v %v", other, err)
	}
	other.Body.Close()
	// The first stream ends (its client leaves): its slot is free again.
	first.Body.Close()
	harness.WaitFor(t, "acme's stream slot", func() bool {
		resp, err := open("acme")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return resp.StatusCode == 200
	})
}

// TestChunkedBodyHeldToTheLimit: a chunked body past the limit costs the
// gateway no more than the limit before its 413. fasthttp, reading such a
// body itself, grew one buffer to the next power of two and copied it at
// every step: about 2.7 times this limit allocated (and 1.5 times held at
// once) before it refused the body.
func TestChunkedBodyHeldToTheLimit(t *testing.T) {
	// Not parallel: it reads the process's allocations (runtime.MemStats).
	const limit = 3 << 19 // 1.5 MiB: not a power of two, a doubling buffer's worst case
	tg := harness.Start(t, strings.Replace(robustConfig, "  write_timeout: 1s\n", fmt.Sprintf("  write_timeout: 1s\n  max_body_bytes: %d\n", limit), 1))
	c := rawConn(t, tg, "")
	chunk := []byte(fmt.Sprintf("8000\r\n%s\r\n", strings.Repeat(" ", 0x8000)))
	head := "POST /v1/voices HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\nAuthorization: Bearer " + tg.Keys["acme"] + "\r\n\r\n"

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	go func() {
		// 4 MiB, written from one buffer so that the client allocates
		// next to nothing; the writes fail once the gateway has closed.
		if _, err := io.WriteString(c, head); err != nil {
			return
		}
		for range (4 << 20) / 0x8000 {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	}()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	status := make([]byte, 12)
	if _, err := io.ReadFull(c, status); err != nil || string(status) != "HTTP/1.1 413" {
		t.Fatalf("answer %q, %v", status, err)
	}
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("allocated while refusing the body: %.2f MiB (limit %.2f MiB)", float64(alloc)/(1<<20), float64(limit)/(1<<20))
	if alloc > limit*5/4 {
		t.Errorf("the refused body cost %.2f MiB of allocations, the limit is %.2f MiB (want at most 1.25x)",
			float64(alloc)/(1<<20), float64(limit)/(1<<20))
	}
}

// TestBodiesShareAConnection: the gateway reads bodies itself (body.go),
// so a body that is not read to its end would be taken for the next
// request. Three requests on one connection, one small, one larger than
// what fasthttp reads with the headers, one chunked, and a GET: each is
// answered in turn.
func TestBodiesShareAConnection(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, robustConfig)
	body := func(pad int) string {
		return `{"model":"testkit/test","voice":"alpha","text":"hi"` + strings.Repeat(" ", pad) + `}`
	}
	auth := "Host: x\r\nContent-Type: application/json\r\nAuthorization: Bearer " + tg.Keys["acme"] + "\r\n"
	small, large := body(0), body(20<<10)
	var chunked strings.Builder
	for rest := body(10 << 10); rest != ""; {
		n := min(len(rest), 3000)
		fmt.Fprintf(&chunked, "%x\r\n%s\r\n", n, rest[:n])
		rest = rest[n:]
	}
	chunked.WriteString("0\r\n\r\n")
	raw := fmt.Sprintf("POST /v1/audio/speech HTTP/1.1\r\n%sContent-Length: %d\r\n\r\n%s", auth, len(small), small) +
		fmt.Sprintf("POST /v1/audio/speech HTTP/1.1\r\n%sContent-Length: %d\r\n\r\n%s", auth, len(large), large) +
		fmt.Sprintf("POST /v1/audio/speech HTTP/1.1\r\n%sTransfer-Encoding: chunked\r\n\r\n%s", auth, chunked.String()) +
		"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
	c := rawConn(t, tg, raw)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	for i, want := range []string{"small", "large", "chunked", "healthz"} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d (%s): %v", i, want, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d %s", want, resp.StatusCode, b)
		}
	}
}

// TestBodyThatStopsArriving: a body that stops before its end is answered
// with 408 read_timeout once server.read_timeout has passed, and the
// connection is closed.
func TestBodyThatStopsArriving(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, strings.Replace(robustConfig, "  write_timeout: 1s\n", "  write_timeout: 1s\n  read_timeout: 1s\n", 1))
	for _, tc := range []struct{ name, raw string }{
		{"content-length", "POST /v1/voices HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer " + tg.Keys["acme"] + "\r\nContent-Length: 20000\r\n\r\n" + strings.Repeat(" ", 9000)},
		{"chunked", "POST /v1/voices HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer " + tg.Keys["acme"] + "\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{\"a\":1,         \r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := rawExchange(t, tg, tc.raw, 1500*time.Millisecond)
			if !strings.HasPrefix(got, "HTTP/1.1 408 ") || !strings.Contains(got, `"code":"read_timeout"`) || !strings.Contains(got, "Connection: close") {
				t.Errorf("a stalled body answered %q", got)
			}
		})
	}
}

// TestBodyMemoryIsShared: server.max_body_memory bounds the bodies held at
// once over all connections, limits.body_memory_per_org one
// organization's. Clients that send most of a large body and stall hold
// their share: one more large body of the same organization is refused
// with a 429, with a length or chunked, while another organization's is
// served; once the total is held, a large body gets a 503. A small
// request (its body arrives with its headers) is served throughout, and
// when the stalled clients go their share comes back.
func TestBodyMemoryIsShared(t *testing.T) {
	t.Parallel()
	cfg := strings.Replace(robustConfig, "  write_timeout: 1s\n",
		"  write_timeout: 1s\n  max_body_bytes: 65536\n  max_body_memory: 196608\n", 1)
	cfg = strings.Replace(cfg, "orgs:\n", "limits:\n  max_media_bytes: 32768\n  body_memory_per_org: 131072\norgs:\n  globex:\n    providers:\n      testkit: {enabled: true}\n", 1)
	tg := harness.Start(t, cfg)
	var stalled []net.Conn
	stall := func(org string) {
		t.Helper()
		head := "POST /v1/voices HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer " + tg.Keys[org] + "\r\nContent-Length: 60000\r\n\r\n"
		stalled = append(stalled, rawConn(t, tg, head+strings.Repeat(" ", 20000)))
	}
	held := func(want float64) {
		t.Helper()
		harness.WaitFor(t, fmt.Sprintf("%v bytes of bodies held", want), func() bool { return tg.MetricValue("voxgate_http_body_bytes_held") == want })
	}
	large := `{"title":"` + strings.Repeat("x", 20000) + `"}`
	post := func(org string, chunked bool) *http.Response {
		t.Helper()
		var body io.Reader = strings.NewReader(large)
		if chunked {
			body = io.MultiReader(body) // no length: net/http sends it chunked
		}
		req, _ := http.NewRequest("POST", tg.Base+"/v1/voices", body)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tg.Keys[org])
		resp, err := tg.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	refused := func(status int) bool { return status == 429 || status == 503 }

	stall("acme")
	stall("acme")
	held(120000)
	for _, chunked := range []bool{false, true} {
		if resp := post("acme", chunked); resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
			t.Errorf("acme's large body (chunked %v) past its share: %d, Retry-After %q", chunked, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	if resp := post("globex", false); refused(resp.StatusCode) {
		t.Errorf("globex's large body while acme holds its share: %d", resp.StatusCode)
	}
	stall("globex")
	held(180000)
	if resp := post("globex", false); resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a large body past the memory for bodies: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if r := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "small"}); r.Status != 200 {
		t.Errorf("a small request meanwhile: %d %s", r.Status, r.Body)
	}
	if org, all := tg.MetricValue("voxgate_http_bodies_refused_total", "limit", "body_memory_per_org"),
		tg.MetricValue("voxgate_http_bodies_refused_total", "limit", "max_body_memory"); org != 2 || all != 1 {
		t.Errorf("bodies refused: %v past the share, %v past the total; want 2 and 1", org, all)
	}

	for _, c := range stalled {
		c.Close()
	}
	held(0)
	// The body is read now: the answer is the handler's (a title is not a
	// voice), not a refusal.
	if resp := post("acme", true); refused(resp.StatusCode) {
		t.Errorf("a large body after the stalled clients left: %d", resp.StatusCode)
	}
	if got := tg.MetricValue("voxgate_http_body_bytes_held"); got != 0 {
		t.Errorf("after every request ended, %v bytes of bodies are still counted", got)
	}
}

// TestLargeBodyNeedsAKey: a body larger than what arrives with the
// headers is read only for a client that holds a key (or a dashboard
// session), so one without cannot make the gateway read and hold large
// bodies: it gets the 401 of the route's dialect at once, nothing is
// counted against server.max_body_memory, and the connection is closed.
// A small body is read with its headers and the route answers as ever.
func TestLargeBodyNeedsAKey(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.ESpeakConfig)
	large := `{"title":"` + strings.Repeat("x", 20000) + `"}`
	send := func(path, body string, chunked bool, hdr ...string) (*http.Response, []byte) {
		t.Helper()
		var r io.Reader = strings.NewReader(body)
		if chunked {
			r = io.MultiReader(r) // no length: sent chunked
		}
		req, _ := http.NewRequest("POST", tg.Base+path, r)
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := tg.Client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	for _, tc := range []struct {
		name, path string
		chunked    bool
		hdr        []string
		code       string // in the body: voxgate's problem or the dialect's error
	}{
		{name: "no key", path: "/v1/voices", code: `"code":"unauthorized"`},
		{name: "no key, chunked", path: "/v1/voices", chunked: true, code: `"code":"unauthorized"`},
		{name: "a wrong key", path: "/v1/voices", hdr: []string{"Authorization", "Bearer vxk_wrongwrongwrongwrongwrongwrongwrongwrongwro"}, code: `"code":"unauthorized"`},
		// The OpenAI dialect shares this route and is told apart by the
		// body, which is not read: voxgate's shape. (OpenAI's own limit
		// of 4,096 characters keeps its bodies under 8 KiB but for rare
		// escaped text.)
		{name: "the speech route", path: "/v1/audio/speech", code: `"code":"unauthorized"`},
		{name: "ElevenLabs dialect, wrong xi-api-key", path: "/elevenlabs/v1/text-to-speech/en", hdr: []string{"xi-api-key", "nope"}, code: `"status":"`},
		{name: "dashboard without a session", path: "/ui/api/v1/voices", code: `"code":"unauthorized"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := send(tc.path, large, tc.chunked, tc.hdr...)
			if resp.StatusCode != 401 || !strings.Contains(string(b), tc.code) || !resp.Close {
				t.Errorf("%d (connection close %v) %s", resp.StatusCode, resp.Close, b)
			}
		})
	}
	if got := tg.MetricValue("voxgate_http_body_bytes_held"); got != 0 {
		t.Errorf("%v bytes of bodies counted", got)
	}
	// With a key, the body is read and the route answers (a title is not
	// a voice).
	if resp, b := send("/v1/voices", large, true, "Authorization", "Bearer "+tg.Keys["acme"]); resp.StatusCode == 401 || resp.StatusCode/100 != 4 {
		t.Errorf("with a key: %d %s", resp.StatusCode, b)
	}
	// The dashboard's session and CSRF header are its key.
	u := harness.NewUIClient(tg)
	u.SignIn(t, tg.Keys["acme"])
	if r := u.Do("POST", "/ui/api/v1/voices", large); r.Status != 403 || !strings.Contains(string(r.Body), "csrf_failed") {
		t.Errorf("a session without its CSRF header: %d %s", r.Status, r.Body)
	}
	if r := u.Do("POST", "/ui/api/v1/voices", large, "X-CSRF-Token", u.CSRF); r.Status == 401 || r.Status == 403 || r.Status/100 != 4 {
		t.Errorf("a session with its CSRF header: %d %s", r.Status, r.Body)
	}
	// A small body without a key is the route's own 401, on a connection
	// that stays open.
	if resp, b := send("/v1/voices", `{"title":"x"}`, false); resp.StatusCode != 401 || resp.Close {
		t.Errorf("a small body without a key: %d (close %v) %s", resp.StatusCode, resp.Close, b)
	}
}
