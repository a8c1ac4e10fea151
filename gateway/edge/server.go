// Package edge is voxgate's HTTP edge: the fasthttp server, the router,
// the middleware every request passes through, and the API handlers.
//
// A request reads top to bottom: edge (request id, recovery, metrics,
// access log) -> router -> api (auth, rate limit, problem writing) ->
// handler -> service (speech, resources, records) -> store or plugin
// client. Handlers decode, call one service method, and encode; none
// reads the store or calls a plugin itself.
package edge

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/router"
	"github.com/fasthttp/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/admission/auth"
	"github.com/voxgate/voxgate/gateway/admission/manage"
	"github.com/voxgate/voxgate/gateway/admission/orgs"
	"github.com/voxgate/voxgate/gateway/admission/ratelimit"
	"github.com/voxgate/voxgate/gateway/edge/openapi"
	"github.com/voxgate/voxgate/gateway/edge/realtime"
	"github.com/voxgate/voxgate/gateway/edge/ui"
	"github.com/voxgate/voxgate/gateway/internal/cursor"
	"github.com/voxgate/voxgate/gateway/jobs"
	"github.com/voxgate/voxgate/gateway/observe/metrics"
	"github.com/voxgate/voxgate/gateway/observe/tracing"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/provenance"
	"github.com/voxgate/voxgate/gateway/records"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/reqlog"
)

// Deps are what the server needs; the caller owns their lifecycles except
// where Shutdown says otherwise.
type Deps struct {
	// Options are the edge's limits and timeouts, built from the config.
	Options Options
	Logger  *zap.Logger
	// Live is the configuration requests are served with at first;
	// SwapLive replaces it.
	Live *Live
	// Records serves the request log and usage.
	Records *records.Service
	// OnIdle runs once the server has been quiet for a while (no request
	// in flight or arriving for a couple of seconds); nil does nothing.
	OnIdle func()
	// CursorSecret signs list cursors. Instances sharing storage share it
	// (store.Backend.Secret), so a cursor from one verifies on another.
	CursorSecret []byte
	Auth         *auth.Authenticator
	Logs         *reqlog.Writer
	Metrics      *metrics.Metrics
	// Tracer traces requests; nil is tracing off.
	Tracer *tracing.Tracer
	// Limiter enforces the orgs' rate limits (memory, or Redis shared by
	// instances); nil means an in-process limiter.
	Limiter ratelimit.Limiter
	// LimiterFailOpen lets requests through when Limiter errs.
	LimiterFailOpen bool
	// Ready reports whether the gateway can serve synthesis (started,
	// not draining, plugins up); nil means always ready.
	Ready func() error
	// StoreState reports whether the store answers, and since when it
	// has not; /readyz shows it without failing on it (every instance
	// shares the store). Nil shows nothing.
	StoreState func() (up bool, since time.Time)
	// KeyStates reports each pooled provider key's state for /readyz:
	// when it rests until, zero while in rotation; nil when no provider
	// pools keys.
	KeyStates func() map[string]map[string]time.Time
	// ConfigState is the configuration's state for /readyz's body: which
	// file is loaded since when, and the last reload's outcome; nil shows
	// nothing.
	ConfigState func() any
	// Provenance marks, signs and indexes answers; nil does none of it.
	Provenance *provenance.Service
	// UI is the dashboard (assets, sessions); nil serves none.
	UI *ui.Handler
	// Orgs is every organization (gateway.yaml's and the admin API's),
	// whose rate limits the edge enforces; nil builds one of
	// Options.Orgs.
	Orgs *orgs.Directory
	// Admin serves the admin API (/v1/admin/); nil serves none.
	Admin *manage.Service
	// Jobs serves the long-form job routes (/v1/audio/jobs); nil serves
	// none.
	Jobs *jobs.Service
}

// Options are the typed view of the configuration the edge needs, built
// once at start: the server never reads *config.Config.
type Options struct {
	// Currency is what costs are counted in (pricing.currency): usage
	// and quotes name it.
	Currency string
	// ReadTimeout, WriteTimeout and IdleTimeout bound a connection.
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// RequestTimeout bounds a whole synthesis request, streams included.
	RequestTimeout time.Duration
	// MaxBodyBytes bounds a JSON body; MaxMediaBytes an uploaded clip.
	MaxBodyBytes, MaxMediaBytes int
	// MaxBodyMemory bounds the bytes of bodies held at once (0: no
	// bound), BodyMemoryPerOrg those of one organization; see bodyMemory.
	MaxBodyMemory, BodyMemoryPerOrg int
	// MaxTextChars is the text limit of a model that states none.
	MaxTextChars int
	// AccessLog writes one line per request.
	AccessLog bool
	// MaxConns bounds open client connections (0: no bound);
	// MaxConnsPerIP those from one address (0: no bound).
	MaxConns, MaxConnsPerIP int
	// MetricsPublic serves /metrics on the public listener (behind
	// MetricsToken when set); MetricsToken guards it wherever it is
	// served over TCP.
	MetricsPublic bool
	MetricsToken  string
	// CORS says which browser origins may call the API.
	CORS CORSOptions
}

// Server is the HTTP edge.
type Server struct {
	// listener is Serve's listener (nil before Serve), which knows the
	// open connections.
	listener atomic.Pointer[limitListener]
	// live is the configuration new requests take (see Live).
	live atomic.Pointer[Live]
	// speechRoutes is set when New registered the speech routes.
	speechRoutes bool
	opts         Options
	log          *zap.Logger
	records      *records.Service
	auth         *auth.Authenticator
	logs         *reqlog.Writer
	metrics      *metrics.Metrics
	cursors      *cursor.Codec
	ready        func() error
	// storeState reports the store's reachability for /readyz.
	storeState func() (up bool, since time.Time)
	// keyStates reports pooled provider keys for /readyz.
	keyStates func() map[string]map[string]time.Time
	// configState reports the configuration's reloads for /readyz.
	configState func() any
	limiter     ratelimit.Limiter
	failOpen    bool
	// prov marks, signs and indexes answers (nil: off).
	prov *provenance.Service
	// sealers sign answers' records off the request path (seal.go).
	sealers *sealers
	// orgs holds each organization's rate limits (and their limiter
	// keys), from the file and the admin API.
	orgs  *orgs.Directory
	admin *manage.Service
	// jobs serves /v1/audio/jobs (nil: no such routes).
	jobs *jobs.Service
	// limiterWarn is the unix nanos of the last "limiter unavailable" log.
	limiterWarn everyWarn
	// blocks are what readBody reads chunked bodies into.
	blocks bodyBlocks
	// bodyMem counts the bytes of bodies held (server.max_body_memory).
	bodyMem   bodyMemory
	accessLog bool
	// realtime serves the realtime WebSocket (realtime.go).
	realtime *realtime.Hub
	upgrader *websocket.FastHTTPUpgrader
	tracer   *tracing.Tracer
	cors     *cors
	// openapi is the OpenAPI document as JSON, rendered once.
	openapi []byte
	ui      *ui.Handler

	// mem gives a burst's memory back once the server is quiet; memStop
	// ends its loop (Shutdown).
	mem         *memoryRelease
	memStop     chan struct{}
	memStopOnce sync.Once

	// routeSeries are the HTTP series of every route the server names,
	// found once: filled while New registers the routes, only read after.
	routeSeries map[string]*metrics.RouteSeries

	srv *fasthttp.Server
	// metricsSrv serves metrics.listen, once ServeMetrics has started it.
	metricsMu  sync.Mutex
	metricsSrv *fasthttp.Server
}

// New builds the server and its routes.
func New(d Deps) *Server {
	s := &Server{
		opts:        d.Options,
		log:         d.Logger,
		records:     d.Records,
		auth:        d.Auth,
		logs:        d.Logs,
		metrics:     d.Metrics,
		cursors:     cursor.New(d.CursorSecret),
		ready:       d.Ready,
		storeState:  d.StoreState,
		keyStates:   d.KeyStates,
		configState: d.ConfigState,
		limiter:     d.Limiter,
		failOpen:    d.LimiterFailOpen,
		accessLog:   d.Options.AccessLog,
		tracer:      d.Tracer,
		cors:        newCORS(d.Options.CORS),
		ui:          d.UI,
		orgs:        d.Orgs,
		admin:       d.Admin,
		prov:        d.Provenance,
		sealers:     newSealers(maxSealers),
		jobs:        d.Jobs,
	}
	s.mem, s.memStop = newMemoryRelease(), make(chan struct{})
	s.mem.idle = d.OnIdle
	s.routeSeries = map[string]*metrics.RouteSeries{}
	// The routes named outside the router's registrations.
	s.series("unmatched", "options", "metrics", "openapi", "healthz", "readyz", "speech.openai")
	if s.limiter == nil {
		s.limiter = ratelimit.NewMemory()
	}
	s.bodyMem.Total, s.bodyMem.PerOrg = int64(d.Options.MaxBodyMemory), int64(d.Options.BodyMemoryPerOrg)
	const refusedHelp = "Request bodies refused because the memory for bodies (limit=max_body_memory, 503) or an organization's share of it (limit=body_memory_per_org, 429) was reached."
	s.metrics.Registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "voxgate_http_body_bytes_held", Help: "Bytes of request bodies held in memory (server.max_body_memory bounds them).",
		}, func() float64 { return float64(s.bodyMem.Held()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "voxgate_http_bodies_refused_total", Help: refusedHelp, ConstLabels: prometheus.Labels{"limit": "max_body_memory"},
		}, func() float64 { return float64(s.bodyMem.refused.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "voxgate_http_bodies_refused_total", Help: refusedHelp, ConstLabels: prometheus.Labels{"limit": "body_memory_per_org"},
		}, func() float64 { return float64(s.bodyMem.refusedOrg.Load()) }),
	)
	doc, err := openapi.JSON()
	if err != nil {
		// The document is embedded and checked by the tests; failing
		// here means the binary was built from a broken source.
		panic(err)
	}
	s.openapi = doc
	if d.Live == nil {
		d.Live = NewLive(LiveDeps{})
	}
	if s.orgs == nil {
		s.orgs = orgs.New(nil) // a Server built by hand in a test: no organization is rate limited
	}
	s.live.Store(d.Live)
	s.speechRoutes = d.Live.Speech != nil
	r := router.New()
	r.HandleMethodNotAllowed = true
	// OPTIONS is answered on every route, without an API key: browsers
	// send CORS preflights without credentials (see options).
	r.HandleOPTIONS = true
	r.GlobalOPTIONS = s.options
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	// With tracing on, the matched route's pattern names the request's
	// span and is its http.route; off, nothing is stored per request.
	r.SaveMatchedRoutePath = s.tracer != nil
	r.NotFound = func(ctx *fasthttp.RequestCtx) {
		s.writeProblemIn(ctx, pathDialect(ctx), problem.New(problem.NotFound, "no route %s %s", ctx.Method(), ctx.Path()))
	}
	r.MethodNotAllowed = func(ctx *fasthttp.RequestCtx) {
		s.writeProblemIn(ctx, pathDialect(ctx), problem.New(problem.MethodNotAllowed, "%s is not allowed on %s (allowed: %s)", ctx.Method(), ctx.Path(), ctx.Response.Header.Peek(fasthttp.HeaderAllow)))
	}
	r.PanicHandler = nil // edge recovers, so the metrics and log see it too

	r.GET("/v1/openapi.json", s.openAPI)
	r.GET("/healthz", s.healthz)
	r.GET("/health", s.healthz) // the hosted service's documented public probe
	r.GET("/readyz", s.readyz)
	if d.Options.MetricsPublic {
		s.metricsRoutes(r)
	}

	if s.ui != nil {
		s.registerUI(r)
	}
	rt := &routes{s: s, r: r}
	if s.admin != nil {
		rt.registerAdmin()
	}
	rt.GET("/v1/voices", "voices.list", s.listVoices)
	rt.POST("/v1/voices", "voices.create", s.createVoice)
	rt.GET("/v1/voices/{id}", "voices.get", s.getVoice)
	rt.DELETE("/v1/voices/{id}", "voices.delete", s.deleteVoice)
	rt.GET("/v1/logs", "logs.list", s.listLogs)
	rt.GET("/v1/usage", "usage", s.usage)
	rt.GET("/v1/logs/{requestId}", "logs.get", s.getLog)
	if s.prov != nil {
		rt.registerProvenance()
	}
	rt.POST("/v1/media", "media.upload", s.uploadMedia)
	rt.GET("/v1/media/{id}", "media.get", s.getMedia)
	if s.speechRoutes {
		// The same path serves OpenAI's body, told apart by its fields.
		rt.POSTIn("/v1/audio/speech", "speech", speechDialect, s.speechHandler(speech.DeliverClip))
		rt.POST("/v1/audio/speech/with-timestamps", "speech.timestamps", s.speechHandler(speech.DeliverTimestamps))
		rt.POST("/v1/audio/speech/stream", "speech.stream", s.speechHandler(speech.DeliverStream))
		rt.POST("/v1/audio/conversation", "conversation", s.conversationHandler(false))
		rt.POST("/v1/audio/conversation/with-timestamps", "conversation.timestamps", s.conversationHandler(true))
		rt.POST("/v1/audio/conversation/stream", "conversation.stream", s.conversationStream)
		rt.POST("/v1/audio/speech/quote", "quote.speech", s.quoteSpeech)
		rt.POST("/v1/audio/conversation/quote", "quote.conversation", s.quoteConversation)
		rt.GET("/v1/providers", "providers.list", s.listProviders)
		rt.GET("/v1/audio/providers", "providers.documented", s.listAudioProviders)
		rt.GET("/v1/providers/{id}/voices", "providers.voices", s.providerVoices)
		s.newRealtime()
		r.GET(realtime.Path, s.realtimeHandler) // authenticates itself (realtime.go)

		// The dialects of other APIs (dialects.go).
		rt.GETIn("/v1/models", "models.list", openAIDialect, s.listOpenAIModels)
		rt.GETIn("/v1/models/{model:*}", "models.get", openAIDialect, s.getOpenAIModel)
		el := elevenLabsPrefix + "/v1"
		rt.POSTIn(el+"/text-to-speech/{voice_id}", "speech.elevenlabs", elevenLabsDialect, s.elevenLabsSpeech(speech.DeliverClip, false))
		rt.POSTIn(el+"/text-to-speech/{voice_id}/stream", "speech.elevenlabs.stream", elevenLabsDialect, s.elevenLabsSpeech(speech.DeliverStream, false))
		rt.POSTIn(el+"/text-to-speech/{voice_id}/with-timestamps", "speech.elevenlabs.timestamps", elevenLabsDialect, s.elevenLabsSpeech(speech.DeliverTimestamps, false))
		rt.POSTIn(el+"/text-to-speech/{voice_id}/stream/with-timestamps", "speech.elevenlabs.stream.timestamps", elevenLabsDialect, s.elevenLabsSpeech(speech.DeliverTimestamps, true))
		rt.GETIn(el+"/voices", "elevenlabs.voices", elevenLabsDialect, s.listElevenLabsVoices)
		rt.GETIn(el+"/voices/{voice_id}", "elevenlabs.voices.get", elevenLabsDialect, s.getElevenLabsVoice)
		rt.GETIn(elevenLabsPrefix+"/v2/voices", "elevenlabs.voices.search", elevenLabsDialect, s.searchElevenLabsVoices)
		rt.GETIn(el+"/models", "elevenlabs.models", elevenLabsDialect, s.listElevenLabsModels)

		// The hosted service's documented routes (docs/compatibility.md).
		rt.GET("/v1/api-keys", "apikeys.list", s.listProviderKeys)
		rt.PUT("/v1/api-keys/{providerId}", "apikeys.put", s.putProviderKey)
		rt.PUT("/v1/voices/{id}", "voices.update", s.updateVoice)
		const dicts, dict, rules, rule = "/v1/pronunciation-dictionaries", "/v1/pronunciation-dictionaries/{id}", "/v1/pronunciation-dictionaries/{id}/rules", "/v1/pronunciation-dictionaries/{id}/rules/{ruleId}"
		rt.GET(dicts, "dictionaries.list", s.listDictionaries)
		rt.POST(dicts, "dictionaries.create", s.createDictionary)
		rt.GET(dict, "dictionaries.get", s.getDictionary)
		rt.PUT(dict, "dictionaries.update", s.updateDictionary)
		rt.PATCH(dict, "dictionaries.update", s.updateDictionary)
		rt.DELETE(dict, "dictionaries.delete", s.deleteDictionary)
		rt.GET(rules, "rules.list", s.listRules)
		rt.POST(rules, "rules.create", s.createRule)
		rt.GET(rule, "rules.get", s.getRule)
		rt.PUT(rule, "rules.update", s.updateRule)
		rt.PATCH(rule, "rules.update", s.updateRule)
		rt.DELETE(rule, "rules.delete", s.deleteRule)
		rt.DELETE("/v1/api-keys/{providerId}", "apikeys.delete", s.deleteProviderKey)
		if s.jobs != nil {
			rt.POST("/v1/audio/jobs", "jobs.create", s.createJob)
			rt.POST("/v1/audio/jobs/quote", "quote.job", s.quoteJob)
			rt.GET("/v1/audio/jobs", "jobs.list", s.listJobs)
			rt.GET("/v1/audio/jobs/{id}", "jobs.get", s.getJob)
			rt.DELETE("/v1/audio/jobs/{id}", "jobs.delete", s.deleteJob)
			rt.POST("/v1/audio/jobs/{id}/cancel", "jobs.cancel", s.cancelJob)
			rt.GET("/v1/audio/jobs/{id}/audio", "jobs.audio", s.jobAudio)
			rt.GET("/v1/audio/jobs/{id}/captions", "jobs.captions", s.jobCaptions)
		}
	}

	s.srv = &fasthttp.Server{
		Handler:            s.edge(r.Handler),
		Name:               "voxgate",
		ReadTimeout:        d.Options.ReadTimeout,
		WriteTimeout:       d.Options.WriteTimeout,
		IdleTimeout:        d.Options.IdleTimeout,
		MaxRequestBodySize: max(d.Options.MaxBodyBytes, d.Options.MaxMediaBytes+multipartSlack),
		// Bodies are read by readBody (body.go), bounded by their route's
		// limit; fasthttp would buffer a chunked one up to about 3x it.
		// Its multipart pre-parse reads a form of any size, so it is off.
		StreamRequestBody: true,
		// A stream's headers and its first chunk (a provider's first
		// 100 ms of 24 kHz PCM is 4,800 bytes) leave in one write: with
		// fasthttp's 4 KiB default they took two system calls, the
		// second before the first audio was all out (measured: the first
		// chunk's write 64 -> 38 µs median). The buffer is pooled per
		// response, not held by idle connections.
		WriteBufferSize:               16 << 10,
		DisablePreParseMultipartForm:  true,
		DisableHeaderNamesNormalizing: false,
		NoDefaultServerHeader:         false,
		NoDefaultContentType:          true,
		CloseOnShutdown:               true,
		ErrorHandler:                  s.transportError,
		Logger:                        zapPrintf{d.Logger},
	}
	return s
}

// everyWarn rate-limits a repeated warning.
type everyWarn struct{ last atomic.Int64 }

// allow reports whether interval has passed since the last allowed call.
func (w *everyWarn) allow(interval time.Duration) bool {
	now := time.Now().UnixNano()
	prev := w.last.Load()
	return now-prev >= int64(interval) && w.last.CompareAndSwap(prev, now)
}

// routes registers authenticated API handlers with a route name used in
// metrics.
type routes struct {
	s *Server
	r *router.Router
}

// GET registers an authenticated GET handler.
func (rt *routes) GET(path, name string, h handlerFunc) { rt.handle("GET", path, name, h) }

// POST registers an authenticated POST handler.
func (rt *routes) POST(path, name string, h handlerFunc) { rt.handle("POST", path, name, h) }

// DELETE registers an authenticated DELETE handler.
func (rt *routes) DELETE(path, name string, h handlerFunc) { rt.handle("DELETE", path, name, h) }

// series gives routes their HTTP series (with their zeros) and keeps them
// for observed. Only New calls it.
func (s *Server) series(routes ...string) {
	for _, r := range routes {
		if _, ok := s.routeSeries[r]; !ok {
			s.routeSeries[r] = s.metrics.Route(r)
		}
	}
}

// GETIn registers an authenticated GET handler of a dialect (apiIn).
func (rt *routes) GETIn(path, name string, d func(*fasthttp.RequestCtx) dialectKind, h handlerFunc) {
	rt.s.series(name)
	rt.r.GET(path, rt.s.apiIn(name, d, namesChecked(path, h)))
}

// POSTIn registers an authenticated POST handler of a dialect (apiIn).
func (rt *routes) POSTIn(path, name string, d func(*fasthttp.RequestCtx) dialectKind, h handlerFunc) {
	rt.s.series(name)
	rt.r.POST(path, rt.s.apiIn(name, d, namesChecked(path, h)))
}

// handle registers h for bearer keys, and a /v1 route's dashboard twin
// for sessions (ui.go), and gives the route's metrics their zeros.
func (rt *routes) handle(method, path, name string, h handlerFunc) {
	rt.s.series(name)
	h = namesChecked(path, h)
	rt.r.Handle(method, path, rt.s.api(name, h))
	if rt.s.ui != nil && uiTwin(path) {
		rt.r.Handle(method, uiPrefix+path, rt.s.session(name, h))
	}
}

// PUT registers an authenticated PUT handler.
func (rt *routes) PUT(path, name string, h handlerFunc) { rt.handle("PUT", path, name, h) }

// PATCH registers an authenticated PATCH handler.
func (rt *routes) PATCH(path, name string, h handlerFunc) { rt.handle("PATCH", path, name, h) }

// multipartSlack is what a multipart upload may add to its file's bytes
// (boundaries, part headers, other fields).
const multipartSlack = 64 << 10

// transportError answers requests fasthttp could not parse, e.g. bodies over
// the size limit, with a problem object.
func (s *Server) transportError(ctx *fasthttp.RequestCtx, err error) {
	// The connection closes after this answer with the request (or its
	// body) unread: let the client finish sending so that it reads the
	// answer instead of a reset.
	lingerOnClose(ctx.Conn())
	var small *fasthttp.ErrSmallBuffer
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		s.writeProblem(ctx, problem.New(problem.PayloadTooLarge, "the body is larger than the gateway accepts"))
	case errors.As(err, &small):
		s.writeProblem(ctx, problem.New(problem.HeaderTooLarge, "the request line and headers are larger than the gateway reads (4 KiB); send fewer or shorter headers"))
		ctx.SetConnectionClose()
	default:
		var te interface{ Timeout() bool }
		if errors.As(err, &te) && te.Timeout() {
			s.writeProblem(ctx, problem.New(problem.ReadTimeout, "the request did not arrive within %s (server.read_timeout)", s.opts.ReadTimeout))
			ctx.SetConnectionClose()
			return
		}
		s.writeProblem(ctx, problem.New(problem.BadRequest, "the HTTP request could not be parsed"))
		ctx.SetConnectionClose()
	}
}

// bodyError answers a request whose body readBody refused or could not
// read, and closes the connection: what is left of the body is unread.
func (s *Server) bodyError(ctx *fasthttp.RequestCtx, err error) {
	ctx.SetConnectionClose()
	var pe *problem.Error
	switch {
	case errors.As(err, &pe):
		lingerOnClose(ctx.Conn())
		s.writeProblem(ctx, pe)
	case errors.Is(err, errNoKeyForBody):
		lingerOnClose(ctx.Conn())
		s.writeUnauthorizedIn(ctx, pathDialect(ctx))
	default:
		s.transportError(ctx, err)
	}
}

// Serve serves on ln until Shutdown, through a listener that bounds open
// connections and rides out temporary accept errors (see listener.go).
// An error other than from Shutdown means the server stopped for good.
func (s *Server) Serve(ln net.Listener) error {
	ll := newLimitListener(ln, connLimits{max: s.opts.MaxConns, perIP: s.opts.MaxConnsPerIP}, listenerMetrics{
		open: s.metrics.ConnsOpen, rejected: s.metrics.ConnsRejected, acceptErrors: s.metrics.AcceptErrors,
	}, s.log)
	s.listener.Store(ll)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		s.mem.run(s.memStop, t.C)
	}()
	return s.srv.Serve(ll)
}

// drainBudget returns the part of ctx's time that in-flight requests get
// to finish in: all but a third of it, at most 10 s less.
func drainBudget(ctx context.Context) (context.Context, context.CancelFunc) {
	dl, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	reserve := min(time.Until(dl)/3, 10*time.Second)
	return context.WithDeadline(ctx, dl.Add(-reserve))
}

// ConnLimits returns the bounds on open connections in total and per
// client address (0: none).
func (s *Server) ConnLimits() (total, perIP int) { return s.opts.MaxConns, s.opts.MaxConnsPerIP }

// Shutdown stops accepting connections and waits for in-flight requests,
// up to ctx's deadline.
//
// In-flight requests get ctx's time less a reserve (drainBudget): past
// it, the connections still open are closed, so that a request that does
// not end (a slow client, a stuck handler) cannot take the time the
// request log and the plugins need to stop cleanly after the server.
func (s *Server) Shutdown(ctx context.Context) error {
	s.memStopOnce.Do(func() { close(s.memStop) })
	drain, cancel := drainBudget(ctx)
	stop := make(chan struct{})
	if ll := s.listener.Load(); ll != nil {
		// fasthttp closes idle keep-alive connections as it drains, but
		// not those that never sent a request (see closeUnused).
		go func() {
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			for {
				ll.closeUnused()
				select {
				case <-stop:
					return
				case <-t.C:
				}
			}
		}()
	}
	err := s.srv.ShutdownWithContext(drain)
	close(stop)
	cancel()
	if err != nil && ctx.Err() == nil {
		if ll := s.listener.Load(); ll != nil {
			n := ll.closeConns()
			s.log.Warn("requests still running when the shutdown's drain time ran out: their connections were closed", zap.Int("connections", n))
		}
		err = s.srv.ShutdownWithContext(ctx)
	}
	err = errors.Join(err, s.shutdownMetrics(ctx))
	if s.realtime != nil {
		// fasthttp lets go of a connection once it is upgraded: the
		// realtime sockets are closed (1001) and waited for here.
		err = errors.Join(err, s.realtime.Shutdown(ctx))
	}
	// The seals still running hold rows the request log must get.
	err = errors.Join(err, s.sealers.wait(ctx))
	return err
}

// openAPI serves the OpenAPI document, without an API key: it describes
// the API, it holds nothing of any organization.
func (s *Server) openAPI(ctx *fasthttp.RequestCtx) {
	setRoute(ctx, "openapi")
	ctx.Response.Header.SetContentTypeBytes(contentJSON)
	ctx.Response.SetBodyRaw(s.openapi)
}

func (s *Server) healthz(ctx *fasthttp.RequestCtx) {
	setRoute(ctx, "healthz")
	ctx.Response.Header.SetContentTypeBytes(contentJSON)
	ctx.SetBodyString(`{"status":"ok"}`)
}

func (s *Server) readyz(ctx *fasthttp.RequestCtx) {
	setRoute(ctx, "readyz")
	if s.ready != nil {
		if err := s.ready(); err != nil {
			pe := problem.New(problem.Unavailable, "not ready: %v", err)
			s.writeProblem(ctx, pe)
			return
		}
	}
	body := map[string]any{"status": "ready"}
	if s.storeState != nil {
		// The store's outage does not make the instance unready: every
		// instance shares it, and synthesis goes on from memory. Never
		// the store's address or error here: /readyz needs no key.
		store := map[string]any{"status": "up"}
		if up, since := s.storeState(); !up {
			store = map[string]any{"status": "unreachable", "since": since.UTC().Format(time.RFC3339)}
		}
		body["store"] = store
	}
	if s.configState != nil {
		body["config"] = s.configState()
	}
	if states := s.pooledKeys(); len(states) > 0 {
		// Pooled keys' states, by name (never the key): a resting key
		// does not make the instance unready, but operators see it here.
		keys := map[string]map[string]string{}
		for provider, states := range states {
			keys[provider] = map[string]string{}
			for name, until := range states {
				keys[provider][name] = "ok"
				if !until.IsZero() {
					keys[provider][name] = "resting until " + until.UTC().Format(time.RFC3339)
				}
			}
		}
		body["provider_keys"] = keys
	}
	_ = s.writeJSON(ctx, fasthttp.StatusOK, body)
}

// pooledKeys returns the pooled provider keys' states, nil without any.
func (s *Server) pooledKeys() map[string]map[string]time.Time {
	if s.keyStates == nil {
		return nil
	}
	return s.keyStates()
}

// record enqueues a request log row for c, filling the common fields from
// ctx where the row leaves them empty; ctx may be nil when the row is
// complete (a stream ending after fasthttp took ctx back). It never blocks
// (see reqlog.Writer.Record).
func (s *Server) record(ctx *fasthttp.RequestCtx, c *exchange, row store.LogRow) {
	s.commitRow(s.finishRow(ctx, c, row))
}

// finishRow fills in what row takes from the request (ctx may be nil)
// and settles its charge.
func (s *Server) finishRow(ctx *fasthttp.RequestCtx, c *exchange, row store.LogRow) store.LogRow {
	if row.RequestID == "" {
		row.RequestID = c.reqID
	}
	row.OrgID = c.p.OrgID
	row.KeyID = c.p.KeyID
	if row.TS.IsZero() {
		row.TS = c.start.UTC()
	}
	if row.Path == "" && ctx != nil {
		row.Path = pathName(ctx.Path())
	}
	if row.Status == 0 && ctx != nil {
		row.Status = ctx.Response.StatusCode()
	}
	if row.ParentRequestID == "" && c.charge != nil {
		// The request's own row is final: what it was charged is what
		// the budgets keep of the reservation.
		c.charge.SettleAmount(context.Background(), speech.Amount(&row))
	}
	if row.LatencyMS == 0 {
		row.LatencyMS = time.Since(c.start).Milliseconds()
	}
	if row.ErrorCode == "" && c.errCode != "" && row.ParentRequestID == "" {
		// The request's failure is its own row's, never a turn's that
		// rendered fine.
		row.ErrorCode = string(c.errCode)
	}
	return row
}

// commitRow counts a finished row's usage and queues it for the store.
func (s *Server) commitRow(row store.LogRow) {
	s.metrics.CountUsage(&row)
	s.logs.Record(row)
}

// zapPrintf adapts zap to fasthttp's Printf logger.
type zapPrintf struct{ l *zap.Logger }

func (z zapPrintf) Printf(format string, args ...any) {
	z.l.Debug(fmt.Sprintf(format, args...), zap.String("component", "fasthttp"))
}
