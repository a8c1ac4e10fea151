package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// muxServer is a multi-context socket server: it counts its sockets and
// the contexts each has open (a context opens with its first message and
// ends when the client asks for its final message, which it sends back),
// and records the most contexts one socket had.
type muxServer struct {
	*httptest.Server
	open, dials, most atomic.Int64
}

type muxMsg struct {
	ID    string `json:"id"`
	Final bool   `json:"final,omitempty"`
}

func newMuxServer(t *testing.T) *muxServer {
	s := &muxServer{}
	up := websocket.Upgrader{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		s.dials.Add(1)
		s.open.Add(1)
		defer s.open.Add(-1)
		defer conn.Close()
		contexts := map[string]bool{}
		for {
			var m muxMsg
			if err := conn.ReadJSON(&m); err != nil {
				return
			}
			if m.Final {
				delete(contexts, m.ID)
				if conn.WriteJSON(m) != nil {
					return
				}
				continue
			}
			contexts[m.ID] = true
			if n := int64(len(contexts)); n > s.most.Load() {
				s.most.Store(n)
			}
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func muxRoute(data []byte) (string, bool) {
	var m muxMsg
	_ = json.Unmarshal(data, &m)
	return m.ID, m.Final
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestMuxPool(t *testing.T) {
	srv := newMuxServer(t)
	e, err := NewEndpoint(&API{Provider: "demo", Authorize: func(h http.Header, key string) { h.Set("X-Key", key) }}, map[string]string{"base_url": srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	dial := func(ctx context.Context) (*Socket, error) { return e.DialWebSocket(ctx, "/", nil, "k") }
	p := &MuxPool{Cap: 2, Idle: 20 * time.Millisecond, CloseWait: time.Hour, Route: muxRoute}
	defer p.Close()
	ctx := t.Context()

	// Five contexts at once on a cap of two: three sockets, slots taken
	// before the dials.
	var wg sync.WaitGroup
	streams := make([]*MuxStream, 5)
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := p.Open(ctx, "key", string(rune('a'+i)), dial)
			if err != nil {
				t.Error(err)
				return
			}
			streams[i] = st
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if n := p.Opened(); n != 3 {
		t.Fatalf("%d sockets for 5 contexts on a cap of 2, want 3", n)
	}
	for _, st := range streams {
		if err := st.WriteJSON(muxMsg{ID: st.ID()}); err != nil {
			t.Fatal(err)
		}
	}

	// A context the provider never heard of frees its slot at once.
	quiet, err := p.Open(ctx, "key", "quiet", dial)
	if err != nil {
		t.Fatal(err)
	}
	quiet.Close()

	// A closed context holds its slot until its final message: a new
	// context goes to another socket meanwhile.
	// The closed context is one on a full socket: on the socket holding
	// one context, the next one may rightly take the free slot beside it
	// (the five were opened at once, so which one sits alone varies).
	// It goes first in streams, where the rest of the test expects it.
	full := p.Opened()
	p.mu.Lock()
	for i, st := range streams {
		if st.s.slots == 2 {
			streams[0], streams[i] = st, streams[0]
			break
		}
	}
	p.mu.Unlock()
	a := streams[0]
	a.Close()
	b, err := p.Open(ctx, "key", "b2", dial)
	if err != nil {
		t.Fatal(err)
	}
	if b.s == a.s {
		t.Fatal("a context took the slot of a closed context whose final message has not come")
	}
	b.Close()
	// Its final message frees it: the next context may use its socket.
	if err := a.s.sock.WriteJSON(muxMsg{ID: a.ID(), Final: true}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the final message", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return a.s.slots == 1
	})
	c, err := p.Open(ctx, "key", "c2", dial)
	if err != nil {
		t.Fatal(err)
	}
	if c.s != a.s {
		t.Error("a freed slot was not reused")
	}
	c.Close()
	// The third socket had a free slot for b2: still three dialled.
	if got := p.Opened(); got != full {
		t.Errorf("%d sockets dialled, want %d", got, full)
	}
	if most := srv.most.Load(); most > 2 {
		t.Errorf("a socket had %d contexts at once, over the cap of 2", most)
	}

	// Messages go to their own context.
	d := streams[1]
	if err := d.WriteJSON(muxMsg{ID: d.ID(), Final: true}); err != nil {
		t.Fatal(err)
	}
	if data, err := d.Next(ctx); err != nil || strings.TrimSpace(string(data)) != `{"id":"`+d.ID()+`","final":true}` {
		t.Errorf("next %q, %v", data, err)
	}

	// Every context closed (and finished), the sockets close once idle.
	for _, st := range streams[1:] {
		if !st.Final() {
			_ = st.WriteJSON(muxMsg{ID: st.ID(), Final: true})
		}
	}
	for _, st := range streams[1:] {
		waitFor(t, "final messages", st.Final)
		st.Close()
	}
	waitFor(t, "idle sockets to close", func() bool { return srv.open.Load() == 0 })
	if n := len(p.OpenSockets()); n != 0 {
		t.Errorf("%d groups left in the pool", n)
	}
}
