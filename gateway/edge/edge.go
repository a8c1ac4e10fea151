package edge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"runtime/debug"
	rtrace "runtime/trace"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/fasthttp/router"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/valyala/fasthttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/admission/auth"
	"github.com/voxgate/voxgate/gateway/admission/budget"
	"github.com/voxgate/voxgate/gateway/admission/orgs"
	"github.com/voxgate/voxgate/gateway/admission/ratelimit"
	"github.com/voxgate/voxgate/gateway/edge/dialect"
	"github.com/voxgate/voxgate/gateway/edge/textrule"
	"github.com/voxgate/voxgate/gateway/observe/stages"
	"github.com/voxgate/voxgate/gateway/observe/tracing"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/gateway/store"
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
	// charge is the credits the request reserved from the budgets; it is
	// settled when the request's own log row is recorded.
	charge *budget.Charge
	// dialect is the API the request speaks; its errors are answered in
	// that API's shape.
	dialect dialectKind
	// live is the configuration the request is served with, taken once
	// as it arrived (see Live).
	live *Live
	// seal is a clip's record still to sign (seal.go); nil otherwise.
	seal *seal
}

// handlerFunc is an authenticated API handler. It writes the success
// response itself and returns an error for anything else; the wrapper turns
// the error into a problem object.
type handlerFunc func(ctx *fasthttp.RequestCtx, c *exchange) error

// userValueAccess holds the request's *access: one user value, set once
// as the request arrives, for what the edge learns of it on the way (a
// lookup of fasthttp's user values scans them all, and each string put
// there is boxed on the heap).
const userValueAccess = "voxgate.access"

// accessOf returns the request's access record; nil for a request the
// edge did not take in (the metrics listener's).
func accessOf(ctx *fasthttp.RequestCtx) *access {
	a, _ := ctx.UserValue(userValueAccess).(*access)
	return a
}

// setRoute names the request's route for its metrics and access log line.
func setRoute(ctx *fasthttp.RequestCtx, route string) {
	if a := accessOf(ctx); a != nil {
		a.route = route
	}
}

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
		// The request's stages are runtime/trace regions (a no-op unless
		// a trace is being recorded): voxbench reads them from
		// /debug/pprof/trace to say where a stream's first byte goes.
		prologue := rtrace.StartRegion(context.Background(), stages.Prologue)
		s.metrics.InFlight.Inc() // Dec when observed, at the end of a stream
		s.mem.begin()
		// The configuration is taken once, here, and given back when the
		// request is observed (a stream: at its end).
		a := &access{start: start, live: s.hold()}
		ctx.SetUserValue(userValueAccess, a)
		if s.tracer != nil {
			a.trace, _ = s.tracer.StartServer(func(k string) string { return string(ctx.Request.Header.Peek(k)) }, string(ctx.Method()))
		}
		var idBuf [36]byte
		id := requestID(ctx, idBuf[:0])
		// The names are canonical already: SetCanonical skips fasthttp's
		// normalising copy of each (the values are still checked).
		ctx.Response.Header.SetCanonical(headerRequestID, id)
		ctx.Response.Header.SetCanonical(headerServiceRequestID, id)
		a.reqID = string(id)
		s.cors.decorate(ctx)
		if ambiguousLength(&ctx.Request.Header) {
			// RFC 9112 section 6.1: a request with both Content-Length and
			// Transfer-Encoding must be treated as an error and the
			// connection closed. Behind a proxy that framed it the other
			// way, the bytes after the chunked body would otherwise be read
			// as the next request (request smuggling).
			ctx.SetConnectionClose()
			s.writeProblem(ctx, problem.New(problem.BadRequest, "the request has both Content-Length and Transfer-Encoding; send one"))
			s.observe(ctx, a)
			prologue.End()
			return
		}
		held, err := s.readBody(ctx)
		prologue.End()
		if err != nil {
			s.bodyError(ctx, err)
			s.observe(ctx, a)
			return
		}
		defer func() {
			if r := recover(); r != nil {
				s.metrics.Panics.Inc()
				s.log.Error("panic in handler", zap.String("request_id", a.reqID), zap.Any("panic", r), zap.ByteString("stack", debug.Stack()))
				ctx.Response.ResetBody()
				s.writeProblem(ctx, problem.New(problem.Internal, "an internal error occurred; request id %s", a.reqID))
			}
			if held.n > 0 {
				// The handler has decoded what it needs (into copies), and
				// a streamed answer does not need the body: let it go now
				// rather than when the stream ends.
				ctx.Request.ResetBody()
				s.bodyMem.give(held.org, held.n)
			}
			s.observe(ctx, a)
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
//
// A streamed response is not finished when the handler returns: its body
// is written afterwards, for as long as the provider speaks. A body that
// knows when it ends (a lateObserver, the speech and conversation
// streams) is handed the request's record, and the metrics and the log
// line are written when the stream ends, with the whole duration and the
// bytes sent. Any other streamed body is observed now, its size unknown
// (-1): reading it here would hold it back from the client.
func (s *Server) observe(ctx *fasthttp.RequestCtx, a *access) {
	if a.route == "" {
		a.route = "unmatched"
	}
	if a.trace != nil {
		if pattern, _ := ctx.UserValue(router.MatchedRoutePathParam).(string); pattern != "" {
			a.trace = context.WithValue(a.trace, routePatternKey{}, pattern)
		}
	}
	// Taken from ctx now: it is reused once the handler has returned.
	a.method, a.path, a.status = methodName(ctx.Method()), pathName(ctx.Path()), ctx.Response.StatusCode()
	size := -1
	if ctx.Response.IsBodyStream() {
		if lo, ok := ctx.Response.BodyStream().(lateObserver); ok {
			lo.observeAtEnd(a)
			return
		}
	} else {
		size = len(ctx.Response.Body())
	}
	s.observeEnd(a, int64(size), "")
}

// pathName returns the request path as a string, without allocating for
// the speech paths, which every synthesis request's access log line and
// log row carry.
func pathName(p []byte) string {
	switch string(p) { // compared in place; no string is made
	case "/v1/audio/speech":
		return "/v1/audio/speech"
	case "/v1/audio/speech/stream":
		return "/v1/audio/speech/stream"
	case "/v1/audio/speech/with-timestamps":
		return "/v1/audio/speech/with-timestamps"
	}
	return string(p)
}

// methodName returns the request method as a string, without allocating
// for the methods of the API.
func methodName(m []byte) string {
	switch string(m) { // compared in place; no string is made
	case fasthttp.MethodGet:
		return fasthttp.MethodGet
	case fasthttp.MethodPost:
		return fasthttp.MethodPost
	case fasthttp.MethodPut:
		return fasthttp.MethodPut
	case fasthttp.MethodPatch:
		return fasthttp.MethodPatch
	case fasthttp.MethodDelete:
		return fasthttp.MethodDelete
	case fasthttp.MethodOptions:
		return fasthttp.MethodOptions
	case fasthttp.MethodHead:
		return fasthttp.MethodHead
	}
	return string(m)
}

// access is a request's record for the access log and the HTTP metrics,
// copied out of its fasthttp.RequestCtx for a stream that ends later.
type access struct {
	start time.Time
	reqID string
	// route is set by the route's handler, org once the key is checked.
	route, org   string
	method, path string
	status       int
	trace        context.Context // the server span's, when tracing
	live         *Live           // released when observed
}

// lateObserver is a streamed body that observes its request when it
// ends, through Server.observeEnd.
type lateObserver interface {
	observeAtEnd(a *access)
}

// observeEnd finishes a streamed request's record: bytes is what was
// sent, failure the error code of a stream that broke off ("" if none).
func (s *Server) observeEnd(a *access, bytes int64, failure string) {
	s.observed(a.start, a.reqID, a.route, a.org, a.method, a.path, a.status, int(bytes), failure, a.trace, a.live)
}

// observed writes the metrics and the access log line of one request.
//
// Hot path (every request): the route's series are looked up once, when
// the routes are registered (routeSeries), and the access log's fields
// are strings the request already has. BenchmarkObserved.
func (s *Server) observed(start time.Time, reqID, route, org, method, path string, status, size int, failure string, tctx context.Context, live *Live) {
	elapsed := time.Since(start)
	s.metrics.InFlight.Dec()
	s.mem.end()
	live.release()
	if tctx != nil {
		endServerSpan(tctx, reqID, route, org, method, path, status, failure)
	}
	if rs := s.routeSeries[route]; rs != nil {
		if status == fasthttp.StatusOK {
			rs.OK.Inc()
		} else {
			s.metrics.Requests.WithLabelValues(route, statusLabel(status)).Inc()
		}
		rs.Latency.Observe(elapsed.Seconds())
	} else {
		s.metrics.Requests.WithLabelValues(route, statusLabel(status)).Inc()
		s.metrics.Latency.WithLabelValues(route).Observe(elapsed.Seconds())
	}
	if !s.accessLog {
		return
	}
	// Only the path is logged, never the query string's values beyond
	// the path or any header: keys travel in Authorization only. A stream
	// that broke off after its status went out says why in stream_error.
	failed := zap.Skip()
	if failure != "" {
		failed = zap.String("stream_error", failure)
	}
	// With tracing on, the line carries the request's trace id, so a
	// log line leads to its trace and back.
	traced := zap.Skip()
	if tctx != nil {
		if sc := trace.SpanContextFromContext(tctx); sc.HasTraceID() {
			traced = zap.String("trace_id", sc.TraceID().String())
		}
	}
	s.log.Info("request",
		zap.String("request_id", reqID),
		zap.String("method", method),
		zap.String("path", path),
		zap.Int("status", status),
		zap.Duration("duration", elapsed),
		zap.String("org", org),
		zap.Int("bytes", size),
		failed,
		traced,
	)
}

// routePatternKey holds, in a traced request's span context, the pattern
// of the route it matched ("/v1/voices/{id}").
type routePatternKey struct{}

// endServerSpan finishes a request's server span: named "METHOD pattern"
// after the matched route's pattern, its http.route, as the HTTP
// semantic conventions name server spans (the metrics' route name is
// kept as voxgate.route; a request that matched no route is named by
// that), with the status, and an error status for a 5xx or a stream
// that broke off.
func endServerSpan(tctx context.Context, reqID, route, org, method, path string, status int, failure string) {
	span := trace.SpanFromContext(tctx)
	if pattern, _ := tctx.Value(routePatternKey{}).(string); pattern != "" {
		span.SetName(method + " " + pattern)
		span.SetAttributes(tracing.HTTPRoute.String(pattern))
	} else {
		span.SetName(method + " " + route)
	}
	span.SetAttributes(
		tracing.HTTPMethod.String(method),
		tracing.URLPath.String(path),
		tracing.HTTPStatus.Int(status),
		tracing.RequestID.String(reqID),
		attribute.String("voxgate.route", route),
	)
	if org != "" {
		span.SetAttributes(tracing.Org.String(org))
	}
	switch {
	case failure != "":
		span.SetAttributes(tracing.ErrorType.String(failure))
		span.SetStatus(codes.Error, "the stream broke off: "+failure)
	case status >= 500:
		span.SetAttributes(tracing.ErrorType.String(statusLabel(status)))
		span.SetStatus(codes.Error, "")
	}
	span.End()
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

// requestID echoes a client's X-Request-Id when it is valid (see
// validRequestID), so clients find their calls in the log by their own
// ids, or makes a new UUID (appended to buf). It becomes the log row's
// request_id and a conversation's turns' parent_request_id. The slice is
// the request's or buf's: copy it to keep it.
func requestID(ctx *fasthttp.RequestCtx, buf []byte) []byte {
	if v := ctx.Request.Header.PeekBytes(headerRequestID); validRequestID(v) {
		return v
	}
	return store.AppendRequestID(buf)
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
	return s.apiIn(route, nil, h)
}

// apiIn is api for a route shared with, or owned by, another API's
// dialect: detect says which one a request speaks (nil: voxgate's own),
// before authentication, so that even a missing key is answered in the
// dialect's error shape.
func (s *Server) apiIn(route string, detect func(*fasthttp.RequestCtx) dialectKind, h handlerFunc) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		admit := rtrace.StartRegion(context.Background(), stages.Auth)
		c := s.newExchange(ctx, route)
		if detect != nil {
			c.dialect = detect(ctx)
		}
		p, st := s.checkKey(ctx, c.dialect)
		admit.End()
		if st != auth.StatusOK {
			s.writeRefusedIn(ctx, c.dialect, p, st)
			return
		}
		s.serve(ctx, c, p, h)
	}
}

// newExchange starts the exchange of an API request on route.
func (s *Server) newExchange(ctx *fasthttp.RequestCtx, route string) *exchange {
	c := &exchange{ctx: context.Background(), start: time.Now(), route: route}
	if a := accessOf(ctx); a != nil {
		a.route = route
		c.reqID, c.live = a.reqID, a.live
		if a.trace != nil {
			c.ctx = a.trace // the handler's work becomes the server span's children
		}
	}
	return c
}

// serve runs h for the authenticated principal p: its key's scope and
// budget travel with the request, its organization's rate limit applies.
func (s *Server) serve(ctx *fasthttp.RequestCtx, c *exchange, p auth.Principal, h handlerFunc) {
	c.p = p
	c.ctx = speech.WithCaller(c.ctx, speech.Caller{KeyID: p.KeyID, Scope: p.Scope})
	if a := accessOf(ctx); a != nil {
		a.org = p.OrgID
	}
	if pe := kindAllowed(p, c.route); pe != nil {
		s.writeProblemIn(ctx, c.dialect, pe)
		return
	}
	if pe := s.rateLimit(p.OrgID, c.route); pe != nil {
		s.writeProblemIn(ctx, c.dialect, pe)
		return
	}
	if pe := s.keyRateLimit(&p); pe != nil {
		s.writeProblemIn(ctx, c.dialect, pe)
		return
	}
	if err := h(ctx, c); err != nil {
		s.writeError(ctx, c, err, "")
	}
}

// Constant answers of kindAllowed, made once.
var (
	adminOnly = &problem.Error{Code: problem.Forbidden, Detail: "the admin API needs an admin key (voxgate keys create --admin); an organization's key cannot call it"}
	orgOnly   = &problem.Error{Code: problem.Forbidden, Detail: "an admin key calls only the admin API (/v1/admin/); use an organization's key here"}
)

// kindAllowed checks the key's kind against the route: admin keys call
// the admin API and nothing else, organizations' keys everything else.
func kindAllowed(p auth.Principal, route string) *problem.Error {
	admin := isAdminRoute(route)
	switch {
	case admin && !p.Admin:
		return adminOnly
	case !admin && p.Admin:
		return orgOnly
	}
	return nil
}

// isAdminRoute reports whether route is one of the admin API's.
func isAdminRoute(route string) bool { return strings.HasPrefix(route, "admin.") }

// writeError maps err to a problem object, logs server-side failures and
// writes the response.
//
// A moderation block is the one failure that is not a problem object: the
// spec gives it its own application/json envelope.
func (s *Server) writeError(ctx *fasthttp.RequestCtx, c *exchange, err error, provider string) *problem.Error {
	d := dialectVoxgate
	if c != nil {
		d = c.dialect
	}
	if be, ok := isBlocked(err); ok {
		s.writeBlocked(ctx, d, be)
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
		var reqID string
		if a := accessOf(ctx); a != nil {
			reqID = a.reqID
		}
		s.log.Warn("request failed", zap.String("request_id", reqID), zap.String("code", string(pe.Code)), zap.Error(err))
	}
	s.writeProblemIn(ctx, d, pe)
	return pe
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

// writeProblem writes an application/problem+json response.
func (s *Server) writeProblem(ctx *fasthttp.RequestCtx, pe *problem.Error) {
	ctx.Response.Header.SetContentType(contentProblem)
	ctx.SetStatusCode(pe.Status())
	setRetryHeaders(ctx, pe)
	bp := bufPool.Get().(*[]byte)
	*bp = pe.AppendJSON((*bp)[:0])
	ctx.Response.SetBody(*bp) // SetBody copies
	bufPool.Put(bp)
}

// setRetryHeaders writes Retry-After, and the RateLimit-Policy and
// RateLimit fields of the policy that refused a request.
func setRetryHeaders(ctx *fasthttp.RequestCtx, pe *problem.Error) {
	if pe.RetryAfter > 0 || pe.Code == problem.RateLimited {
		ctx.Response.Header.Set(fasthttp.HeaderRetryAfter, problem.RetryAfterSeconds(pe.RetryAfter))
	}
	if pe.Limit != nil {
		ctx.Response.Header.Set(headerRateLimitPolicy, pe.Limit.PolicyField())
		ctx.Response.Header.Set(headerRateLimit, pe.Limit.Field(pe.RetryAfter))
	}
}

// The IETF RateLimit header fields (problem.RateLimit).
const (
	headerRateLimitPolicy = "RateLimit-Policy"
	headerRateLimit       = "RateLimit"
)

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
	body, err := s.jsonBody(ctx)
	if err != nil {
		return err
	}
	return decodeStrict(body, v)
}

// decodeSpeechJSON is decodeJSON for the bodies of the speech endpoints,
// which every synthesis request decodes (decodeHot).
func (s *Server) decodeSpeechJSON(ctx *fasthttp.RequestCtx, v any) error {
	body, err := s.jsonBody(ctx)
	if err != nil {
		return err
	}
	return decodeHot(body, v)
}

// decodeSpeechBody is decodeSpeechJSON for the native speech body. A flat
// body is decoded into r where it is (the handler's own variable, which
// then stays off the heap); any other into a copy the general decoders
// may keep, copied back.
func (s *Server) decodeSpeechBody(ctx *fasthttp.RequestCtx, r *speechRequestJSON) error {
	body, err := s.jsonBody(ctx)
	if err != nil {
		return err
	}
	if decodeFlatSpeech(body, r) {
		return checkText(body)
	}
	v := new(speechRequestJSON)
	err = decodeGeneral(body, v)
	*r = *v
	return err
}

// jsonBody returns the request's body once its content type says JSON and
// it is within server.max_body_bytes.
func (s *Server) jsonBody(ctx *fasthttp.RequestCtx) ([]byte, error) {
	ct := ctx.Request.Header.ContentType()
	if mt, _, _ := bytes.Cut(ct, []byte(";")); !isJSONType(bytes.TrimSpace(mt)) {
		return nil, problem.New(problem.UnsupportedMediaType, "send the body as Content-Type: application/json")
	}
	body := ctx.PostBody()
	if len(body) > s.opts.MaxBodyBytes {
		return nil, problem.New(problem.PayloadTooLarge, "the body is larger than %d bytes", s.opts.MaxBodyBytes)
	}
	return body, nil
}

// strictV2 are decodeHot's options: members v does not have are refused,
// as DisallowUnknownFields refuses them in decodeStrict.
var strictV2 = jsonv2.RejectUnknownMembers(true)

// decodeHot is decodeStrict for the few bodies on the path of every
// synthesis request. Hot path: go-json-experiment/json (the implementation
// that Go's encoding/json/v2 comes from) decodes a speech body in about a
// third of encoding/json's time with half its allocations
// (BenchmarkDecodeSpeech). It is stricter than encoding/json, never more
// lenient: member names must match exactly and appear once, the text must
// be valid UTF-8. So a body it accepts, encoding/json accepts with the
// same values (FuzzDecodeHot checks it); a body it refuses is decoded
// again by decodeStrict from a zero v, and the client gets the problem it
// always got.
func decodeHot(body []byte, v any) error {
	switch r := v.(type) {
	case *speechRequestJSON:
		if decodeFlatSpeech(body, r) {
			return checkText(body)
		}
	case *dialect.OpenAISpeech:
		if decodeFlatOpenAI(body, r) {
			return checkText(body)
		}
	}
	return decodeGeneral(body, v)
}

// decodeGeneral is decodeHot for a body the flat decoders declined:
// go-json-experiment, then encoding/json for the problem of a body it
// refuses.
func decodeGeneral(body []byte, v any) error {
	if jsonv2.Unmarshal(body, v, strictV2) == nil {
		return checkText(body)
	}
	reflect.ValueOf(v).Elem().SetZero()
	return decodeStrict(body, v)
}

// decodeJSONLenient is decodeJSON without the unknown-field check, for a
// dialect whose API ignores fields it does not know (ElevenLabs'): its
// SDKs send new fields before voxgate knows them.
func (s *Server) decodeJSONLenient(ctx *fasthttp.RequestCtx, v any) error {
	ct := ctx.Request.Header.ContentType()
	if mt, _, _ := bytes.Cut(ct, []byte(";")); !isJSONType(bytes.TrimSpace(mt)) {
		return problem.New(problem.UnsupportedMediaType, "send the body as Content-Type: application/json")
	}
	body := ctx.PostBody()
	if len(bytes.TrimSpace(body)) == 0 {
		return problem.New(problem.InvalidJSON, "the request body is empty; send a JSON object")
	}
	return decodeLenient(body, v)
}

// decodeLenient decodes body into v as encoding/json does, ignoring
// unknown members; ElevenLabs' SDK body takes the flat decoder
// (FuzzDecodeLenient holds the two to the same values).
func decodeLenient(body []byte, v any) error {
	if r, ok := v.(*dialect.ElevenLabsSpeech); ok && decodeFlatElevenLabs(body, r) {
		return checkText(body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return jsonProblem(err)
	}
	return checkText(body)
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
	return checkText(body)
}

// checkText applies the edge's text rule (gateway/edge/textrule) to a decoded
// body: every string of every JSON body a handler decodes, so nothing the
// store cannot hold reaches a record or a log row, whichever field it
// came in.
func checkText(body []byte) error {
	if fe := textrule.JSON(body); len(fe) > 0 {
		return problem.Validation(fe...)
	}
	return nil
}

// jsonProblem maps encoding/json errors to problems.
func jsonProblem(err error) error {
	var pe *problem.Error
	if errors.As(err, &pe) {
		return pe // a field's own decoder said what is wrong
	}
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
	o, ok := s.orgs.Get(org)
	if !ok {
		return nil
	}
	if isSynthesis(route) {
		return s.take(o.SynthKey, o.Synthesis, "org-synthesis", "the organization's synthesis rate limit was exceeded")
	}
	return s.take(o.ReadKey, o.Reads, "org-reads", "the organization's reads rate limit was exceeded")
}

// keyRateLimit takes one request from the key's own rate limit, if it
// has one, through the same limiter (and fail-open setting) as the
// organization's: in Redis, one count across every instance.
func (s *Server) keyRateLimit(p *auth.Principal) *problem.Error {
	if p.Scope == nil || p.Scope.RatePerMinute <= 0 {
		return nil
	}
	return s.take(p.RateKey, orgs.PerMinute(p.Scope.RatePerMinute), "key", "the API key's own rate limit was exceeded")
}

// take takes one request from key's budget under lim, named policy in
// the RateLimit header fields of a refusal.
func (s *Server) take(key string, lim ratelimit.Limit, policy, refused string) *problem.Error {
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
		return &problem.Error{Code: problem.RateLimited, Detail: "the rate limiter is unavailable and this gateway refuses requests it cannot count", RetryAfter: time.Second, Limit: ratePolicy(policy, lim)}
	}
	if !d.Allowed {
		return &problem.Error{Code: problem.RateLimited, Detail: refused, RetryAfter: d.RetryAfter, Limit: ratePolicy(policy, lim)}
	}
	return nil
}

// ratePolicy describes a GCRA limit as a quota policy: the burst is the
// quota, and the window the time the rate takes to refill it.
func ratePolicy(name string, l ratelimit.Limit) *problem.RateLimit {
	burst := l.Burst
	if burst <= 0 {
		burst = max(1, int(l.Rate))
	}
	return &problem.RateLimit{Policy: name, Quota: int64(burst), Window: time.Duration(float64(burst) / l.Rate * float64(time.Second))}
}

// isSynthesis reports whether a route makes audio (the synthesis budget):
// speech, conversations, and storing a provider key, which is checked
// with a short synthesis.
func isSynthesis(route string) bool {
	return strings.HasPrefix(route, "speech") || strings.HasPrefix(route, "conversation") || route == "apikeys.put"
}
