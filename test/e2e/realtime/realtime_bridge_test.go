package realtime

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/cartesia"
	"github.com/voxgate/voxgate/internal/fakeupstream/elevenlabs"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// The realtime socket bridged to the providers' own input-streaming
// sockets: the real ElevenLabs and Cartesia plugin processes against fakes
// that speak stream-input and Cartesia's TTS WebSocket.

type bridge struct {
	*harness.Gateway
	el *elevenlabs.Server
	ca *cartesia.Server
}

// bridgeChunk is 50 ms of 24 kHz PCM per audio message, paced 25 ms apart
// (twice real time), so that a cancel lands between two messages.
const bridgeChunk = 2400

func startBridge(t *testing.T) *bridge {
	opts := fakeupstream.Options{ChunkSize: bridgeChunk, ChunkDelay: 25 * time.Millisecond}
	el := elevenlabs.New(t, opts)
	ca := cartesia.New(t, opts)
	tg := harness.Start(t, `
server:
  listen: 127.0.0.1:0
storage:
  path: %DIR%/voxgate.db
plugins:
  dir: %BIN%/plugins
providers:
  elevenlabs:
    plugin: voxgate-elevenlabs
    base_url: `+el.BaseURL()+`
    api_key: `+elevenlabs.Key+`
    managed: true
    credits_per_1k_chars: 30
  cartesia:
    plugin: voxgate-cartesia
    base_url: `+ca.URL+`
    api_key: `+cartesia.Key+`
    managed: true
orgs:
  acme:
    providers:
      elevenlabs: {enabled: true}
      cartesia: {enabled: true}
`)
	tg.Secrets = append(tg.Secrets, elevenlabs.Key, cartesia.Key)
	return &bridge{Gateway: tg, el: el, ca: ca}
}

// bridged is one provider as the tests drive it.
type bridged struct {
	name  string
	start func(id string, extra ...any) map[string]any
	texts func() []string // what the provider received, in order
	open  func() int64    // its sockets (or, pooled, contexts) open now
}

func (b *bridge) providers() []bridged {
	return []bridged{
		{"elevenlabs", func(id string, extra ...any) map[string]any {
			return harness.StartMsg(id, append([]any{"model", "elevenlabs/eleven_flash_v2_5", "voice", elevenlabs.VoiceRachel}, extra...)...)
		}, func() []string {
			var out []string
			for _, t := range b.el.StreamTexts() {
				if t != "" {
					out = append(out, t)
				}
			}
			return out
		}, func() int64 {
			// ElevenLabs' sockets are pooled and outlive a context: its
			// open contexts are what a context leaves behind.
			return b.el.OpenStreams() + b.el.OpenContexts()
		}},
		{"cartesia", func(id string, extra ...any) map[string]any {
			return harness.StartMsg(id, append([]any{"model", "cartesia/sonic-2", "voice", cartesia.VoiceKatie}, extra...)...)
		}, b.ca.Transcripts, b.ca.OpenContexts}, // pooled too: its active contexts
	}
}

// expectedWords are the fake speech's word timings of texts spoken one
// after the other on one timeline, and the timeline's length.
func expectedWords(texts []string, rate int) ([]harness.RealtimeWord, float64) {
	var out []harness.RealtimeWord
	offset := 0.0
	for _, t := range texts {
		u := fakeupstream.Speak(t, 1)
		for _, w := range u.Words {
			out = append(out, harness.RealtimeWord{Text: w.Text, Start: offset + w.Start, End: offset + w.End})
		}
		offset += math.Round(u.Seconds*float64(rate)) / float64(rate)
	}
	return out, offset
}

func TestRealtimeBridgeSpeaksThroughTheProviderSocket(t *testing.T) {
	t.Parallel()
	b := startBridge(t)
	for _, p := range b.providers() {
		t.Run(p.name, func(t *testing.T) {
			rc := b.DialRealtime("acme")
			rc.Send(p.start("a", "timestamps", true))
			st := rc.Expect("started", "a")
			if !st.Input || st.MediaType != "audio/pcm;rate=24000" {
				t.Fatalf("started: %s", st.Raw)
			}
			before := len(p.texts())
			rc.Send(harness.TextMsg("a", "Hello there, this is the bridge. "))
			// The first sentence is spoken before the rest is sent.
			first := rc.Until(harness.IsType("audio", "a"))
			rc.Send(harness.TextMsg("a", "It continues"))
			rc.Send(harness.TextMsg("a", " here."))
			rc.Send(harness.ControlMsg("close", "a"))
			msgs := append(first, rc.Until(harness.IsType("done", "a"))...)
			done := msgs[len(msgs)-1]
			if done.Reason != "completed" || done.TTFA == nil {
				t.Fatalf("done: %v", harness.RawOf(msgs))
			}
			sent := p.texts()[before:]
			if len(sent) != 2 || strings.TrimSpace(sent[0]) != "Hello there, this is the bridge." || strings.TrimSpace(sent[1]) != "It continues here." {
				t.Fatalf("the provider received %q", sent)
			}
			// Timings and audio are exactly the fake's speech of what it
			// received, on one timeline.
			want, secs := expectedWords(sent, 24000)
			var got []harness.RealtimeWord
			for _, m := range msgs {
				if m.Type == "timestamps" {
					got = append(got, m.Words...)
				}
			}
			if len(got) != len(want) {
				t.Fatalf("words %+v, want %+v", got, want)
			}
			for i := range want {
				if got[i].Text != want[i].Text || math.Abs(got[i].Start-want[i].Start) > 0.002 || math.Abs(got[i].End-want[i].End) > 0.002 {
					t.Errorf("word %d: %+v, want %+v", i, got[i], want[i])
				}
			}
			audio := audioOf(msgs, "a")
			if got := float64(len(audio)/2) / 24000; math.Abs(got-secs) > 0.0001 || len(audio)%2 != 0 {
				t.Errorf("%.4fs of audio (%d bytes), want %.4fs", got, len(audio), secs)
			}
			// The provider's socket is closed with the context.
			harness.WaitFor(t, p.name+"'s socket to close", func() bool { return p.open() == 0 })
			rows := b.RealtimeRows("acme", rc.SocketID)
			chars := len("Hello there, this is the bridge.") + len("It continues here.")
			if len(rows) != 1 || rows[0].Status != 200 || rows[0].Provider != p.name || rows[0].CharCount != chars || rows[0].TTFA != *done.TTFA {
				t.Errorf("rows %+v", rows)
			}
		})
	}
}

func TestRealtimeBridgeCancelStopsWithinOneChunk(t *testing.T) {
	t.Parallel()
	b := startBridge(t)
	long := strings.Repeat("This is a long sentence that keeps the provider busy for a while. ", 10)
	for _, p := range b.providers() {
		t.Run(p.name, func(t *testing.T) {
			rc := b.DialRealtime("acme")
			rc.Send(p.start("c"))
			rc.Expect("started", "c")
			rc.Send(harness.TextMsg("c", long))
			rc.Send(harness.ControlMsg("close", "c"))
			rc.Expect("audio", "c")
			rc.Send(harness.ControlMsg("cancel", "c"))
			msgs := rc.Until(harness.IsType("done", "c"))
			frames := 0
			for _, m := range msgs {
				if m.Type == "audio" {
					frames++
				}
			}
			if frames > 1 || msgs[len(msgs)-1].Reason != "cancelled" {
				t.Errorf("%d audio frames after cancel (want at most 1): %v", frames, harness.RawOf(msgs))
			}
			harness.WaitFor(t, p.name+"'s socket to close", func() bool { return p.open() == 0 })
			if p.name == "cartesia" && b.ca.Cancels() == 0 {
				t.Error("Cartesia never got the cancel message")
			}
		})
	}
}

func TestRealtimeBridgeTwoProvidersOnOneSocket(t *testing.T) {
	t.Parallel()
	b := startBridge(t)
	ps := b.providers()
	rc := b.DialRealtime("acme")
	rc.Send(ps[0].start("e", "timestamps", true))
	rc.Send(ps[1].start("c", "timestamps", true))
	rc.Expect("started", "e")
	rc.Expect("started", "c")
	sentences := map[string][]string{"e": {"Eleven speaks first.", "Then eleven again."}, "c": {"Cartesia answers.", "And closes."}}
	var msgs []harness.RealtimeMsg
	for i := range 2 {
		rc.Send(harness.TextMsg("e", sentences["e"][i]+" "))
		rc.Send(harness.TextMsg("c", sentences["c"][i]+" "))
	}
	rc.Send(harness.ControlMsg("close", "e"))
	rc.Send(harness.ControlMsg("close", "c"))
	dones := 0
	for dones < 2 {
		m := rc.Next()
		msgs = append(msgs, m)
		if m.Type == "done" {
			dones++
			if m.Reason != "completed" {
				t.Errorf("done %s", m.Raw)
			}
		}
	}
	// Both contexts were speaking at once, and each spoke its own words.
	firstAudio, lastAudio := map[string]int{}, map[string]int{}
	for i, m := range msgs {
		if m.Type == "audio" {
			if _, ok := firstAudio[m.ContextID]; !ok {
				firstAudio[m.ContextID] = i
			}
			lastAudio[m.ContextID] = i
		}
	}
	if firstAudio["c"] > lastAudio["e"] || firstAudio["e"] > lastAudio["c"] {
		t.Errorf("the contexts' audio did not interleave: e %d..%d, c %d..%d", firstAudio["e"], lastAudio["e"], firstAudio["c"], lastAudio["c"])
	}
	for id, ss := range sentences {
		var words []string
		for _, m := range msgs {
			if m.Type == "timestamps" && m.ContextID == id {
				for _, w := range m.Words {
					words = append(words, w.Text)
				}
			}
		}
		if got := strings.Join(words, " "); got != strings.Join(ss, " ") {
			t.Errorf("context %s spoke %q", id, got)
		}
		// Each provider gets each segment with a trailing space, which
		// the fake speaks as a pause.
		var texts []string
		for _, s := range ss {
			texts = append(texts, s+" ")
		}
		_, secs := expectedWords(texts, 24000)
		if got := float64(len(audioOf(msgs, id))/2) / 24000; math.Abs(got-secs) > 0.0001 {
			t.Errorf("context %s: %.4fs of audio, want %.4fs", id, got, secs)
		}
	}
}

func TestRealtimeBridgeFailures(t *testing.T) {
	t.Parallel()
	b := startBridge(t)
	for _, p := range b.providers() {
		t.Run(p.name, func(t *testing.T) {
			rc := b.DialRealtime("acme")
			// An unknown voice: the provider refuses it, the context ends.
			m := p.start("v")
			m["voice"] = "no-such-voice"
			rc.Send(m)
			rc.Expect("started", "v")
			rc.Send(harness.TextMsg("v", "Hello there. "))
			msgs := rc.Until(harness.IsType("done", "v"))
			if e := msgs[len(msgs)-2]; e.Type != "error" || !strings.HasPrefix(e.Code, "provider_") || msgs[len(msgs)-1].Reason != "error" {
				t.Errorf("unknown voice: %v", harness.RawOf(msgs))
			}
			// The provider may refuse the voice before the text arrives;
			// the text then finds no open context.
			// So one or two unknown_context errors for v follow; a flush of
			// a context never opened marks the end of them (the socket's
			// own errors go out in the order of the client's messages).
			rc.Send(harness.ControlMsg("flush", "v"))
			rc.Send(harness.ControlMsg("flush", "marker"))
			var after []harness.RealtimeMsg
			for m := rc.Next(); m.ContextID != "marker"; m = rc.Next() {
				after = append(after, m)
			}
			if len(after) == 0 || len(after) > 2 || after[len(after)-1].Code != "unknown_context" {
				t.Errorf("after the refused voice: %v", harness.RawOf(after))
			}
			harness.WaitFor(t, "the provider socket to close", func() bool { return p.open() == 0 })

			// A client that vanishes mid-context: its provider socket
			// closes and its row says so.
			rc.Send(p.start("gone"))
			rc.Expect("started", "gone")
			rc.Send(harness.TextMsg("gone", strings.Repeat("A client that vanishes leaves nothing open. ", 10)))
			rc.Expect("audio", "gone")
			_ = rc.Conn.NetConn().Close()
			harness.WaitFor(t, "the provider socket to close", func() bool { return p.open() == 0 })
			harness.WaitFor(t, "the row", func() bool {
				for _, r := range b.RealtimeRows("acme", rc.SocketID) {
					if r.ErrorCode == "client_disconnected" && r.Status == 499 {
						return true
					}
				}
				return false
			})
		})
	}
}
