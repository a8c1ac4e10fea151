package realtime

import (
	"math"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/elevenlabs"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// Mid-utterance failover: OpenAI (the sentence path) fails after the
// context's first sentence; within the failover window the next sentence
// is spoken by the voice's fallback (ElevenLabs, at the same 24 kHz PCM)
// and the client is told; past it, the context ends with the error.
func TestRealtimeFailoverWithinTheWindow(t *testing.T) {
	t.Parallel()
	oai := openai.New(t, fakeupstream.Options{})
	el := elevenlabs.New(t, fakeupstream.Options{})
	tg := harness.Start(t, `
server:
  listen: 127.0.0.1:0
storage:
  path: %DIR%/voxgate.db
plugins:
  dir: %BIN%/plugins
providers:
  openai:
    plugin: voxgate-openai
    base_url: `+oai.BaseURL()+`
    api_key: `+openai.Key+`
    managed: true
    timeout: 2s
    max_attempts: 1
  elevenlabs:
    plugin: voxgate-elevenlabs
    base_url: `+el.BaseURL()+`
    api_key: `+elevenlabs.Key+`
    managed: true
fallbacks:
  openai/tts-1:
    - model: elevenlabs/eleven_multilingual_v2
      voice: `+elevenlabs.VoiceRachel+`
orgs:
  acme:
    providers:
      openai: {enabled: true}
      elevenlabs: {enabled: true}
`)
	tg.Secrets = append(tg.Secrets, openai.Key, elevenlabs.Key)
	for _, tt := range []struct {
		name     string
		windowMs int
		failover bool
	}{
		{"inside the window", 3000, true},
		{"past the window", 1, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			oai.Reset()
			rc := tg.DialRealtime("acme")
			rc.Send(harness.StartMsg("f", "model", "openai/tts-1", "voice", "alloy", "output", map[string]any{"format": "pcm"}, "failoverWindowMs", tt.windowMs))
			if st := rc.Expect("started", "f"); st.MediaType != "audio/pcm;rate=24000" {
				t.Fatalf("started %s", st.Raw)
			}
			rc.Send(harness.TextMsg("f", "The first sentence comes from OpenAI. "))
			msgs := rc.Until(harness.IsType("audio", "f"))
			// OpenAI goes down mid-context.
			oai.FailAlways(fakeupstream.Fault{Status: 503})
			defer oai.Reset()
			second := "The second one is spoken [laughs] elsewhere."
			msgs, failover, done := finishContext(t, rc, msgs, second, tt.failover)
			if !tt.failover {
				return
			}
			if failover == nil || failover.Provider != "elevenlabs" || !strings.Contains(string(failover.Raw), `"replayedText":"`+second+`"`) {
				t.Fatalf("no failover to elevenlabs: %v", harness.RawOf(msgs))
			}
			if done.Reason != "completed" || !strings.HasSuffix(done.SpokenText, "elsewhere.") {
				t.Errorf("done %s", done.Raw)
			}
			// ElevenLabs got the sentence without the tag it cannot
			// perform (eleven_multilingual_v2 performs none).
			req, ok := el.LastRequest()
			if !ok || strings.Contains(string(req.Body), "[laughs]") || !strings.Contains(string(req.Body), "elsewhere") {
				t.Errorf("ElevenLabs got %s", req.Body)
			}
		})
	}
}

// TestRealtimeFailoverOnTheInputStream: a context bridged to ElevenLabs'
// input stream whose provider socket breaks after its first sentence was
// all heard moves to the fallback (OpenAI) within the failover window,
// the unheard sentence replayed; past the window, whether the request's
// or its organization's (orgs.<id>.failover_window_ms, which the
// request's own overrides), it ends with the error instead.
func TestRealtimeFailoverOnTheInputStream(t *testing.T) {
	t.Parallel()
	oai := openai.New(t, fakeupstream.Options{})
	el := elevenlabs.New(t, fakeupstream.Options{})
	tg := harness.Start(t, `
server:
  listen: 127.0.0.1:0
storage:
  path: %DIR%/voxgate.db
plugins:
  dir: %BIN%/plugins
providers:
  openai:
    plugin: voxgate-openai
    base_url: `+oai.BaseURL()+`
    api_key: `+openai.Key+`
    managed: true
  elevenlabs:
    plugin: voxgate-elevenlabs
    base_url: `+el.BaseURL()+`
    api_key: `+elevenlabs.Key+`
    managed: true
    max_attempts: 1
fallbacks:
  elevenlabs/eleven_flash_v2_5:
    - model: openai/tts-1
      voice: alloy
orgs:
  acme:
    providers:
      openai: {enabled: true}
      elevenlabs: {enabled: true}
  tight:
    failover_window_ms: 1
    providers:
      openai: {enabled: true}
      elevenlabs: {enabled: true}
`)
	tg.Secrets = append(tg.Secrets, openai.Key, elevenlabs.Key)
	first, second := "The first sentence comes from ElevenLabs.", "The second one is spoken elsewhere."
	for _, tt := range []struct {
		name     string
		org      string
		windowMs any // the request's failoverWindowMs; nil: none
		failover bool
	}{
		{"inside the window", "acme", 3000, true},
		{"past the request's window", "acme", 1, false},
		{"past the organization's window", "tight", nil, false},
		{"the request's window over the organization's", "tight", 3000, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			oai.Reset()
			rc := tg.DialRealtime(tt.org)
			start := []any{"model", "elevenlabs/eleven_flash_v2_5", "voice", elevenlabs.VoiceRachel, "output", map[string]any{"format": "pcm"}}
			if tt.windowMs != nil {
				start = append(start, "failoverWindowMs", tt.windowMs)
			}
			rc.Send(harness.StartMsg("f", start...))
			if st := rc.Expect("started", "f"); !st.Input || st.MediaType != "audio/pcm;rate=24000" {
				t.Fatalf("started %s", st.Raw)
			}
			rc.Send(harness.TextMsg("f", first+" "))
			// The whole first sentence is heard: all its audio has come
			// (its word timings, which the gateway asks for itself, come
			// before it).
			want := int(math.Round(fakeupstream.Speak(first+" ", 1).Seconds*24000)) * 2
			got := 0
			msgs := rc.Until(func(m harness.RealtimeMsg) bool {
				if m.Type == "audio" && m.ContextID == "f" {
					got += len(m.Audio)
				}
				return got >= want
			})
			// ElevenLabs' socket breaks at the next text, and no new one
			// opens.
			el.DropNextMultiSocket()
			el.FailAlways(fakeupstream.Fault{Status: 503})
			defer el.Reset()
			msgs, failover, done := finishContext(t, rc, msgs, second, tt.failover)
			if !tt.failover {
				return
			}
			if failover == nil || failover.Provider != "openai" || !strings.Contains(string(failover.Raw), `"replayedText":"`+second+`"`) {
				t.Fatalf("no failover to openai: %v", harness.RawOf(msgs))
			}
			if done.Reason != "completed" || done.SpokenText != first+" "+second+" " && done.SpokenText != first+" "+second {
				t.Errorf("done %s", done.Raw)
			}
			// OpenAI got the second sentence only: the first was heard.
			req, ok := oai.LastRequest()
			if !ok || strings.Contains(string(req.Body), "first") || !strings.Contains(string(req.Body), "elsewhere") {
				t.Errorf("OpenAI got %s", req.Body)
			}
		})
	}
}

// finishContext sends the context "f" its last text and closes it, and
// returns every message with its failover (nil: none) and its done. A
// context past its window (wantFailover false) must end in an error
// without a failover.
func finishContext(t *testing.T, rc *harness.RealtimeClient, msgs []harness.RealtimeMsg, last string, wantFailover bool) ([]harness.RealtimeMsg, *harness.RealtimeMsg, harness.RealtimeMsg) {
	t.Helper()
	rc.Send(harness.TextMsg("f", last+" "))
	rc.Send(harness.ControlMsg("close", "f"))
	msgs = append(msgs, rc.Until(harness.IsType("done", "f"))...)
	done := msgs[len(msgs)-1]
	var failover *harness.RealtimeMsg
	for i, m := range msgs {
		if m.Type == "failover" {
			failover = &msgs[i]
		}
	}
	if !wantFailover && (failover != nil || done.Reason != "error" || msgs[len(msgs)-2].Type != "error") {
		t.Errorf("past the window: %v", harness.RawOf(msgs))
	}
	return msgs, failover, done
}
