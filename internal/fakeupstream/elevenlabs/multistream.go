package elevenlabs

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gorilla/websocket"

	"github.com/voxgate/voxgate/internal/fakeupstream"
)

// The multi-context WebSocket, as ElevenLabs documents it:
//
//	GET /v1/text-to-speech/{voice_id}/multi-stream-input?model_id=&output_format=&auto_mode=
//
// authenticated with the xi-api-key header. Every client message names its
// context with context_id: the first one of an id opens the context (text,
// voice_settings), later ones add text ({"text", "flush"}), flush it
// ({"flush": true}), keep it alive ({"text": ""}) or close it
// ({"close_context": true}); {"close_socket": true} ends them all. The
// server answers {"audio", "alignment", "normalizedAlignment", "contextId"}
// and, once a closed context's audio has all been sent, {"isFinal": true,
// "contextId"}.
//
// The documented cap is enforced: "Each connection is limited to 5
// concurrent contexts". A context counts from its first message until its
// isFinal is sent; a sixth is refused as ElevenLabs refuses it (an error
// message, max_active_conversations, then a close with 1008), so a client
// that passes the cap fails its test.
//
// Failures: DropNextMultiSocket breaks a socket before its first audio;
// BreakStreamAfter (Control) breaks one after that many audio messages of
// a generation, mid-utterance.

// MaxContextsPerSocket is multi-stream-input's documented cap.
const MaxContextsPerSocket = 5

// MultiStreamInputPath returns the multi-context path of a voice.
func MultiStreamInputPath(voiceID string) string { return TTSPath(voiceID) + "/multi-stream-input" }

// multiMessage is a client message of multi-stream-input.
type multiMessage struct {
	Text                 *string          `json:"text"`
	ContextID            *string          `json:"context_id"`
	VoiceSettings        *voiceSettings   `json:"voice_settings"`
	GenerationConfig     *json.RawMessage `json:"generation_config"`
	Flush                *bool            `json:"flush"`
	TryTriggerGeneration *bool            `json:"try_trigger_generation"`
	CloseContext         *bool            `json:"close_context"`
	CloseSocket          *bool            `json:"close_socket"`
}

type multiAudio struct {
	Audio               string           `json:"audio,omitempty"`
	IsFinal             *bool            `json:"isFinal,omitempty"`
	NormalizedAlignment *streamAlignment `json:"normalizedAlignment,omitempty"`
	Alignment           *streamAlignment `json:"alignment,omitempty"`
	ContextID           string           `json:"contextId"`
}

// MultiStats counts the fake's multi-stream-input sockets and contexts.
type MultiStats struct {
	open, total, contexts atomic.Int64
	openContexts          atomic.Int64
	drop                  atomic.Int64
	maxPerSocket          atomic.Int64
	refused               atomic.Int64
	mu                    sync.Mutex
	perKey                map[string]int64 // sockets opened per API key
	closedContexts        []string         // ids of contexts closed by close_context, in order
}

// MultiSockets returns the multi-stream-input sockets open now and opened
// in all.
func (s *Server) MultiSockets() (open, total int64) {
	return s.multi.open.Load(), s.multi.total.Load()
}

// MultiSocketsByKey returns how many multi-stream-input sockets each API
// key opened.
func (s *Server) MultiSocketsByKey() map[string]int64 {
	s.multi.mu.Lock()
	defer s.multi.mu.Unlock()
	out := map[string]int64{}
	for k, v := range s.multi.perKey {
		out[k] = v
	}
	return out
}

// DropNextMultiSocket makes the next multi-stream-input socket that gets
// text break (the connection closed, no close frame) before it answers:
// a provider failure before a context's first audio.
func (s *Server) DropNextMultiSocket() { s.multi.drop.Add(1) }

// OpenContexts returns the multi-stream-input contexts open now, on all
// sockets.
func (s *Server) OpenContexts() int64 { return s.multi.openContexts.Load() }

// MultiContexts returns how many contexts were opened in all, the most one
// socket held at once, and how many were refused past the cap.
func (s *Server) MultiContexts() (total, maxPerSocket, refused int64) {
	return s.multi.contexts.Load(), s.multi.maxPerSocket.Load(), s.multi.refused.Load()
}

// ClosedContexts returns the ids of the contexts a client closed with
// close_context, in order.
func (s *Server) ClosedContexts() []string {
	s.multi.mu.Lock()
	defer s.multi.mu.Unlock()
	return slices.Clone(s.multi.closedContexts)
}

// multiContext is one open context of a socket.
type multiContext struct {
	buf    strings.Builder
	speed  float64
	texts  chan string // generations, in order
	closed bool
	done   chan struct{} // its speaker ended
	cancel context.CancelFunc
}

func (s *Server) multiStreamInput(w http.ResponseWriter, r *http.Request) {
	if _, fault, ok := s.Begin(r); !ok {
		return
	} else if fault != nil {
		s.injected(w, fault)
		return
	}
	q := r.URL.Query()
	model := q.Get("model_id")
	if model == "" {
		model = "eleven_multilingual_v2"
	}
	if MaxChars(model) == 0 || model == "eleven_v3" {
		detail(w, http.StatusBadRequest, "model_not_found", fmt.Sprintf("A model with model ID %s does not exist or has no multi-context WebSocket.", model))
		return
	}
	format, ok := parseOutputFormat(q.Get("output_format"), false)
	if !ok || format.codec != "pcm" {
		validation(w, []string{"query", "output_format"}, "this fake streams pcm_<rate> output formats only", "type_error.enum")
		return
	}
	autoMode := q.Get("auto_mode") == "true"
	key := r.Header.Get("xi-api-key")
	if key == "" || !slices.Contains(s.Keys(Key), key) {
		detail(w, http.StatusUnauthorized, "invalid_api_key", "Invalid API key")
		return
	}
	if !s.knows(r.PathValue("voice_id")) {
		detail(w, http.StatusNotFound, "voice_not_found", fmt.Sprintf("A voice for the voice_id %s was not found.", r.PathValue("voice_id")))
		return
	}
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	st := &s.multi
	st.open.Add(1)
	st.total.Add(1)
	st.mu.Lock()
	if st.perKey == nil {
		st.perKey = map[string]int64{}
	}
	st.perKey[key]++
	st.mu.Unlock()
	ctx, cancel := context.WithCancel(r.Context())
	var (
		wmu      sync.Mutex
		mu       sync.Mutex
		contexts = map[string]*multiContext{}
		wg       sync.WaitGroup
	)
	defer func() {
		cancel()
		wg.Wait()
		conn.Close()
		st.open.Add(-1)
	}()
	write := func(v any) error {
		wmu.Lock()
		defer wmu.Unlock()
		return conn.WriteJSON(v)
	}
	fail := func(code, msg string) {
		_ = write(map[string]any{"message": msg, "error": code, "code": 1008})
		wmu.Lock()
		_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, msg))
		wmu.Unlock()
	}
	for {
		var m multiMessage
		if gone, err := readStrict(conn, &m); gone {
			return
		} else if err != nil {
			fail("invalid_message", "not a valid multi-stream-input message: "+err.Error())
			return
		}
		if m.CloseSocket != nil && *m.CloseSocket {
			return
		}
		if m.ContextID == nil || *m.ContextID == "" {
			fail("invalid_message", "every message needs a context_id")
			return
		}
		id := *m.ContextID
		mu.Lock()
		c := contexts[id]
		opening := c == nil
		if c == nil && m.CloseContext != nil && *m.CloseContext {
			mu.Unlock()
			continue // the close of a context that has ended opens nothing
		}
		if c == nil {
			if len(contexts) >= MaxContextsPerSocket {
				mu.Unlock()
				st.refused.Add(1)
				fail("max_active_conversations", fmt.Sprintf("Maximum simultaneous contexts per WebSocket connection exceeded (%d). Please close an existing context before opening a new one.", MaxContextsPerSocket))
				return
			}
			speed := 1.0
			if vs := m.VoiceSettings; vs != nil && vs.Speed != nil {
				speed = *vs.Speed
			}
			cctx, ccancel := context.WithCancel(ctx)
			c = &multiContext{speed: speed, texts: make(chan string, 64), done: make(chan struct{}), cancel: ccancel}
			contexts[id] = c
			st.contexts.Add(1)
			st.openContexts.Add(1)
			for n := int64(len(contexts)); ; {
				cur := st.maxPerSocket.Load()
				if n <= cur || st.maxPerSocket.CompareAndSwap(cur, n) {
					break
				}
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer close(c.done)
				err := s.speakMulti(cctx, write, func() { fakeupstream.BreakConn(conn.NetConn()) }, id, c.texts, format.rate, speed)
				// Its isFinal is sent and its slot freed together: the
				// client learns the slot is free from the isFinal.
				mu.Lock()
				delete(contexts, id)
				mu.Unlock()
				st.openContexts.Add(-1)
				if err == nil {
					final := true
					_ = write(multiAudio{IsFinal: &final, ContextID: id})
				}
			}()
		}
		if c.closed {
			mu.Unlock()
			continue // messages after close_context are ignored, as the API does
		}
		generate := func() {
			if strings.TrimSpace(c.buf.String()) != "" {
				c.texts <- c.buf.String()
			}
			c.buf.Reset()
		}
		if m.Text != nil && strings.TrimSpace(*m.Text) != "" && st.drop.Add(-1) >= 0 {
			mu.Unlock()
			conn.NetConn().Close()
			return
		} else if m.Text != nil && strings.TrimSpace(*m.Text) != "" {
			st.drop.Add(1)
		}
		if m.Text != nil && !(opening && *m.Text == " ") {
			// Texts as StreamTexts lists them: the opening " " aside,
			// as stream-input's.
			s.streams.mu.Lock()
			s.streams.texts = append(s.streams.texts, *m.Text)
			s.streams.mu.Unlock()
			c.buf.WriteString(*m.Text)
		}
		if autoMode || m.Flush != nil && *m.Flush || m.TryTriggerGeneration != nil && *m.TryTriggerGeneration || c.buf.Len() >= scheduleFirst {
			generate()
		}
		if m.CloseContext != nil && *m.CloseContext {
			// What was flushed is finished, the rest dropped; isFinal
			// follows the last audio.
			c.closed = true
			c.buf.Reset()
			close(c.texts)
			st.mu.Lock()
			st.closedContexts = append(st.closedContexts, id)
			st.mu.Unlock()
		}
		mu.Unlock()
	}
}

// speakMulti renders a context's generations as audio messages until texts
// is closed, or the socket ends; brk breaks the socket (no close frame)
// where BreakStreamAfter says, counting a generation's audio messages.
func (s *Server) speakMulti(ctx context.Context, write func(any) error, brk func(), id string, texts <-chan string, rate int, speed float64) error {
	for {
		var text string
		select {
		case t, ok := <-texts:
			if !ok {
				return ctx.Err()
			}
			text = t
		case <-ctx.Done():
			return ctx.Err()
		}
		u := fakeupstream.Speak(text, speed)
		pcm := s.studio.PCM(u, rate).Bytes()
		align := &streamAlignment{}
		for _, c := range u.Chars {
			align.Chars = append(align.Chars, c.Text)
			align.CharStartTimesMs = append(align.CharStartTimesMs, int(c.Start*1000+0.5))
			align.CharsDurationsMs = append(align.CharsDurationsMs, int((c.End-c.Start)*1000+0.5))
		}
		size := s.ChunkSize() &^ 1
		for i := 0; i < len(pcm); i += size {
			if i > 0 && !s.Pause(ctx) {
				return ctx.Err()
			}
			msg := multiAudio{Audio: base64.StdEncoding.EncodeToString(pcm[i:min(i+size, len(pcm))]), ContextID: id}
			if i == 0 {
				msg.Alignment, msg.NormalizedAlignment = align, align
			}
			if err := write(msg); err != nil {
				return err
			}
			if s.Breaks(i/size + 1) {
				brk()
				return fmt.Errorf("the socket was broken after %d audio messages", i/size+1)
			}
		}
	}
}
