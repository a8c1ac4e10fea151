package server

import (
	"bytes"
	"errors"
	"io"
	"sync"

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

// readBody reads the request's body into memory, bounded by its route's
// limit, before any handler runs: handlers then see it through PostBody
// as before, and a connection never carries an unread body into its next
// request. A body over the limit is a 413 problem; a body that fails to
// arrive is returned as the read's error (transportError answers it).
func (s *Server) readBody(ctx *fasthttp.RequestCtx) error {
	if !ctx.Request.IsBodyStream() {
		return nil
	}
	limit := s.maxBody(ctx.Request.Header.RequestURI())
	switch cl := ctx.Request.Header.ContentLength(); {
	case cl > limit:
		return problem.New(problem.PayloadTooLarge, "the body is larger than %d bytes", limit)
	case cl >= 0 && cl <= prefetchBytes:
		// Body copies the stream into the request's buffer; on a read
		// error it puts the error's text there instead, which the length
		// check catches.
		if len(ctx.Request.Body()) != cl {
			return errShortBody
		}
		return nil
	case cl >= 0:
		b := make([]byte, cl)
		if _, err := io.ReadFull(ctx.RequestBodyStream(), b); err != nil {
			return err
		}
		ctx.Request.SetBodyRaw(b)
		return nil
	default: // chunked: the length is known only at the end
		b, err := s.blocks.readAll(ctx.RequestBodyStream(), limit)
		if errors.Is(err, fasthttp.ErrBodyTooLarge) {
			return problem.New(problem.PayloadTooLarge, "the body is larger than %d bytes", limit)
		}
		if err != nil {
			return err
		}
		ctx.Request.SetBodyRaw(b)
		return nil
	}
}

// readAll reads r to its end and returns its bytes in one slice of
// exactly their length, or fasthttp.ErrBodyTooLarge as soon as more than
// limit bytes have arrived. It reads into pooled blocks first, so the
// only allocation that stays is the result; growing one buffer instead
// would copy the body at every doubling and hold up to 1.5 times it
// (or, past the limit, the limit and half again) at the last one.
func (b *bodyBlocks) readAll(r io.Reader, limit int) ([]byte, error) {
	var blocks []*[bodyBlock]byte
	defer func() {
		for _, blk := range blocks {
			b.pool.Put(blk)
		}
	}()
	total, n := 0, bodyBlock // n: bytes in the last block
	for {
		if n == bodyBlock {
			blocks = append(blocks, b.get())
			n = 0
		}
		m, err := r.Read(blocks[len(blocks)-1][n:])
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
	out := make([]byte, total)
	off := 0
	for _, blk := range blocks {
		off += copy(out[off:], blk[:])
	}
	return out, nil
}
