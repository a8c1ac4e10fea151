package edge

import (
	"io"
	"testing"
	"time"

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

// deadlineConn records the write deadlines set on it.
type deadlineConn struct{ set []time.Time }

func (c *deadlineConn) SetWriteDeadline(t time.Time) error {
	c.set = append(c.set, t)
	return nil
}

// TestExtendDeadlineOncePerQuarter: a stream moves its write deadline
// only once a quarter of server.write_timeout has passed since it was
// last set, so each write still has at least three quarters of it.
func TestExtendDeadlineOncePerQuarter(t *testing.T) {
	const timeout = time.Hour
	conn := &deadlineConn{}
	cs := &chunkStream{conn: conn, writeTimeout: timeout, armed: time.Now()}
	cs.extendDeadline()
	if len(conn.set) != 0 {
		t.Fatalf("a deadline set just now was moved: %v", conn.set)
	}
	cs.armed = time.Now().Add(-timeout/4 - time.Second)
	before := time.Now()
	cs.extendDeadline()
	if len(conn.set) != 1 || conn.set[0].Before(before.Add(timeout)) {
		t.Fatalf("a deadline set over a quarter of the timeout ago: moved to %v, want one move to at least %v", conn.set, before.Add(timeout))
	}
	cs.extendDeadline()
	if len(conn.set) != 1 {
		t.Fatalf("moved again at once: %v", conn.set)
	}
	// No timeout: never set.
	off := &deadlineConn{}
	(&chunkStream{conn: off}).extendDeadline()
	if len(off.set) != 0 {
		t.Fatalf("set without a write timeout: %v", off.set)
	}
}
