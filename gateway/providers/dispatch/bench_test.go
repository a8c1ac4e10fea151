package dispatch

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/sdk"
)

// benchUpstream serves body to every request from an in-process fasthttp
// server on loopback (which allocates nothing per request, so the
// benchmark's allocations are the client's), and returns a plan for it.
func benchUpstream(b *testing.B, c *Client, body []byte, chunked bool) *Planned {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) {
		ctx.SetContentType("audio/pcm")
		if chunked {
			ctx.SetBodyStream(&chunks{b: body}, -1)
			return
		}
		ctx.Response.SetBodyRaw(body)
	}}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Shutdown() })
	p, err := c.Plan(context.Background(), "prov", planning(&sdk.Plan{
		Method: "POST", URL: "http://" + ln.Addr().String() + "/v1/audio/speech",
		Header: map[string]string{"Authorization": "Bearer sk-bench", "Content-Type": "application/json", "Accept": "application/octet-stream"},
		Body:   []byte(`{"model":"tts-1","input":"` + sdk.PlanText + `","voice":"alloy","response_format":"pcm"}`), MediaType: "audio/pcm;rate=24000",
		FrameSize: 2, MaxAttempts: 2, ReuseFor: 1 << 62,
	}), baseRequest(), chunked, time.Time{})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// chunks is a body written as 16 KiB chunks, as providers stream audio.
type chunks struct{ b []byte }

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 16<<10)], c.b)
	c.b = c.b[n:]
	return n, nil
}

// BenchmarkFetch is one planned clip through Fetch: the request built from
// the plan and sent, and a 144 KB answer read and released.
func BenchmarkFetch(b *testing.B) {
	c, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	p := benchUpstream(b, c, make([]byte, 144000), false)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		body, release, err := c.Fetch(ctx, p, "The quick brown fox jumps over the lazy dog, twice.", nil)
		if err != nil || len(body) != 144000 {
			b.Fatalf("%d bytes, %v", len(body), err)
		}
		release()
	}
}

// BenchmarkOpen is one planned stream through Open: a 144 KB answer in
// 16 KiB chunks read with Next to its end, and closed.
func BenchmarkOpen(b *testing.B) {
	c, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	p := benchUpstream(b, c, make([]byte, 144000), true)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		body, err := c.Open(ctx, p, "The quick brown fox jumps over the lazy dog, twice.", nil)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			chunk, err := body.Next()
			n += len(chunk)
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		body.Close()
		if n != 144000 {
			b.Fatalf("%d bytes", n)
		}
	}
}
