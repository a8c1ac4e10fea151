package edge

import (
	"context"
	"crypto/subtle"
	"net"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/problem"
)

// Where /metrics is served (config metrics:). The public listener faces
// API clients; what Prometheus reads (providers, routes, traffic,
// failures) is the operator's. So /metrics is on the public listener only
// behind a token, or on a listener of its own (ServeMetrics), and
// otherwise only on the admin socket (the gateway package serves it
// there).

// metricsRoutes adds /metrics to r, behind the token when one is set.
func (s *Server) metricsRoutes(r *router.Router) {
	h := s.metrics.Handler()
	token := s.opts.MetricsToken
	r.GET("/metrics", func(ctx *fasthttp.RequestCtx) {
		setRoute(ctx, "metrics")
		if token != "" && !bearerIs(ctx.Request.Header.Peek(fasthttp.HeaderAuthorization), token) {
			ctx.Response.Header.Set(fasthttp.HeaderWWWAuthenticate, `Bearer realm="voxgate metrics"`)
			s.writeProblem(ctx, problem.New(problem.Unauthorized, "send the metrics token (metrics.token) as 'Authorization: Bearer <token>'"))
			return
		}
		h(ctx)
	})
}

// bearerIs reports whether an Authorization header carries token, in
// time independent of where a wrong token differs.
func bearerIs(header []byte, token string) bool {
	const prefix = "Bearer "
	if len(header) < len(prefix) || string(header[:len(prefix)]) != prefix {
		return false
	}
	return subtle.ConstantTimeCompare(header[len(prefix):], []byte(token)) == 1
}

// ServeMetrics serves /metrics (behind the token, if set), /healthz and
// /readyz on ln, a listener of its own (metrics.listen), until Shutdown.
func (s *Server) ServeMetrics(ln net.Listener) error {
	r := router.New()
	r.GET("/healthz", s.healthz)
	r.GET("/readyz", s.readyz)
	s.metricsRoutes(r)
	r.NotFound = func(ctx *fasthttp.RequestCtx) {
		s.writeProblem(ctx, problem.New(problem.NotFound, "no route %s %s on the metrics listener (/metrics, /healthz, /readyz)", ctx.Method(), ctx.Path()))
	}
	srv := &fasthttp.Server{
		Handler:            r.Handler,
		Name:               "voxgate",
		ReadTimeout:        s.opts.ReadTimeout,
		WriteTimeout:       s.opts.WriteTimeout,
		IdleTimeout:        s.opts.IdleTimeout,
		MaxRequestBodySize: 4 << 10, // GETs only
		CloseOnShutdown:    true,
		Logger:             zapPrintf{s.log},
	}
	s.metricsMu.Lock()
	s.metricsSrv = srv
	s.metricsMu.Unlock()
	return srv.Serve(ln)
}

// shutdownMetrics stops the metrics listener, if it runs.
func (s *Server) shutdownMetrics(ctx context.Context) error {
	s.metricsMu.Lock()
	srv := s.metricsSrv
	s.metricsMu.Unlock()
	if srv == nil {
		return nil
	}
	return srv.ShutdownWithContext(ctx)
}
