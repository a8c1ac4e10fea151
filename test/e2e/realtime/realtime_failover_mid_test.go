package realtime

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/deepgram"
	"github.com/voxgate/voxgate/internal/fakeupstream/elevenlabs"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// Failover inside a segment's audio (docs/realtime.md, "Mid-utterance
// failover"): the provider dies after part of a sentence's audio reached
// the client. Within the window the fallback speaks the sentence from the
// first word not heard; past it the context ends with the error.

// breakAfter is how many audio chunks of 4096 bytes (85 ms of 24 kHz PCM
// each) a provider sends before it dies: 0.85 s, the fake voice being two
// words and a half into its sentence.
const breakAfter = 10

// pcm24k is the output every context of these tests asks for: the
// fallbacks stream it too.
var pcm24k = map[string]any{"format": "pcm", "sampleRate": 24000}

// midConfig is a gateway with OpenAI, ElevenLabs and Deepgram on the
// fakes: OpenAI falls back to ElevenLabs, ElevenLabs and Deepgram to
// OpenAI.
func midConfig(oai *openai.Server, el *elevenlabs.Server, dg *deepgram.Server) string {
	return harness.BaseYAML + "providers:\n" +
		harness.CloudProvider("openai", "voxgate-openai", oai.BaseURL(), openai.Key, "max_attempts: 1") +
		harness.CloudProvider("elevenlabs", "voxgate-elevenlabs", el.BaseURL(), elevenlabs.Key, "max_attempts: 1") +
		harness.CloudProvider("deepgram", "voxgate-deepgram", dg.BaseURL(), deepgram.Key, "max_attempts: 1") + `
fallbacks:
  openai/tts-1:
    - model: elevenlabs/eleven_multilingual_v2
      voice: ` + elevenlabs.VoiceRachel + `
  elevenlabs/eleven_flash_v2_5:
    - model: openai/tts-1
      voice: alloy
  deepgram/aura-2:
    - model: openai/tts-1
      voice: alloy
orgs:
  acme:
    providers:
      openai: {enabled: true}
      elevenlabs: {enabled: true}
      deepgram: {enabled: true}
`
}

// failoverMsg is a failover message's fields.
type failoverMsg struct {
	From, Provider, Reason, ReplayedText string
}

// speakOne starts context "f" with start, speaks text in one message and
// closes it, and returns every message until done, the failover (nil:
// none) and the bytes of audio that came before it.
func speakOne(t *testing.T, rc *harness.RealtimeClient, text string, start ...any) (msgs []harness.RealtimeMsg, fo *failoverMsg, before int) {
	t.Helper()
	rc.Send(harness.StartMsg("f", start...))
	if st := rc.Expect("started", "f"); st.MediaType != "audio/pcm;rate=24000" {
		t.Fatalf("started %s", st.Raw)
	}
	rc.Send(harness.TextMsg("f", text))
	rc.Send(harness.ControlMsg("close", "f"))
	msgs = rc.Until(harness.IsType("done", "f"))
	for _, m := range msgs {
		switch {
		case m.Type == "failover" && fo == nil:
			fo = &failoverMsg{}
			if err := json.Unmarshal(m.Raw, fo); err != nil {
				t.Fatal(err)
			}
		case m.Type == "audio" && fo == nil:
			before += len(m.Audio)
		}
	}
	return msgs, fo, before
}

// checkNoWordLost fails unless replay is what text has left from a word
// at or before the first word whose audio the client had not all been
// sent (by the fake voice's own word times, which the provider spoke
// text with) after sentBytes of 24 kHz PCM, and starts after text's
// beginning (a sentence replayed whole would repeat what was heard).
func checkNoWordLost(t *testing.T, text, replay string, sentBytes int) {
	t.Helper()
	at := strings.LastIndex(text, replay)
	if replay == "" || at < 0 || at+len(replay) != len(text) {
		t.Fatalf("replayed %q, which does not end %q", replay, text)
	}
	sec := float64(sentBytes) / 48000
	u := fakeupstream.Speak(text, 1)
	unheard, offset := -1, 0
	for _, w := range u.Words {
		i := strings.Index(text[offset:], w.Text) + offset
		offset = i + len(w.Text)
		if w.End > sec {
			unheard = i
			break
		}
	}
	if unheard < 0 || at > unheard {
		t.Errorf("after %.3f s the first word not heard is at %d of %q; the replay %q starts at %d", sec, unheard, text, replay, at)
	}
	if at == 0 {
		t.Errorf("the whole sentence was replayed after %.3f s of it: %q", sec, replay)
	}
}

// checkPastWindow fails unless the context ended with the provider's
// error and no failover.
func checkPastWindow(t *testing.T, msgs []harness.RealtimeMsg, fo *failoverMsg) {
	t.Helper()
	done := msgs[len(msgs)-1]
	if fo != nil || done.Reason != "error" || msgs[len(msgs)-2].Type != "error" {
		t.Errorf("past the window: %v", harness.RawOf(msgs))
	}
}

// TestRealtimeFailoverInsideASegment: on the sentence path (OpenAI's
// stream, no word timings) the replay starts a word before the estimate
// of what was heard; on ElevenLabs' input stream, with its timings, at
// the first word not heard; on Deepgram's, without timings, a word
// before the estimate. The characters replayed are billed once.
func TestRealtimeFailoverInsideASegment(t *testing.T) {
	t.Parallel()
	oai := openai.New(t, fakeupstream.Options{})
	el := elevenlabs.New(t, fakeupstream.Options{})
	dg := deepgram.New(t, fakeupstream.Options{})
	tg := harness.Start(t, midConfig(oai, el, dg))
	tg.Secrets = append(tg.Secrets, openai.Key, elevenlabs.Key, deepgram.Key)
	for _, tt := range []struct {
		name     string
		dies     *fakeupstream.Control
		fallback *fakeupstream.Control
		start    []any
		text     string
		// exact is the replay when the cut is known exactly (word
		// timings); "" checks that no word was lost.
		exact string
	}{
		{"sentence path", oai.Control, el.Control, []any{"model", "openai/tts-1", "voice", "alloy"},
			"The first sentence comes from OpenAI.", ""},
		{"ElevenLabs' input stream", el.Control, oai.Control, []any{"model", "elevenlabs/eleven_flash_v2_5", "voice", elevenlabs.VoiceRachel},
			"The first sentence comes from ElevenLabs.", "sentence comes from ElevenLabs."},
		{"Deepgram's input stream", dg.Control, oai.Control, []any{"model", "deepgram/aura-2", "voice", "thalia-en"},
			"The first sentence comes from Deepgram.", ""},
	} {
		for _, window := range []int{3000, 500} {
			name := tt.name + "/inside the window"
			if window < 3000 {
				name = tt.name + "/past the window"
			}
			t.Run(name, func(t *testing.T) {
				oai.Reset()
				el.Reset()
				dg.Reset()
				tt.dies.BreakStreamAfter(breakAfter)
				rc := tg.DialRealtime("acme")
				start := append(slices.Clone(tt.start), "output", pcm24k, "failoverWindowMs", window)
				msgs, fo, before := speakOne(t, rc, tt.text, start...)
				// (An HTTP body breaks inside its next chunk, after one
				// sample of it.)
				if before < breakAfter*4096 || before > breakAfter*4096+2 {
					t.Fatalf("%d bytes of audio before the failure, want %d: %v", before, breakAfter*4096, harness.RawOf(msgs))
				}
				if window < 3000 {
					checkPastWindow(t, msgs, fo)
					return
				}
				if fo == nil {
					t.Fatalf("no failover: %v", harness.RawOf(msgs))
				}
				if tt.exact != "" && fo.ReplayedText != tt.exact {
					t.Errorf("replayed %q, want %q", fo.ReplayedText, tt.exact)
				}
				checkNoWordLost(t, tt.text, fo.ReplayedText, before)
				// The fallback got the replay, not what was heard before it.
				reqs := tt.fallback.Requests()
				if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), fo.ReplayedText) || strings.Contains(string(reqs[0].Body), "The first") {
					t.Errorf("the fallback got %d requests: %v", len(reqs), reqs)
				}
				done := msgs[len(msgs)-1]
				if done.Reason != "completed" || !strings.HasSuffix(done.SpokenText, tt.text[len(tt.text)-10:]) {
					t.Errorf("done %s", done.Raw)
				}
				// Billed once: the heard part for the provider that spoke
				// it, the replay for the fallback (a word the estimate
				// repeats counts once, for the fallback).
				if done.Chars != len(tt.text) {
					t.Errorf("done counts %d characters for a text of %d: %s", done.Chars, len(tt.text), done.Raw)
				}
			})
		}
	}
}

// TestRealtimeFailoverReplaysImmediatePiecesJoined: a context of the
// immediate aggregation on ElevenLabs' input stream, whose socket dies
// inside the first piece's audio after the first word, is replayed to the
// fallback as one text joined as the client sent it, from the word not
// heard: one request "first sentence comes from ElevenLabs.", not the
// pieces "st sentence com" and "es from ElevenLabs." apart.
func TestRealtimeFailoverReplaysImmediatePiecesJoined(t *testing.T) {
	t.Parallel()
	oai := openai.New(t, fakeupstream.Options{})
	el := elevenlabs.New(t, fakeupstream.Options{})
	dg := deepgram.New(t, fakeupstream.Options{})
	tg := harness.Start(t, midConfig(oai, el, dg))
	tg.Secrets = append(tg.Secrets, openai.Key, elevenlabs.Key, deepgram.Key)
	pieces := []string{"The fir", "st sentence com", "es from ElevenLabs."}
	// The first piece's audio stops after its first chunk until every
	// piece has reached ElevenLabs, then dies at its fourth (0.34 s: "The"
	// heard, "fir" not).
	el.HoldStreams()
	el.BreakStreamAfter(4)
	rc := tg.DialRealtime("acme")
	rc.Send(harness.StartMsg("f", "model", "elevenlabs/eleven_flash_v2_5", "voice", elevenlabs.VoiceRachel, "output", pcm24k, "aggregation", "immediate"))
	if st := rc.Expect("started", "f"); !st.Input {
		t.Fatalf("started %s", st.Raw)
	}
	for _, p := range pieces {
		rc.Send(harness.TextMsg("f", p))
	}
	msgs := rc.Until(harness.IsType("audio", "f"))
	for deadline := time.Now().Add(10 * time.Second); len(el.StreamTexts()) < len(pieces); {
		if time.Now().After(deadline) {
			t.Fatalf("ElevenLabs got %q", el.StreamTexts())
		}
		time.Sleep(10 * time.Millisecond)
	}
	el.ReleaseStreams()
	rc.Send(harness.ControlMsg("close", "f"))
	msgs = append(msgs, rc.Until(harness.IsType("done", "f"))...)
	var fo *failoverMsg
	for _, m := range msgs {
		if m.Type == "failover" {
			fo = &failoverMsg{}
			_ = json.Unmarshal(m.Raw, fo)
		}
	}
	want := "first sentence comes from ElevenLabs."
	if fo == nil || fo.ReplayedText != want {
		t.Fatalf("failover %+v, want the replay %q: %v", fo, want, harness.RawOf(msgs))
	}
	var inputs []string
	for _, r := range oai.Requests() {
		var body struct {
			Input string `json:"input"`
		}
		_ = r.JSON(&body)
		inputs = append(inputs, body.Input)
	}
	if len(inputs) != 1 || strings.TrimSpace(inputs[0]) != want {
		t.Errorf("OpenAI got %q, want one request %q", inputs, want)
	}
	if done := msgs[len(msgs)-1]; done.Reason != "completed" {
		t.Errorf("done %s", done.Raw)
	}
}
