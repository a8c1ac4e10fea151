package edge

import (
	"strings"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/edge/ui"
)

// The dashboard (package ui) is served at /ui/: its assets, its session
// endpoints, and the API itself under /ui/api/v1/..., where a session
// cookie stands in for the bearer key. Every /v1 route registered through
// routes gets that twin (uiPrefix + path), so the dashboard can do what
// the API can and nothing more, with the same handlers, rate limits and
// log rows (whose path then says the request came from the dashboard).

// uiPrefix is where the dashboard reaches the API.
const uiPrefix = "/ui/api"

// registerUI adds the dashboard's own routes.
func (s *Server) registerUI(r *router.Router) {
	serve := func(route string, h fasthttp.RequestHandler) fasthttp.RequestHandler {
		return func(ctx *fasthttp.RequestCtx) {
			setRoute(ctx, route)
			h(ctx)
		}
	}
	r.GET("/ui/", serve("ui.asset", s.ui.Asset))
	r.GET("/ui/{file:*}", serve("ui.asset", s.ui.Asset))
	r.POST(uiPrefix+"/session", serve("ui.signin", s.ui.SignIn))
	r.GET(uiPrefix+"/session", serve("ui.session", s.ui.Current))
	r.DELETE(uiPrefix+"/session", serve("ui.signout", s.ui.SignOut))
}

// uiTwin reports whether an API route gets a dashboard twin.
func uiTwin(path string) bool { return strings.HasPrefix(path, "/v1/") }

// session wraps an API handler for the dashboard: the session cookie
// instead of the bearer key, and the session's CSRF token on anything but
// GET; then the same as api: the caller's scope, rate limits, problems.
func (s *Server) session(route string, h handlerFunc) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		ui.SetHeaders(ctx)
		c := s.newExchange(ctx, route) // names the route too
		sess, pe := s.ui.Verify(ctx)
		if pe == nil {
			pe = s.ui.CheckCSRF(ctx, sess)
		}
		if pe != nil {
			s.writeProblem(ctx, pe)
			return
		}
		s.serve(ctx, c, sess.Principal, h)
	}
}
