package gateway_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
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
func readStream(t *testing.T, tg *testGateway, body map[string]any) (int, []byte, error) {
	t.Helper()
	req, _ := http.NewRequest("POST", tg.base+"/v1/audio/speech/stream", bytes.NewReader(mustJSON(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tg.keys["acme"])
	resp, err := tg.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// TestStreamFailureIsNotACompleteResponse: once a stream's status line is
// out, a failure can only end the body; it must end it as incomplete (no
// terminating chunk), so that curl, fetch and every HTTP client see a
// broken transfer instead of a shorter clip, and the log row says why.
func TestStreamFailureIsNotACompleteResponse(t *testing.T) {
	tg := startGateway(t, robustConfig)
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
			row := tg.lastLog("acme")
			if row.ErrorCode != tt.code || row.Status != 200 {
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
	if row := tg.lastLog("acme"); row.ErrorCode != "" {
		t.Errorf("the complete stream's row has error %q", row.ErrorCode)
	}
}

// TestPluginFailureSaysWhatNotWhere: a plugin that dies under a call gives
// 503 provider_unavailable whose detail says what failed, never where the
// plugin listens (its socket path) or gRPC's internals.
func TestPluginFailureSaysWhatNotWhere(t *testing.T) {
	tg := startGateway(t, robustConfig)
	r := tg.do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "crash now",
		"providerOptions": map[string]any{"crash": true}})
	p := r.problem(t, 503, "provider_unavailable")
	for _, leak := range []string{"unix", "/tmp", "sock", "dial", "transport", "rpc error"} {
		if strings.Contains(strings.ToLower(p.Detail), leak) {
			t.Errorf("the detail %q shows %q", p.Detail, leak)
		}
	}
	if !strings.Contains(p.Detail, "not reachable") {
		t.Errorf("the detail %q does not say the plugin is unreachable", p.Detail)
	}
}
