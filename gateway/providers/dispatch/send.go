package dispatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	rtrace "runtime/trace"
	"strconv"
	"sync"
	"time"

	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/voxgate/voxgate/gateway/observe/stages"
	"github.com/voxgate/voxgate/gateway/observe/tracing"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/upstream"
)

// maxErrorBody bounds how much of an error answer is read for Explain.
const maxErrorBody = 64 << 10

// Explainer turns an upstream error answer into the caller's error: the
// provider plugin's Planner.Explain, bound to the call's credentials.
type Explainer func(ctx context.Context, f *sdk.Failure) error

// Fetch sends plan with text and returns the whole answer body, with the
// function that gives its buffer back to fasthttp's pool. The body is
// valid until release is called; not calling it is safe (the buffer is
// then left to the garbage collector), calling it lets the next answer
// reuse the buffer instead of growing a new one chunk by chunk.
//
// Failures are *sdk.Error values as the plugin would have returned them:
// explain maps error answers, and network failures are KindUnavailable or
// KindTimeout.
func (c *Client) Fetch(ctx context.Context, p *Planned, text string, explain Explainer) (body []byte, release func(), err error) {
	body, _, release, err = c.FetchBilled(ctx, p, text, time.Time{}, explain)
	return body, release, err
}

// FetchBilled is Fetch that also reads what the answer's headers say the
// call was billed (the plan's BilledHeaders; nil when none says), and
// ends by until when that comes before ctx's deadline (zero: ctx's
// alone), as OpenUntil does.
func (c *Client) FetchBilled(ctx context.Context, p *Planned, text string, until time.Time, explain Explainer) (body []byte, billed []sdk.BilledUsage, release func(), err error) {
	resp, err := c.send(ctx, p, text, false, until, explain)
	if err != nil {
		return nil, nil, nil, err
	}
	billed = billedOf(&resp.Header, p)
	body = resp.Body()
	if len(body)%p.frame != 0 {
		fasthttp.ReleaseResponse(resp)
		return nil, nil, nil, &sdk.Error{Kind: sdk.KindUpstream, Message: fmt.Sprintf("%s: truncated audio (%d bytes is not a whole number of %d-byte frames)", p.provider, len(body), p.frame)}
	}
	var once sync.Once
	return body, billed, func() { once.Do(func() { fasthttp.ReleaseResponse(resp) }) }, nil
}

// billedOf reads what h says the call was billed, by the plan's
// BilledHeaders; nil when none says.
func billedOf(h *fasthttp.ResponseHeader, p *Planned) []sdk.BilledUsage {
	var billed []sdk.BilledUsage
	for _, bh := range p.billed {
		if v := h.Peek(bh[0]); len(v) > 0 {
			if n, err := strconv.ParseInt(string(v), 10, 64); err == nil && n >= 0 {
				billed = append(billed, sdk.BilledUsage{Unit: bh[1], Quantity: n})
			}
		}
	}
	return billed
}

// Open sends plan with text and returns the answer's body to read as it
// arrives. The caller must Close it.
func (c *Client) Open(ctx context.Context, p *Planned, text string, explain Explainer) (*Body, error) {
	return c.OpenUntil(ctx, p, text, time.Time{}, explain)
}

// OpenUntil is Open for a call that must end by deadline (zero: ctx's
// deadline alone), which may come before ctx's. The deadline is set on
// the connection, so it bounds the answer's headers and every read of its
// body, and a read past it fails as a KindTimeout error, as ctx's would.
// A caller that would make a context only to carry the provider's
// timeout passes it here instead: a stream's first byte then pays for
// one timer and one context (the request's), not two (BENCHMARKS.md,
// round 3 session 10). Cancelling ctx interrupts a read in flight.
func (c *Client) OpenUntil(ctx context.Context, p *Planned, text string, deadline time.Time, explain Explainer) (*Body, error) {
	return c.open(ctx, p, text, deadline, explain, true)
}

// OpenOwned is OpenUntil for a body that one goroutine reads and closes,
// the same that would cancel ctx (a stream relayed by its request's own
// goroutine): cancelling ctx does not interrupt a read in flight, which
// ends by deadline (not zero) or with data, and that goroutine closes the
// body when it stops. The body does not register with ctx, which spares
// the registration on every stream's first byte and leaves a context
// whose timer is armed only when something waits on it
// (gateway/internal/lazydeadline) without one.
func (c *Client) OpenOwned(ctx context.Context, p *Planned, text string, deadline time.Time, explain Explainer) (*Body, error) {
	return c.open(ctx, p, text, deadline, explain, false)
}

func (c *Client) open(ctx context.Context, p *Planned, text string, deadline time.Time, explain Explainer, watch bool) (*Body, error) {
	resp, err := c.send(ctx, p, text, true, deadline, explain)
	if err != nil {
		return nil, err
	}
	bp := bufPool.Get().(*[]byte)
	b := &Body{ctx: ctx, resp: resp, r: resp.BodyStream(), plan: p, bp: bp, buf: *bp}
	if b.r == nil { // an answer fasthttp did not stream (no body at all)
		b.r = eofReader{}
	}
	// Cancelling ctx (the listener left, the deadline passed) interrupts
	// a read in flight: fasthttp's stream closes the connection.
	if rc, ok := b.r.(interface{ CloseWithError(error) error }); ok && watch {
		b.stop = context.AfterFunc(ctx, func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			if !b.closed {
				_ = rc.CloseWithError(ctx.Err())
			}
		})
	}
	return b, nil
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// send performs the request with retries and returns a successful
// response (status < 300), which the caller releases. It ends by ctx's
// deadline or until, whichever comes first (until zero: ctx's alone).
func (c *Client) send(ctx context.Context, p *Planned, text string, stream bool, until time.Time, explain Explainer) (*fasthttp.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, transportError(ctx, p.provider, err)
	}
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	p.fill(req, text)
	policy := upstream.Policy{Idempotent: true, MaxAttempts: p.attempts, Provider: p.provider}
	// Deadlines are wall-clock (fasthttp sets them on the connection), so
	// they use time.Now rather than the injectable clock.
	deadline, hasDeadline := ctx.Deadline()
	if !until.IsZero() && (!hasDeadline || until.Before(deadline)) {
		deadline, hasDeadline = until, true
	}
	if !stream && p.timeout > 0 {
		if d := time.Now().Add(p.timeout); !hasDeadline || d.Before(deadline) {
			deadline, hasDeadline = d, true
		}
	}
	hc := c.clips
	if stream {
		hc = c.streams
	}
	for attempt := 1; ; attempt++ {
		resp := fasthttp.AcquireResponse()
		resp.StreamBody = stream
		_, span := c.tracer.Start(ctx, p.method, trace.SpanKindClient)
		var err error
		sending := rtrace.StartRegion(ctx, stages.Send)
		if hasDeadline {
			err = hc.DoDeadline(req, resp, deadline)
		} else {
			err = hc.Do(req, resp)
		}
		sending.End()
		if span.IsRecording() {
			traceAttempt(span, p, req, resp, attempt, err)
		}
		span.End()
		last := attempt >= p.attempts
		var wait time.Duration
		reason := "transport"
		switch {
		case errors.Is(err, fasthttp.ErrBodyTooLarge):
			release(resp)
			return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: p.provider + ": the answer is larger than the gateway accepts"}
		case err != nil:
			release(resp)
			if last || ctx.Err() != nil {
				return nil, transportError(ctx, p.provider, err)
			}
			wait = policy.Backoff(attempt)
			if hasDeadline && time.Until(deadline) <= wait {
				return nil, transportError(ctx, p.provider, err)
			}
		case resp.StatusCode() < 300:
			return resp, nil
		case !upstream.RetryableStatus(resp.StatusCode()) || last:
			return nil, c.failure(ctx, p, resp, deadline, explain)
		default:
			reason = strconv.Itoa(resp.StatusCode())
			wait = policy.Backoff(attempt)
			if ra := retryAfter(resp, c.now()); ra > 0 {
				if ra > maxRetryAfter {
					return nil, c.failure(ctx, p, resp, deadline, explain)
				}
				wait = max(wait, ra)
			}
			if hasDeadline && time.Until(deadline) <= wait {
				return nil, c.failure(ctx, p, resp, deadline, explain)
			}
			release(resp)
		}
		c.retried(p.provider, reason)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, transportError(ctx, p.provider, ctx.Err())
		}
	}
}

// traceAttempt describes one attempt on its span, after the HTTP
// semantic conventions. The URL is recorded without its query: some
// providers take the API key there.
func traceAttempt(span trace.Span, p *Planned, req *fasthttp.Request, resp *fasthttp.Response, attempt int, err error) {
	span.SetAttributes(
		tracing.HTTPMethod.String(p.method),
		tracing.URLFull.String(string(req.URI().Scheme())+"://"+string(req.URI().Host())+string(req.URI().Path())),
		attribute.String("gen_ai.provider.name", p.provider),
	)
	if attempt > 1 {
		span.SetAttributes(tracing.ResendCount.Int(attempt - 1))
	}
	switch {
	case err != nil:
		span.SetAttributes(tracing.ErrorType.String("transport"))
		span.SetStatus(codes.Error, err.Error())
	default:
		span.SetAttributes(tracing.HTTPStatus.Int(resp.StatusCode()))
		if resp.StatusCode() >= 400 {
			span.SetAttributes(tracing.ErrorType.String(strconv.Itoa(resp.StatusCode())))
			span.SetStatus(codes.Error, "")
		}
	}
}

// maxRetryAfter is the longest Retry-After a call waits out itself, as in
// upstream.Policy: past it the 429 or 503 goes to the caller, whose own
// client can decide when to come back.
const maxRetryAfter = 5 * time.Second

// release frees a response, closing a streamed body first.
func release(resp *fasthttp.Response) {
	_ = resp.CloseBodyStream()
	fasthttp.ReleaseResponse(resp)
}

func retryAfter(resp *fasthttp.Response, now time.Time) time.Duration {
	return upstream.ParseRetryAfter(string(resp.Header.Peek("Retry-After")), string(resp.Header.Peek("Retry-After-Ms")), now)
}

// failure reads an error answer, releases it and asks the plugin what it
// means. When the plugin cannot say (it is restarting), the status alone
// decides, with no upstream text: the message then cannot carry anything
// the plugin would have redacted. The plugin is asked by the call's
// deadline (zero: ctx's alone).
func (c *Client) failure(ctx context.Context, p *Planned, resp *fasthttp.Response, deadline time.Time, explain Explainer) error {
	status := resp.StatusCode()
	f := &sdk.Failure{Status: status, Header: map[string]string{}}
	resp.Header.VisitAll(func(k, v []byte) {
		if _, ok := f.Header[string(k)]; !ok {
			f.Header[string(k)] = string(v)
		}
	})
	if r := resp.BodyStream(); r != nil {
		f.Body, _ = io.ReadAll(io.LimitReader(r, maxErrorBody))
	} else {
		body := resp.Body()
		f.Body = append([]byte(nil), body[:min(len(body), maxErrorBody)]...)
	}
	ra := retryAfter(resp, c.now())
	release(resp)
	ctx, cancel := withEarlier(ctx, deadline)
	defer cancel()
	var se *sdk.Error
	if err := explain(ctx, f); errors.As(err, &se) && se.UpstreamStatus == status {
		return se
	}
	return upstream.ErrorFromStatus(status, p.provider, "", "", ra)
}

// withEarlier returns ctx ending by deadline as well, for a call to the plugin
// (a plan, an explanation) that has no connection to carry the deadline:
// ctx itself when deadline is zero or not before ctx's own.
func withEarlier(ctx context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); deadline.IsZero() || ok && !deadline.Before(d) {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, deadline)
}

// transportError classifies a failure to get an answer. fasthttp's
// timeout error is not a net.Error, so it is checked here.
func transportError(ctx context.Context, provider string, err error) *sdk.Error {
	var te interface{ Timeout() bool }
	if ctx.Err() == nil && errors.As(err, &te) && te.Timeout() {
		return &sdk.Error{Kind: sdk.KindTimeout, Retryable: true, Message: fmt.Sprintf("%s: timed out: %v", provider, err)}
	}
	return upstream.TransportError(ctx, provider, err)
}

// streamBuf is the size of a stream's read buffer: what one Next can
// return. It matches the streams' HTTP client's read buffer (New), which holds
// what arrived and bounds one read from it, so a larger one would only
// hold memory: every open stream keeps one (16 MiB for 1,000 streams).
const streamBuf = 16 << 10

// bufPool holds stream read buffers, so that they are not allocated per
// stream.
var bufPool = sync.Pool{New: func() any { b := make([]byte, streamBuf); return &b }}

// Body is the answer of a planned stream, read as it arrives.
type Body struct {
	ctx  context.Context
	resp *fasthttp.Response
	r    io.Reader
	plan *Planned
	bp   *[]byte
	buf  []byte
	// buf[next:end] is a partial frame held back from the last chunk.
	next, end int
	err       error // the error of the last read, returned once data runs out
	stop      func() bool
	mu        sync.Mutex
	closed    bool
}

// MediaType is the media type of the stream.
func (b *Body) MediaType() string { return b.plan.MediaType }

// Billed is what the answer's headers say the call was billed (the
// plan's BilledHeaders: ElevenLabs' character-cost comes with a stream's
// headers, before its audio); nil when none says. Read it before Close.
func (b *Body) Billed() []sdk.BilledUsage { return billedOf(&b.resp.Header, b.plan) }

// Next returns the next piece of audio as soon as it arrives, a whole
// number of frames long. The slice is valid until the next call. At the
// end it returns io.EOF; a failed read is an *sdk.Error.
func (b *Body) Next() ([]byte, error) {
	held := copy(b.buf, b.buf[b.next:b.end])
	b.next, b.end = 0, held
	for b.err == nil {
		n, err := b.r.Read(b.buf[held:])
		b.err = err
		held += n
		b.end = held
		if whole := held - held%b.plan.frame; whole > 0 {
			b.next = whole
			return b.buf[:whole], nil
		}
	}
	if errors.Is(b.err, io.EOF) && b.resp.Header.ContentLength() == -1 && closedByPeer(b.resp) {
		// A chunked answer's connection ended before its last chunk
		// (peerConn): a stream that broke off, not one that finished.
		b.err = io.ErrUnexpectedEOF
	}
	switch {
	case errors.Is(b.err, io.EOF) && held == 0:
		return nil, io.EOF
	case errors.Is(b.err, io.EOF):
		return nil, &sdk.Error{Kind: sdk.KindUpstream, Message: fmt.Sprintf("%s: stream ended inside a %d-byte frame", b.plan.provider, b.plan.frame)}
	default:
		return nil, upstream.TransportError(b.ctx, b.plan.provider, b.err)
	}
}

// Close ends the stream: an unfinished answer's connection is closed,
// a finished one's goes back to the pool.
func (b *Body) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	b.mu.Unlock()
	if b.stop != nil {
		b.stop()
	}
	release(b.resp)
	bufPool.Put(b.bp)
}
