package realtime

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/gorilla/websocket"

	"github.com/voxgate/voxgate/gateway/admission/moderation"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// The realtime WebSocket end to end: a real WebSocket client (gorilla's)
// against the real gateway and plugin processes.

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

// audioOf concatenates the audio of context id among msgs.
func audioOf(msgs []harness.RealtimeMsg, id string) []byte {
	var b []byte
	for _, m := range msgs {
		if m.Type == "audio" && m.ContextID == id {
			b = append(b, m.Audio...)
		}
	}
	return b
}

func TestRealtimeESpeakSpeaksEachSentenceAsItCompletes(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, realtimeConfig)
	rc := tg.DialRealtime("acme")
	rc.Send(harness.StartMsg("a"))
	st := rc.Expect("started", "a")
	if st.MediaType != "audio/pcm;rate=22050" || st.Input || st.RequestID == "" {
		t.Fatalf("started: %s", st.Raw)
	}
	first := "Hello there, this is the first sentence. "
	rc.Send(harness.TextMsg("a", "Hello"))
	rc.Send(harness.TextMsg("a", first[len("Hello"):]))
	// The first sentence is spoken before the client sends the rest.
	m := rc.Next()
	if m.Type != "audio" || m.ContextID != "a" || len(m.Audio) == 0 {
		t.Fatalf("want audio of the first sentence first, got %s", m.Raw)
	}
	rest := "And this is the second"
	rc.Send(harness.TextMsg("a", rest))
	rc.Send(harness.TextMsg("a", " one."))
	rc.Send(harness.ControlMsg("close", "a"))
	msgs := append([]harness.RealtimeMsg{m}, rc.Until(harness.IsType("done", "a"))...)
	done := msgs[len(msgs)-1]
	pcm := audioOf(msgs, "a")
	secs, rms := harness.PCMSeconds(t, "audio/pcm;rate=22050", pcm)
	chars := len(strings.TrimSpace(first)) + len(rest+" one.")
	if done.Reason != "completed" || done.Chars != chars || done.Credits != 1 || done.TTFA == nil || secs < 2 || rms < 0.01 {
		t.Errorf("done %s after %.2fs of audio (rms %.3f)", done.Raw, secs, rms)
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
		r := tg.Do("POST", "/v1/audio/speech/stream", "acme", harness.SpeechBody(s))
		want = append(want, r.Body...)
	}
	if d := float64(len(pcm)-len(want)) / float64(len(want)); d > 0.05 || d < -0.05 {
		t.Errorf("the socket's audio (%d bytes) is not the sentences rendered alone (%d bytes)", len(pcm), len(want))
	}

	rows := tg.RealtimeRows("acme", rc.SocketID)
	if len(rows) != 1 {
		t.Fatalf("%d rows for the socket, want 1", len(rows))
	}
	row := rows[0]
	if row.RequestID != st.RequestID || row.Path != harness.RealtimePath || row.Status != 200 || row.Provider != "espeak" || row.Model != "espeak-ng" ||
		row.VoiceID != "en" || row.CharCount != chars || row.CreditsUsed != 1 || row.ErrorCode != "" || row.TTFA != *done.TTFA ||
		row.ModerationDecision != "allow" {
		t.Errorf("row %+v, ttfa %d (done said %d)", row.LogRow, row.TTFA, *done.TTFA)
	}
}

func TestRealtimeTimestampsMatchTheAudio(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, realtimeConfig)
	rc := tg.DialRealtime("globex")
	rc.Send(harness.StartMsg("t", "timestamps", true, "audioEncoding", "base64"))
	rc.Expect("started", "t")
	sentences := []string{"One small step.", "Then a second, longer sentence follows it.", "Done"}
	rc.Send(harness.TextMsg("t", strings.Join(sentences, " ")))
	rc.Send(harness.ControlMsg("close", "t"))
	msgs := rc.Until(harness.IsType("done", "t"))
	// Each segment's timings come before its audio and fall inside it, on
	// the context's timeline.
	var (
		audioSecs float64
		segments  [][]harness.RealtimeWord
		bounds    []float64 // audio seconds before each timings message
	)
	for _, m := range msgs {
		switch m.Type {
		case "audio":
			if m.Raw[0] != '{' {
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
	t.Parallel()
	tg := harness.Start(t, realtimeConfig)
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
			rs := dialRaw(t, tg, "acme")
			rs.send(harness.StartMsg("c", "timestamps", tt.timestamps))
			st := rs.expect("started", "c")
			var rate int
			if _, err := fmt.Sscanf(st.msg.MediaType, "audio/pcm;rate=%d", &rate); err != nil {
				t.Fatalf("started: %s", st.msg.Raw)
			}
			chunk := 2 * tt.chunk(rate)
			rs.send(harness.TextMsg("c", stallText))
			rs.send(harness.ControlMsg("close", "c"))
			rs.expect("audio", "c")

			at := rs.waitStalled()
			inFlight := at - rs.read
			rs.send(harness.ControlMsg("cancel", "c"))
			// The context's row is written when it ends, before its done
			// is queued: the gateway has acted on the cancel.
			harness.WaitFor(t, "the cancelled context's row", func() bool {
				return len(tg.RealtimeRows("acme", rs.socketID)) == 1
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
					t.Fatalf("a message of another context: %s", f.msg.Raw)
				case f.msg.Type == "audio" && f.end > at:
					lateFrames++
					late += min(int64(len(f.msg.Audio)), f.end-at)
				case f.msg.Type == "done":
					done = f
				}
			}
			if done.msg.Reason != "cancelled" {
				t.Errorf("done %s", done.msg.Raw)
			}
			if lateFrames > 1 || late > int64(chunk) {
				t.Errorf("%d bytes of audio in %d frames went out after the cancel, want at most one frame of %d bytes", late, lateFrames, chunk)
			}
			t.Logf("%d bytes were on their way to the client when it sent the cancel; %d bytes of audio were written after it", inFlight, late)

			// Nothing of the context comes after its done, and the
			// socket still works: the id can be used again.
			rs.send(harness.StartMsg("c"))
			if f := rs.next(); f.msg.Type != "started" || f.msg.ContextID != "c" {
				t.Fatalf("after done: %s", f.msg.Raw)
			}
			rs.send(harness.ControlMsg("cancel", "c"))
			rs.expect("done", "c")
			rows := tg.RealtimeRows("acme", rs.socketID)
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
	t.Parallel()
	tg := harness.Start(t, realtimeConfig)
	rc := tg.DialRealtime("globex")
	rc.Send(harness.StartMsg("en", "timestamps", true))
	rc.Send(harness.StartMsg("de", "voice", "de", "timestamps", true))
	rc.Expect("started", "en")
	rc.Expect("started", "de")
	en := []string{"Good morning.", "How are you today?"}
	de := []string{"Guten Morgen.", "Wie geht es dir heute?"}
	// Sentences go to the two contexts in turn; each context's audio is
	// its own sentences in order, whatever arrives in between.
	var msgs []harness.RealtimeMsg
	for i := range en {
		rc.Send(harness.TextMsg("en", en[i]+" "))
		rc.Send(harness.TextMsg("de", de[i]+" "))
		heard := map[string]bool{}
		msgs = append(msgs, rc.Until(func(m harness.RealtimeMsg) bool {
			heard[m.ContextID] = heard[m.ContextID] || m.Type == "audio"
			return heard["en"] && heard["de"]
		})...)
	}
	rc.Send(harness.ControlMsg("close", "en"))
	rc.Send(harness.ControlMsg("close", "de"))
	seen := map[string]bool{}
	for !seen["en"] || !seen["de"] {
		m := rc.Next()
		msgs = append(msgs, m)
		if m.Type == "done" {
			seen[m.ContextID] = true
			if m.Reason != "completed" {
				t.Errorf("done %s", m.Raw)
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
			want = append(want, tg.Do("POST", "/v1/audio/speech/stream", "globex", harness.SpeechBody(s, "voice", id)).Body...)
		}
		if got := audioOf(msgs, id); float64(len(got)) < 0.9*float64(len(want)) || float64(len(got)) > 1.1*float64(len(want)) {
			t.Errorf("context %s: %d bytes of audio, want about its own %d", id, len(got), len(want))
		}
	}
}

func TestRealtimeModerationEndsTheContext(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, realtimeConfig)
	rc := tg.DialRealtime("acme")
	rc.Send(harness.StartMsg("m"))
	rc.Expect("started", "m")
	rc.Send(harness.TextMsg("m", "This part is fine. Now say "+moderation.TestPhrase+" please. This is never spoken. "))
	msgs := rc.Until(harness.IsType("done", "m"))
	done := msgs[len(msgs)-1]
	var errMsg *harness.RealtimeMsg
	for i, m := range msgs {
		if m.Type == "error" {
			errMsg = &msgs[i]
		}
	}
	if errMsg == nil || errMsg.Code != "content_moderation_blocked" || done.Reason != "blocked" || len(audioOf(msgs, "m")) == 0 {
		t.Fatalf("messages: %v", harness.RawOf(msgs))
	}
	var env struct {
		Code, Message string
		Reason        struct{ Type, Detail string }
	}
	if err := json.Unmarshal(errMsg.Error, &env); err != nil || env.Code != "content_moderation_blocked" || env.Reason.Type != moderation.ReasonTestPhrase || env.Message == "" {
		t.Errorf("moderation envelope %s", errMsg.Error)
	}
	rows := tg.RealtimeRows("acme", rc.SocketID)
	if len(rows) != 1 || rows[0].Status != 422 || rows[0].ErrorCode != "content_moderation_blocked" || rows[0].CharCount != len("This part is fine.") ||
		rows[0].ModerationDecision != moderation.DecisionBlock {
		t.Errorf("rows %+v", rows)
	}
}

func TestRealtimeBadInput(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, realtimeConfig)

	// Before the upgrade: the key, and a plain GET.
	if _, err := tg.TryRealtime(nil, nil); err == nil || err.(*harness.HandshakeError).Status != 401 {
		t.Errorf("no key: %v", err)
	}
	tg.Do("GET", harness.RealtimePath, "acme", nil).Problem(t, 426, "websocket_required")
	// A browser's key travels as a subprotocol, never echoed.
	rc, err := tg.TryRealtime(nil, []string{"voxgate.realtime.v1", "voxgate.key." + tg.Keys["acme"]})
	if err != nil || rc.Conn.Subprotocol() != "voxgate.realtime.v1" {
		t.Fatalf("subprotocol key: %v", err)
	}

	rc = tg.DialRealtime("acme")
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
			if err := rc.Conn.WriteMessage(websocket.TextMessage, []byte(tt.send)); err != nil {
				t.Fatal(err)
			}
			m := rc.Next()
			if m.Type != "error" || m.Code != tt.code {
				t.Fatalf("got %s, want an error %s", m.Raw, tt.code)
			}
			var p harness.Problem
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
	_ = rc.Conn.WriteMessage(websocket.BinaryMessage, []byte{1, 2, 3})
	if m := rc.Next(); m.Type != "error" || m.Code != "validation_failed" {
		t.Errorf("binary frame: %s", m.Raw)
	}

	// An unknown voice is the provider's to refuse: an error, then done.
	rc.Send(harness.StartMsg("v", "voice", "xx-no-such-voice"))
	rc.Expect("started", "v")
	rc.Send(harness.TextMsg("v", "Hello there. "))
	msgs := rc.Until(harness.IsType("done", "v"))
	if e := msgs[len(msgs)-2]; e.Type != "error" || !strings.HasPrefix(e.Code, "provider_") || msgs[len(msgs)-1].Reason != "error" {
		t.Errorf("unknown voice: %v", harness.RawOf(msgs))
	}
	// Starting an open context twice, and too many contexts.
	rc.Send(harness.StartMsg("d"))
	rc.Expect("started", "d")
	rc.Send(harness.StartMsg("d"))
	if m := rc.Next(); m.Type != "error" || m.Code != "context_exists" {
		t.Errorf("second start: %s", m.Raw)
	}
	for i := range 7 {
		rc.Send(harness.StartMsg(string(rune('e' + i))))
		rc.Expect("started", string(rune('e'+i)))
	}
	rc.Send(harness.StartMsg("z"))
	if m := rc.Next(); m.Type != "error" || m.Code != "too_many_contexts" {
		t.Errorf("ninth context: %s", m.Raw)
	}
	// Too much text waiting.
	rc.Send(harness.TextMsg("d", strings.Repeat("x", 33<<10)))
	if m := rc.Next(); m.Type != "error" || m.Code != "text_buffer_full" {
		t.Errorf("text buffer: %s", m.Raw)
	}
	// A message over 64 KiB closes the socket with 1009.
	_ = rc.Conn.WriteMessage(websocket.TextMessage, []byte(`{"type":"text","text":"`+strings.Repeat("y", 70<<10)+`"}`))
	for range rc.Msgs {
	}
	if err := <-rc.Closed; !websocket.IsCloseError(err, websocket.CloseMessageTooBig) {
		t.Errorf("oversized message: %v", err)
	}
}

func TestRealtimeClientVanishes(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, realtimeConfig)
	rc := tg.DialRealtime("acme")
	long := strings.Repeat("A client that disappears mid-sentence leaves nothing behind. ", 30)
	rc.Send(harness.StartMsg("gone"))
	rc.Expect("started", "gone")
	rc.Send(harness.TextMsg("gone", long))
	rc.Expect("audio", "gone")
	// No close frame: the TCP connection just goes.
	_ = rc.Conn.NetConn().Close()

	deadline := time.Now().Add(20 * time.Second)
	for {
		rows := tg.RealtimeRows("acme", rc.SocketID)
		if len(rows) == 1 {
			if r := rows[0]; r.Status != 499 || r.ErrorCode != "client_disconnected" || r.CharCount == 0 {
				t.Errorf("row %+v", r.LogRow)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no log row for the context of a vanished client")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The socket and its goroutines are gone.
	for !strings.Contains(string(tg.MetricsBody()), "voxgate_realtime_sockets_open 0") {
		if time.Now().After(deadline) {
			t.Fatal("the socket is still counted open")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
