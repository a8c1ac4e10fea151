package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/valyala/fasthttp"
)

// The floor relay is what any gateway built on voxgate's HTTP stack pays
// before doing anything of its own: a fasthttp server whose one handler
// sends the request on with a fasthttp client (keep-alive connections,
// the answer streamed) and relays the answer as it comes, in a process of
// its own (this binary, re-run as `voxbench floor-relay UPSTREAM`). The
// time-to-first-byte phase measures it beside nginx and the gateway, so
// that the gateway's figure splits into what the stack (Go's runtime,
// fasthttp) costs over nginx and what voxgate's own work adds on top.
//
// It does what the gateway does to get the first audio out in one write
// (a write buffer that holds the headers and a provider's first 4,800
// bytes) and nothing a gateway must do besides: no authentication, no
// validation, no request log. The clients phase runs a second one in
// front of the clip fake, for the CPU per clip request of a bare relay.

// floorRelayCmd is the hidden subcommand that serves the floor relay;
// floorClipsCmd serves one that relays whole answers instead (read to
// their end, then written at once, as the gateway answers a clip).
const (
	floorRelayCmd = "floor-relay"
	floorClipsCmd = "floor-relay-clips"
)

// floorProc is a running floor relay.
type floorProc struct {
	*child
	addr string
}

// startFloor starts a floor relay in front of upstream (host:port):
// streaming the answers, or relaying them whole (clips).
func startFloor(upstream string, clips bool) (*floorProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := floorRelayCmd
	if clips {
		cmd = floorClipsCmd
	}
	c, addr, err := startChild(self, cmd, upstream)
	if err != nil {
		return nil, fmt.Errorf("floor relay: %w", err)
	}
	logf("floor relay (pid %d): %s -> %s", c.cmd.Process.Pid, addr, upstream)
	return &floorProc{child: c, addr: addr}, nil
}

// serveFloor is the floor-relay process: it prints its address and
// relays to upstream until stdin closes, streaming each answer or, with
// clips, relaying it whole.
func serveFloor(upstream string, clips bool) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	// 64 KiB reads, as the gateway reads a whole clip (dispatch's
	// clipReadBuf); a stream's first piece is read as it comes either way.
	hc := &fasthttp.HostClient{Addr: upstream, MaxConns: 512, ReadBufferSize: 64 << 10,
		MaxIdleConnDuration: time.Minute, NoDefaultUserAgentHeader: true}
	srv := &fasthttp.Server{
		WriteBufferSize: 16 << 10,
		Handler: func(ctx *fasthttp.RequestCtx) {
			req := fasthttp.AcquireRequest()
			ctx.Request.CopyTo(req)
			req.SetHost(upstream)
			resp := fasthttp.AcquireResponse()
			resp.StreamBody = !clips
			err := hc.Do(req, resp)
			fasthttp.ReleaseRequest(req)
			if err != nil {
				fasthttp.ReleaseResponse(resp)
				ctx.Error(err.Error(), fasthttp.StatusBadGateway)
				return
			}
			ctx.SetStatusCode(resp.StatusCode())
			ctx.Response.Header.SetContentTypeBytes(resp.Header.ContentType())
			if clips {
				// The whole answer, swapped in without a copy and written
				// with the headers through one buffered writer.
				resp.SwapBody(ctx.Response.SwapBody(resp.SwapBody(nil)))
				fasthttp.ReleaseResponse(resp)
				return
			}
			// fasthttp writes the body as it reads it, one flushed chunk
			// a read, and closes it (releasing the upstream connection)
			// when done; resp goes back to its pool with it.
			ctx.SetBodyStream(&floorBody{resp: resp}, -1)
		},
	}
	go func() { _ = srv.Serve(ln) }()
	if _, err := fmt.Println(ln.Addr().String()); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	return srv.Shutdown()
}

// floorBody relays an upstream answer's body and releases the answer when
// fasthttp closes it.
type floorBody struct{ resp *fasthttp.Response }

func (b *floorBody) Read(p []byte) (int, error) { return b.resp.BodyStream().Read(p) }

func (b *floorBody) Close() error {
	_ = b.resp.CloseBodyStream()
	fasthttp.ReleaseResponse(b.resp)
	return nil
}
