package gateway_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/cartesia"
	"github.com/voxgate/voxgate/internal/fakeupstream/elevenlabs"
)

// The realtime socket bridged to the providers' own input-streaming
// sockets: the real ElevenLabs and Cartesia plugin processes against fakes
// that speak stream-input and Cartesia's TTS WebSocket.

type bridge struct {
	*testGateway
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
	tg := startGateway(t, `
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
	tg.secrets = append(tg.secrets, elevenlabs.Key, cartesia.Key)
	return &bridge{testGateway: tg, el: el, ca: ca}
}

// bridged is one provider as the tests drive it.
type bridged struct {
	name  string
	start func(id string, extra ...any) map[string]any
	texts func() []string // what the provider received, in order
	open  func() int64    // its sockets open now
}

func (b *bridge) providers() []bridged {
	return []bridged{
		{"elevenlabs", func(id string, extra ...any) map[string]any {
			return start(id, append([]any{"model", "elevenlabs/eleven_flash_v2_5", "voice", elevenlabs.VoiceRachel}, extra...)...)
		}, func() []string {
			var out []string
			for _, t := range b.el.StreamTexts() {
				if t != "" {
					out = append(out, t)
				}
			}
			return out
		}, b.el.OpenStreams},
		{"cartesia", func(id string, extra ...any) map[string]any {
			return start(id, append([]any{"model", "cartesia/sonic-2", "voice", cartesia.VoiceKatie}, extra...)...)
		}, b.ca.Transcripts, b.ca.OpenSockets},
	}
}

// expectedWords are the fake speech's word timings of texts spoken one
// after the other on one timeline, and the timeline's length.
func expectedWords(texts []string, rate int) ([]rtWord, float64) {
	var out []rtWord
	offset := 0.0
	for _, t := range texts {
		u := fakeupstream.Speak(t, 1)
		for _, w := range u.Words {
			out = append(out, rtWord{Text: w.Text, Start: offset + w.Start, End: offset + w.End})
		}
		offset += math.Round(u.Seconds*float64(rate)) / float64(rate)
	}
	return out, offset
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRealtimeBridgeSpeaksThroughTheProviderSocket(t *testing.T) {
	b := startBridge(t)
	for _, p := range b.providers() {
		t.Run(p.name, func(t *testing.T) {
			rc := b.dialRealtime("acme")
			rc.send(p.start("a", "timestamps", true))
			st := rc.expect("started", "a")
			if !st.Input || st.MediaType != "audio/pcm;rate=24000" {
				t.Fatalf("started: %s", st.raw)
			}
			before := len(p.texts())
			rc.send(text("a", "Hello there, this is the bridge. "))
			// The first sentence is spoken before the rest is sent.
			first := rc.until(isType("audio", "a"))
			rc.send(text("a", "It continues"))
			rc.send(text("a", " here."))
			rc.send(ctl("close", "a"))
			msgs := append(first, rc.until(isType("done", "a"))...)
			done := msgs[len(msgs)-1]
			if done.Reason != "completed" || done.TTFA == nil {
				t.Fatalf("done: %v", rawOf(msgs))
			}
			sent := p.texts()[before:]
			if len(sent) != 2 || strings.TrimSpace(sent[0]) != "Hello there, this is the bridge." || strings.TrimSpace(sent[1]) != "It continues here." {
				t.Fatalf("the provider received %q", sent)
			}
			// Timings and audio are exactly the fake's speech of what it
			// received, on one timeline.
			want, secs := expectedWords(sent, 24000)
			var got []rtWord
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
			waitFor(t, p.name+"'s socket to close", func() bool { return p.open() == 0 })
			rows := b.realtimeRows("acme", rc.socketID)
			chars := len("Hello there, this is the bridge.") + len("It continues here.")
			if len(rows) != 1 || rows[0].Status != 200 || rows[0].Provider != p.name || rows[0].CharCount != chars || rows[0].TTFA != *done.TTFA {
				t.Errorf("rows %+v", rows)
			}
		})
	}
}

func TestRealtimeBridgeCancelStopsWithinOneChunk(t *testing.T) {
	b := startBridge(t)
	long := strings.Repeat("This is a long sentence that keeps the provider busy for a while. ", 10)
	for _, p := range b.providers() {
		t.Run(p.name, func(t *testing.T) {
			rc := b.dialRealtime("acme")
			rc.send(p.start("c"))
			rc.expect("started", "c")
			rc.send(text("c", long))
			rc.send(ctl("close", "c"))
			rc.expect("audio", "c")
			rc.send(ctl("cancel", "c"))
			msgs := rc.until(isType("done", "c"))
			frames := 0
			for _, m := range msgs {
				if m.Type == "audio" {
					frames++
				}
			}
			if frames > 1 || msgs[len(msgs)-1].Reason != "cancelled" {
				t.Errorf("%d audio frames after cancel (want at most 1): %v", frames, rawOf(msgs))
			}
			waitFor(t, p.name+"'s socket to close", func() bool { return p.open() == 0 })
			if p.name == "cartesia" && b.ca.Cancels() == 0 {
				t.Error("Cartesia never got the cancel message")
			}
		})
	}
}

func TestRealtimeBridgeTwoProvidersOnOneSocket(t *testing.T) {
	b := startBridge(t)
	ps := b.providers()
	rc := b.dialRealtime("acme")
	rc.send(ps[0].start("e", "timestamps", true))
	rc.send(ps[1].start("c", "timestamps", true))
	rc.expect("started", "e")
	rc.expect("started", "c")
	sentences := map[string][]string{"e": {"Eleven speaks first.", "Then eleven again."}, "c": {"Cartesia answers.", "And closes."}}
	var msgs []rtMsg
	for i := range 2 {
		rc.send(text("e", sentences["e"][i]+" "))
		rc.send(text("c", sentences["c"][i]+" "))
	}
	rc.send(ctl("close", "e"))
	rc.send(ctl("close", "c"))
	dones := 0
	for dones < 2 {
		m := rc.next()
		msgs = append(msgs, m)
		if m.Type == "done" {
			dones++
			if m.Reason != "completed" {
				t.Errorf("done %s", m.raw)
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
	b := startBridge(t)
	for _, p := range b.providers() {
		t.Run(p.name, func(t *testing.T) {
			rc := b.dialRealtime("acme")
			// An unknown voice: the provider refuses it, the context ends.
			m := p.start("v")
			m["voice"] = "no-such-voice"
			rc.send(m)
			rc.expect("started", "v")
			rc.send(text("v", "Hello there. "))
			msgs := rc.until(isType("done", "v"))
			if e := msgs[len(msgs)-2]; e.Type != "error" || !strings.HasPrefix(e.Code, "provider_") || msgs[len(msgs)-1].Reason != "error" {
				t.Errorf("unknown voice: %v", rawOf(msgs))
			}
			// The provider may refuse the voice before the text arrives;
			// the text then finds no open context.
			// So one or two unknown_context errors for v follow; a flush of
			// a context never opened marks the end of them (the socket's
			// own errors go out in the order of the client's messages).
			rc.send(ctl("flush", "v"))
			rc.send(ctl("flush", "marker"))
			var after []rtMsg
			for m := rc.next(); m.ContextID != "marker"; m = rc.next() {
				after = append(after, m)
			}
			if len(after) == 0 || len(after) > 2 || after[len(after)-1].Code != "unknown_context" {
				t.Errorf("after the refused voice: %v", rawOf(after))
			}
			waitFor(t, "the provider socket to close", func() bool { return p.open() == 0 })

			// A client that vanishes mid-context: its provider socket
			// closes and its row says so.
			rc.send(p.start("gone"))
			rc.expect("started", "gone")
			rc.send(text("gone", strings.Repeat("A client that vanishes leaves nothing open. ", 10)))
			rc.expect("audio", "gone")
			_ = rc.c.NetConn().Close()
			waitFor(t, "the provider socket to close", func() bool { return p.open() == 0 })
			waitFor(t, "the row", func() bool {
				for _, r := range b.realtimeRows("acme", rc.socketID) {
					if r.ErrorCode == "client_disconnected" && r.Status == 499 {
						return true
					}
				}
				return false
			})
		})
	}
}
