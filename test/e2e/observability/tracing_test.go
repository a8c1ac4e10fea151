package observability

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// otlpReceiver is an in-process OTLP/HTTP trace receiver: what a
// collector does with the gateway's exports, minus the forwarding.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want POST /v1/traces, application/x-protobuf", http.StatusBadRequest)
			return
		}
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		var ex coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &ex); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range ex.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				r.spans = append(r.spans, ss.GetSpans()...)
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *otlpReceiver) all() []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.spans...)
}

// attr returns a span attribute's value as text ("" when absent).
func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() != key {
			continue
		}
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			return v.StringValue
		case *commonpb.AnyValue_IntValue:
			return strconv.FormatInt(v.IntValue, 10)
		}
	}
	return ""
}

// TestTracesExportedOverOTLP runs requests through the real gateway with
// tracing on, and reads what arrives at an OTLP receiver: one server span
// per request (continuing the caller's traceparent), with children for
// moderation, the provider call (GenAI attributes; through the plugin, or
// sent by the gateway with an upstream HTTP span), and audio processing.
func TestTracesExportedOverOTLP(t *testing.T) {
	t.Parallel()
	rcv := newOTLPReceiver(t)
	oai := openai.New(t, fakeupstream.Options{})
	tg := harness.Start(t, `
server:
  listen: 127.0.0.1:0
storage:
  path: %DIR%/voxgate.db
plugins:
  dir: %BIN%/plugins
tracing:
  endpoint: `+rcv.URL+`
  service_name: voxgate-test
providers:
  testkit:
    plugin: %BIN%/testplugins/voxgate-testplugin
    managed: true
  openai:
    plugin: voxgate-openai
    base_url: `+oai.BaseURL()+`
    api_key: `+openai.Key+`
    managed: true
orgs:
  acme:
    moderation: standard
    providers:
      testkit: {enabled: true}
      openai: {enabled: true}
moderation:
  rulesets:
    standard:
      checks:
        - builtin: {}
`)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	const parentID = "00f067aa0ba902b7"
	r := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "Traced words.", "volumeDbfs": -20},
		"traceparent", "00-"+traceID+"-"+parentID+"-01")
	if r.Status != 200 {
		t.Fatalf("plugin request: %d %s", r.Status, r.Body)
	}
	if r := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "Sent by the gateway."}); r.Status != 200 {
		t.Fatalf("planned request: %d %s", r.Status, r.Body)
	}
	if r := tg.Do("POST", "/v1/audio/speech/stream", "acme", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "one two three",
		"providerOptions": map[string]any{"slow_stream_ms": 100}}); r.Status != 200 {
		t.Fatalf("stream: %d %s", r.Status, r.Body)
	}
	// Shutdown flushes what is still batched.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tg.Core.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	spans := rcv.all()
	byID := map[string]*tracepb.Span{}
	for _, s := range spans {
		byID[hex.EncodeToString(s.GetSpanId())] = s
	}
	find := func(name string, where func(*tracepb.Span) bool) *tracepb.Span {
		t.Helper()
		for _, s := range spans {
			if s.GetName() == name && (where == nil || where(s)) {
				return s
			}
		}
		var names []string
		for _, s := range spans {
			names = append(names, s.GetName())
		}
		t.Fatalf("no span %q among %v", name, names)
		return nil
	}
	parentOf := func(s *tracepb.Span) *tracepb.Span { return byID[hex.EncodeToString(s.GetParentSpanId())] }

	// The plugin request: a server span continuing the caller's trace.
	root := find("POST /v1/audio/speech", func(s *tracepb.Span) bool { return hex.EncodeToString(s.GetTraceId()) == traceID })
	if root.GetKind() != tracepb.Span_SPAN_KIND_SERVER || hex.EncodeToString(root.GetParentSpanId()) != parentID {
		t.Errorf("server span: kind %v parent %x, want SERVER under the caller's %s", root.GetKind(), root.GetParentSpanId(), parentID)
	}
	if attr(root, "http.request.method") != "POST" || attr(root, "url.path") != "/v1/audio/speech" || attr(root, "voxgate.request_id") != r.Header.Get("X-Request-Id") ||
		attr(root, "http.route") != "/v1/audio/speech" || attr(root, "voxgate.route") != "speech" {
		t.Errorf("server span attributes: %v", root.GetAttributes())
	}
	// The access log line of the request carries its trace id.
	var logged bool
	for _, e := range tg.Logs.FilterMessage("request").All() {
		f := e.ContextMap()
		if f["request_id"] == r.Header.Get("X-Request-Id") {
			logged = true
			if f["trace_id"] != traceID {
				t.Errorf("access log line %v: trace_id %v, want %s", f, f["trace_id"], traceID)
			}
		}
	}
	if !logged {
		t.Error("no access log line for the traced request")
	}
	inTrace := func(s *tracepb.Span) bool { return bytes.Equal(s.GetTraceId(), root.GetTraceId()) }
	mod := find("moderation", inTrace)
	call := find("generate_content test", inTrace)
	proc := find("audio.process", inTrace)
	for _, s := range []*tracepb.Span{mod, call, proc} {
		if p := parentOf(s); p == nil || p != root && parentOf(p) != root {
			t.Errorf("span %s is not under the request's server span", s.GetName())
		}
	}
	if attr(mod, "voxgate.moderation.ruleset") != "standard" || attr(mod, "voxgate.moderation.decision") == "" {
		t.Errorf("moderation span attributes: %v", mod.GetAttributes())
	}
	if call.GetKind() != tracepb.Span_SPAN_KIND_CLIENT || attr(call, "gen_ai.provider.name") != "testkit" || attr(call, "gen_ai.request.model") != "test" ||
		attr(call, "gen_ai.operation.name") != "generate_content" || attr(call, "gen_ai.output.type") != "speech" || attr(call, "voxgate.via") != "plugin" {
		t.Errorf("provider call span: kind %v, attributes %v", call.GetKind(), call.GetAttributes())
	}

	// The planned request: the gateway's own upstream HTTP span under the
	// provider call, with no query string in the URL.
	planned := find("generate_content tts-1", nil)
	if attr(planned, "voxgate.via") != "gateway" || attr(planned, "gen_ai.provider.name") != "openai" {
		t.Errorf("planned call span: %v", planned.GetAttributes())
	}
	up := find("POST", func(s *tracepb.Span) bool { return parentOf(s) == planned })
	if up.GetKind() != tracepb.Span_SPAN_KIND_CLIENT || attr(up, "http.response.status_code") != "200" || !strings.HasPrefix(attr(up, "url.full"), oai.BaseURL()) {
		t.Errorf("upstream span: kind %v, attributes %v", up.GetKind(), up.GetAttributes())
	}
	if p := parentOf(planned); p == nil || p.GetName() != "POST /v1/audio/speech" {
		t.Errorf("the planned call is not under its request's server span")
	}
	t.Logf("%d spans exported", len(spans))

	// The stream's server span lasts the whole stream, and so does its
	// provider call.
	st := find("POST /v1/audio/speech/stream", nil)
	if d := time.Duration(st.GetEndTimeUnixNano() - st.GetStartTimeUnixNano()); d < 200*time.Millisecond {
		t.Errorf("stream server span lasted %v, want the whole stream (>= 200ms)", d)
	}
	sc := find("generate_content test", func(s *tracepb.Span) bool { return bytes.Equal(s.GetTraceId(), st.GetTraceId()) })
	if d := time.Duration(sc.GetEndTimeUnixNano() - sc.GetStartTimeUnixNano()); d < 200*time.Millisecond {
		t.Errorf("stream provider span lasted %v, want the whole stream", d)
	}
}
