package edge

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/admission/quota"
	"github.com/voxgate/voxgate/gateway/problem"
)

// Request bodies are read here, at the edge, rather than by fasthttp: the
// server streams them (fasthttp.Server.StreamRequestBody). fasthttp reads
// a chunked body into one buffer that it grows to the next power of two
// and copies at each step, so a chunked body near the limit briefly held
// about three times the limit before it was refused. Read here, a body
// never costs more than the limit (plus one block) before a 413, and an
// accepted body is held once, at its exact size. Reading here also lets
// the gateway read what lies past the headers only for a client that
// holds a key, and bound all bodies held at once (bodyMemory).

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
func (s *Server) bodyCredentials(ctx *fasthttp.RequestCtx) (org string, err error) {
	if s.ui != nil && bytes.HasPrefix(ctx.Path(), []byte(uiPrefix+"/")) {
		sess, pe := s.ui.Verify(ctx)
		if pe == nil {
			pe = s.ui.CheckCSRF(ctx, sess)
		}
		if pe != nil {
			return "", pe
		}
		return sess.Principal.OrgID, nil
	}
	p, ok := s.authenticate(ctx, pathDialect(ctx))
	if !ok {
		return "", errNoKeyForBody
	}
	return p.OrgID, nil
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
// (and audio to identify) have limits.max_media_bytes (plus the multipart framing), every other
// route server.max_body_bytes, so a route with a small limit never
// reads the largest one's worth of a body.
func (s *Server) maxBody(uri []byte) int {
	if bytes.HasPrefix(uri, []byte("/v1/media")) || bytes.HasPrefix(uri, []byte(uiPrefix+"/v1/media")) ||
		bytes.HasPrefix(uri, []byte("/v1/provenance/identify")) {
		return max(s.opts.MaxBodyBytes, s.opts.MaxMediaBytes+multipartSlack)
	}
	return s.opts.MaxBodyBytes
}

// bodyMemory counts the bytes of request bodies held at once, over all
// connections, against server.max_body_memory, and each organization's
// against limits.body_memory_per_org. A body's limit bounds one request;
// this bounds them together, so that many connections sending large
// bodies slowly cannot take the process's memory, nor one organization's
// leave none for the others. Bodies that arrive with their headers
// (prefetchBytes) are not counted: they live in the connection's buffers,
// as the headers do. Only large bodies come here, a block or a whole
// body at a time, so one mutex (the quota's) is enough.
type bodyMemory struct {
	quota.Quota // bytes; Total is server.max_body_memory
	// refused counts refusals by the bound that refused them.
	refused, refusedOrg atomic.Int64
}

// Errors of bodyMemory.take.
var (
	// errBodyMemory: the bodies held at once would pass
	// server.max_body_memory.
	errBodyMemory = errors.New("server.max_body_memory is reached")
	// errOrgBodyMemory: the organization's would pass
	// limits.body_memory_per_org.
	errOrgBodyMemory = errors.New("limits.body_memory_per_org is reached")
)

// take counts n more bytes held by org, or returns errBodyMemory or
// errOrgBodyMemory (and counts the refusal) if that would pass a bound.
func (m *bodyMemory) take(org string, n int) error {
	switch err := m.Take(org, int64(n)); {
	case errors.Is(err, quota.ErrTotal):
		m.refused.Add(1)
		return errBodyMemory
	case errors.Is(err, quota.ErrOrg):
		m.refusedOrg.Add(1)
		return errOrgBodyMemory
	}
	return nil
}

// give counts n bytes org no longer holds.
func (m *bodyMemory) give(org string, n int) { m.Give(org, int64(n)) }

// refusal is memoryProblem with, on a 429, the organization's share as
// the quota policy of the RateLimit header fields (bytes held at once).
func (m *bodyMemory) refusal(err error) *problem.Error {
	pe := memoryProblem(err)
	if pe.Code == problem.RateLimited {
		pe.Limit = &problem.RateLimit{Policy: "org-body-memory", Quota: m.PerOrg, Unit: "content-bytes"}
	}
	return pe
}

// memoryProblem is the answer to a refusal of bodyMemory.take: a 503 when
// the gateway is full, a 429 when the organization's share is.
func memoryProblem(err error) *problem.Error {
	if errors.Is(err, errOrgBodyMemory) {
		return &problem.Error{Code: problem.RateLimited, RetryAfter: time.Second,
			Detail: "your organization holds as many request bodies as limits.body_memory_per_org allows; retry shortly"}
	}
	return &problem.Error{Code: problem.Unavailable, RetryAfter: time.Second,
		Detail: "the gateway holds as many request bodies as server.max_body_memory allows; retry shortly"}
}

// heldBody is what readBody counted against bodyMemory for a request, to
// be given back once its handler has answered.
type heldBody struct {
	org string
	n   int
}

// readBody reads the request's body into memory, bounded by its route's
// limit, before any handler runs: handlers then see it through PostBody
// as before, and a connection never carries an unread body into its next
// request. A body over the limit is a 413 problem, one past the memory
// for bodies a 503 (429 past the organization's share), a large one
// without a key errNoKeyForBody; a body that fails to arrive is returned
// as the read's error (transportError answers it).
func (s *Server) readBody(ctx *fasthttp.RequestCtx) (heldBody, error) {
	if !ctx.Request.IsBodyStream() {
		return heldBody{}, nil
	}
	limit := s.maxBody(ctx.Request.Header.RequestURI())
	cl := ctx.Request.Header.ContentLength() // -1: chunked
	switch {
	case cl > limit:
		return heldBody{}, problem.New(problem.PayloadTooLarge, "the body is larger than %d bytes", limit)
	case cl >= 0 && cl <= prefetchBytes:
		// Body copies the stream into the request's buffer; on a read
		// error it puts the error's text there instead, which the length
		// check catches.
		if len(ctx.Request.Body()) != cl {
			return heldBody{}, errShortBody
		}
		return heldBody{}, nil
	}
	// The rest of the body is still on the wire: read it only for a
	// client that holds a key, against its organization's share.
	org, err := s.bodyCredentials(ctx)
	if err != nil {
		return heldBody{}, err
	}
	if cl >= 0 {
		if err := s.bodyMem.take(org, cl); err != nil {
			return heldBody{}, s.bodyMem.refusal(err)
		}
		b := make([]byte, cl)
		if _, err := io.ReadFull(ctx.RequestBodyStream(), b); err != nil {
			s.bodyMem.give(org, cl)
			return heldBody{}, err
		}
		ctx.Request.SetBodyRaw(b)
		return heldBody{org, cl}, nil
	}
	b, err := s.blocks.readAll(ctx.RequestBodyStream(), limit, &s.bodyMem, org)
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		return heldBody{}, problem.New(problem.PayloadTooLarge, "the body is larger than %d bytes", limit)
	case errors.Is(err, errBodyMemory), errors.Is(err, errOrgBodyMemory):
		return heldBody{}, s.bodyMem.refusal(err)
	case err != nil:
		return heldBody{}, err
	}
	ctx.Request.SetBodyRaw(b)
	return heldBody{org, len(b)}, nil
}

// readAll reads r to its end and returns its bytes in one slice of
// exactly their length, or fasthttp.ErrBodyTooLarge as soon as more than
// limit bytes have arrived. It reads into pooled blocks first, so the
// only allocation that stays is the result; growing one buffer instead
// would copy the body at every doubling and hold up to 1.5 times it
// (or, past the limit, the limit and half again) at the last one. Each
// block is taken from mem for org as data arrives in it (take's error
// when it cannot be); on success the result's length stays taken.
func (b *bodyBlocks) readAll(r io.Reader, limit int, mem *bodyMemory, org string) (out []byte, err error) {
	var blocks []*[bodyBlock]byte
	taken := 0 // bytes taken from mem: a block once data is read into it
	defer func() {
		for _, blk := range blocks {
			b.pool.Put(blk)
		}
		mem.give(org, taken-len(out))
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
			if err := mem.take(org, bodyBlock); err != nil {
				return nil, err
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
