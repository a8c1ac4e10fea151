package edge

import (
	"bytes"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/problem"
)

// CORSOptions say which browser origins may call the API.
type CORSOptions struct {
	// AllowedOrigins are origins as browsers send them; "*" allows any.
	// Empty allows none: browsers then refuse every cross-origin call.
	AllowedOrigins []string
	// MaxAge is how long a browser may cache a preflight's answer.
	MaxAge time.Duration
}

// cors is the compiled CORS policy.
type cors struct {
	any     bool
	origins map[string]bool
	maxAge  string
}

func newCORS(o CORSOptions) *cors {
	c := &cors{origins: make(map[string]bool, len(o.AllowedOrigins)), maxAge: strconv.Itoa(int(o.MaxAge / time.Second))}
	for _, origin := range o.AllowedOrigins {
		if origin == "*" {
			c.any = true
		}
		c.origins[origin] = true
	}
	return c
}

// exposedHeaders are the response headers a page's script may read
// besides the CORS-safelisted ones: the request id to quote in a support
// request, how long to wait after a 429, the auth scheme of a 401, what
// of a dialect request was dropped (X-Voxgate-Warnings) and every other
// X-Voxgate-* header a synthesis answers with: its warnings, the provider
// that spoke (after a fallback, not the one asked), whether the cache
// answered, and what was converted; and the IETF RateLimit fields of a
// 429, so a page can pace itself.
const exposedHeaders = "X-Request-Id, Retry-After, WWW-Authenticate, X-Voxgate-Warnings, X-Voxgate-Warning, X-Voxgate-Provider, X-Voxgate-Cache, X-Voxgate-Transcoded, X-Voxgate-Mark, RateLimit-Policy, RateLimit"

// defaultAllowedHeaders answer a preflight that names no request headers.
const defaultAllowedHeaders = "Authorization, Content-Type, xi-api-key, X-Request-Id"

// maxRequestHeadersLen bounds the Access-Control-Request-Headers value
// echoed back; SDKs send a dozen names, far below it.
const maxRequestHeadersLen = 2048

var (
	headerOrigin        = []byte("Origin")
	headerRequestMethod = []byte("Access-Control-Request-Method")
	headerRequestHdrs   = []byte("Access-Control-Request-Headers")
)

// allowed reports whether origin may read the API's answers.
func (c *cors) allowed(origin []byte) bool {
	if c == nil || len(origin) == 0 {
		return false
	}
	return c.any || c.origins[string(origin)] // no allocation: map lookup of a converted []byte
}

// decorate adds the CORS headers of an answer to an allowed origin. It
// runs for every request (hot path): a request without Origin, as every
// non-browser client's, costs one header lookup.
func (c *cors) decorate(ctx *fasthttp.RequestCtx) {
	if c == nil || len(c.origins) == 0 {
		return // no origin allowed: every answer is the same for all
	}
	h := &ctx.Response.Header
	// Answers differ by Origin: a shared cache must not give one
	// origin's answer to another.
	h.Add(fasthttp.HeaderVary, "Origin")
	origin := ctx.Request.Header.PeekBytes(headerOrigin)
	if !c.allowed(origin) {
		return
	}
	h.SetBytesV(fasthttp.HeaderAccessControlAllowOrigin, origin)
	h.Set(fasthttp.HeaderAccessControlExposeHeaders, exposedHeaders)
}

// options answers OPTIONS on a route: a CORS preflight (Origin and
// Access-Control-Request-Method present) from an allowed origin gets 204
// with what it may send, from any other origin 403; a plain OPTIONS
// request gets 204 and the Allow header the router set. No API key is
// asked for: browsers send preflights without credentials.
func (s *Server) options(ctx *fasthttp.RequestCtx) {
	setRoute(ctx, "options")
	origin := ctx.Request.Header.PeekBytes(headerOrigin)
	method := ctx.Request.Header.PeekBytes(headerRequestMethod)
	if len(origin) == 0 || len(method) == 0 {
		ctx.SetStatusCode(fasthttp.StatusNoContent)
		return
	}
	if !s.cors.allowed(origin) {
		s.writeProblem(ctx, problem.New(problem.OriginNotAllowed, "origin %s may not call this gateway from a browser (cors.allowed_origins)", origin))
		return
	}
	h := &ctx.Response.Header
	h.Set(fasthttp.HeaderAccessControlAllowMethods, string(h.Peek(fasthttp.HeaderAllow)))
	h.Set(fasthttp.HeaderAccessControlAllowHeaders, allowHeaders(ctx.Request.Header.PeekBytes(headerRequestHdrs)))
	h.Set(fasthttp.HeaderAccessControlMaxAge, s.cors.maxAge)
	ctx.SetStatusCode(fasthttp.StatusNoContent)
}

// allowHeaders answers a preflight's Access-Control-Request-Headers. The
// names asked for are echoed when they are a plain list of header names:
// keys travel in headers the page sets itself, never in cookies, so no
// header name gives a page more than its key does, and SDKs add headers
// of their own (OpenAI's x-stainless-*) that a fixed list would refuse.
func allowHeaders(req []byte) string {
	req = bytes.TrimSpace(req)
	if len(req) == 0 || len(req) > maxRequestHeadersLen {
		return defaultAllowedHeaders
	}
	for _, name := range strings.Split(string(req), ",") {
		name = strings.TrimSpace(name)
		if name == "" || !isToken(name) {
			return defaultAllowedHeaders
		}
	}
	return string(req)
}

// isToken reports whether s is an HTTP token (RFC 9110 section 5.6.2).
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}
