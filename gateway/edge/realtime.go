package edge

import (
	"time"

	"bytes"
	"sync"

	"github.com/fasthttp/websocket"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/admission/auth"
	"github.com/voxgate/voxgate/gateway/edge/realtime"
	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/gateway/store"
)

// The realtime route: GET /v1/audio/speech/realtime upgrades to a
// WebSocket (docs/realtime.md). Authentication, the rate limit and the
// upgrade happen here; the socket's protocol is gateway/realtime's.

// Subprotocols of the realtime socket: the protocol's name, and the one a
// browser uses to carry its API key (it cannot set Authorization on a
// WebSocket).
const (
	realtimeProtocol  = "voxgate.realtime.v1"
	realtimeKeyPrefix = "voxgate.key."
)

// realtimeRoute names the route in metrics and rate limits: a synthesis
// route ("speech..."), so it spends the synthesis budget.
const realtimeRoute = "speech.realtime"

// newRealtime builds the hub and the upgrader of the realtime route.
func (s *Server) newRealtime() {
	lim := realtime.DefaultLimits()
	if s.opts.RequestTimeout > 0 {
		lim.ContextTimeout = s.opts.RequestTimeout
	}
	if s.opts.IdleTimeout > 0 {
		lim.IdleTimeout = s.opts.IdleTimeout
	}
	if s.opts.WriteTimeout > 0 {
		lim.StallTimeout = min(lim.StallTimeout, s.opts.WriteTimeout)
	}
	// Per-turn timing of realtime contexts (the metrics message), by
	// provider and model: the whole time to first audio, and the text
	// waited for (the sentence buffer's share of it).
	turnBuckets := []float64{.005, .01, .025, .05, .1, .15, .2, .3, .5, .75, 1, 1.5, 2.5, 5, 10}
	turnFirstAudio := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "voxgate_realtime_time_to_first_audio_seconds", Help: "Realtime contexts' time from their first text to their first audio written to the socket, by provider and model.",
		Buckets: turnBuckets,
	}, []string{"provider", "model"})
	turnTextWait := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "voxgate_realtime_text_wait_seconds", Help: "Realtime contexts' time from their first text until their first segment was complete (the text waited for: the input aggregation's share of the time to first audio), by provider and model.",
		Buckets: turnBuckets,
	}, []string{"provider", "model"})
	s.metrics.Registry.MustRegister(turnFirstAudio, turnTextWait)
	s.realtime = realtime.NewHub(realtime.Deps{
		Speech: func() (*speech.Service, func()) {
			l := s.hold()
			return l.Speech, l.release
		},
		Record:     func(row store.LogRow) { s.logs.Record(row) },
		Provenance: s.realtimeProvenance(),
		Allow: func(org string) error {
			if pe := s.rateLimit(org, realtimeRoute); pe != nil {
				return pe
			}
			return nil
		},
		FailoverWindow: func(org string) (time.Duration, bool) {
			if o, ok := s.orgs.Get(org); ok && o.FailoverWindow != nil {
				return *o.FailoverWindow, true
			}
			return 0, false
		},
		FirstAudio: func(provider, model string, d time.Duration) {
			s.metrics.TimeToFirstAudio.WithLabelValues(provider, model, "miss").Observe(d.Seconds())
		},
		Turn: func(provider, model string, t realtime.TurnTiming) {
			if t.HasFirstAudio {
				turnFirstAudio.WithLabelValues(provider, model).Observe(t.FirstAudio.Seconds())
			}
			if t.HasTextWait {
				turnTextWait.WithLabelValues(provider, model).Observe(t.TextWait.Seconds())
			}
		},
		Logger: s.log.Named("realtime"),
		Limits: lim,
	})
	s.metrics.Registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "voxgate_realtime_sockets_open", Help: "Open realtime WebSockets.",
		}, func() float64 { return float64(s.realtime.Open()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "voxgate_realtime_contexts_open", Help: "Open contexts of the realtime WebSockets.",
		}, func() float64 { return float64(s.realtime.Contexts()) }),
	)
	s.upgrader = &websocket.FastHTTPUpgrader{
		Subprotocols: []string{realtimeProtocol},
		// The socket is authorized by an API key, never a cookie, so a
		// page of any origin cannot borrow a user's session.
		CheckOrigin: func(*fasthttp.RequestCtx) bool { return true },
		// Idle sockets hold no write buffer: it is taken from the pool for
		// each message.
		WriteBufferPool: &sync.Pool{},
		Error: func(ctx *fasthttp.RequestCtx, status int, reason error) {
			s.writeProblem(ctx, problem.New(problem.WebSocketRequired, "%v", reason))
		},
	}
}

// realtimeHandler authenticates the upgrade request, spends one request
// of the organization's synthesis budget, and hands the socket to the hub.
func (s *Server) realtimeHandler(ctx *fasthttp.RequestCtx) {
	setRoute(ctx, realtimeRoute)
	var reqID string
	if a := accessOf(ctx); a != nil {
		reqID = a.reqID
	}
	authz := ctx.Request.Header.Peek(fasthttp.HeaderAuthorization)
	if len(authz) == 0 {
		if key := subprotocolKey(ctx.Request.Header.Peek("Sec-WebSocket-Protocol")); key != nil {
			authz = append([]byte("Bearer "), key...)
		}
	}
	p, st := s.auth.Check(authz)
	if st != auth.StatusOK {
		s.writeRefusedIn(ctx, dialectVoxgate, p, st)
		return
	}
	if a := accessOf(ctx); a != nil {
		a.org = p.OrgID
	}
	if pe := kindAllowed(p, realtimeRoute); pe != nil {
		s.writeProblem(ctx, pe)
		return
	}
	if !websocket.FastHTTPIsWebSocketUpgrade(ctx) {
		s.writeProblem(ctx, problem.New(problem.WebSocketRequired, "this route is a WebSocket: send a GET with Upgrade: websocket (see docs/realtime.md)"))
		return
	}
	if pe := s.rateLimit(p.OrgID, realtimeRoute); pe != nil {
		s.writeProblem(ctx, pe)
		return
	}
	if pe := s.keyRateLimit(&p); pe != nil {
		s.writeProblem(ctx, pe)
		return
	}
	org, caller := p.OrgID, speech.Caller{KeyID: p.KeyID, Scope: p.Scope}
	_ = s.upgrader.Upgrade(ctx, func(conn *websocket.Conn) {
		s.realtime.Serve(conn, org, caller, reqID)
	})
}

// subprotocolKey finds the API key among the offered subprotocols
// ("voxgate.key.<key>"), or returns nil.
func subprotocolKey(h []byte) []byte {
	for _, p := range bytes.Split(h, []byte(",")) {
		if k, ok := bytes.CutPrefix(bytes.TrimSpace(p), []byte(realtimeKeyPrefix)); ok && len(k) > 0 {
			return k
		}
	}
	return nil
}
