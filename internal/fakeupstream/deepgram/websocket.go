package deepgram

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"github.com/voxgate/voxgate/internal/fakeupstream"
)

// The speak WebSocket, as Deepgram documents it ("Text-to-Speech
// Streaming": Getting Started, Flush, Clear, Close, and the API reference
// "Continuous Text Stream"):
//
//	GET /v1/speak?model=&encoding=&sample_rate=&mip_opt_out=
//	    (Authorization: Token <key>)
//
// One socket carries one stream of text: {"type": "Speak", "text"} adds
// text to the socket's buffer, {"type": "Flush"} has it spoken (binary
// audio frames, then {"type": "Flushed", "sequence_id"}), {"type":
// "Clear"} drops the buffer and stops the audio being sent as soon as
// possible, then {"type": "Cleared", "sequence_id"}, and {"type": "Close"}
// closes the socket once what was flushed is spoken. The server opens with
// {"type": "Metadata", "request_id", "model_name", "model_version",
// "model_uuid"}.
//
// The documented limits are enforced, so a client that passes them fails
// its test: Flush at most 20 times in 60 s on a socket (a 21st is ignored
// with {"type": "Warning", "description", "code"}, as documented, so a
// client that needs its audio waits in vain); at most 2,000 characters of
// text buffered (a Speak past it is a Warning too); only the streaming
// encodings (linear16, mulaw, alaw, raw: no container).
//
// BreakStreamAfter (Control) drops a socket without a close frame after
// that many binary audio frames of one Flush: a provider that dies
// mid-utterance.

// FlushLimit and FlushWindow are the speak WebSocket's documented limit
// on Flush messages: 20 in every 60 seconds.
const (
	FlushLimit  = 20
	FlushWindow = 60 * time.Second
)

// wsStats counts the fake's speak WebSockets.
type wsStats struct {
	open, total   atomic.Int64
	flushes       atomic.Int64
	clears        atomic.Int64
	flushRefused  atomic.Int64
	mostFlushes   atomic.Int64 // the most Flush messages one socket took within a window
	mu            sync.Mutex
	perKey        map[string]int64 // sockets opened per API key
	texts         []string
	socketsPerKey map[string]int64 // open now per key
	limit         int              // most sockets open at once per key; 0: none
}

// SpeakSockets returns the speak WebSockets open now and opened in all.
func (s *Server) SpeakSockets() (open, total int64) { return s.ws.open.Load(), s.ws.total.Load() }

// SpeakSocketsByKey returns how many speak WebSockets each API key opened.
func (s *Server) SpeakSocketsByKey() map[string]int64 {
	s.ws.mu.Lock()
	defer s.ws.mu.Unlock()
	out := map[string]int64{}
	for k, v := range s.ws.perKey {
		out[k] = v
	}
	return out
}

// Flushes returns the Flush messages taken, those refused past the limit,
// and the most one socket took within a window.
func (s *Server) Flushes() (taken, refused, most int64) {
	return s.ws.flushes.Load(), s.ws.flushRefused.Load(), s.ws.mostFlushes.Load()
}

// Clears returns how many Clear messages arrived.
func (s *Server) Clears() int64 { return s.ws.clears.Load() }

// SpeakTexts returns every Speak text received, in order.
func (s *Server) SpeakTexts() []string {
	s.ws.mu.Lock()
	defer s.ws.mu.Unlock()
	return slices.Clone(s.ws.texts)
}

// SetSocketLimit refuses a key's speak WebSocket past n open at once with
// 429 (the account's concurrency limit); 0 lifts the limit.
func (s *Server) SetSocketLimit(n int) {
	s.ws.mu.Lock()
	defer s.ws.mu.Unlock()
	s.ws.limit = n
}

// streamParams are the documented query parameters of the speak WebSocket.
func streamParams() []string {
	return []string{"model", "encoding", "sample_rate", "mip_opt_out"}
}

// streamFormats are the encodings the speak WebSocket streams, with their
// sample rates (first the default).
func streamFormats() map[string][]int {
	return map[string][]int{
		"linear16": {24000, 8000, 16000, 32000, 48000},
		"mulaw":    {8000, 16000},
		"alaw":     {8000, 16000},
	}
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

// wsMessage is a client message of the speak WebSocket.
type wsMessage struct {
	Type string  `json:"type"`
	Text *string `json:"text"`
}

func (s *Server) speakSocket(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.begin(w, r); !ok {
		return
	}
	q := r.URL.Query()
	for k := range q {
		if !slices.Contains(streamParams(), k) {
			s.fail(w, http.StatusBadRequest, "INVALID_QUERY_PARAMETER", fmt.Sprintf("Unknown query parameter %q.", k))
			return
		}
	}
	model := q.Get("model")
	if model == "" {
		model = DefaultModel
	}
	i := slices.IndexFunc(Voices(), func(v Voice) bool { return v.CanonicalName == model })
	if i < 0 && !s.NewModel(model) {
		s.fail(w, http.StatusBadRequest, "INVALID_QUERY_PARAMETER", fmt.Sprintf("No such model: %q.", model))
		return
	}
	uuid := "00000000-0000-0000-0000-00000000000a"
	if i >= 0 {
		uuid = Voices()[i].UUID
	}
	encoding := q.Get("encoding")
	if encoding == "" {
		encoding = "linear16"
	}
	rates, ok := streamFormats()[encoding]
	if !ok {
		s.fail(w, http.StatusBadRequest, "INVALID_QUERY_PARAMETER", fmt.Sprintf("Encoding %q does not stream: use linear16, mulaw or alaw.", encoding))
		return
	}
	rate := rates[0]
	if v := q.Get("sample_rate"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || !slices.Contains(rates, n) {
			s.fail(w, http.StatusBadRequest, "INVALID_QUERY_PARAMETER", fmt.Sprintf("sample_rate %s is not supported for encoding %s.", v, encoding))
			return
		}
		rate = n
	}
	if encoding != "linear16" && rate != 8000 {
		s.fail(w, http.StatusBadRequest, "INVALID_QUERY_PARAMETER", fmt.Sprintf("encoding %s at %d Hz is valid but this fake renders it at 8000 Hz only.", encoding, rate))
		return
	}
	key, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Token ")
	s.ws.mu.Lock()
	if s.ws.socketsPerKey == nil {
		s.ws.socketsPerKey, s.ws.perKey = map[string]int64{}, map[string]int64{}
	}
	if s.ws.limit > 0 && s.ws.socketsPerKey[key] >= int64(s.ws.limit) {
		s.ws.mu.Unlock()
		s.fail(w, http.StatusTooManyRequests, "TOO_MANY_REQUESTS", "Too many requests. Please try again later.")
		return
	}
	s.ws.socketsPerKey[key]++
	s.ws.perKey[key]++
	s.ws.mu.Unlock()
	defer func() {
		s.ws.mu.Lock()
		s.ws.socketsPerKey[key]--
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
	sock := &speakSocket{s: s, conn: conn, encoding: encoding, rate: rate, work: make(chan speakJob, 64)}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if !sock.writeJSON(map[string]any{"type": "Metadata", "request_id": s.requestID(), "model_name": model, "model_version": "2025-04-07.0", "model_uuid": uuid}) {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sock.speak(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	var buf strings.Builder
	var seq int64
	var flushes []time.Time
	for {
		_, data, err := conn.ReadMessage()
		if err != nil {
			return
		}
		var m wsMessage
		if err := fakeupstream.DecodeStrict(data, &m); err != nil {
			sock.warn("INVALID_MESSAGE", "Invalid message: "+err.Error())
			continue
		}
		switch m.Type {
		case "Speak":
			if m.Text == nil {
				sock.warn("INVALID_MESSAGE", "Speak takes text.")
				continue
			}
			if n := utf8.RuneCountInString(buf.String() + *m.Text); n > MaxChars {
				sock.warn("TEXT_LIMIT_EXCEEDED", fmt.Sprintf("The text buffer would hold %d characters; the limit is %d. Flush first.", n, MaxChars))
				continue
			}
			buf.WriteString(*m.Text)
			s.ws.mu.Lock()
			s.ws.texts = append(s.ws.texts, *m.Text)
			s.ws.mu.Unlock()
		case "Flush":
			now := time.Now()
			for len(flushes) > 0 && now.Sub(flushes[0]) >= FlushWindow {
				flushes = flushes[1:]
			}
			if len(flushes) >= FlushLimit {
				s.ws.flushRefused.Add(1)
				sock.warn("FLUSH_LIMIT_EXCEEDED", fmt.Sprintf("Cannot process more than %d Flush messages every %v.", FlushLimit, FlushWindow))
				continue
			}
			flushes = append(flushes, now)
			s.ws.flushes.Add(1)
			for {
				most := s.ws.mostFlushes.Load()
				if int64(len(flushes)) <= most || s.ws.mostFlushes.CompareAndSwap(most, int64(len(flushes))) {
					break
				}
			}
			job := speakJob{text: buf.String(), seq: seq, gen: sock.gen.Load()}
			seq++
			buf.Reset()
			select {
			case sock.work <- job:
			case <-ctx.Done():
				return
			}
		case "Clear":
			s.ws.clears.Add(1)
			buf.Reset()
			// Audio of what was flushed before stops: the speaker skips
			// jobs of an older generation and stops its current one.
			sock.gen.Add(1)
			select {
			case sock.work <- speakJob{clear: true, seq: seq, gen: sock.gen.Load()}:
			case <-ctx.Done():
				return
			}
			seq++
		case "Close":
			close(sock.work)
			<-done
			_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
			return
		default:
			sock.warn("INVALID_MESSAGE", fmt.Sprintf("Unknown message type %q.", m.Type))
		}
	}
}

// speakJob is a Flush (its text) or a Clear, in the order they came.
type speakJob struct {
	text  string
	seq   int64
	gen   int64
	clear bool
}

// speakSocket is one speak WebSocket's writing side.
type speakSocket struct {
	s        *Server
	conn     *websocket.Conn
	wmu      sync.Mutex
	encoding string
	rate     int
	work     chan speakJob
	gen      atomic.Int64 // moves on at every Clear
}

func (k *speakSocket) writeJSON(m map[string]any) bool {
	k.wmu.Lock()
	defer k.wmu.Unlock()
	return k.conn.WriteJSON(m) == nil
}

func (k *speakSocket) warn(code, description string) {
	k.writeJSON(map[string]any{"type": "Warning", "code": code, "description": description})
}

// speak works through the flushes and clears in order.
func (k *speakSocket) speak(ctx context.Context) {
	for job := range k.work {
		if job.clear {
			if !k.writeJSON(map[string]any{"type": "Cleared", "sequence_id": job.seq}) {
				return
			}
			continue
		}
		if job.gen != k.gen.Load() {
			continue // cleared before it was spoken
		}
		if strings.TrimSpace(job.text) != "" {
			u, err := k.s.Speak(job.text, 0)
			if err != nil {
				k.warn("INTERNAL_ERROR", err.Error())
				continue
			}
			if fs := k.s.FixedSeconds(); fs > 0 {
				u = fakeupstream.Fixed(fs)
			}
			a, _, err := k.s.render(u, k.encoding, "none", k.rate, 0)
			if err != nil {
				k.warn("INTERNAL_ERROR", err.Error())
				continue
			}
			audio := a.Bytes()
			size := k.s.ChunkSize()
			size -= size % 2
			for off := 0; off < len(audio); off += size {
				if off > 0 && !k.s.Pause(ctx) {
					return
				}
				if job.gen != k.gen.Load() {
					break // cleared: stop sending as soon as possible
				}
				end := min(off+size, len(audio))
				k.wmu.Lock()
				err := k.conn.WriteMessage(websocket.BinaryMessage, audio[off:end])
				k.wmu.Unlock()
				if err != nil {
					return
				}
				if k.s.Breaks(off/size + 1) {
					// BreakStreamAfter: the socket dies mid-utterance.
					fakeupstream.BreakConn(k.conn.NetConn())
					return
				}
			}
		}
		if job.gen == k.gen.Load() && !k.writeJSON(map[string]any{"type": "Flushed", "sequence_id": job.seq}) {
			return
		}
	}
}
