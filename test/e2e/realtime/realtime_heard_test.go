package realtime

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/test/e2e/harness"
)

// What was heard: a cancel is acknowledged with a cancelled message after
// the context's last audio frame, saying which text, up to which word and
// how much audio the client was sent; done says the same; metrics come
// before done.

// heardText is long enough that a client cancels long before it is all
// spoken (eSpeak renders far faster than real time, but the socket's
// queue and buffers hold only so much), with sentences of their own words.
var heardText = func() string {
	var b strings.Builder
	for _, w := range []string{"apple", "river", "mountain", "garden", "window", "candle", "forest", "silver", "harbor", "meadow"} {
		for range 40 {
			b.WriteString("The " + w + " is quiet this morning, and nobody is near it. ")
		}
	}
	return b.String()
}()

// received is what a client got of context id up to (not including) the
// first message of type stop: audio seconds at rate, words, and the other
// messages.
type received struct {
	audioSec float64
	words    []harness.RealtimeWord
	lastType string
}

func collect(t *testing.T, msgs []harness.RealtimeMsg, id string, rate int) received {
	t.Helper()
	var r received
	for _, m := range msgs {
		if m.ContextID != id {
			continue
		}
		switch m.Type {
		case "audio":
			if r.lastType == "cancelled" || r.lastType == "done" {
				t.Fatalf("audio after %s", r.lastType)
			}
			r.audioSec += float64(len(m.Audio)/2) / float64(rate)
		case "timestamps":
			r.words = append(r.words, m.Words...)
		}
		r.lastType = m.Type
	}
	return r
}

// heardWords is the index of the last word whose audio the client has all
// received.
func (r received) heardWords() int {
	n := 0
	for n < len(r.words) && r.words[n].End <= r.audioSec+0.0015 {
		n++
	}
	return n - 1
}

func TestRealtimeCancelSaysWhatWasHeard(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, realtimeConfig)
	// One sentence of heardText rendered alone: the audio a whole
	// sentence takes (eSpeak's sentences here differ only in one word).
	one := tg.Do("POST", "/v1/audio/speech/stream", "globex", harness.SpeechBody("The apple is quiet this morning, and nobody is near it."))
	sentenceSec := float64(len(one.Body)/2) / 22050
	for _, timestamps := range []bool{true, false} {
		name := map[bool]string{true: "word timings", false: "sentences"}[timestamps]
		t.Run(name, func(t *testing.T) {
			rc := tg.DialRealtime("globex")
			rc.Send(harness.StartMsg("c", "timestamps", timestamps))
			rc.Expect("started", "c")
			rc.Send(harness.TextMsg("c", heardText))
			// A few seconds of audio in, the user interrupts.
			var msgs []harness.RealtimeMsg
			var sec float64
			msgs = append(msgs, rc.Until(func(m harness.RealtimeMsg) bool {
				if m.Type == "audio" {
					sec += float64(len(m.Audio)/2) / 22050
				}
				return sec > 3*sentenceSec
			})...)
			rc.Send(harness.ControlMsg("cancel", "c"))
			msgs = append(msgs, rc.Until(harness.IsType("done", "c"))...)
			var cancelled, done, metrics *harness.RealtimeMsg
			var order []string
			for i := range msgs {
				switch m := &msgs[i]; m.Type {
				case "cancelled":
					cancelled = m
				case "done":
					done = m
				case "metrics":
					metrics = m
				default:
					continue
				}
				order = append(order, msgs[i].Type)
			}
			if strings.Join(order, ",") != "metrics,cancelled,done" {
				t.Fatalf("context's last messages %v, want metrics, cancelled, done", order)
			}
			r := collect(t, msgs, "c", 22050)
			if r.lastType != "done" {
				t.Fatalf("last message %q", r.lastType)
			}
			if want := int64(math.Round(r.audioSec * 1000)); cancelled.AudioMs < want-1 || cancelled.AudioMs > want+1 {
				t.Errorf("cancelled says %d ms of audio, the client got %d ms", cancelled.AudioMs, want)
			}
			spoken := cancelled.SpokenText
			if spoken == "" || len(spoken) >= len(heardText)/2 || !strings.HasPrefix(heardText, spoken) {
				t.Fatalf("spokenText %q is not a prefix of the text, cut early", spoken)
			}
			if cancelled.LastWordIndex == nil {
				t.Fatalf("cancelled without lastWordIndex: %s", cancelled.Raw)
			}
			last := *cancelled.LastWordIndex
			if timestamps {
				if want := r.heardWords(); last != want {
					t.Errorf("lastWordIndex %d, the client's timings put the last word heard at %d", last, want)
				}
				var words []string
				for _, w := range r.words[:last+1] {
					words = append(words, w.Text)
				}
				if letters(strings.Join(words, " ")) != letters(spoken) {
					t.Errorf("spokenText %q is not the words heard %q", spoken, strings.Join(words, " "))
				}
			} else {
				// Whole sentences, each of which had all its audio sent.
				n := strings.Count(spoken, ".")
				if !strings.HasSuffix(spoken, ".") || last != len(strings.Fields(spoken))-1 {
					t.Errorf("spokenText %q (last word %d) is not whole sentences", spoken, last)
				}
				if float64(n)*sentenceSec*0.95 > r.audioSec || float64(n+2)*sentenceSec*1.05 < r.audioSec {
					t.Errorf("%d sentences heard, but %.2fs of audio (%.2fs a sentence)", n, r.audioSec, sentenceSec)
				}
			}
			if done.Reason != "cancelled" || done.SpokenText != spoken || *done.LastWordIndex != last || done.AudioMs != cancelled.AudioMs {
				t.Errorf("done %s does not say what cancelled said %s", done.Raw, cancelled.Raw)
			}
			if metrics.TTFA == nil || metrics.TextWaitMs == nil || *metrics.TextWaitMs > *metrics.TTFA {
				t.Errorf("metrics %s", metrics.Raw)
			}
		})
	}
}

func TestRealtimeCloseSaysAllWasHeard(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, realtimeConfig)
	rc := tg.DialRealtime("globex")
	rc.Send(harness.StartMsg("c", "timestamps", true))
	rc.Expect("started", "c")
	text := "Short and sweet. Then a second sentence"
	rc.Send(harness.TextMsg("c", text))
	rc.Send(harness.ControlMsg("close", "c"))
	msgs := rc.Until(harness.IsType("done", "c"))
	r := collect(t, msgs, "c", 22050)
	done := msgs[len(msgs)-1]
	for _, m := range msgs {
		if m.Type == "cancelled" {
			t.Fatalf("a cancelled message without a cancel: %s", m.Raw)
		}
	}
	if done.Reason != "completed" || done.SpokenText != text || done.LastWordIndex == nil || *done.LastWordIndex != len(r.words)-1 ||
		done.AudioMs != int64(math.Round(r.audioSec*1000)) {
		t.Errorf("done %s; the client got %d words, %.3fs", done.Raw, len(r.words), r.audioSec)
	}
}

// TestRealtimeAggregation checks the clause aggregation cuts where the
// sentence one waits, and that metrics say so.
func TestRealtimeAggregation(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, realtimeConfig)
	text := "Well, you know, I think that, on balance, it works. "
	for _, tt := range []struct {
		aggregation string
		segments    int
		warning     bool
	}{
		// The first clause past 40 characters, then the sentence's end.
		{"sentence", 2, false},
		{"clause", 3, false},
		// eSpeak takes no partial input: served as clause, with a warning.
		{"immediate", 3, true},
	} {
		t.Run(tt.aggregation, func(t *testing.T) {
			rc := tg.DialRealtime("globex")
			rc.Send(harness.StartMsg("c", "aggregation", tt.aggregation))
			rc.Expect("started", "c")
			// Token by token, as an LLM sends it.
			for _, tok := range strings.SplitAfter(text, " ") {
				rc.Send(harness.TextMsg("c", tok))
			}
			rc.Send(harness.ControlMsg("close", "c"))
			msgs := rc.Until(harness.IsType("done", "c"))
			var segments int
			warned := false
			for _, m := range msgs {
				if m.Type == "metrics" {
					var v struct {
						Segments    int    `json:"segments"`
						Aggregation string `json:"aggregation"`
					}
					if err := json.Unmarshal(m.Raw, &v); err != nil {
						t.Fatal(err)
					}
					segments = v.Segments
					if v.Aggregation != tt.aggregation {
						t.Errorf("metrics %s", m.Raw)
					}
				}
				warned = warned || m.Type == "warning" && strings.Contains(m.Message, "immediate")
			}
			if segments != tt.segments || warned != tt.warning {
				t.Errorf("%d segments (warning %v), want %d (%v)", segments, warned, tt.segments, tt.warning)
			}
		})
	}
	rc := tg.DialRealtime("globex")
	rc.Send(harness.StartMsg("c", "aggregation", "word"))
	if m := rc.Expect("error", "c"); m.Code != "validation_failed" || !strings.Contains(string(m.Problem), "aggregation") {
		t.Errorf("bad aggregation: %s", m.Raw)
	}
}

// TestRealtimeBridgeCancelSaysWhatWasHeard: through a provider's own
// socket, what was heard comes from the provider's word timings, which the
// gateway asks for even when the client did not (and does not forward
// then).
func TestRealtimeBridgeCancelSaysWhatWasHeard(t *testing.T) {
	t.Parallel()
	b := startBridge(t)
	sentences := []string{"The first sentence is spoken in full.", "The second one is cut off somewhere in its middle by the user.", "The third is never heard."}
	for _, p := range b.providers() {
		t.Run(p.name, func(t *testing.T) {
			rc := b.DialRealtime("acme")
			rc.Send(p.start("h"))
			rc.Expect("started", "h")
			rc.Send(harness.TextMsg("h", strings.Join(sentences, " ")+" "))
			// Past the first sentence's audio, the user interrupts.
			first, _ := expectedWords(sentences[:1], 24000)
			var sec float64
			msgs := rc.Until(func(m harness.RealtimeMsg) bool {
				if m.Type == "audio" {
					sec += float64(len(m.Audio)/2) / 24000
				}
				return sec > first[len(first)-1].End+0.2
			})
			rc.Send(harness.ControlMsg("cancel", "h"))
			msgs = append(msgs, rc.Until(harness.IsType("done", "h"))...)
			r := collect(t, msgs, "h", 24000)
			if len(r.words) > 0 {
				t.Fatalf("timestamps sent to a client that did not ask for them")
			}
			var cancelled harness.RealtimeMsg
			for _, m := range msgs {
				if m.Type == "cancelled" {
					cancelled = m
				}
			}
			if cancelled.Type == "" {
				t.Fatalf("no cancelled message: %v", harness.RawOf(msgs))
			}
			// The provider's timeline, as the fake speaks it: the
			// sentences are generated one after the other.
			want, _ := expectedWords(sentences, 24000)
			r.words = want
			last := r.heardWords()
			if cancelled.LastWordIndex == nil || *cancelled.LastWordIndex != last || last < len(first)-1 || last >= len(want)-1 {
				t.Errorf("cancelled %s; the client got %.3fs of audio, which ends after word %d", cancelled.Raw, r.audioSec, last)
			}
			if wantMs := int64(math.Round(r.audioSec * 1000)); cancelled.AudioMs < wantMs-1 || cancelled.AudioMs > wantMs+1 {
				t.Errorf("cancelled says %d ms, the client got %d ms", cancelled.AudioMs, wantMs)
			}
			joined := strings.Join(sentences, " ")
			if !strings.HasPrefix(joined, cancelled.SpokenText) || len(strings.Fields(cancelled.SpokenText)) != last+1 {
				t.Errorf("spokenText %q is not the first %d words of the text", cancelled.SpokenText, last+1)
			}
			harness.WaitFor(t, "the provider socket closed", func() bool { return p.open() == 0 })
		})
	}
}

// TestRealtimeBridgeImmediateAggregation: with immediate, each text message
// reaches the provider's input stream as it came, spaces included.
func TestRealtimeBridgeImmediateAggregation(t *testing.T) {
	t.Parallel()
	b := startBridge(t)
	tokens := []string{"Hello", " there", ", my", " friend", ". How", " are", " you?"}
	for _, p := range b.providers() {
		t.Run(p.name, func(t *testing.T) {
			rc := b.DialRealtime("acme")
			rc.Send(p.start("i", "aggregation", "immediate"))
			rc.Expect("started", "i")
			before := len(p.texts())
			for _, tok := range tokens {
				rc.Send(harness.TextMsg("i", tok))
			}
			rc.Send(harness.ControlMsg("close", "i"))
			msgs := rc.Until(harness.IsType("done", "i"))
			done := msgs[len(msgs)-1]
			if done.Reason != "completed" || len(audioOf(msgs, "i")) == 0 || done.SpokenText != strings.Join(tokens, "") {
				t.Errorf("done %s", done.Raw)
			}
			var got []string
			for _, s := range p.texts()[before:] {
				if strings.TrimSpace(s) != "" {
					got = append(got, s)
				}
			}
			if strings.Join(got, "|") != strings.Join(tokens, "|") {
				t.Errorf("the provider got %q, want the tokens as sent %q", got, tokens)
			}
		})
	}
}
