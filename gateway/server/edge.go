package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/auth"
	"github.com/voxgate/voxgate/gateway/problem"
)

// exchange is the per-request state the api wrapper hands to handlers: one
// HTTP request and its answer.
type exchange struct {
	// ctx is the context for everything the handler calls. It is never the
	// *fasthttp.RequestCtx itself: that one's Done and Err read a server
	// field that Shutdown writes without synchronisation (a data race the
	// race detector reports), and it is only cancelled by shutdown anyway.
	ctx   context.Context
	p     auth.Principal
	reqID string
	start time.Time
	route string
	// errCode records the problem code of a failed request for logs.
	errCode problem.Code
}

// handlerFunc is an authenticated API handler. It writes the success
// response itself and returns an error for anything else; the wrapper turns
// the error into a problem object.
type handlerFunc func(ctx *fasthttp.RequestCtx, c *exchange) error

const (
	userValueRoute = "voxgate.route"
	userValueReqID = "voxgate.reqid"
	userValueOrg   = "voxgate.org"
)

var (
	headerRequestID = []byte("X-Request-Id")
	// headerServiceRequestID carries the same id under the name the
	// hosted service's documentation gives it (x-speechbase-request-id),
	// for clients written against that name.
	headerServiceRequestID = []byte("X-Speechbase-Request-Id")
	contentJSON            = []byte("application/json")
	contentProblem         = "application/problem+json"
)

// edge wraps the router: request id, panic recovery, metrics and the access
// log. It runs for every request, matched or not.
func (s *Server) edge(next fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		start := time.Now()
		reqID := requestID(ctx)
		ctx.SetUserValue(userValueReqID, reqID)
		id := []byte(reqID)
		ctx.Response.Header.SetBytesKV(headerRequestID, id)
		ctx.Response.Header.SetBytesKV(headerServiceRequestID, id)
		if ambiguousLength(&ctx.Request.Header) {
			// RFC 9112 section 6.1: a request with both Content-Length and
			// Transfer-Encoding must be treated as an error and the
			// connection closed. Behind a proxy that framed it the other
			// way, the bytes after the chunked body would otherwise be read
			// as the next request (request smuggling).
			ctx.SetConnectionClose()
			s.writeProblem(ctx, problem.New(problem.BadRequest, "the request has both Content-Length and Transfer-Encoding; send one"))
			s.observe(ctx, start, reqID)
			return
		}
		defer func() {
			if r := recover(); r != nil {
				s.metrics.Panics.Inc()
				s.log.Error("panic in handler", zap.String("request_id", reqID), zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
				ctx.Response.ResetBody()
				s.writeProblem(ctx, problem.New(problem.Internal, "an internal error occurred; request id %s", reqID))
			}
			s.observe(ctx, start, reqID)
		}()
		next(ctx)
	}
}

// ambiguousLength reports whether a request carried both Content-Length
// and Transfer-Encoding. By the time a handler runs fasthttp has dropped
// one of the two (it frames a chunked body and then records its length),
// so the raw header block is read: one pass over a few short lines.
func ambiguousLength(h *fasthttp.RequestHeader) bool {
	var cl, te bool
	for raw := h.RawHeaders(); len(raw) > 0; {
		line := raw
		if i := bytes.IndexByte(raw, '\n'); i >= 0 {
			line, raw = raw[:i], raw[i+1:]
		} else {
			raw = nil
		}
		i := bytes.IndexByte(line, ':')
		if i < 0 {
			continue
		}
		switch name := bytes.TrimSpace(line[:i]); len(name) {
		case len(fasthttp.HeaderContentLength):
			cl = cl || bytes.EqualFold(name, []byte(fasthttp.HeaderContentLength))
		case len(fasthttp.HeaderTransferEncoding):
			te = te || bytes.EqualFold(name, []byte(fasthttp.HeaderTransferEncoding))
		}
	}
	return cl && te
}

// observe records metrics and the access log line of a finished request.
func (s *Server) observe(ctx *fasthttp.RequestCtx, start time.Time, reqID string) {
	route, _ := ctx.UserValue(userValueRoute).(string)
	if route == "" {
		route = "unmatched"
	}
	status := ctx.Response.StatusCode()
	elapsed := time.Since(start)
	s.metrics.Requests.WithLabelValues(route, statusLabel(status)).Inc()
	s.metrics.Latency.WithLabelValues(route).Observe(elapsed.Seconds())
	if s.accessLog {
		org, _ := ctx.UserValue(userValueOrg).(string)
		// A streamed body is not written yet and its size is unknown:
		// Response.Body() would read the whole stream into memory here,
		// before the first byte reaches the client. Streams log -1 and
		// their duration is the time to the first chunk.
		size := -1
		if !ctx.Response.IsBodyStream() {
			size = len(ctx.Response.Body())
		}
		// Only the path is logged, never the query string's values beyond
		// the path or any header: keys travel in Authorization only.
		s.log.Info("request",
			zap.String("request_id", reqID),
			zap.ByteString("method", ctx.Method()),
			zap.ByteString("path", ctx.Path()),
			zap.Int("status", status),
			zap.Duration("duration", elapsed),
			zap.String("org", org),
			zap.Int("bytes", size),
		)
	}
}

// statusLabels avoids an allocation per request for the common statuses.
var statusLabels = func() map[int]string {
	m := map[int]string{}
	for st := 100; st < 600; st++ {
		m[st] = strconv.Itoa(st)
	}
	return m
}()

func statusLabel(st int) string {
	if l, ok := statusLabels[st]; ok {
		return l
	}
	return strconv.Itoa(st)
}

// requestID echoes a client's X-Request-Id when it is a UUID, or makes a
// new one. Request ids are log rows' request_id and conversations'
// parent_request_id, which the logs API filters as UUIDs, so other formats
// are replaced rather than echoed.
func requestID(ctx *fasthttp.RequestCtx) string {
	if v := ctx.Request.Header.PeekBytes(headerRequestID); validRequestID(v) {
		return string(v)
	}
	return uuid.NewString()
}

// maxRequestIDLen bounds a client's X-Request-Id.
const maxRequestIDLen = 128

// validRequestID reports whether a client's X-Request-Id is kept: 1 to
// 128 printable ASCII characters, not starting or ending with a space.
// Anything else (control characters could forge log lines) is replaced
// by a generated id.
func validRequestID(v []byte) bool {
	if len(v) == 0 || len(v) > maxRequestIDLen || v[0] == ' ' || v[len(v)-1] == ' ' {
		return false
	}
	for _, b := range v {
		if b < 0x20 || b > 0x7e {
			return false
		}
	}
	return true
}

// api wraps an authenticated handler: auth, rate limit, problem writing.
func (s *Server) api(route string, h handlerFunc) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		ctx.SetUserValue(userValueRoute, route)
		reqID, _ := ctx.UserValue(userValueReqID).(string)
		c := &exchange{ctx: context.Background(), reqID: reqID, start: time.Now(), route: route}
		p, ok := s.auth.Authenticate(ctx.Request.Header.Peek(fasthttp.HeaderAuthorization))
		if !ok {
			s.writeUnauthorized(ctx)
			return
		}
		c.p = p
		ctx.SetUserValue(userValueOrg, p.OrgID)
		if pe := s.rateLimit(p.OrgID, route); pe != nil {
			s.writeProblem(ctx, pe)
			return
		}
		if err := h(ctx, c); err != nil {
			s.writeError(ctx, c, err, "")
		}
	}
}

// writeError maps err to a problem object, logs server-side failures and
// writes the response.
//
// A moderation block is the one failure that is not a problem object: the
// spec gives it its own application/json envelope.
func (s *Server) writeError(ctx *fasthttp.RequestCtx, c *exchange, err error, provider string) *problem.Error {
	if be, ok := isBlocked(err); ok {
		s.writeBlocked(ctx, be)
		code := problem.ModerationBlocked
		if c != nil {
			c.errCode = code
		}
		return &problem.Error{Code: code, Detail: be.Verdict.ReasonType + ": " + be.Verdict.ReasonDetail}
	}
	pe := problem.From(err, provider)
	if c != nil {
		c.errCode = pe.Code
	}
	if pe.Status() >= 500 {
		reqID, _ := ctx.UserValue(userValueReqID).(string)
		s.log.Warn("request failed", zap.String("request_id", reqID), zap.String("code", string(pe.Code)), zap.Error(err))
	}
	s.writeProblem(ctx, pe)
	return pe
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// writeProblem writes an application/problem+json response.
func (s *Server) writeProblem(ctx *fasthttp.RequestCtx, pe *problem.Error) {
	ctx.Response.Header.SetContentType(contentProblem)
	ctx.SetStatusCode(pe.Status())
	if pe.RetryAfter > 0 || pe.Code == problem.RateLimited {
		ctx.Response.Header.Set(fasthttp.HeaderRetryAfter, problem.RetryAfterSeconds(pe.RetryAfter))
	}
	bp := bufPool.Get().(*[]byte)
	*bp = pe.AppendJSON((*bp)[:0])
	ctx.Response.SetBody(*bp) // SetBody copies
	bufPool.Put(bp)
}

// unauthorizedBody is constant, so it is rendered once.
var unauthorizedBody = (&problem.Error{Code: problem.Unauthorized, Detail: "send a valid API key as 'Authorization: Bearer <key>'"}).AppendJSON(nil)

// writeUnauthorized is the hot path of rejected requests: no allocation.
func (s *Server) writeUnauthorized(ctx *fasthttp.RequestCtx) {
	ctx.Response.Header.SetContentType(contentProblem)
	ctx.Response.Header.Set(fasthttp.HeaderWWWAuthenticate, `Bearer realm="voxgate"`)
	ctx.SetStatusCode(fasthttp.StatusUnauthorized)
	ctx.Response.SetBodyRaw(unauthorizedBody)
}

// writeJSON writes v as a JSON response with status.
func (s *Server) writeJSON(ctx *fasthttp.RequestCtx, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode response: %w", err)
	}
	ctx.Response.Header.SetContentTypeBytes(contentJSON)
	ctx.SetStatusCode(status)
	ctx.Response.SetBodyRaw(b)
	return nil
}

// decodeJSON checks the content type and size of a JSON request body and
// decodes it strictly into v: unknown fields and wrong types become
// validation_failed entries naming the field.
func (s *Server) decodeJSON(ctx *fasthttp.RequestCtx, v any) error {
	ct := ctx.Request.Header.ContentType()
	if mt, _, _ := bytes.Cut(ct, []byte(";")); !isJSONType(bytes.TrimSpace(mt)) {
		return problem.New(problem.UnsupportedMediaType, "send the body as Content-Type: application/json")
	}
	body := ctx.PostBody()
	if len(body) > s.opts.MaxBodyBytes {
		return problem.New(problem.PayloadTooLarge, "the body is larger than %d bytes", s.opts.MaxBodyBytes)
	}
	return decodeStrict(body, v)
}

func isJSONType(mt []byte) bool {
	return bytes.EqualFold(mt, contentJSON) || (len(mt) > 5 && bytes.HasSuffix(bytes.ToLower(mt), []byte("+json")))
}

// decodeStrict decodes one JSON object into v.
func decodeStrict(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return problem.New(problem.InvalidJSON, "the request body is empty; send a JSON object")
	}
	// encoding/json would replace invalid UTF-8 with U+FFFD and carry on:
	// the text spoken, logged and billed would not be what was sent.
	if !utf8.Valid(body) {
		return problem.New(problem.InvalidJSON, "the body is not valid UTF-8 (at byte %d)", invalidUTF8At(body))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if strings.HasPrefix(err.Error(), "json: unknown field ") {
			// The decoder stops at the first; name them all.
			if fe := unknownFields(body, reflect.TypeOf(v)); len(fe) > 0 {
				return problem.Validation(fe...)
			}
		}
		return jsonProblem(err)
	}
	if dec.More() {
		return problem.New(problem.InvalidJSON, "unexpected data after the JSON object")
	}
	if _, err := dec.Token(); err == nil {
		return problem.New(problem.InvalidJSON, "unexpected data after the JSON object")
	}
	return nil
}

// jsonProblem maps encoding/json errors to problems.
func jsonProblem(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return problem.New(problem.InvalidJSON, "malformed JSON at byte %d: %s", syn.Offset, syn.Error())
	case errors.As(err, &typ):
		if typ.Field == "" {
			return problem.Validation(problem.Field("the body must be a JSON object"))
		}
		path := strings.Split(typ.Field, ".")
		return problem.Validation(problem.Field(fmt.Sprintf("must be %s, not %s", jsonTypeName(typ.Type.Kind().String()), typ.Value), path...))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return problem.New(problem.InvalidJSON, "the JSON body ends too early")
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		f = strings.Trim(f, `"`)
		return problem.Validation(problem.Field("unknown field", f))
	}
	return problem.New(problem.InvalidJSON, "malformed JSON: %s", strings.TrimPrefix(msg, "json: "))
}

func jsonTypeName(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	case "float32", "float64":
		return "a number"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	}
	return "of another type"
}

// rateLimit takes one request from org's budget for route's class and
// returns the problem to answer when the budget is spent. A limiter that
// cannot decide (Redis down) lets the request through or refuses it, as
// configured, and says so in the metrics and, at most once a minute, the
// log.
func (s *Server) rateLimit(org, route string) *problem.Error {
	lims, ok := s.limits[org]
	if !ok {
		return nil
	}
	lim, key, class := lims.reads, lims.readKey, "reads"
	if isSynthesis(route) {
		lim, key, class = lims.synthesis, lims.synthKey, "synthesis"
	}
	if lim.Unlimited() {
		return nil
	}
	d, err := s.limiter.Allow(context.Background(), key, lim)
	if err != nil {
		s.metrics.RateLimitErrors.Inc()
		if s.limiterWarn.allow(time.Minute) {
			s.log.Warn("rate limiter unavailable", zap.Bool("letting_requests_through", s.failOpen), zap.Error(err))
		}
		if s.failOpen {
			return nil
		}
		return &problem.Error{Code: problem.RateLimited, Detail: "the rate limiter is unavailable and this gateway refuses requests it cannot count", RetryAfter: time.Second}
	}
	if !d.Allowed {
		return &problem.Error{Code: problem.RateLimited, Detail: "the organization's " + class + " rate limit was exceeded", RetryAfter: d.RetryAfter}
	}
	return nil
}

// isSynthesis reports whether a route makes audio (the synthesis budget).
func isSynthesis(route string) bool {
	return strings.HasPrefix(route, "speech") || strings.HasPrefix(route, "conversation")
}
