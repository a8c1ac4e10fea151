package dispatch

import (
	"io"
	"net"
	"sync/atomic"

	"github.com/valyala/fasthttp"
)

// peerConn is a connection to a provider that remembers whether the
// provider closed it: a read returned io.EOF.
//
// It exists for one case fasthttp's streamed body reader gets wrong
// (v1.74, requestStream.Read): a chunked answer whose connection ends
// exactly where the next chunk's size line would start is reported as
// a normal end (io.EOF), so a provider that died between two chunks
// would look like a stream that finished, and the audio it never sent
// like audio that does not exist. A properly ended chunked body is read
// to its last zero-size chunk and its trailer and no further, so the
// reader never meets the connection's end; meeting it before the body
// ended means the last chunk never came (Body.Next).
//
// Hand-written because fasthttp exposes neither the connection behind a
// streamed body nor how the body ended; the answer's LocalAddr (which
// fasthttp takes from the connection, through a TLS connection too) is
// how a Body finds its connection: peerAddr points back to it.
type peerConn struct {
	net.Conn
	closed atomic.Bool
	addr   peerAddr
}

// peerAddr is a peerConn's local address, carrying the connection.
type peerAddr struct {
	net.Addr
	c *peerConn
}

// trackPeer wraps a dialled connection (nil with err).
func trackPeer(c net.Conn, err error) (net.Conn, error) {
	if err != nil {
		return nil, err
	}
	t := &peerConn{Conn: c}
	t.addr = peerAddr{Addr: c.LocalAddr(), c: t}
	return t, nil
}

func (c *peerConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err == io.EOF {
		c.closed.Store(true)
	}
	return n, err
}

// LocalAddr returns the connection's address, which leads back to it.
func (c *peerConn) LocalAddr() net.Addr { return &c.addr }

// closedByPeer reports whether the provider closed resp's connection
// while its body was being read; false when it cannot tell.
func closedByPeer(resp *fasthttp.Response) bool {
	a, ok := resp.LocalAddr().(*peerAddr)
	return ok && a.c.closed.Load()
}
