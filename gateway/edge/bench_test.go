package edge

import (
	"context"
	"io"

	"path/filepath"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/zap/zapcore"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/admission/auth"
	"github.com/voxgate/voxgate/gateway/admission/orgs"
	"github.com/voxgate/voxgate/gateway/observe/metrics"
	"github.com/voxgate/voxgate/gateway/observe/tracing"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/records"
	"github.com/voxgate/voxgate/gateway/resources"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/bolt"
	"github.com/voxgate/voxgate/gateway/store/reqlog"
)

// benchServer builds a real server (bbolt file, auth cache, metrics, log
// writer) and returns its outermost handler and a valid key.
func benchServer(b *testing.B) (fasthttp.RequestHandler, string) {
	return benchServerTraced(b, nil)
}

// benchServerTraced is benchServer with tracer (nil: tracing off).
func benchServerTraced(b *testing.B, tracer *tracing.Tracer) (fasthttp.RequestHandler, string) {
	b.Helper()
	opts := Options{
		ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 30 * time.Second,
		RequestTimeout: time.Minute, MaxBodyBytes: 10 << 20, MaxMediaBytes: 10 << 20, MaxTextChars: 5000,
	}
	st, err := bolt.Open(filepath.Join(b.TempDir(), "v.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	a, err := auth.New(context.Background(), st, func(o string) bool { return o == "acme" })
	if err != nil {
		b.Fatal(err)
	}
	key, _, err := a.Create(context.Background(), "acme", "bench")
	if err != nil {
		b.Fatal(err)
	}
	w := reqlog.New(st, reqlog.Options{Logger: zap.NewNop()})
	res := resources.New(resources.Deps{Store: st, CheckRule: func(*store.PronunciationRule) []problem.FieldError { return nil }})
	live := NewLive(LiveDeps{Resources: res})
	s := New(Deps{Options: opts, Logger: zap.NewNop(), Live: live, Records: records.New(st), CursorSecret: st.Secret(), Auth: a, Logs: w,
		Metrics: metrics.New(), Tracer: tracer, Orgs: orgs.New([]orgs.File{{ID: "acme"}})})
	return s.srv.Handler, key
}

// BenchmarkAuthenticatedNoop is the gateway's fixed cost per request: edge
// (request id, metrics), routing, bearer auth against the in-memory key
// table, query validation and a problem+json response, with no storage or
// plugin work (GET /v1/voices?limit=0 is rejected after auth).
func BenchmarkAuthenticatedNoop(b *testing.B) {
	h, key := benchServer(b)
	cases := []struct {
		name, auth string
		want       int
	}{
		{"authenticated_problem", "Bearer " + key, 400},
		{"unauthenticated_401", "Bearer vxk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", 401},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var ctx fasthttp.RequestCtx
			b.ReportAllocs()
			for b.Loop() {
				ctx.Request.Reset()
				ctx.Response.Reset()
				ctx.Request.Header.SetMethod("GET")
				ctx.Request.SetRequestURI("/v1/voices?limit=0")
				ctx.Request.Header.Set("Authorization", c.auth)
				ctx.Request.Header.Set("X-Request-Id", "bench-request")
				h(&ctx)
				if ctx.Response.StatusCode() != c.want {
					b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
				}
				ctx.ResetUserValues()
			}
		})
	}
}

// discard is a span exporter that drops what it is given.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkTracing is the authenticated request of BenchmarkAuthenticatedNoop
// with tracing off (a nil Tracer: the default) and on (every request
// sampled, spans batched to an exporter that drops them). Off must cost
// what the request cost before tracing existed: the same allocations.
func BenchmarkTracing(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		var tr *tracing.Tracer
		if on {
			name = "on"
			tr = tracing.NewWithExporter(discard{}, tracing.Options{})
			b.Cleanup(func() { _ = tr.Shutdown(context.Background()) })
		}
		b.Run(name, func(b *testing.B) {
			h, key := benchServerTraced(b, tr)
			auth := "Bearer " + key
			var ctx fasthttp.RequestCtx
			b.ReportAllocs()
			for b.Loop() {
				ctx.Request.Reset()
				ctx.Response.Reset()
				ctx.Request.Header.SetMethod("GET")
				ctx.Request.SetRequestURI("/v1/voices?limit=0")
				ctx.Request.Header.Set("Authorization", auth)
				ctx.Request.Header.Set("X-Request-Id", "bench-request")
				h(&ctx)
				if ctx.Response.StatusCode() != 400 {
					b.Fatalf("status %d: %s", ctx.Response.StatusCode(), ctx.Response.Body())
				}
				ctx.ResetUserValues()
			}
		})
	}
}

// BenchmarkObserved is the edge's account of a finished request, on the
// path of every request: the HTTP metrics and the access log line, written
// by the JSON encoder the gateway logs with (to io.Discard).
func BenchmarkObserved(b *testing.B) {
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(encCfg), zapcore.AddSync(io.Discard), zap.InfoLevel))
	m := metrics.New()
	s := New(Deps{Options: Options{AccessLog: true}, Logger: log, Metrics: m})
	method, path := []byte("POST"), []byte("/v1/audio/speech")
	s.series("speech")
	start := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		m.InFlight.Inc()
		s.observed(start, "0b0c5d4e-1f2a-4b3c-8d9e-0f1a2b3c4d5e", "speech", "acme", methodName(method), string(path), 200, 144000, "", nil, nil)
	}
}
