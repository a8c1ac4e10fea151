// Package ui is the dashboard the gateway serves at /ui/: its built
// assets, embedded in the binary (no CDN, nothing fetched at run time),
// and the sign-in that trades an API key for a session cookie.
//
// The frontend's source is in web/ (Preact, built with esbuild by `make
// build`); the build writes dist/, which go:embed picks up. A binary built
// without it serves a page saying how to build it.
//
// The dashboard calls the same API as everyone else, under /ui/api/v1/...:
// package server authenticates those requests with the session (Verify)
// instead of a bearer key, and requires the session's CSRF token on every
// request that changes something. The cookie is HttpOnly, SameSite=Strict
// and limited to /ui/, so the key never sits in the browser's storage and
// no other site can make the browser use the session.
package ui

import (
	"embed"
	"encoding/json"
	"io/fs"
	"mime"
	"path"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/admission/auth"
	"github.com/voxgate/voxgate/gateway/problem"
)

//go:embed all:dist
var dist embed.FS

// CSRFHeader carries the session's CSRF token on unsafe requests.
const CSRFHeader = "X-CSRF-Token"

// securityHeaders go on every dashboard response: the page loads only its
// own scripts and styles and talks only to its own origin; audio plays
// from blob: URLs the page makes.
var securityHeaders = [][2]string{
	{"Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; media-src 'self' blob: data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"},
	{"X-Content-Type-Options", "nosniff"},
	{"Referrer-Policy", "no-referrer"},
	{"X-Frame-Options", "DENY"},
}

// Handler serves the dashboard's assets and its session endpoints.
type Handler struct {
	sessions *Sessions
	auth     *auth.Authenticator
	assets   fs.FS
	built    bool
}

// New returns the dashboard handler.
func New(a *auth.Authenticator, s *Sessions) *Handler {
	sub, _ := fs.Sub(dist, "dist")
	_, err := fs.Stat(sub, "index.html")
	return &Handler{sessions: s, auth: a, assets: sub, built: err == nil}
}

// Sessions returns the handler's session codec.
func (h *Handler) Sessions() *Sessions { return h.sessions }

// SetHeaders writes the security headers.
func SetHeaders(ctx *fasthttp.RequestCtx) {
	for _, kv := range securityHeaders {
		ctx.Response.Header.Set(kv[0], kv[1])
	}
}

// notBuilt is served when the binary was built without the assets.
const notBuilt = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>voxgate dashboard</title></head>
<body><h1>The dashboard was not built into this binary</h1><p>Run <code>make build</code> (it needs npm), then start the gateway again.</p></body></html>`

// Asset serves GET /ui/ and /ui/{file}: the page for the directory and
// any unknown name (the page routes by the URL's fragment), the file
// otherwise. Hashed file names are cached for good; the page never is.
func (h *Handler) Asset(ctx *fasthttp.RequestCtx) {
	SetHeaders(ctx)
	name := strings.TrimPrefix(string(ctx.Path()), "/ui/")
	if !h.built {
		ctx.SetContentType("text/html; charset=utf-8")
		ctx.SetStatusCode(fasthttp.StatusServiceUnavailable)
		ctx.SetBodyString(notBuilt)
		return
	}
	if name == "" || strings.Contains(name, "..") || name == "README.md" {
		name = "index.html"
	}
	data, err := fs.ReadFile(h.assets, name)
	if err != nil {
		name = "index.html"
		if data, err = fs.ReadFile(h.assets, name); err != nil {
			ctx.SetStatusCode(fasthttp.StatusNotFound)
			return
		}
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	ctx.SetContentType(ct)
	if name == "index.html" {
		ctx.Response.Header.Set("Cache-Control", "no-store")
	} else if strings.HasPrefix(name, "assets/") {
		ctx.Response.Header.Set("Cache-Control", "public, max-age=31536000, immutable")
	}
	ctx.SetBody(data)
}

// sessionJSON describes the signed-in session to the page.
type sessionJSON struct {
	Org       string `json:"org"`
	KeyID     string `json:"key_id"`
	ExpiresAt string `json:"expires_at"`
	CSRFToken string `json:"csrf_token"`
	// Admin marks an admin key's session: the page shows the admin view.
	Admin bool `json:"admin,omitempty"`
}

func (h *Handler) writeSession(ctx *fasthttp.RequestCtx, s *Session) {
	b, _ := json.Marshal(sessionJSON{Org: s.Principal.OrgID, KeyID: s.Principal.KeyID,
		ExpiresAt: s.Expires.UTC().Format(time.RFC3339), CSRFToken: h.sessions.CSRFToken(s), Admin: s.Principal.Admin})
	ctx.Response.Header.Set("Cache-Control", "no-store")
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
}

// WriteProblem writes a problem object.
func WriteProblem(ctx *fasthttp.RequestCtx, pe *problem.Error) {
	ctx.Response.Header.SetContentType("application/problem+json")
	ctx.SetStatusCode(pe.Status())
	ctx.SetBody(pe.AppendJSON(nil))
}

// maxSignInBody bounds the sign-in body: a key and a little JSON.
const maxSignInBody = 1024

// SignIn serves POST /ui/api/session {"key": "vxk_..."}: a key that
// authenticates gets a session cookie. The body must be JSON, which a
// cross-site form cannot send.
func (h *Handler) SignIn(ctx *fasthttp.RequestCtx) {
	SetHeaders(ctx)
	if ct := string(ctx.Request.Header.ContentType()); !strings.HasPrefix(ct, "application/json") {
		WriteProblem(ctx, problem.New(problem.UnsupportedMediaType, "send the key as a JSON body"))
		return
	}
	if len(ctx.PostBody()) > maxSignInBody {
		WriteProblem(ctx, problem.New(problem.PayloadTooLarge, "the sign-in body is larger than %d bytes", maxSignInBody))
		return
	}
	var body struct {
		Key string `json:"key"`
	}
	if err := json.Unmarshal(ctx.PostBody(), &body); err != nil || body.Key == "" {
		WriteProblem(ctx, problem.Validation(problem.Field("send the API key as a string", "key")))
		return
	}
	p, ok := h.auth.Authenticate([]byte("Bearer " + strings.TrimSpace(body.Key)))
	if !ok {
		WriteProblem(ctx, problem.New(problem.Unauthorized, "that API key is not valid: check it was copied whole and has not been revoked"))
		return
	}
	token, s := h.sessions.Issue(p)
	h.setCookie(ctx, token, s.Expires)
	h.writeSession(ctx, s)
}

// Current serves GET /ui/api/session: the session, or why there is none.
func (h *Handler) Current(ctx *fasthttp.RequestCtx) {
	SetHeaders(ctx)
	s, pe := h.Verify(ctx)
	if pe != nil {
		WriteProblem(ctx, pe)
		return
	}
	h.writeSession(ctx, s)
}

// SignOut serves DELETE /ui/api/session: the cookie is cleared. (The
// cookie is the session; revoking the key ends every session of it.)
func (h *Handler) SignOut(ctx *fasthttp.RequestCtx) {
	SetHeaders(ctx)
	if s, pe := h.Verify(ctx); pe == nil && !h.sessions.CheckCSRF(s, ctx.Request.Header.Peek(CSRFHeader)) {
		WriteProblem(ctx, problem.New(problem.CSRFFailed, "sign out from the dashboard page"))
		return
	}
	h.setCookie(ctx, "", time.Unix(0, 0))
	ctx.SetStatusCode(fasthttp.StatusNoContent)
}

// Verify returns the request's session, or the problem to answer.
func (h *Handler) Verify(ctx *fasthttp.RequestCtx) (*Session, *problem.Error) {
	s, err := h.sessions.Verify(ctx.Request.Header.Cookie(CookieName))
	switch err {
	case nil:
		return s, nil
	case ErrExpired:
		return nil, problem.New(problem.SessionExpired, "the dashboard session expired; sign in again")
	case ErrKeyRevoked:
		return nil, problem.New(problem.Unauthorized, "the API key this session signed in with was revoked; sign in with another")
	}
	return nil, problem.New(problem.Unauthorized, "not signed in to the dashboard")
}

// CheckCSRF returns the problem for an unsafe request without s's token.
func (h *Handler) CheckCSRF(ctx *fasthttp.RequestCtx, s *Session) *problem.Error {
	if ctx.IsGet() || ctx.IsHead() {
		return nil
	}
	if !h.sessions.CheckCSRF(s, ctx.Request.Header.Peek(CSRFHeader)) {
		return problem.New(problem.CSRFFailed, "requests that change something must carry the session's %s header", CSRFHeader)
	}
	return nil
}

func (h *Handler) setCookie(ctx *fasthttp.RequestCtx, value string, expires time.Time) {
	c := fasthttp.AcquireCookie()
	defer fasthttp.ReleaseCookie(c)
	c.SetKey(CookieName)
	c.SetValue(value)
	c.SetPath("/ui/")
	c.SetHTTPOnly(true)
	c.SetSameSite(fasthttp.CookieSameSiteStrictMode)
	c.SetExpire(expires)
	if value == "" {
		c.SetMaxAge(-1)
	} else {
		c.SetMaxAge(int(time.Until(expires).Seconds()))
	}
	// Secure whenever the browser reached us over TLS, here or at a proxy
	// in front; a plain-HTTP loopback deployment must still sign in.
	if ctx.IsTLS() || strings.EqualFold(string(ctx.Request.Header.Peek("X-Forwarded-Proto")), "https") {
		c.SetSecure(true)
	}
	ctx.Response.Header.SetCookie(c)
}
