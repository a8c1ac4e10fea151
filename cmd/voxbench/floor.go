package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"syscall"
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
// validation, no request log.

// floorRelayCmd is the hidden subcommand that serves the floor relay.
const floorRelayCmd = "floor-relay"

// floorProc is a running floor relay.
type floorProc struct {
	addr  string
	cmd   *exec.Cmd
	stdin io.Closer
}

// startFloor starts a floor relay in front of upstream (host:port).
func startFloor(upstream string) (*floorProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, floorRelayCmd, upstream)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the floor relay: %w", err)
	}
	f := &floorProc{cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		f.stop()
		return nil, fmt.Errorf("floor relay did not start: %w", err)
	}
	f.addr = strings.TrimSpace(line)
	logf("floor relay (pid %d): %s -> %s", cmd.Process.Pid, f.addr, upstream)
	return f, nil
}

// stop ends the floor relay: it exits when its stdin closes.
func (f *floorProc) stop() {
	_ = f.stdin.Close()
	done := make(chan struct{})
	go func() { _ = f.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = f.cmd.Process.Kill()
		<-done
	}
}

// serveFloor is the floor-relay process: it prints its address and
// relays to upstream until stdin closes.
func serveFloor(upstream string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hc := &fasthttp.HostClient{Addr: upstream, MaxConns: 512, ReadBufferSize: 16 << 10,
		MaxIdleConnDuration: time.Minute, NoDefaultUserAgentHeader: true}
	srv := &fasthttp.Server{
		WriteBufferSize: 16 << 10,
		Handler: func(ctx *fasthttp.RequestCtx) {
			req := fasthttp.AcquireRequest()
			ctx.Request.CopyTo(req)
			req.SetHost(upstream)
			resp := fasthttp.AcquireResponse()
			resp.StreamBody = true
			err := hc.Do(req, resp)
			fasthttp.ReleaseRequest(req)
			if err != nil {
				fasthttp.ReleaseResponse(resp)
				ctx.Error(err.Error(), fasthttp.StatusBadGateway)
				return
			}
			ctx.SetStatusCode(resp.StatusCode())
			ctx.Response.Header.SetContentTypeBytes(resp.Header.ContentType())
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
