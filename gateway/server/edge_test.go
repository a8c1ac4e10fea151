package server

import (
	"encoding/json"
	"testing"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/metrics"
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
