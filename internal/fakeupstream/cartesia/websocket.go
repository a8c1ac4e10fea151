package cartesia

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gorilla/websocket"

	"github.com/voxgate/voxgate/internal/fakeupstream"
)

// The TTS WebSocket, as Cartesia documents it:
//
//	GET /tts/websocket   (Cartesia-Version and X-API-Key, or the
//	                      cartesia_version and api_key query parameters)
//
// Each client message is a generation request with the /tts/sse fields
// plus context_id, continue (more transcripts follow in this context, which
// continue its prosody and timeline) and max_buffer_delay_ms; or
// {"context_id", "cancel": true}. A context ends with a request whose
// continue is false (its transcript may be empty). The server answers
// {"type": "chunk", "data": base64, "done": false, "status_code": 206,
// "step_time", "context_id"}, {"type": "timestamps", "word_timestamps":
// {words, start, end}} in seconds from the start of the context's audio,
// {"type": "done", "done": true} at a context's end, and {"type": "error",
// "status_code", "done": true, "error"} for a failed request, which ends its
// context. A cancelled context gets no further messages.
//
// Cartesia documents no limit of contexts per socket ("the connection
// supports multiplexing"); its limits are the account's (docs.cartesia.ai,
// "Concurrency and WebSocket Limits"): concurrent TTS contexts, counted by
// unique context_id while active, refused past the plan's limit with 429;
// WebSocket connections at most 10x that limit, a new one refused with
// 429; idle connections closed after 5 minutes. SetConcurrencyLimit
// enforces the first two per API key (a test that passes them fails);
// the idle close is not simulated.

// WebSocketPath is the TTS WebSocket's path.
const WebSocketPath = "/tts/websocket"

// wsRequest is a client message of the TTS WebSocket.
type wsRequest struct {
	ttsFields
	ContextID               *string `json:"context_id"`
	Continue                *bool   `json:"continue"`
	AddTimestamps           *bool   `json:"add_timestamps"`
	AddPhonemeTimestamps    *bool   `json:"add_phoneme_timestamps"`
	UseNormalizedTimestamps *bool   `json:"use_normalized_timestamps"`
	MaxBufferDelayMs        *int    `json:"max_buffer_delay_ms"`
	Cancel                  *bool   `json:"cancel"`
}

// wsStats counts the fake's WebSockets.
type wsStats struct {
	open        atomic.Int64
	total       atomic.Int64
	contexts    atomic.Int64 // contexts opened in all
	active      atomic.Int64 // contexts active now, on all sockets
	most        atomic.Int64 // the most contexts one socket had at once
	refused     atomic.Int64 // contexts refused past the concurrency limit
	mu          sync.Mutex
	transcripts []string
	cancels     int
	limit       int              // concurrent contexts per key; 0: none
	perKey      map[string]int64 // sockets opened per key
	openPerKey  map[string]int64 // sockets open now per key
	activePer   map[string]int64 // contexts active now per key
}

// SetConcurrencyLimit enforces the account limits of an API key with a
// TTS concurrency limit of n: at most n contexts active at once (a
// context past it gets a 429 error message) and 10n sockets open (a
// handshake past it gets 429). 0 lifts them.
func (s *Server) SetConcurrencyLimit(n int) {
	s.ws.mu.Lock()
	defer s.ws.mu.Unlock()
	s.ws.limit = n
}

// SocketsByKey returns how many TTS WebSockets each API key opened.
func (s *Server) SocketsByKey() map[string]int64 {
	s.ws.mu.Lock()
	defer s.ws.mu.Unlock()
	out := map[string]int64{}
	for k, v := range s.ws.perKey {
		out[k] = v
	}
	return out
}

// Contexts returns the contexts opened in all, the most one socket had at
// once, and how many were refused past the concurrency limit.
func (s *Server) Contexts() (total, mostPerSocket, refused int64) {
	return s.ws.contexts.Load(), s.ws.most.Load(), s.ws.refused.Load()
}

// OpenContexts returns the contexts active now, on all sockets.
func (s *Server) OpenContexts() int64 { return s.ws.active.Load() }

// Sockets returns the TTS WebSockets opened in all.
func (s *Server) Sockets() int64 { return s.ws.total.Load() }

// OpenSockets returns the TTS WebSockets open now.
func (s *Server) OpenSockets() int64 { return s.ws.open.Load() }

// Transcripts returns every transcript received on a WebSocket, in order.
func (s *Server) Transcripts() []string {
	s.ws.mu.Lock()
	defer s.ws.mu.Unlock()
	return slices.Clone(s.ws.transcripts)
}

// Cancels returns how many cancel messages arrived.
func (s *Server) Cancels() int {
	s.ws.mu.Lock()
	defer s.ws.mu.Unlock()
	return s.ws.cancels
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

// wsContext is one context of a socket: its transcripts are spoken in
// order by one goroutine, on one timeline.
type wsContext struct {
	texts  chan wsRequest
	cancel context.CancelFunc
	closed bool // its last request arrived; it may still be speaking
}

func (s *Server) websocket(w http.ResponseWriter, r *http.Request) {
	// The handshake is authenticated like any request; the query forms
	// are the browser's way.
	q := r.URL.Query()
	if v := q.Get("cartesia_version"); v != "" && r.Header.Get("Cartesia-Version") == "" {
		r.Header.Set("Cartesia-Version", v)
	}
	if k := q.Get("api_key"); k != "" && r.Header.Get("X-API-Key") == "" {
		r.Header.Set("X-API-Key", k)
	}
	if _, ok := s.begin(w, r); !ok {
		return
	}
	key := r.Header.Get("X-API-Key")
	if bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && key == "" {
		key = bearer
	}
	s.ws.mu.Lock()
	if s.ws.perKey == nil {
		s.ws.perKey, s.ws.openPerKey, s.ws.activePer = map[string]int64{}, map[string]int64{}, map[string]int64{}
	}
	if s.ws.limit > 0 && s.ws.openPerKey[key] >= 10*int64(s.ws.limit) {
		s.ws.mu.Unlock()
		s.fail(w, r, http.StatusTooManyRequests, "concurrency_limited", "Too many WebSocket connections",
			"You have exceeded your plan's WebSocket connection limit (10x your concurrency limit).")
		return
	}
	s.ws.perKey[key]++
	s.ws.openPerKey[key]++
	s.ws.mu.Unlock()
	defer func() {
		s.ws.mu.Lock()
		s.ws.openPerKey[key]--
		s.ws.mu.Unlock()
	}()
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	s.ws.open.Add(1)
	s.ws.total.Add(1)
	defer s.ws.open.Add(-1)
	defer conn.Close()
	// here counts the socket's active contexts (its goroutines' ends
	// give theirs back).
	var here atomic.Int64
	ctx, cancelAll := context.WithCancel(r.Context())
	defer cancelAll()
	var wmu sync.Mutex
	write := func(m map[string]any) bool {
		wmu.Lock()
		defer wmu.Unlock()
		return conn.WriteJSON(m) == nil
	}
	contexts := map[string]*wsContext{}
	var wg sync.WaitGroup
	defer func() {
		cancelAll() // a hijacked request's context outlives the socket
		wg.Wait()
	}()
	for {
		_, data, err := conn.ReadMessage()
		if err != nil {
			return // the client went away: every context stops
		}
		var m wsRequest
		if err := fakeupstream.DecodeStrict(data, &m); err != nil {
			write(map[string]any{"type": "error", "status_code": 400, "done": true, "error": "invalid message: " + err.Error()})
			continue
		}
		if m.ContextID == nil || *m.ContextID == "" {
			write(map[string]any{"type": "error", "status_code": 400, "done": true, "error": "context_id is required"})
			continue
		}
		id := *m.ContextID
		c := contexts[id]
		if m.Cancel != nil && *m.Cancel {
			s.ws.mu.Lock()
			s.ws.cancels++
			s.ws.mu.Unlock()
			if c != nil {
				c.cancel()
				delete(contexts, id)
			}
			continue
		}
		if c == nil || c.closed {
			s.ws.mu.Lock()
			over := s.ws.limit > 0 && s.ws.activePer[key] >= int64(s.ws.limit)
			if !over {
				s.ws.activePer[key]++
			}
			s.ws.mu.Unlock()
			if over {
				s.ws.refused.Add(1)
				write(map[string]any{"type": "error", "context_id": id, "status_code": http.StatusTooManyRequests, "done": true,
					"error": "You have exceeded your plan's concurrency limit."})
				continue
			}
			s.ws.contexts.Add(1)
			s.ws.active.Add(1)
			for n := here.Add(1); ; {
				most := s.ws.most.Load()
				if n <= most || s.ws.most.CompareAndSwap(most, n) {
					break
				}
			}
			cctx, cancel := context.WithCancel(ctx)
			c = &wsContext{texts: make(chan wsRequest, 64), cancel: cancel}
			contexts[id] = c
			// A context stops counting when it ends: done, cancelled, or
			// an error (done: true), even while its later messages are
			// still drained.
			var once sync.Once
			ended := func() {
				once.Do(func() {
					here.Add(-1)
					s.ws.active.Add(-1)
					s.ws.mu.Lock()
					s.ws.activePer[key]--
					s.ws.mu.Unlock()
				})
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer ended()
				s.speakContext(cctx, r, id, c.texts, write, ended)
			}()
		}
		if m.Transcript != nil && *m.Transcript != "" {
			s.ws.mu.Lock()
			s.ws.transcripts = append(s.ws.transcripts, *m.Transcript)
			s.ws.mu.Unlock()
		}
		select {
		case c.texts <- m:
		case <-ctx.Done():
			return
		}
		if m.Continue == nil || !*m.Continue {
			close(c.texts)
			c.closed = true // kept: a cancel may still come for it
		}
	}
}

// speakContext speaks the requests of one context in order, then sends
// done; a failed request sends an error and ends the context.
func (s *Server) speakContext(ctx context.Context, r *http.Request, id string, texts <-chan wsRequest, write func(map[string]any) bool, ended func()) {
	var offset float64 // seconds of the context's audio so far
	for m := range texts {
		last := m.Continue == nil || !*m.Continue
		if m.Transcript != nil && *m.Transcript == "" && last {
			break // the end marker of a context
		}
		// The request is checked as /tts/sse checks its body; the
		// recorded answer becomes an error message.
		rec := httptest.NewRecorder()
		speed, ok := s.check(rec, r, &m.ttsFields, true)
		if !ok {
			write(map[string]any{"type": "error", "context_id": id, "status_code": rec.Code, "done": true, "error": strings.TrimSpace(rec.Body.String())})
			ended()
			for {
				select {
				case _, ok := <-texts:
					if !ok {
						return
					}
				case <-ctx.Done():
					return
				}
			}
		}
		u, ok := s.utterance(rec, r, &m.ttsFields, speed)
		if !ok {
			write(map[string]any{"type": "error", "context_id": id, "status_code": rec.Code, "done": true, "error": strings.TrimSpace(rec.Body.String())})
			return
		}
		rate := *m.OutputFormat.SampleRate
		audio, err := s.render(u, m.OutputFormat)
		if err != nil {
			write(map[string]any{"type": "error", "context_id": id, "status_code": http.StatusInternalServerError, "done": true, "error": err.Error()})
			return
		}
		pcm := audio.Bytes()
		frame := 2 // bytes a sample: 16-bit PCM, or G.711's 1
		if *m.OutputFormat.Encoding != "pcm_s16le" {
			frame = 1
		}
		withWords := m.AddTimestamps != nil && *m.AddTimestamps
		size := s.ChunkSize() - s.ChunkSize()%frame
		nextWord := 0
		for off := 0; off < len(pcm); off += size {
			if (off > 0 || offset > 0) && !s.Pause(ctx) {
				return
			}
			if ctx.Err() != nil {
				return // cancelled: nothing more for this context
			}
			end := min(off+size, len(pcm))
			if !write(map[string]any{"type": "chunk", "context_id": id, "data": base64.StdEncoding.EncodeToString(pcm[off:end]),
				"done": false, "status_code": 206, "step_time": 12.5}) {
				return
			}
			if !withWords {
				continue
			}
			upTo := float64(end/frame) / float64(rate)
			var words []string
			var starts, ends []float64
			for ; nextWord < len(u.Words) && (u.Words[nextWord].End <= upTo || end == len(pcm)); nextWord++ {
				wd := u.Words[nextWord]
				words, starts, ends = append(words, wd.Text), append(starts, offset+wd.Start), append(ends, offset+wd.End)
			}
			if len(words) > 0 && !write(map[string]any{"type": "timestamps", "context_id": id, "done": false, "status_code": 206,
				"word_timestamps": map[string]any{"words": words, "start": starts, "end": ends}}) {
				return
			}
		}
		offset += float64(len(pcm)/2) / float64(rate)
		if last {
			break
		}
	}
	if ctx.Err() == nil {
		write(map[string]any{"type": "done", "context_id": id, "done": true, "status_code": 206})
	}
}
