package server

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/problem"
)

// Request bodies are read here, at the edge, rather than by fasthttp: the
// server streams them (fasthttp.Server.StreamRequestBody). fasthttp reads
// a chunked body into one buffer that it grows to the next power of two
// and copies at each step, so a chunked body near the limit briefly held
// about three times the limit before it was refused. Read here, a body
// never costs more than the limit (plus one block) before a 413, and an
// accepted body is held once, at its exact size.

const (
	// prefetchBytes is how much of a body with a Content-Length fasthttp
	// reads together with the headers (readBodyWithStreaming). A body that
	// small is already in the request's pooled buffer; Body moves it into
	// place without allocating, which keeps the common small JSON body off
	// the allocator.
	prefetchBytes = 8 << 10
	// bodyBlock is the size of the pooled blocks a chunked body is read
	// into before its length is known.
	bodyBlock = 32 << 10
)

// errShortBody is a body that ended before its Content-Length.
var errShortBody = errors.New("the body ended before its Content-Length")

// errNoKeyForBody is a body larger than what arrives with the headers,
// sent without a valid key or session; the edge answers it with a 401.
var errNoKeyForBody = errors.New("a large body needs a valid key")

// bodyCredentials checks that the request carries what its route will
// accept as credentials: a valid API key (Authorization, or xi-api-key
// under /elevenlabs) or, under the dashboard's API, a valid session with
// its CSRF header (a failure is the session's own problem). readBody asks
// it before it reads a body past the headers, so a client without a key
// cannot make the gateway read and hold large bodies. Every route that
// takes such a body needs one of these; the route still checks them (and
// the rate limit) itself.
func (s *Server) bodyCredentials(ctx *fasthttp.RequestCtx) error {
	if s.ui != nil && bytes.HasPrefix(ctx.Path(), []byte(uiPrefix+"/")) {
		sess, pe := s.ui.Verify(ctx)
		if pe == nil {
			pe = s.ui.CheckCSRF(ctx, sess)
		}
		if pe != nil {
			return pe
		}
		return nil
	}
	if _, ok := s.authenticate(ctx, pathDialect(ctx)); !ok {
		return errNoKeyForBody
	}
	return nil
}

// bodyBlocks pools the blocks chunked bodies are read into.
type bodyBlocks struct{ pool sync.Pool }

func (b *bodyBlocks) get() *[bodyBlock]byte {
	if v, ok := b.pool.Get().(*[bodyBlock]byte); ok {
		return v
	}
	return new([bodyBlock]byte)
}

// maxBody is the body limit of the route uri names: uploads to /v1/media
// have limits.max_media_bytes (plus the multipart framing), every other
// route server.max_body_bytes, so a route with a small limit never
// reads the largest one's worth of a body.
func (s *Server) maxBody(uri []byte) int {
	if bytes.HasPrefix(uri, []byte("/v1/media")) || bytes.HasPrefix(uri, []byte(uiPrefix+"/v1/media")) {
		return max(s.opts.MaxBodyBytes, s.opts.MaxMediaBytes+multipartSlack)
	}
	return s.opts.MaxBodyBytes
}

// bodyMemory counts the bytes of request bodies held at once, over all
// connections, against server.max_body_memory. A body's limit bounds one
// request; this bounds them together, so that many connections sending
// large bodies (no key is needed to send one) cannot take the process's
// memory. Bodies that arrive with their headers (prefetchBytes) are not
// counted: they live in the connection's buffers, as the headers do.
type bodyMemory struct {
	max     int64 // 0: no bound
	held    atomic.Int64
	refused atomic.Int64
}

// take counts n more bytes held, or reports false (and counts a
// refusal) if that would pass the bound.
func (m *bodyMemory) take(n int) bool {
	if m.held.Add(int64(n)) > m.max && m.max > 0 {
		m.held.Add(-int64(n))
		m.refused.Add(1)
		return false
	}
	return true
}

// give counts n bytes no longer held.
func (m *bodyMemory) give(n int) { m.held.Add(-int64(n)) }

// errBodyMemory is a body refused because the bodies held at once would
// pass server.max_body_memory; readBody answers it with a 503.
var errBodyMemory = errors.New("server.max_body_memory is reached")

// bodyMemoryProblem is the answer to errBodyMemory.
func bodyMemoryProblem() *problem.Error {
	return &problem.Error{Code: problem.Unavailable, RetryAfter: time.Second,
		Detail: "the gateway holds as many request bodies as server.max_body_memory allows; retry shortly"}
}

// readBody reads the request's body into memory, bounded by its route's
// limit, before any handler runs: handlers then see it through PostBody
// as before, and a connection never carries an unread body into its next
// request. held is what it counted against server.max_body_memory, to be
// given back once the handler has returned. A body over the limit is a
// 413 problem, one past the memory for bodies a 503, a large one without
// a key errNoKeyForBody; a body that fails to arrive is returned as the
// read's error (transportError answers it).
func (s *Server) readBody(ctx *fasthttp.RequestCtx) (held int, err error) {
	if !ctx.Request.IsBodyStream() {
		return 0, nil
	}
	limit := s.maxBody(ctx.Request.Header.RequestURI())
	cl := ctx.Request.Header.ContentLength() // -1: chunked
	switch {
	case cl > limit:
		return 0, problem.New(problem.PayloadTooLarge, "the body is larger than %d bytes", limit)
	case cl >= 0 && cl <= prefetchBytes:
		// Body copies the stream into the request's buffer; on a read
		// error it puts the error's text there instead, which the length
		// check catches.
		if len(ctx.Request.Body()) != cl {
			return 0, errShortBody
		}
		return 0, nil
	}
	// The rest of the body is still on the wire: read it only for a
	// client that holds a key.
	if err := s.bodyCredentials(ctx); err != nil {
		return 0, err
	}
	if cl >= 0 {
		if !s.bodyMem.take(cl) {
			return 0, bodyMemoryProblem()
		}
		b := make([]byte, cl)
		if _, err := io.ReadFull(ctx.RequestBodyStream(), b); err != nil {
			s.bodyMem.give(cl)
			return 0, err
		}
		ctx.Request.SetBodyRaw(b)
		return cl, nil
	}
	b, err := s.blocks.readAll(ctx.RequestBodyStream(), limit, &s.bodyMem)
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		return 0, problem.New(problem.PayloadTooLarge, "the body is larger than %d bytes", limit)
	case errors.Is(err, errBodyMemory):
		return 0, bodyMemoryProblem()
	case err != nil:
		return 0, err
	}
	ctx.Request.SetBodyRaw(b)
	return len(b), nil
}

// readAll reads r to its end and returns its bytes in one slice of
// exactly their length, or fasthttp.ErrBodyTooLarge as soon as more than
// limit bytes have arrived. It reads into pooled blocks first, so the
// only allocation that stays is the result; growing one buffer instead
// would copy the body at every doubling and hold up to 1.5 times it
// (or, past the limit, the limit and half again) at the last one. Each
// block is taken from mem as data arrives in it (errBodyMemory when it
// cannot be); on success the result's length stays taken.
func (b *bodyBlocks) readAll(r io.Reader, limit int, mem *bodyMemory) (out []byte, err error) {
	var blocks []*[bodyBlock]byte
	taken := 0 // bytes taken from mem: a block once data is read into it
	defer func() {
		for _, blk := range blocks {
			b.pool.Put(blk)
		}
		mem.give(taken - len(out))
	}()
	total, n := 0, bodyBlock // n: bytes in the last block
	for {
		if n == bodyBlock {
			blocks = append(blocks, b.get())
			n = 0
		}
		m, err := r.Read(blocks[len(blocks)-1][n:])
		if m > 0 && n == 0 {
			// A block is counted once it holds data, so that a body
			// ending exactly at a block's end is not refused for the
			// empty block its final read used.
			if !mem.take(bodyBlock) {
				return nil, errBodyMemory
			}
			taken += bodyBlock
		}
		n += m
		total += m
		if total > limit {
			return nil, fasthttp.ErrBodyTooLarge
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	out = make([]byte, total)
	off := 0
	for _, blk := range blocks {
		off += copy(out[off:], blk[:])
	}
	return out, nil
}
