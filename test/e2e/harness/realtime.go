package harness

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// RealtimePath is the realtime WebSocket's route.
const RealtimePath = "/v1/audio/speech/realtime"

// RealtimeMsg is one message from the server: an audio frame (binary, or the
// base64 JSON form) or a JSON message.
type RealtimeMsg struct {
	Type      string          `json:"type"`
	ContextID string          `json:"contextId"`
	Code      string          `json:"code"`
	Reason    string          `json:"reason"`
	Audio     []byte          `json:"audio"` // base64 in JSON
	MediaType string          `json:"mediaType"`
	RequestID string          `json:"requestId"`
	Input     bool            `json:"inputStreaming"`
	Words     []RealtimeWord  `json:"words"`
	Chars     int             `json:"characters"`
	Credits   int             `json:"credits"`
	Seconds   float64         `json:"audioSeconds"`
	TTFA      *int64          `json:"timeToFirstAudioMs"`
	Problem   json.RawMessage `json:"problem"`
	Error     json.RawMessage `json:"error"`
	Message   string          `json:"message"`
	// What was heard (cancelled, done) and turn timing (metrics).
	SpokenText    string `json:"spokenText"`
	LastWordIndex *int   `json:"lastWordIndex"`
	AudioMs       int64  `json:"audioMs"`
	TextWaitMs    *int64 `json:"textWaitMs"`
	Provider      string `json:"provider"`
	Raw           []byte
	at            time.Time
}

// RealtimeWord is one word of a realtime timestamps message.
type RealtimeWord struct {
	Text  string  `json:"text"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}

// RealtimeClient is a realtime socket whose messages a goroutine collects.
type RealtimeClient struct {
	t        testing.TB
	Conn     *websocket.Conn
	SocketID string
	Msgs     chan RealtimeMsg
	Closed   chan error
}

// DialRealtime opens a realtime socket as org, failing the test if the
// handshake fails.
func (tg *Gateway) DialRealtime(org string) *RealtimeClient {
	tg.t.Helper()
	c, err := tg.TryRealtime(http.Header{"Authorization": {"Bearer " + tg.Keys[org]}}, nil)
	if err != nil {
		tg.t.Fatalf("dial: %v", err)
	}
	return c
}

// TryRealtime opens a realtime socket with the headers h and the
// subprotocols offered; a refused handshake is a *HandshakeError.
func (tg *Gateway) TryRealtime(h http.Header, protocols []string) (*RealtimeClient, error) {
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, Subprotocols: protocols}
	c, resp, err := d.Dial("ws://"+strings.TrimPrefix(tg.Base, "http://")+RealtimePath, h)
	if err != nil {
		if resp != nil {
			return nil, &HandshakeError{Status: resp.StatusCode, err: err}
		}
		return nil, err
	}
	rc := &RealtimeClient{t: tg.t, Conn: c, SocketID: resp.Header.Get("X-Request-Id"), Msgs: make(chan RealtimeMsg, 4096), Closed: make(chan error, 1)}
	go rc.read()
	tg.t.Cleanup(func() { c.Close() })
	return rc, nil
}

// HandshakeError is a realtime handshake the gateway refused, with the
// HTTP status of its answer.
type HandshakeError struct {
	Status int
	err    error
}

// Error says why the handshake failed.
func (e *HandshakeError) Error() string { return e.err.Error() }

func (rc *RealtimeClient) read() {
	for {
		kind, data, err := rc.Conn.ReadMessage()
		if err != nil {
			rc.Closed <- err
			close(rc.Msgs)
			return
		}
		m := RealtimeMsg{Raw: data, at: time.Now()}
		if kind == websocket.BinaryMessage {
			n := int(data[0])
			m.Type, m.ContextID, m.Audio = "audio", string(data[1:1+n]), data[1+n:]
		} else if err := json.Unmarshal(data, &m); err != nil {
			m.Type = "undecodable"
		}
		rc.Msgs <- m
	}
}

// Send writes v as a JSON message.
func (rc *RealtimeClient) Send(v any) {
	rc.t.Helper()
	if err := rc.Conn.WriteJSON(v); err != nil {
		rc.t.Fatalf("send: %v", err)
	}
}

// Next returns the next message, failing after a generous wait.
func (rc *RealtimeClient) Next() RealtimeMsg {
	rc.t.Helper()
	select {
	case m, ok := <-rc.Msgs:
		if !ok {
			rc.t.Fatalf("the socket closed: %v", <-rc.Closed)
		}
		return m
	case <-time.After(30 * time.Second):
		rc.t.Fatal("no message within 30s")
	}
	return RealtimeMsg{}
}

// Until collects messages up to and including the first one for which
// stop holds.
func (rc *RealtimeClient) Until(stop func(RealtimeMsg) bool) []RealtimeMsg {
	rc.t.Helper()
	var out []RealtimeMsg
	rc.t.Cleanup(func() {
		if rc.t.Failed() {
			rc.t.Logf("messages so far: %v", RawOf(out))
		}
	})
	for {
		m := rc.Next()
		out = append(out, m)
		if stop(m) {
			return out
		}
	}
}

// IsType matches a message of type typ for the context id (for Until).
func IsType(typ, id string) func(RealtimeMsg) bool {
	return func(m RealtimeMsg) bool { return m.Type == typ && m.ContextID == id }
}

// Expect returns the next message and fails unless it has typ and id.
func (rc *RealtimeClient) Expect(typ, id string) RealtimeMsg {
	rc.t.Helper()
	m := rc.Next()
	if m.Type != typ || m.ContextID != id {
		rc.t.Fatalf("got %s, want a %s of %q", m.Raw, typ, id)
	}
	return m
}

// StartMsg is a start message for context id with eSpeak's English
// voice; extra holds further fields as name, value pairs.
func StartMsg(id string, extra ...any) map[string]any {
	m := map[string]any{"type": "start", "contextId": id, "model": "espeak/espeak-ng", "voice": "en"}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	return m
}

// TextMsg is a text message for context id.
func TextMsg(id, s string) map[string]any {
	return map[string]any{"type": "text", "contextId": id, "text": s}
}

// ControlMsg is a message of type typ (cancel, close) for context id.
func ControlMsg(typ, id string) map[string]any { return map[string]any{"type": typ, "contextId": id} }

// RealtimeLogRow is a log row with the realtime field.
type RealtimeLogRow struct {
	LogRow
	TTFA int64 `json:"time_to_first_audio_ms"`
}

// RealtimeRows returns org's log rows of the contexts of the socket
// socketID (after a flush).
func (tg *Gateway) RealtimeRows(org, socketID string) []RealtimeLogRow {
	tg.t.Helper()
	tg.FlushLogs()
	var p struct {
		Data []RealtimeLogRow `json:"data"`
	}
	tg.Do("GET", "/v1/logs?limit=200&parent_request_id="+socketID, org, nil).JSON(tg.t, &p)
	return p.Data
}

// RawOf renders messages as their raw JSON, an audio frame as
// <audio id>, for a failure to show what came in.
func RawOf(msgs []RealtimeMsg) []string {
	var out []string
	for _, m := range msgs {
		if m.Type == "audio" {
			out = append(out, "<audio "+m.ContextID+">")
			continue
		}
		out = append(out, string(m.Raw))
	}
	return out
}
