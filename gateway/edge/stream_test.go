package edge

import (
	"io"
	"testing"

	"github.com/valyala/fasthttp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/voxgate/voxgate/gateway/observe/metrics"
)

// countingReader is a streamed body that counts its reads.
type countingReader struct{ reads int }

func (r *countingReader) Read(p []byte) (int, error) {
	r.reads++
	if r.reads > 1 {
		return 0, io.EOF
	}
	return copy(p, "audio"), nil
}

// TestEdgeLeavesStreamsUnread guards the streaming path: the edge runs
// after the handler and before fasthttp writes the response, so anything
// it reads from a streamed body (Response.Body() drains the stream) is
// held back from the client until the stream has ended.
func TestEdgeLeavesStreamsUnread(t *testing.T) {
	for _, accessLog := range []bool{true, false} {
		core, logs := observer.New(zap.InfoLevel)
		s := &Server{log: zap.New(core), metrics: metrics.New(), accessLog: accessLog}
		body := &countingReader{}
		h := s.edge(func(ctx *fasthttp.RequestCtx) {
			ctx.SetStatusCode(fasthttp.StatusOK)
			ctx.SetBodyStream(body, -1)
		})
		var ctx fasthttp.RequestCtx
		ctx.Request.Header.SetMethod("POST")
		ctx.Request.SetRequestURI("/v1/audio/speech/stream")
		h(&ctx)
		if body.reads != 0 {
			t.Errorf("access_log %v: the edge read the streamed body %d times before the response was written", accessLog, body.reads)
		}
		if !ctx.Response.IsBodyStream() || ctx.Response.StatusCode() != 200 {
			t.Errorf("access_log %v: status %d, stream %v", accessLog, ctx.Response.StatusCode(), ctx.Response.IsBodyStream())
		}
		if lines := logs.FilterMessage("request").All(); accessLog && (len(lines) != 1 || lines[0].ContextMap()["bytes"] != int64(-1)) {
			t.Errorf("access log %v, want one line with bytes -1", lines)
		}
		ctx.Response.Reset()
	}
}
