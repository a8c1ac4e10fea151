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

// The stream-input WebSocket, as ElevenLabs documents it:
//
//	GET /v1/text-to-speech/{voice_id}/stream-input?model_id=&output_format=&auto_mode=
//
// authenticated with the xi-api-key header (or xi_api_key in the first
// message). The client's first message opens the stream and must carry a
// single space as text ({"text": " ", "voice_settings", "generation_config",
// "xi_api_key"}); then text messages ({"text": "... ", "flush",
// "try_trigger_generation"}) and {"text": ""} to end. The server answers
// audio messages {"audio": base64, "isFinal": null, "normalizedAlignment",
// "alignment"}, whose alignment {chars, charStartTimesMs, charsDurationsMs}
// times the characters of that message's text relative to the start of its
// audio, and {"isFinal": true} after the last audio; failures are a message
// {"message", "error", "code"} followed by a close.
//
// Text is generated when a flush comes, when 120 characters are buffered
// (the default chunk_length_schedule's first step), at the end, or at once
// with auto_mode=true. Each generation is sent as audio messages of
// ChunkSize bytes with ChunkDelay between them; the first carries the
// alignment of the generation's text.

// StreamInputPath returns the stream-input path of a voice.
func StreamInputPath(voiceID string) string { return TTSPath(voiceID) + "/stream-input" }

// scheduleFirst is the first step of the default chunk_length_schedule.
const scheduleFirst = 120

// streamMessage is a client message of stream-input.
type streamMessage struct {
	Text                 *string          `json:"text"`
	VoiceSettings        *voiceSettings   `json:"voice_settings"`
	GenerationConfig     *json.RawMessage `json:"generation_config"`
	XIAPIKey             *string          `json:"xi_api_key"`
	Authorization        *string          `json:"authorization"`
	Flush                *bool            `json:"flush"`
	TryTriggerGeneration *bool            `json:"try_trigger_generation"`
}

// streamAlignment is the alignment of one audio message.
type streamAlignment struct {
	Chars            []string `json:"chars"`
	CharStartTimesMs []int    `json:"charStartTimesMs"`
	CharsDurationsMs []int    `json:"charsDurationsMs"`
}

type streamAudio struct {
	Audio               string           `json:"audio"`
	IsFinal             *bool            `json:"isFinal"`
	NormalizedAlignment *streamAlignment `json:"normalizedAlignment"`
	Alignment           *streamAlignment `json:"alignment"`
}

// StreamStats counts the fake's stream-input sockets.
type StreamStats struct {
	open   atomic.Int64
	total  atomic.Int64
	mu     sync.Mutex
	texts  []string // every text message received, in order
	closed []string // how each socket ended: "final", "client", "error"
}

// OpenStreams returns the stream-input sockets open now.
func (s *Server) OpenStreams() int64 { return s.streams.open.Load() }

// Streams returns how many stream-input sockets were opened.
func (s *Server) Streams() int64 { return s.streams.total.Load() }

// StreamTexts returns the texts of every stream-input text message so far.
func (s *Server) StreamTexts() []string {
	s.streams.mu.Lock()
	defer s.streams.mu.Unlock()
	return slices.Clone(s.streams.texts)
}

// StreamEnds returns how each finished stream-input socket ended: "final"
// (isFinal sent), "client" (the client went away first) or "error".
func (s *Server) StreamEnds() []string {
	s.streams.mu.Lock()
	defer s.streams.mu.Unlock()
	return slices.Clone(s.streams.closed)
}

var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

func (s *Server) streamInput(w http.ResponseWriter, r *http.Request) {
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
		detail(w, http.StatusBadRequest, "model_not_found", fmt.Sprintf("A model with model ID %s does not exist or does not stream input.", model))
		return
	}
	format, ok := parseOutputFormat(q.Get("output_format"), false)
	if !ok || format.codec != "pcm" {
		validation(w, []string{"query", "output_format"}, "this fake streams pcm_<rate> output formats only", "type_error.enum")
		return
	}
	autoMode := q.Get("auto_mode") == "true"
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	s.streams.open.Add(1)
	s.streams.total.Add(1)
	end := "client"
	defer func() {
		conn.Close()
		s.streams.open.Add(-1)
		s.streams.mu.Lock()
		s.streams.closed = append(s.streams.closed, end)
		s.streams.mu.Unlock()
	}()
	fail := func(code, msg string) {
		end = "error"
		_ = conn.WriteJSON(map[string]any{"message": msg, "error": code, "code": 1008})
		_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.ClosePolicyViolation, msg))
	}

	// The first message opens the stream.
	var first streamMessage
	if gone, err := readStrict(conn, &first); gone {
		return
	} else if err != nil {
		fail("invalid_message", "the first message is not a valid stream-input message: "+err.Error())
		return
	}
	key := r.Header.Get("xi-api-key")
	if key == "" && first.XIAPIKey != nil {
		key = *first.XIAPIKey
	}
	switch {
	case key == "" || !slices.Contains(s.Keys(Key), key):
		fail("invalid_api_key", "Invalid API key")
		return
	case first.Text == nil || *first.Text != " ":
		fail("invalid_message", `the first message must have text " " (a single space)`)
		return
	case !s.knows(r.PathValue("voice_id")):
		fail("voice_not_found", fmt.Sprintf("A voice for the voice_id %s was not found.", r.PathValue("voice_id")))
		return
	}
	speed := 1.0
	if vs := first.VoiceSettings; vs != nil && vs.Speed != nil {
		speed = *vs.Speed
	}

	// Messages are read on this goroutine; generations are spoken on
	// another, in order, so a slow audio stream never stops the reading.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	texts := make(chan string, 64)
	spoken := make(chan error, 1)
	go func() { spoken <- s.speakStream(ctx, conn, texts, format.rate, speed) }()
	var buf strings.Builder
	generate := func() {
		if strings.TrimSpace(buf.String()) != "" {
			texts <- buf.String()
		}
		buf.Reset()
	}
	for {
		var m streamMessage
		if gone, err := readStrict(conn, &m); gone {
			return // the client went away: stop speaking
		} else if err != nil {
			cancel()
			<-spoken
			fail("invalid_message", "not a valid stream-input message: "+err.Error())
			return
		}
		if m.Text == nil {
			cancel()
			<-spoken
			fail("invalid_message", "a message without text")
			return
		}
		s.streams.mu.Lock()
		s.streams.texts = append(s.streams.texts, *m.Text)
		s.streams.mu.Unlock()
		if *m.Text == "" {
			generate()
			close(texts)
			if err := <-spoken; err == nil {
				end = "final"
				final := true
				_ = conn.WriteJSON(streamAudio{IsFinal: &final})
				_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
			}
			return
		}
		buf.WriteString(*m.Text)
		if autoMode || m.Flush != nil && *m.Flush || m.TryTriggerGeneration != nil && *m.TryTriggerGeneration || buf.Len() >= scheduleFirst {
			generate()
		}
	}
}

// speakStream renders each generation as audio messages until texts is
// closed, or the client goes away.
func (s *Server) speakStream(ctx context.Context, conn *websocket.Conn, texts <-chan string, rate int, speed float64) error {
	var wmu sync.Mutex
	for text := range texts {
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
			msg := streamAudio{Audio: base64.StdEncoding.EncodeToString(pcm[i:min(i+size, len(pcm))])}
			if i == 0 {
				msg.Alignment, msg.NormalizedAlignment = align, align
			}
			wmu.Lock()
			err := conn.WriteJSON(msg)
			wmu.Unlock()
			if err != nil {
				return err
			}
		}
	}
	return ctx.Err()
}

// readStrict reads one JSON message, rejecting unknown fields as the API's
// validation does; gone says the client went away.
func readStrict(conn *websocket.Conn, v any) (gone bool, err error) {
	_, data, err := conn.ReadMessage()
	if err != nil {
		return true, err
	}
	return false, fakeupstream.DecodeStrict(data, v)
}
