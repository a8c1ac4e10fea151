package edge

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/observe/metrics"
)

// TestEdgeRecoversPanics checks a panicking handler yields a 500 problem,
// is counted, and leaves the server serving.
func TestEdgeRecoversPanics(t *testing.T) {
	s := &Server{log: zap.NewNop(), metrics: metrics.New()}
	h := s.edge(func(ctx *fasthttp.RequestCtx) {
		ctx.SetBodyString("half a respo")
		panic("boom")
	})
	for i := 0; i < 2; i++ {
		var ctx fasthttp.RequestCtx
		ctx.Request.SetRequestURI("/v1/anything")
		h(&ctx)
		if ctx.Response.StatusCode() != 500 || string(ctx.Response.Header.ContentType()) != "application/problem+json" {
			t.Fatalf("status %d type %s", ctx.Response.StatusCode(), ctx.Response.Header.ContentType())
		}
		var p struct{ Code, Detail string }
		if err := json.Unmarshal(ctx.Response.Body(), &p); err != nil || p.Code != "internal_error" {
			t.Fatalf("body %s", ctx.Response.Body())
		}
	}
}

func parsedHeader(tb testing.TB, raw string) *fasthttp.RequestHeader {
	tb.Helper()
	var req fasthttp.Request
	if err := req.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
		tb.Fatal(err)
	}
	return &req.Header
}

func TestAmbiguousLength(t *testing.T) {
	tests := []struct {
		name, raw string
		want      bool
	}{
		{"content-length", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", false},
		{"chunked", "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", false},
		{"both", "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", true},
		{"both, other case and order", "POST / HTTP/1.1\r\nHost: x\r\ntransfer-encoding: chunked\r\nCONTENT-LENGTH: 5\r\n\r\n0\r\n\r\n", true},
		{"none", "GET / HTTP/1.1\r\nHost: x\r\n\r\n", false},
	}
	for _, tt := range tests {
		if got := ambiguousLength(parsedHeader(t, tt.raw)); got != tt.want {
			t.Errorf("%s: ambiguousLength = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// BenchmarkAmbiguousLength is the check every request pays (hot path).
func BenchmarkAmbiguousLength(b *testing.B) {
	h := parsedHeader(b, "POST /v1/audio/speech HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: node\r\nAccept: */*\r\n"+
		"Authorization: Bearer vxk_0123456789012345678901234567890123456789012\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
	b.ReportAllocs()
	for b.Loop() {
		if ambiguousLength(h) {
			b.Fatal("ambiguous")
		}
	}
}

// TestRateLimitClasses: routes that spend provider calls count against the
// synthesis limit, reads against the reads limit.
func TestRateLimitClasses(t *testing.T) {
	for route, synth := range map[string]bool{
		"speech": true, "speech.stream": true, "speech.elevenlabs.timestamps": true,
		"conversation": true, "conversation.stream": true, "apikeys.put": true,
		"voices.list": false, "voices.create": false, "logs.get": false, "usage": false, "apikeys.delete": false,
		"quote.speech": false, "quote.conversation": false, // quotes make no audio: reads
	} {
		if got := isSynthesis(route); got != synth {
			t.Errorf("isSynthesis(%q) = %v, want %v", route, got, synth)
		}
	}
}

// TestHasNoCache: Cache-Control and Pragma directives are matched whole,
// case-insensitively, anywhere in the list.
func TestHasNoCache(t *testing.T) {
	for _, tt := range []struct {
		h    string
		want bool
	}{
		{"", false},
		{"no-cache", true},
		{"max-age=0, no-store", true},
		{" No-Cache ", true},
		{"no-cachex", false},
		{"x-no-cache", false},
		{"private,no-cache,", true},
		{",,", false},
		{"max-age=60", false},
	} {
		if got := hasNoCache([]byte(tt.h)); got != tt.want {
			t.Errorf("hasNoCache(%q) = %v, want %v", tt.h, got, tt.want)
		}
	}
}
