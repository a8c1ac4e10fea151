package upstream

import (
	"context"
	"sync"
	"time"

	"github.com/voxgate/voxgate/sdk"
)

// Pooled, multiplexed provider sockets (docs/realtime.md, "Pooled provider
// sockets"): providers whose input-streaming WebSocket carries several
// contexts (ElevenLabs' multi-stream-input, Cartesia's contexts) are
// reached through a few shared sockets per URL and key instead of one
// socket per context; providers whose socket carries one stream at a time
// (Deepgram's speak WebSocket: Cap 1) reuse an idle socket for the next
// context instead of dialling one. A MuxPool lives in the plugin process,
// which owns the sockets and the keys; every StreamInput call of the
// process takes a context on it.
//
// Hand-written rather than a library: no Go library pools WebSocket
// sub-streams keyed by a provider's own context ids; the rules here
// (a provider's cap per socket, slots freed when the close message is
// written, idle sockets closed, failures sent to every context) are the
// providers' documented ones.

// MuxPool keeps multiplexed sockets by key (the socket's URL and API key):
// at most Cap contexts on one socket, a new socket when all are full, an
// unused socket closed after Idle. Safe for concurrent use.
type MuxPool struct {
	// Cap is the most contexts one socket carries (the provider's
	// documented limit).
	Cap int
	// Idle is how long a socket without a context stays open for the next
	// one; it should be under the provider's own inactivity timeout.
	Idle time.Duration
	// Route returns the context id a server message is for; "" for a
	// message of the whole socket (an error), which goes to every context
	// on it. final says the message is the context's last: the provider
	// has let go of the context, and its slot is free. A final message of
	// the whole socket ends the context of a socket that carries one.
	Route func(data []byte) (id string, final bool)
	// RouteFrame, when set, is used instead of Route: it also gets the
	// message's type (websocket.TextMessage or BinaryMessage), for a
	// provider that sends audio as binary frames (Deepgram).
	RouteFrame func(messageType int, data []byte) (id string, final bool)
	// Budget, when above 0, is how many budgeted actions (Spend) one
	// socket may take within BudgetWindow: a provider's limit per
	// connection (Deepgram: 20 Flush messages a minute). A socket whose
	// budget is spent takes no new context until its window moves on, so
	// a reused socket never has a context that cannot finish.
	Budget       int
	BudgetWindow time.Duration
	// CloseWait is how long a closed context's slot stays taken waiting
	// for the provider's final message; past it, the socket takes no new
	// context (the provider may still count it) and closes when its
	// other contexts end.
	CloseWait time.Duration

	mu     sync.Mutex
	groups map[string][]*MuxSocket
	opened int64
}

// MuxSocket is one pooled socket.
type MuxSocket struct {
	pool *MuxPool
	key  string

	ready chan struct{} // closed once dialled (sock or err set)
	sock  *Socket
	err   error
	// ctx ends the socket (its dial and its connection).
	ctx    context.Context
	cancel context.CancelFunc
	wmu    sync.Mutex // one writer at a time (gorilla's rule)

	// Guarded by pool.mu.
	slots   int                   // contexts holding a slot
	streams map[string]*MuxStream // contexts reading
	dead    bool                  // failed or closed: takes no context
	idle    *time.Timer
	spent   []time.Time // budgeted actions within the window, oldest first
}

// MuxStream is one context on a pooled socket: its messages arrive on
// Next, it writes with WriteJSON, and Close frees its slot.
type MuxStream struct {
	s  *MuxSocket
	id string

	mu     sync.Mutex
	queue  []muxMessage
	err    error // the socket's end, after the queued messages
	signal chan struct{}

	// Guarded by pool.mu.
	closed  bool // the caller is done with it
	started bool // a message of it was written: the provider knows it
	final   bool // the provider's final message for it arrived
}

// muxMessage is one queued server message of a context.
type muxMessage struct {
	kind int // websocket.TextMessage or BinaryMessage
	data []byte
}

// Opened returns how many sockets the pool has opened (dialled) so far.
func (p *MuxPool) Opened() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.opened
}

// OpenSockets returns the sockets open (or being dialled) now, per key.
func (p *MuxPool) OpenSockets() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for k, g := range p.groups {
		out[k] = len(g)
	}
	return out
}

// Contexts returns the slots held now on all sockets: contexts open, and
// closed ones the provider has not let go of yet.
func (p *MuxPool) Contexts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, g := range p.groups {
		for _, s := range g {
			n += s.slots
		}
	}
	return n
}

// Open takes a slot for context id on a socket of key, dialling one with
// dial when every socket of key is full, and returns the context's
// stream once that socket is open. dial gets a context that lives as
// long as the socket (not ctx, which only bounds the wait). The caller
// must Close the stream.
func (p *MuxPool) Open(ctx context.Context, key, id string, dial func(context.Context) (*Socket, error)) (*MuxStream, error) {
	p.mu.Lock()
	if p.groups == nil {
		p.groups = map[string][]*MuxSocket{}
	}
	var s *MuxSocket
	now := time.Now()
	for _, c := range p.groups[key] {
		if !c.dead && c.slots < p.Cap && c.budgetLeft(now) > 0 {
			if _, taken := c.streams[id]; !taken {
				s = c
				break
			}
		}
	}
	if s == nil {
		sctx, cancel := context.WithCancel(context.Background())
		s = &MuxSocket{pool: p, key: key, ready: make(chan struct{}), ctx: sctx, cancel: cancel, streams: map[string]*MuxStream{}}
		p.groups[key] = append(p.groups[key], s)
		p.opened++
		go s.dial(dial)
	}
	s.slots++
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	st := &MuxStream{s: s, id: id, signal: make(chan struct{}, 1)}
	s.streams[id] = st
	p.mu.Unlock()

	select {
	case <-s.ready:
	case <-ctx.Done():
		st.Close()
		return nil, TransportError(ctx, "", ctx.Err())
	}
	if s.err != nil {
		st.Close()
		return nil, s.err
	}
	return st, nil
}

func (s *MuxSocket) dial(dial func(context.Context) (*Socket, error)) {
	sock, err := dial(s.ctx)
	s.sock, s.err = sock, err
	close(s.ready)
	if err != nil {
		s.fail(err)
		return
	}
	s.read()
}

// read hands each server message to its context until the socket ends.
func (s *MuxSocket) read() {
	for {
		kind, data, err := s.sock.ReadMessage()
		if err != nil {
			s.fail(s.sock.ReadError(s.ctx, err))
			return
		}
		var id string
		var final bool
		if s.pool.RouteFrame != nil {
			id, final = s.pool.RouteFrame(kind, data)
		} else {
			id, final = s.pool.Route(data)
		}
		m := muxMessage{kind: kind, data: data}
		s.pool.mu.Lock()
		if id == "" && final && len(s.streams) == 1 {
			// The last message of a socket's only context.
			for _, st := range s.streams {
				id = st.id
			}
		}
		if id == "" {
			for _, st := range s.streams {
				if !st.closed {
					st.push(m)
				}
			}
		} else if st := s.streams[id]; st != nil {
			if final {
				st.final = true
			}
			if !st.closed {
				st.push(m)
			} else if final {
				// A closed context's last message: its slot is free.
				s.free(st)
			}
		}
		s.pool.mu.Unlock()
	}
}

// fail ends the socket: it takes no more contexts, and every context on
// it gets err after what it has queued.
func (s *MuxSocket) fail(err error) {
	s.pool.mu.Lock()
	s.retire()
	streams := s.streams
	s.streams = map[string]*MuxStream{}
	s.pool.mu.Unlock()
	for _, st := range streams {
		st.end(err)
	}
	s.cancel()
}

// retire takes the socket out of its pool (pool.mu held).
func (s *MuxSocket) retire() {
	if s.dead {
		return
	}
	s.dead = true
	g := s.pool.groups[s.key]
	for i, c := range g {
		if c == s {
			g = append(g[:i], g[i+1:]...)
			break
		}
	}
	if len(g) == 0 {
		delete(s.pool.groups, s.key)
	} else {
		s.pool.groups[s.key] = g
	}
}

// Close closes every socket of the pool.
func (p *MuxPool) Close() {
	p.mu.Lock()
	var all []*MuxSocket
	for _, g := range p.groups {
		all = append(all, g...)
	}
	p.mu.Unlock()
	for _, s := range all {
		s.fail(sdk.Errorf(sdk.KindUnavailable, "the provider socket was closed"))
	}
}

// Final reports whether the provider's final message for the context has
// arrived (it may not have been read yet).
func (st *MuxStream) Final() bool {
	st.s.pool.mu.Lock()
	defer st.s.pool.mu.Unlock()
	return st.final
}

// MarkFinal says the provider has let go of the context, for a provider
// whose last message of a context is known only to the context's reader
// (Deepgram's Flushed for the last Flush sent) or that sends none
// (Cartesia after a cancel): its slot is free as soon as it is closed.
func (st *MuxStream) MarkFinal() {
	st.s.pool.mu.Lock()
	st.final = true
	st.s.pool.mu.Unlock()
}

// Spend takes one budgeted action of the stream's socket (Budget) if the
// window then still leaves keep more for the stream, and reports whether
// it did: a context keeps what it needs to finish (Deepgram: its last
// Flush) and skips an optional action when the budget is short. Without
// a Budget it always does.
func (st *MuxStream) Spend(keep int) bool {
	s := st.s
	s.pool.mu.Lock()
	defer s.pool.mu.Unlock()
	if s.pool.Budget <= 0 {
		return true
	}
	now := time.Now()
	if s.budgetLeft(now) < 1+keep {
		return false
	}
	s.spent = append(s.spent, now)
	return true
}

// budgetLeft is how many budgeted actions the socket may still take in
// the window ending at now (pool.mu held); it forgets older ones.
func (s *MuxSocket) budgetLeft(now time.Time) int {
	p := s.pool
	if p.Budget <= 0 {
		return 1
	}
	i := 0
	for i < len(s.spent) && now.Sub(s.spent[i]) >= p.BudgetWindow {
		i++
	}
	if i > 0 {
		s.spent = append(s.spent[:0], s.spent[i:]...)
	}
	return p.Budget - len(s.spent)
}

// ID is the stream's context id.
func (st *MuxStream) ID() string { return st.id }

// WriteJSON sends one message of the context.
func (st *MuxStream) WriteJSON(v any) error {
	st.s.pool.mu.Lock()
	st.started = true
	st.s.pool.mu.Unlock()
	st.s.wmu.Lock()
	defer st.s.wmu.Unlock()
	return st.s.sock.WriteJSON(v)
}

// Next returns the context's next message, or the socket's error once the
// socket has ended and its messages are read, or ctx's.
func (st *MuxStream) Next(ctx context.Context) ([]byte, error) {
	_, data, err := st.NextFrame(ctx)
	return data, err
}

// NextFrame is Next with the message's type (websocket.TextMessage or
// BinaryMessage).
func (st *MuxStream) NextFrame(ctx context.Context) (int, []byte, error) {
	for {
		st.mu.Lock()
		if len(st.queue) > 0 {
			m := st.queue[0]
			st.queue[0] = muxMessage{}
			st.queue = st.queue[1:]
			st.mu.Unlock()
			return m.kind, m.data, nil
		}
		err := st.err
		st.mu.Unlock()
		if err != nil {
			return 0, nil, err
		}
		select {
		case <-st.signal:
		case <-ctx.Done():
			return 0, nil, TransportError(ctx, "", ctx.Err())
		}
	}
}

// push queues a message for the context (pool.mu held). The queue is not
// bounded: one socket carries several contexts, so a context whose reader
// is slow must not stop the others'; a context's audio is bounded by its
// text.
func (st *MuxStream) push(m muxMessage) {
	st.mu.Lock()
	st.queue = append(st.queue, m)
	st.mu.Unlock()
	select {
	case st.signal <- struct{}{}:
	default:
	}
}

func (st *MuxStream) end(err error) {
	st.mu.Lock()
	if st.err == nil {
		st.err = err
	}
	st.mu.Unlock()
	select {
	case st.signal <- struct{}{}:
	default:
	}
}

// CloseWith writes the context's last message (the provider's close of
// the context, v), then Closes it. nil writes nothing.
func (st *MuxStream) CloseWith(v any) error {
	var err error
	if v != nil && st.s.sock != nil {
		err = st.WriteJSON(v)
	}
	st.Close()
	return err
}

// Close ends the context on the caller's side: messages for it are
// dropped from now on. Its slot is free at once when the provider never
// heard of it or has sent its final message; else when that message
// arrives (a provider counts a context until then: a new one opened
// before would pass its cap), or after CloseWait.
func (st *MuxStream) Close() {
	s := st.s
	p := s.pool
	p.mu.Lock()
	defer p.mu.Unlock()
	if st.closed {
		return
	}
	st.closed = true
	if s.streams[st.id] != st {
		return // the socket failed: nothing to give back
	}
	if !st.started || st.final {
		s.free(st)
		return
	}
	time.AfterFunc(p.CloseWait, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if s.streams[st.id] == st {
			s.retire()
			s.free(st)
		}
	})
}

// free gives st's slot back (pool.mu held); a socket without contexts
// closes after Idle, or at once when it is retired.
func (s *MuxSocket) free(st *MuxStream) {
	if s.streams[st.id] != st {
		return // already freed (the socket failed)
	}
	delete(s.streams, st.id)
	s.slots--
	if s.slots > 0 {
		return
	}
	if s.dead {
		s.cancel()
		return
	}
	p := s.pool
	s.idle = time.AfterFunc(p.Idle, func() {
		p.mu.Lock()
		if s.slots > 0 || s.dead {
			p.mu.Unlock()
			return
		}
		s.retire()
		p.mu.Unlock()
		s.cancel()
	})
}
