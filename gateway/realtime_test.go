package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/gorilla/websocket"

	"github.com/voxgate/voxgate/gateway/admission/moderation"
)

// The realtime WebSocket end to end: a real WebSocket client (gorilla's)
// against the real gateway and plugin processes.

const realtimePath = "/v1/audio/speech/realtime"

// realtimeConfig runs eSpeak (the sentence-buffered path) with the built-in
// moderation for acme; globex has no moderation.
const realtimeConfig = `
server:
  listen: 127.0.0.1:0
storage:
  path: %DIR%/voxgate.db
plugins:
  dir: %BIN%/plugins
providers:
  espeak: {plugin: voxgate-espeak, managed: true, instances: 1, credits_per_1k_chars: 2}
orgs:
  acme:
    moderation: standard
    providers:
      espeak: {enabled: true}
  globex:
    providers:
      espeak: {enabled: true}
moderation:
  rulesets:
    standard:
      mode: fail_closed
      checks: [{builtin: {}}]
`

// rtMsg is one message from the server: an audio frame (binary, or the
// base64 JSON form) or a JSON message.
type rtMsg struct {
	Type      string          `json:"type"`
	ContextID string          `json:"contextId"`
	Code      string          `json:"code"`
	Reason    string          `json:"reason"`
	Audio     []byte          `json:"audio"` // base64 in JSON
	MediaType string          `json:"mediaType"`
	RequestID string          `json:"requestId"`
	Input     bool            `json:"inputStreaming"`
	Words     []rtWord        `json:"words"`
	Chars     int             `json:"characters"`
	Credits   int             `json:"credits"`
	Seconds   float64         `json:"audioSeconds"`
	TTFA      *int64          `json:"timeToFirstAudioMs"`
	Problem   json.RawMessage `json:"problem"`
	Error     json.RawMessage `json:"error"`
	Message   string          `json:"message"`
	raw       []byte
	at        time.Time
}

type rtWord struct {
	Text  string  `json:"text"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}

// rtClient is a realtime socket whose messages a goroutine collects.
type rtClient struct {
	t        testing.TB
	c        *websocket.Conn
	socketID string
	msgs     chan rtMsg
	closed   chan error
}

func (tg *testGateway) dialRealtime(org string) *rtClient {
	tg.t.Helper()
	c, err := tg.tryRealtime(http.Header{"Authorization": {"Bearer " + tg.keys[org]}}, nil)
	if err != nil {
		tg.t.Fatalf("dial: %v", err)
	}
	return c
}

func (tg *testGateway) tryRealtime(h http.Header, protocols []string) (*rtClient, error) {
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, Subprotocols: protocols}
	c, resp, err := d.Dial("ws://"+strings.TrimPrefix(tg.base, "http://")+realtimePath, h)
	if err != nil {
		if resp != nil {
			return nil, &handshakeError{status: resp.StatusCode, err: err}
		}
		return nil, err
	}
	rc := &rtClient{t: tg.t, c: c, socketID: resp.Header.Get("X-Request-Id"), msgs: make(chan rtMsg, 4096), closed: make(chan error, 1)}
	go rc.read()
	tg.t.Cleanup(func() { c.Close() })
	return rc, nil
}

type handshakeError struct {
	status int
	err    error
}

func (e *handshakeError) Error() string { return e.err.Error() }

func (rc *rtClient) read() {
	for {
		kind, data, err := rc.c.ReadMessage()
		if err != nil {
			rc.closed <- err
			close(rc.msgs)
			return
		}
		m := rtMsg{raw: data, at: time.Now()}
		if kind == websocket.BinaryMessage {
			n := int(data[0])
			m.Type, m.ContextID, m.Audio = "audio", string(data[1:1+n]), data[1+n:]
		} else if err := json.Unmarshal(data, &m); err != nil {
			m.Type = "undecodable"
		}
		rc.msgs <- m
	}
}

func (rc *rtClient) send(v any) {
	rc.t.Helper()
	if err := rc.c.WriteJSON(v); err != nil {
		rc.t.Fatalf("send: %v", err)
	}
}

// next returns the next message, failing after a generous wait.
func (rc *rtClient) next() rtMsg {
	rc.t.Helper()
	select {
	case m, ok := <-rc.msgs:
		if !ok {
			rc.t.Fatalf("the socket closed: %v", <-rc.closed)
		}
		return m
	case <-time.After(30 * time.Second):
		rc.t.Fatal("no message within 30s")
	}
	return rtMsg{}
}

// until collects messages up to and including the first one for which
// stop holds.
func (rc *rtClient) until(stop func(rtMsg) bool) []rtMsg {
	rc.t.Helper()
	var out []rtMsg
	rc.t.Cleanup(func() {
		if rc.t.Failed() {
			rc.t.Logf("messages so far: %v", rawOf(out))
		}
	})
	for {
		m := rc.next()
		out = append(out, m)
		if stop(m) {
			return out
		}
	}
}

func isType(typ, id string) func(rtMsg) bool {
	return func(m rtMsg) bool { return m.Type == typ && m.ContextID == id }
}

// expect returns the next message and fails unless it has typ and id.
func (rc *rtClient) expect(typ, id string) rtMsg {
	rc.t.Helper()
	m := rc.next()
	if m.Type != typ || m.ContextID != id {
		rc.t.Fatalf("got %s, want a %s of %q", m.raw, typ, id)
	}
	return m
}

// audioOf concatenates the audio of context id among msgs.
func audioOf(msgs []rtMsg, id string) []byte {
	var b []byte
	for _, m := range msgs {
		if m.Type == "audio" && m.ContextID == id {
			b = append(b, m.Audio...)
		}
	}
	return b
}

func start(id string, extra ...any) map[string]any {
	m := map[string]any{"type": "start", "contextId": id, "model": "espeak/espeak-ng", "voice": "en"}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	return m
}

func text(id, s string) map[string]any {
	return map[string]any{"type": "text", "contextId": id, "text": s}
}

func ctl(typ, id string) map[string]any { return map[string]any{"type": typ, "contextId": id} }

// rtLogRow is a log row with the realtime field.
type rtLogRow struct {
	apiLogRow
	TTFA int64 `json:"time_to_first_audio_ms"`
}

func (tg *testGateway) realtimeRows(org, socketID string) []rtLogRow {
	tg.t.Helper()
	tg.flushLogs()
	var p struct {
		Data []rtLogRow `json:"data"`
	}
	tg.do("GET", "/v1/logs?limit=200&parent_request_id="+socketID, org, nil).json(tg.t, &p)
	return p.Data
}

func TestRealtimeESpeakSpeaksEachSentenceAsItCompletes(t *testing.T) {
	tg := startGateway(t, realtimeConfig)
	rc := tg.dialRealtime("acme")
	rc.send(start("a"))
	st := rc.expect("started", "a")
	if st.MediaType != "audio/pcm;rate=22050" || st.Input || st.RequestID == "" {
		t.Fatalf("started: %s", st.raw)
	}
	first := "Hello there, this is the first sentence. "
	rc.send(text("a", "Hello"))
	rc.send(text("a", first[len("Hello"):]))
	// The first sentence is spoken before the client sends the rest.
	m := rc.next()
	if m.Type != "audio" || m.ContextID != "a" || len(m.Audio) == 0 {
		t.Fatalf("want audio of the first sentence first, got %s", m.raw)
	}
	rest := "And this is the second"
	rc.send(text("a", rest))
	rc.send(text("a", " one."))
	rc.send(ctl("close", "a"))
	msgs := append([]rtMsg{m}, rc.until(isType("done", "a"))...)
	done := msgs[len(msgs)-1]
	pcm := audioOf(msgs, "a")
	secs, rms := pcmSeconds(t, "audio/pcm;rate=22050", pcm)
	chars := len(strings.TrimSpace(first)) + len(rest+" one.")
	if done.Reason != "completed" || done.Chars != chars || done.Credits != 1 || done.TTFA == nil || secs < 2 || rms < 0.01 {
		t.Errorf("done %s after %.2fs of audio (rms %.3f)", done.raw, secs, rms)
	}
	if d := done.Seconds - secs; d > 0.01 || d < -0.01 {
		t.Errorf("done says %.3fs of audio, the client got %.3fs", done.Seconds, secs)
	}
	for _, m := range msgs {
		if m.Type == "audio" && len(m.Audio)%2 != 0 {
			t.Fatalf("a PCM frame of %d bytes splits a sample", len(m.Audio))
		}
	}

	// The same sentences through the stream endpoint last as long: sentence
	// buffering renders each sentence as the HTTP API would. (eSpeak is
	// not byte-for-byte repeatable: its state carries over between calls.)
	var want []byte
	for _, s := range []string{strings.TrimSpace(first), rest + " one."} {
		r := tg.do("POST", "/v1/audio/speech/stream", "acme", speechBody(s))
		want = append(want, r.body...)
	}
	if d := float64(len(pcm)-len(want)) / float64(len(want)); d > 0.05 || d < -0.05 {
		t.Errorf("the socket's audio (%d bytes) is not the sentences rendered alone (%d bytes)", len(pcm), len(want))
	}

	rows := tg.realtimeRows("acme", rc.socketID)
	if len(rows) != 1 {
		t.Fatalf("%d rows for the socket, want 1", len(rows))
	}
	row := rows[0]
	if row.RequestID != st.RequestID || row.Path != realtimePath || row.Status != 200 || row.Provider != "espeak" || row.Model != "espeak-ng" ||
		row.VoiceID != "en" || row.CharCount != chars || row.CreditsUsed != 1 || row.ErrorCode != "" || row.TTFA != *done.TTFA ||
		row.ModerationDecision != "allow" {
		t.Errorf("row %+v, ttfa %d (done said %d)", row.apiLogRow, row.TTFA, *done.TTFA)
	}
}

func TestRealtimeTimestampsMatchTheAudio(t *testing.T) {
	tg := startGateway(t, realtimeConfig)
	rc := tg.dialRealtime("globex")
	rc.send(start("t", "timestamps", true, "audioEncoding", "base64"))
	rc.expect("started", "t")
	sentences := []string{"One small step.", "Then a second, longer sentence follows it.", "Done"}
	rc.send(text("t", strings.Join(sentences, " ")))
	rc.send(ctl("close", "t"))
	msgs := rc.until(isType("done", "t"))
	// Each segment's timings come before its audio and fall inside it, on
	// the context's timeline.
	var (
		audioSecs float64
		segments  [][]rtWord
		bounds    []float64 // audio seconds before each timings message
	)
	for _, m := range msgs {
		switch m.Type {
		case "audio":
			if m.raw[0] != '{' {
				t.Fatal("audioEncoding base64 sent a binary frame")
			}
			audioSecs += float64(len(m.Audio)/2) / 22050
		case "timestamps":
			segments = append(segments, m.Words)
			bounds = append(bounds, audioSecs)
		}
	}
	bounds = append(bounds, audioSecs)
	if len(segments) != len(sentences) {
		t.Fatalf("%d timings messages, want one per sentence (%d)", len(segments), len(sentences))
	}
	for i, ws := range segments {
		var words []string
		for _, w := range ws {
			words = append(words, w.Text)
			if w.Start < bounds[i]-0.001 || w.End > bounds[i+1]+0.001 || w.End < w.Start {
				t.Errorf("segment %d: word %+v lies outside its audio [%.3f, %.3f]", i, w, bounds[i], bounds[i+1])
			}
		}
		if got := strings.Join(words, " "); letters(got) != letters(sentences[i]) {
			t.Errorf("segment %d words %q, want %q", i, got, sentences[i])
		}
	}
}

// letters keeps the letters and spaces of s: eSpeak's words carry no
// punctuation.
func letters(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || r == ' ' {
			return r
		}
		return -1
	}, s)
}

// TestRealtimeCancelStopsAtOnce checks that once the gateway has read a
// cancel, at most the one audio frame it is writing goes out for that
// context. What a client receives after it sends cancel also holds what
// the gateway had written before reading it: eSpeak renders about a
// hundred times faster than real time, so that may be many frames, on
// their way in socket buffers. So the client stops reading until the
// gateway's writes stall, and counts, from the kernel's queues, how far
// the gateway had written when it sent the cancel; nothing moves until
// the client reads again, so every audio byte past that point was
// written after the cancel.
func TestRealtimeCancelStopsAtOnce(t *testing.T) {
	tg := startGateway(t, realtimeConfig)
	for _, tt := range []struct {
		name       string
		timestamps bool
		// chunk is the most audio one frame holds, in samples at rate.
		chunk func(rate int) int
	}{
		// Streamed as eSpeak renders: its buffers of 60 ms
		// (plugins/espeak/engine/template.h), which it fills a sample
		// past.
		{"stream", false, func(rate int) int { return rate*60/1000 + 1 }},
		// Rendered whole for the timings, then sent in pieces of 40 ms
		// (speech.Live.Render).
		{"timestamps", true, func(rate int) int { return rate / 25 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rs := tg.dialRaw("acme")
			rs.send(start("c", "timestamps", tt.timestamps))
			st := rs.expect("started", "c")
			var rate int
			if _, err := fmt.Sscanf(st.msg.MediaType, "audio/pcm;rate=%d", &rate); err != nil {
				t.Fatalf("started: %s", st.msg.raw)
			}
			chunk := 2 * tt.chunk(rate)
			rs.send(text("c", stallText))
			rs.send(ctl("close", "c"))
			rs.expect("audio", "c")

			at := rs.waitStalled()
			inFlight := at - rs.read
			rs.send(ctl("cancel", "c"))
			// The context's row is written when it ends, before its done
			// is queued: the gateway has acted on the cancel.
			waitFor(t, "the cancelled context's row", func() bool {
				return len(tg.realtimeRows("acme", rs.socketID)) == 1
			})
			if now, _, _ := rs.written(); now != at {
				t.Fatalf("the gateway wrote %d bytes while the client read nothing", now-at)
			}
			var late, lateFrames int64
			var done rawFrame
			for done.msg.Type != "done" {
				f := rs.next()
				switch {
				case f.msg.ContextID != "c":
					t.Fatalf("a message of another context: %s", f.msg.raw)
				case f.msg.Type == "audio" && f.end > at:
					lateFrames++
					late += min(int64(len(f.msg.Audio)), f.end-at)
				case f.msg.Type == "done":
					done = f
				}
			}
			if done.msg.Reason != "cancelled" {
				t.Errorf("done %s", done.msg.raw)
			}
			if lateFrames > 1 || late > int64(chunk) {
				t.Errorf("%d bytes of audio in %d frames went out after the cancel, want at most one frame of %d bytes", late, lateFrames, chunk)
			}
			t.Logf("%d bytes were on their way to the client when it sent the cancel; %d bytes of audio were written after it", inFlight, late)

			// Nothing of the context comes after its done, and the
			// socket still works: the id can be used again.
			rs.send(start("c"))
			if f := rs.next(); f.msg.Type != "started" || f.msg.ContextID != "c" {
				t.Fatalf("after done: %s", f.msg.raw)
			}
			rs.send(ctl("cancel", "c"))
			rs.expect("done", "c")
			rows := tg.realtimeRows("acme", rs.socketID)
			var cancelled int
			for _, r := range rows {
				if r.ErrorCode == "cancelled" && r.Status == 499 {
					cancelled++
				}
			}
			if cancelled != 2 {
				t.Errorf("rows %+v: want two cancelled contexts", rows)
			}
		})
	}
}

func TestRealtimeContextsInterleave(t *testing.T) {
	tg := startGateway(t, realtimeConfig)
	rc := tg.dialRealtime("globex")
	rc.send(start("en", "timestamps", true))
	rc.send(start("de", "voice", "de", "timestamps", true))
	rc.expect("started", "en")
	rc.expect("started", "de")
	en := []string{"Good morning.", "How are you today?"}
	de := []string{"Guten Morgen.", "Wie geht es dir heute?"}
	// Sentences go to the two contexts in turn; each context's audio is
	// its own sentences in order, whatever arrives in between.
	var msgs []rtMsg
	for i := range en {
		rc.send(text("en", en[i]+" "))
		rc.send(text("de", de[i]+" "))
		heard := map[string]bool{}
		msgs = append(msgs, rc.until(func(m rtMsg) bool {
			heard[m.ContextID] = heard[m.ContextID] || m.Type == "audio"
			return heard["en"] && heard["de"]
		})...)
	}
	rc.send(ctl("close", "en"))
	rc.send(ctl("close", "de"))
	seen := map[string]bool{}
	for !seen["en"] || !seen["de"] {
		m := rc.next()
		msgs = append(msgs, m)
		if m.Type == "done" {
			seen[m.ContextID] = true
			if m.Reason != "completed" {
				t.Errorf("done %s", m.raw)
			}
		}
	}
	// Each context spoke its own words, in order, and as much audio as its
	// sentences take alone.
	for id, sentences := range map[string][]string{"en": en, "de": de} {
		var words []string
		for _, m := range msgs {
			if m.Type == "timestamps" && m.ContextID == id {
				for _, w := range m.Words {
					words = append(words, w.Text)
				}
			}
		}
		if got, want := letters(strings.Join(words, " ")), letters(strings.Join(sentences, " ")); got != want {
			t.Errorf("context %s spoke %q, want %q", id, got, want)
		}
		var want []byte
		for _, s := range sentences {
			want = append(want, tg.do("POST", "/v1/audio/speech/stream", "globex", speechBody(s, "voice", id)).body...)
		}
		if got := audioOf(msgs, id); float64(len(got)) < 0.9*float64(len(want)) || float64(len(got)) > 1.1*float64(len(want)) {
			t.Errorf("context %s: %d bytes of audio, want about its own %d", id, len(got), len(want))
		}
	}
}

func TestRealtimeModerationEndsTheContext(t *testing.T) {
	tg := startGateway(t, realtimeConfig)
	rc := tg.dialRealtime("acme")
	rc.send(start("m"))
	rc.expect("started", "m")
	rc.send(text("m", "This part is fine. Now say "+moderation.TestPhrase+" please. This is never spoken. "))
	msgs := rc.until(isType("done", "m"))
	done := msgs[len(msgs)-1]
	var errMsg *rtMsg
	for i, m := range msgs {
		if m.Type == "error" {
			errMsg = &msgs[i]
		}
	}
	if errMsg == nil || errMsg.Code != "content_moderation_blocked" || done.Reason != "blocked" || len(audioOf(msgs, "m")) == 0 {
		t.Fatalf("messages: %v", rawOf(msgs))
	}
	var env struct {
		Code, Message string
		Reason        struct{ Type, Detail string }
	}
	if err := json.Unmarshal(errMsg.Error, &env); err != nil || env.Code != "content_moderation_blocked" || env.Reason.Type != moderation.ReasonTestPhrase || env.Message == "" {
		t.Errorf("moderation envelope %s", errMsg.Error)
	}
	rows := tg.realtimeRows("acme", rc.socketID)
	if len(rows) != 1 || rows[0].Status != 422 || rows[0].ErrorCode != "content_moderation_blocked" || rows[0].CharCount != len("This part is fine.") ||
		rows[0].ModerationDecision != moderation.DecisionBlock {
		t.Errorf("rows %+v", rows)
	}
}

func rawOf(msgs []rtMsg) []string {
	var out []string
	for _, m := range msgs {
		if m.Type == "audio" {
			out = append(out, "<audio "+m.ContextID+">")
			continue
		}
		out = append(out, string(m.raw))
	}
	return out
}

func TestRealtimeBadInput(t *testing.T) {
	tg := startGateway(t, realtimeConfig)

	// Before the upgrade: the key, and a plain GET.
	if _, err := tg.tryRealtime(nil, nil); err == nil || err.(*handshakeError).status != 401 {
		t.Errorf("no key: %v", err)
	}
	tg.do("GET", realtimePath, "acme", nil).problem(t, 426, "websocket_required")
	// A browser's key travels as a subprotocol, never echoed.
	rc, err := tg.tryRealtime(nil, []string{"voxgate.realtime.v1", "voxgate.key." + tg.keys["acme"]})
	if err != nil || rc.c.Subprotocol() != "voxgate.realtime.v1" {
		t.Fatalf("subprotocol key: %v", err)
	}

	rc = tg.dialRealtime("acme")
	tests := []struct {
		name string
		send string
		code string
		path string // a validation entry's path, joined with "."
	}{
		{"not JSON", `{"type": "start",`, "invalid_json", ""},
		{"not an object", `[1, 2]`, "validation_failed", ""},
		{"no type", `{"contextId": "a"}`, "validation_failed", "type"},
		{"unknown type", `{"type": "speak"}`, "validation_failed", "type"},
		{"unknown field", `{"type": "text", "contextId": "a", "text": "x", "volume": 3}`, "validation_failed", "volume"},
		{"start field on text", `{"type": "text", "contextId": "a", "text": "x", "voice": "en"}`, "validation_failed", "voice"},
		{"bad context id", `{"type": "flush", "contextId": "a b"}`, "validation_failed", "contextId"},
		{"text before start", `{"type": "text", "contextId": "nope", "text": "Hello. "}`, "unknown_context", ""},
		{"cancel of nothing", `{"type": "cancel", "contextId": "nope"}`, "unknown_context", ""},
		{"unknown model", `{"type": "start", "model": "espeak/nope", "voice": "en"}`, "unknown_model", ""},
		{"both voices", `{"type": "start", "model": "espeak", "voice": "en", "voiceId": "x"}`, "voice_conflict", ""},
		{"wav", `{"type": "start", "model": "espeak", "voice": "en", "output": {"format": "wav"}}`, "validation_failed", "output.format"},
		{"rate", `{"type": "start", "model": "espeak", "voice": "en", "output": {"sampleRate": 8000}}`, "validation_failed", "output.sampleRate"},
		{"whole-clip volume", `{"type": "start", "model": "espeak", "voice": "en", "volumeDbfs": -20}`, "param_not_allowed_on_stream", ""},
		{"NUL in the voice", `{"type": "start", "model": "espeak", "voice": "en\u0000x"}`, "validation_failed", "voice"},
		{"NUL in a providerOptions key", `{"type": "start", "model": "espeak", "voice": "en", "providerOptions": {"r\u0000": 1}}`, "validation_failed", "providerOptions.r\x00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := rc.c.WriteMessage(websocket.TextMessage, []byte(tt.send)); err != nil {
				t.Fatal(err)
			}
			m := rc.next()
			if m.Type != "error" || m.Code != tt.code {
				t.Fatalf("got %s, want an error %s", m.raw, tt.code)
			}
			var p problemBody
			if err := json.Unmarshal(m.Problem, &p); err != nil || p.Code != tt.code || p.Detail == "" && len(p.Validation) == 0 {
				t.Fatalf("problem %s", m.Problem)
			}
			if tt.path != "" {
				found := false
				for _, v := range p.Validation {
					found = found || strings.Join(v.Path, ".") == tt.path
				}
				if !found {
					t.Errorf("validation %+v does not name %s", p.Validation, tt.path)
				}
			}
		})
	}
	// A binary frame is refused, the socket stays open.
	_ = rc.c.WriteMessage(websocket.BinaryMessage, []byte{1, 2, 3})
	if m := rc.next(); m.Type != "error" || m.Code != "validation_failed" {
		t.Errorf("binary frame: %s", m.raw)
	}

	// An unknown voice is the provider's to refuse: an error, then done.
	rc.send(start("v", "voice", "xx-no-such-voice"))
	rc.expect("started", "v")
	rc.send(text("v", "Hello there. "))
	msgs := rc.until(isType("done", "v"))
	if e := msgs[len(msgs)-2]; e.Type != "error" || !strings.HasPrefix(e.Code, "provider_") || msgs[len(msgs)-1].Reason != "error" {
		t.Errorf("unknown voice: %v", rawOf(msgs))
	}
	// Starting an open context twice, and too many contexts.
	rc.send(start("d"))
	rc.expect("started", "d")
	rc.send(start("d"))
	if m := rc.next(); m.Type != "error" || m.Code != "context_exists" {
		t.Errorf("second start: %s", m.raw)
	}
	for i := range 7 {
		rc.send(start(string(rune('e' + i))))
		rc.expect("started", string(rune('e'+i)))
	}
	rc.send(start("z"))
	if m := rc.next(); m.Type != "error" || m.Code != "too_many_contexts" {
		t.Errorf("ninth context: %s", m.raw)
	}
	// Too much text waiting.
	rc.send(text("d", strings.Repeat("x", 33<<10)))
	if m := rc.next(); m.Type != "error" || m.Code != "text_buffer_full" {
		t.Errorf("text buffer: %s", m.raw)
	}
	// A message over 64 KiB closes the socket with 1009.
	_ = rc.c.WriteMessage(websocket.TextMessage, []byte(`{"type":"text","text":"`+strings.Repeat("y", 70<<10)+`"}`))
	for range rc.msgs {
	}
	if err := <-rc.closed; !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
		t.Errorf("oversized message: %v", err)
	}
}

func TestRealtimeClientVanishes(t *testing.T) {
	tg := startGateway(t, realtimeConfig)
	rc := tg.dialRealtime("acme")
	long := strings.Repeat("A client that disappears mid-sentence leaves nothing behind. ", 30)
	rc.send(start("gone"))
	rc.expect("started", "gone")
	rc.send(text("gone", long))
	rc.expect("audio", "gone")
	// No close frame: the TCP connection just goes.
	_ = rc.c.NetConn().Close()

	deadline := time.Now().Add(20 * time.Second)
	for {
		rows := tg.realtimeRows("acme", rc.socketID)
		if len(rows) == 1 {
			if r := rows[0]; r.Status != 499 || r.ErrorCode != "client_disconnected" || r.CharCount == 0 {
				t.Errorf("row %+v", r.apiLogRow)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no log row for the context of a vanished client")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The socket and its goroutines are gone.
	for !strings.Contains(string(tg.metricsBody()), "voxgate_realtime_sockets_open 0") {
		if time.Now().After(deadline) {
			t.Fatal("the socket is still counted open")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
