package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/problem"
	"github.com/voxgate/voxgate/gateway/provenance"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/sdk"
)

// Path is the realtime route; it is every context's log row path.
const Path = store.RealtimePath

// Limits bound what one socket may make the gateway hold
// (docs/realtime.md, "Limits and failures").
type Limits struct {
	// ContextTimeout bounds one context from start to done
	// (server.request_timeout).
	ContextTimeout time.Duration
	// IdleTimeout closes a socket without an open context after this long
	// without a client message (server.idle_timeout).
	IdleTimeout time.Duration
	// StallTimeout closes a socket whose client has not taken a waiting
	// message for this long.
	StallTimeout time.Duration
	// MaxContexts is the number of contexts open at once per socket.
	MaxContexts int
	// MaxPendingText bounds the bytes of text one context holds unspoken.
	MaxPendingText int
	// MaxMessageBytes bounds one client message.
	MaxMessageBytes int64
	// QueueLen is how many messages wait for a slow client per socket
	// before producers pause.
	QueueLen int
}

// DefaultLimits are the documented bounds, the timeouts aside.
func DefaultLimits() Limits {
	return Limits{
		ContextTimeout:  120 * time.Second,
		IdleTimeout:     120 * time.Second,
		StallTimeout:    10 * time.Second,
		MaxContexts:     8,
		MaxPendingText:  32 << 10,
		MaxMessageBytes: 64 << 10,
		QueueLen:        32,
	}
}

// Deps are what the realtime sockets need from the rest of the gateway.
type Deps struct {
	// Speech returns the speech service a new context is served with (the
	// configuration of the moment: a reload may change it between two
	// contexts of one socket) and the function that gives it back when
	// the context ends.
	Speech func() (svc *speech.Service, release func())
	// Record enqueues a finished request-log row; it must not block.
	Record func(store.LogRow)
	// Provenance, when not nil, takes a finished context's row (complete,
	// as Record would get it) instead of Record, with the hash of the
	// audio queued for the client: the edge signs the context's record
	// and records the row with it. It must not block.
	Provenance func(row store.LogRow, audio *provenance.Hasher, mediaType string, complete bool)
	// Allow spends one request of org's synthesis budget, for every
	// context start; nil means no limit.
	Allow func(org string) error
	// FailoverWindow returns org's own failover window
	// (orgs.<id>.failover_window_ms, or the admin API's), if it has one;
	// a context's failoverWindowMs wins over it. nil: none has.
	FailoverWindow func(org string) (time.Duration, bool)
	// FirstAudio observes a context's time to first audio (from its
	// first text) by provider and metric model; nil observes nothing.
	FirstAudio func(provider, model string, d time.Duration)
	// Turn observes a context's turn timing by provider and metric
	// model when it ends; nil observes nothing.
	Turn   func(provider, model string, t TurnTiming)
	Logger *zap.Logger
	Limits Limits
}

// TurnTiming is one context's timing (the metrics message): its time to
// first audio from its first text, and the part of it spent waiting for
// the text of the first segment (the sentence buffer's share).
type TurnTiming struct {
	FirstAudio, TextWait       time.Duration
	HasFirstAudio, HasTextWait bool
}

// Hub serves realtime sockets and keeps track of them, so that shutdown
// can close them: fasthttp forgets a connection once it is hijacked.
type Hub struct {
	deps Deps

	mu       sync.Mutex
	sessions map[*session]struct{}
	closed   bool
	wg       sync.WaitGroup
	open     atomic.Int64
	contexts atomic.Int64
}

// NewHub returns a Hub.
func NewHub(d Deps) *Hub {
	if d.Logger == nil {
		d.Logger = zap.NewNop()
	}
	return &Hub{deps: d, sessions: map[*session]struct{}{}}
}

// Open returns the number of open sockets.
func (h *Hub) Open() int64 { return h.open.Load() }

// Contexts returns the number of open contexts on all sockets.
func (h *Hub) Contexts() int64 { return h.contexts.Load() }

// Serve runs one upgraded socket of org until it ends. caller is the API
// key the socket was opened with (its scope and budget bound every
// context); socketID is the upgrade request's id, the parent of every
// context's log row.
func (h *Hub) Serve(conn *websocket.Conn, org string, caller speech.Caller, socketID string) {
	s := newSession(h, conn, org, caller, socketID)
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		s.closeWith(websocket.CloseGoingAway, "the gateway is shutting down", errShutdown)
		return
	}
	h.sessions[s] = struct{}{}
	h.wg.Add(1)
	h.mu.Unlock()
	h.open.Add(1)
	defer func() {
		h.open.Add(-1)
		h.mu.Lock()
		delete(h.sessions, s)
		h.mu.Unlock()
		h.wg.Done()
	}()
	s.run()
}

// Shutdown closes every socket with 1001 (going away), which cancels
// their contexts, and waits for them to end, up to ctx's deadline.
func (h *Hub) Shutdown(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	for s := range h.sessions {
		go s.closeWith(websocket.CloseGoingAway, "the gateway is shutting down", errShutdown)
	}
	h.mu.Unlock()
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Why a socket ended, as its contexts' log rows say.
var (
	errClientGone    = errors.New("the client closed the connection")
	errClientTooSlow = errors.New("the client did not read the audio in time")
	errShutdown      = errors.New("the gateway shut down")
	errIdle          = errors.New("the socket was idle")
)

// frame is one message waiting for the socket.
type frame struct {
	u    *utterance // nil for a socket-level message
	kind int        // websocket.TextMessage or BinaryMessage
	data []byte
	// droppable frames (audio, timings, warnings) are dropped once u was
	// cancelled; started, error and done never are.
	droppable bool
	audio     bool
	// What the frame tells the client of u (noteHeard): audio seconds,
	// word timings, the end of a segment all of whose audio is before it.
	// A frame of kind 0 is such a note only and is not written.
	audioSec float64
	words    []sdk.WordTimestamp
	textEnd  int
	// build, when set, makes the frame's data when the writer reaches it.
	build func() []byte
}

// session is one realtime socket.
type session struct {
	h    *Hub
	conn *websocket.Conn
	org  string
	// keyID is the API key the socket was opened with: its rows carry it,
	// and its scope and budget (in ctx, speech.WithCaller) bound every
	// context, as for an HTTP request.
	keyID string
	id    string
	log   *zap.Logger

	ctx    context.Context
	cancel context.CancelCauseFunc
	out    chan frame

	mu       sync.Mutex
	contexts map[string]*utterance
	wg       sync.WaitGroup // the contexts' workers

	lastMessage atomic.Int64 // unix nanos of the last client message
	closeOnce   sync.Once
}

func newSession(h *Hub, conn *websocket.Conn, org string, caller speech.Caller, id string) *session {
	ctx, cancel := context.WithCancelCause(speech.WithCaller(context.Background(), caller))
	s := &session{h: h, conn: conn, org: org, keyID: caller.KeyID, id: id, ctx: ctx, cancel: cancel,
		out: make(chan frame, h.deps.Limits.QueueLen), contexts: map[string]*utterance{},
		log: h.deps.Logger.With(zap.String("socket_id", id))}
	s.lastMessage.Store(time.Now().UnixNano())
	return s
}

// run reads the client's messages until the socket ends, then ends every
// context and waits for them.
func (s *session) run() {
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		s.writeLoop()
	}()
	s.conn.SetReadLimit(s.h.deps.Limits.MaxMessageBytes)
	err := s.readLoop()
	// The client is gone (or the socket was closed for it): cancel what
	// it had open. A cause set earlier (too slow, idle, shutdown) wins.
	s.cancel(err)
	s.wg.Wait()
	<-writerDone
	// Through closeOnce: a Shutdown's closeWith that has not run yet must
	// find the socket closed, not write to a connection fasthttp has taken
	// back once the handler returned; one that is writing finishes first.
	s.closeWith(websocket.CloseAbnormalClosure, "", err)
}

// readLoop handles client messages in order until reading fails.
func (s *session) readLoop() error {
	for {
		kind, data, err := s.conn.ReadMessage()
		if err != nil {
			return errClientGone
		}
		s.lastMessage.Store(time.Now().UnixNano())
		if kind != websocket.TextMessage {
			s.socketError("", problem.Validation(problem.Field("send JSON text messages; binary messages are not accepted")))
			continue
		}
		m, id, err := decodeMessage(data)
		if err != nil {
			s.socketError(id, err)
			continue
		}
		s.handle(m, id)
	}
}

// handle acts on one valid message of context id.
func (s *session) handle(m *clientMessage, id string) {
	if m.Type == msgStart {
		s.start(m, id)
		return
	}
	s.mu.Lock()
	u := s.contexts[id]
	s.mu.Unlock()
	if u == nil {
		s.socketError(id, problem.New(problem.UnknownContext, "no open context %q: send start first", id))
		return
	}
	var err error
	switch m.Type {
	case msgText:
		err = u.write(*m.Text)
	case msgFlush:
		err = u.flush()
	case msgClose:
		err = u.closeInput()
	case msgCancel:
		u.cancelByClient()
	}
	if err != nil {
		s.socketError(id, err)
	}
}

// start opens context id.
func (s *session) start(m *clientMessage, id string) {
	s.mu.Lock()
	_, exists := s.contexts[id]
	n := len(s.contexts)
	s.mu.Unlock()
	switch {
	case exists:
		s.socketError(id, problem.New(problem.ContextExists, "context %q is open; wait for its done, or use another contextId", id))
		return
	case n >= s.h.deps.Limits.MaxContexts:
		s.socketError(id, problem.New(problem.TooManyContexts, "%d contexts are open on this socket, the most it takes", n))
		return
	}
	started := time.Now()
	reqID := uuid.NewString()
	fail := func(err error) {
		_, pe := s.socketError(id, err)
		s.record(store.LogRow{RequestID: reqID, TS: started, Status: statusOf(err, pe), ErrorCode: string(pe.Code), ErrorDetail: pe.Detail,
			LatencyMS: time.Since(started).Milliseconds()})
	}
	if allow := s.h.deps.Allow; allow != nil {
		if err := allow(s.org); err != nil {
			fail(err)
			return
		}
	}
	req, _ := m.liveRequest()
	svc, release := s.h.deps.Speech()
	live, err := svc.StartLive(s.ctx, s.org, req)
	if err != nil {
		release()
		fail(err)
		return
	}
	u := newUtterance(s, id, reqID, live, m.AudioEncoding == "base64", started, m.Aggregation)
	u.failoverWindow = defaultFailoverWindow
	if f := s.h.deps.FailoverWindow; f != nil {
		if w, ok := f(s.org); ok {
			u.failoverWindow = w
		}
	}
	if m.FailoverWindowMs != nil {
		u.failoverWindow = time.Duration(*m.FailoverWindowMs) * time.Millisecond
	}
	u.release = release
	s.mu.Lock()
	s.contexts[id] = u
	s.mu.Unlock()
	s.send(frame{kind: websocket.TextMessage, data: mustJSON(startedMessage{
		Type: "started", ContextID: id, RequestID: reqID, Provider: live.Provider(), Model: live.Model(),
		Voice: live.Voice(), MediaType: live.MediaType(), InputStreaming: live.InputStreaming(),
	})})
	if m.Aggregation == aggImmediate && !live.InputStreaming() {
		s.send(frame{kind: websocket.TextMessage, data: mustJSON(warningMessage{Type: "warning", ContextID: id,
			Message: "model " + live.Provider() + "/" + live.Model() + " takes no partial input: the immediate aggregation is served as clause"})})
	}
	s.wg.Add(1)
	s.h.contexts.Add(1)
	go u.run()
}

// statusOf is the log status of a failure: the moderation envelope's or
// the problem's.
func statusOf(err error, pe *problem.Error) int {
	if be, ok := blockedError(err); ok {
		return be.Verdict.Status()
	}
	return pe.Status()
}

// socketError sends an error message that is not a context's end (a bad
// message, a refused start).
func (s *session) socketError(id string, err error) (errorMessage, *problem.Error) {
	msg, pe := errorFor(id, err, "")
	s.send(frame{kind: websocket.TextMessage, data: mustJSON(msg)})
	return msg, pe
}

// send queues a socket-level frame; it waits while the queue is full,
// unless the socket is ending.
func (s *session) send(f frame) {
	select {
	case s.out <- f:
	case <-s.ctx.Done():
	}
}

// writeLoop writes queued frames to the client, one at a time, each
// within the stall timeout, and closes idle sockets.
func (s *session) writeLoop() {
	lim := s.h.deps.Limits
	tick := time.NewTicker(max(min(lim.IdleTimeout/4, 15*time.Second), 10*time.Millisecond))
	defer tick.Stop()
	lastPing := time.Now()
	for {
		select {
		case f := <-s.out:
			if s.ctx.Err() != nil {
				// The socket is ending (closeWith cancels first): nothing
				// more goes out after its close frame.
				return
			}
			if f.droppable && f.u.dropped() {
				continue
			}
			if f.kind == 0 {
				f.u.noteHeard(&f)
				continue
			}
			if f.build != nil {
				f.data = f.build()
			}
			_ = s.conn.SetWriteDeadline(time.Now().Add(lim.StallTimeout))
			if err := s.conn.WriteMessage(f.kind, f.data); err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					// No close frame: the connection takes no write after
					// a failed one (the frame may be cut short), and a
					// client that reads nothing could not take it anyway.
					s.closeWith(websocket.CloseAbnormalClosure, "", errClientTooSlow)
				} else {
					s.closeWith(websocket.CloseAbnormalClosure, "", errClientGone)
				}
				return
			}
			if f.audio {
				f.u.audioSent()
			}
			if f.u != nil {
				f.u.noteHeard(&f)
			}
		case now := <-tick.C:
			if s.idle(now) {
				s.closeWith(websocket.CloseNormalClosure, "idle", errIdle)
				return
			}
			if now.Sub(lastPing) >= pingEvery {
				// Keeps NAT and proxy mappings alive; a dead peer shows as
				// a failed write.
				lastPing = now
				_ = s.conn.WriteControl(websocket.PingMessage, nil, now.Add(lim.StallTimeout))
			}
		case <-s.ctx.Done():
			return
		}
	}
}

// pingEvery is how often an open socket is pinged.
const pingEvery = 30 * time.Second

// idle reports whether the socket has had no open context and no message
// for the idle timeout.
func (s *session) idle(now time.Time) bool {
	if now.Sub(time.Unix(0, s.lastMessage.Load())) < s.h.deps.Limits.IdleTimeout {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.contexts) == 0
}

// closeGrace is how long a close frame may take to go out, and how long
// the client then has to answer it before the connection is dropped.
const closeGrace = time.Second

// closeWith ends the socket: every context cancelled with cause, a close
// frame with code and text (unless code is CloseAbnormalClosure, or the
// connection cannot take one), then the reader ended, which ends run.
//
// Closing the connection cannot end the reader: fasthttp owns a hijacked
// connection, whose Close does nothing, and closes it itself once the
// handler (run) returns. Deadlines end the reader instead, and a write
// still blocked on a client that reads nothing. A client that was sent a
// close frame has closeGrace to answer it, as the closing handshake
// asks; one that was sent none is dropped at once.
func (s *session) closeWith(code int, text string, cause error) {
	s.closeOnce.Do(func() {
		s.cancel(cause)
		grace := time.Duration(0)
		if code != websocket.CloseAbnormalClosure {
			err := s.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(closeGrace))
			if err == nil {
				grace = closeGrace
			}
		}
		now := time.Now()
		_ = s.conn.NetConn().SetWriteDeadline(now)
		_ = s.conn.SetReadDeadline(now.Add(grace))
		_ = s.conn.Close() // a no-op under fasthttp; not under other servers
	})
}

// record completes and enqueues a context's log row.
func (s *session) record(row store.LogRow) {
	row.OrgID = s.org
	row.KeyID = s.keyID
	row.ParentRequestID = s.id
	row.Path = Path
	if s.h.deps.Record != nil {
		s.h.deps.Record(row)
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only the package's own message types are encoded
	}
	return b
}
