package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/testplugin/calllog"
	"github.com/voxgate/voxgate/internal/testplugin/testkit"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// pluginPath is this package's binary, built once by TestMain; every test
// talks to it as a real process through go-plugin.
var pluginPath string

func TestMain(m *testing.M) { os.Exit(sdktest.MainWithPlugin(m, &pluginPath)) }

// start launches the plugin with a call log and extra settings.
func start(t *testing.T, settings map[string]string) (sdk.Provider, string) {
	t.Helper()
	p := sdktest.StartPlugin(t, pluginPath)
	log := filepath.Join(t.TempDir(), "calls.jsonl")
	all := map[string]string{"call_log": log}
	for k, v := range settings {
		all[k] = v
	}
	if err := p.Configure(t.Context(), all); err != nil {
		t.Fatalf("Configure: %v", err)
	}
	return p, log
}

func wantKind(t *testing.T, err error, kind sdk.ErrorKind) {
	t.Helper()
	var e *sdk.Error
	if !errors.As(err, &e) || e.Kind != kind {
		t.Errorf("got %T %v, want an *sdk.Error of kind %s", err, err, kind)
	}
}

func TestConformance(t *testing.T) {
	for _, model := range []string{testkit.ModelTest, testkit.ModelBasic} {
		t.Run(model, func(t *testing.T) {
			sdktest.Run(t, sdktest.StartPlugin(t, pluginPath), sdktest.Config{Model: model, InvalidVoice: "nobody"})
		})
	}
}

func TestCallLogCountsCalls(t *testing.T) {
	p, log := start(t, nil)
	count := func(method string) int {
		t.Helper()
		n, err := calllog.Count(log, method)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := p.Describe(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := count(""); n != 0 {
		t.Fatalf("%d calls logged after Configure and Describe, want 0", n)
	}
	req := &sdk.SynthesizeRequest{Model: testkit.ModelTest, Voice: "alpha", Text: "a b"}
	if _, err := p.Synthesize(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if err := p.Stream(t.Context(), req, func(sdk.Chunk) error { return nil }); err != nil {
		t.Fatal(err)
	}
	// A failing call is still a call that reached the provider.
	req.Voice = "nobody"
	_, err := p.Synthesize(t.Context(), req)
	wantKind(t, err, sdk.KindInvalidRequest)
	if s, st := count("synthesize"), count("stream"); s != 2 || st != 1 {
		t.Errorf("logged %d synthesize and %d stream calls, want 2 and 1", s, st)
	}
	calls, err := calllog.Read(log)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range calls {
		if c.Seq != int64(i+1) {
			t.Errorf("call %d has seq %d", i, c.Seq)
		}
	}
}

func TestCloneThenSynthesize(t *testing.T) {
	p, _ := start(t, nil)
	resp, err := p.Clone(t.Context(), &sdk.CloneRequest{Model: testkit.ModelTest, Name: "bob",
		Samples: []sdk.Sample{{Filename: "bob.wav", MediaType: "audio/wav", Data: []byte("RIFF....")}}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.VoiceID != "clone-bob" {
		t.Fatalf("voice id %q, want clone-bob", resp.VoiceID)
	}
	voices, err := p.Voices(t.Context(), &sdk.VoicesRequest{Model: testkit.ModelTest})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(voices, func(v sdk.Voice) bool { return v.ID == "clone-bob" }) {
		t.Errorf("Voices %v lacks the clone", voices)
	}
	tests := []struct {
		voice string
		ok    bool
	}{{"clone-bob", true}, {"clone-alice", false}}
	for _, tt := range tests {
		_, err := p.Synthesize(t.Context(), &sdk.SynthesizeRequest{Model: testkit.ModelTest, Voice: tt.voice, Text: "hi"})
		if tt.ok && err != nil {
			t.Errorf("voice %s: %v", tt.voice, err)
		}
		if !tt.ok {
			wantKind(t, err, sdk.KindInvalidRequest)
		}
	}
	_, err = p.Clone(t.Context(), &sdk.CloneRequest{Model: testkit.ModelTest, Name: "empty"})
	wantKind(t, err, sdk.KindInvalidRequest)
}

func TestSettings(t *testing.T) {
	p, _ := start(t, map[string]string{"max_text_chars": "50"})
	d, err := p.Describe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range d.Models {
		if m.MaxTextChars != 50 {
			t.Errorf("model %s: MaxTextChars %d, want 50", m.ID, m.MaxTextChars)
		}
	}
	wantKind(t, p.Configure(t.Context(), map[string]string{"max_text_chars": "many"}), sdk.KindInvalidRequest)
	err = p.Configure(t.Context(), map[string]string{"fail_configure": "no licence"})
	var e *sdk.Error
	if !errors.As(err, &e) || e.Message != "no licence" {
		t.Errorf("fail_configure: got %v", err)
	}
}

func TestOptions(t *testing.T) {
	p, _ := start(t, nil)
	base := func(options string) *sdk.SynthesizeRequest {
		return &sdk.SynthesizeRequest{Model: testkit.ModelTest, Voice: "alpha", Text: "one two three", Options: []byte(options)}
	}
	plain, err := p.Synthesize(t.Context(), base(""))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("pad and warnings", func(t *testing.T) {
		resp, err := p.Synthesize(t.Context(), base(`{"pad_ms": 500, "warnings": ["w1"]}`))
		if err != nil {
			t.Fatal(err)
		}
		if extra := len(resp.Audio) - len(plain.Audio); extra != 16000 {
			t.Errorf("pad_ms 500 added %d bytes, want 16000", extra)
		}
		if !slices.Equal(resp.Warnings, []string{"w1"}) {
			t.Errorf("warnings %v", resp.Warnings)
		}
	})
	t.Run("slow stream", func(t *testing.T) {
		var chunks int
		var audio []byte
		err := p.Stream(t.Context(), base(`{"slow_stream_ms": 20}`), func(c sdk.Chunk) error {
			chunks++
			audio = append(audio, c.Data...)
			return nil
		})
		if err != nil || chunks != 3 || len(audio) != len(plain.Audio) {
			t.Errorf("got %d chunks, %d bytes, %v; want 3 chunks, %d bytes", chunks, len(audio), err, len(plain.Audio))
		}
	})
	t.Run("wav stream", func(t *testing.T) {
		req := base("")
		req.Format = sdk.FormatWAV
		var audio []byte
		var mediaType string
		err := p.Stream(t.Context(), req, func(c sdk.Chunk) error {
			if mediaType == "" {
				mediaType = c.MediaType
			}
			audio = append(audio, c.Data...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// The header announces the exact length (the wav decoder rejects
		// a header claiming more than the file holds).
		clip, err := sdktest.Decode(mediaType, audio)
		if err != nil || clip.Format != sdk.FormatWAV || clip.Frames*2 != len(plain.Audio) {
			t.Errorf("streamed WAV: %+v, %v", clip, err)
		}
	})
	t.Run("bad options", func(t *testing.T) {
		_, err := p.Synthesize(t.Context(), base(`{"hang": "yes"`))
		wantKind(t, err, sdk.KindInvalidRequest)
	})
	t.Run("basic has no stream", func(t *testing.T) {
		req := base("")
		req.Model = testkit.ModelBasic
		wantKind(t, p.Stream(t.Context(), req, func(sdk.Chunk) error { return nil }), sdk.KindUnsupported)
	})
}

func TestModerator(t *testing.T) {
	startModerator := func(t *testing.T) (sdk.Moderator, string) {
		m := sdktest.StartModerator(t, pluginPath, "VOXGATE_TESTPLUGIN_MODE=moderator")
		log := filepath.Join(t.TempDir(), "calls.jsonl")
		if err := m.Configure(t.Context(), map[string]string{"call_log": log}); err != nil {
			t.Fatal(err)
		}
		return m, log
	}
	m, log := startModerator(t)
	verdicts := []struct {
		text     string
		decision string
		category string
	}{
		{"hello there", sdk.DecisionAllow, ""},
		{"this is forbidden text", sdk.DecisionBlock, "test"},
	}
	for _, v := range verdicts {
		res, err := m.Moderate(t.Context(), &sdk.ModerationRequest{Text: v.text})
		if err != nil {
			t.Fatalf("%q: %v", v.text, err)
		}
		if res.Decision != v.decision || res.Category != v.category {
			t.Errorf("%q: got %+v, want %s/%s", v.text, res, v.decision, v.category)
		}
	}
	_, err := m.Moderate(t.Context(), &sdk.ModerationRequest{Text: "fail-moderation"})
	wantKind(t, err, sdk.KindUpstream)

	t.Run("hang", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		_, err := m.Moderate(ctx, &sdk.ModerationRequest{Text: "please hang-moderation"})
		wantKind(t, err, sdk.KindTimeout)
		// The plugin saw the deadline: it logs once its context ends.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			calls, err := calllog.Read(log)
			if err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(calls, func(c calllog.Call) bool { return c.Event == "canceled" }) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the moderator never saw its context end")
			}
		}
	})
	t.Run("crash", func(t *testing.T) {
		m, _ := startModerator(t)
		_, err := m.Moderate(t.Context(), &sdk.ModerationRequest{Text: "crash-moderation"})
		wantKind(t, err, sdk.KindUnavailable)
	})
	if n, err := calllog.Count(log, "moderate"); err != nil || n != 4 {
		t.Errorf("logged %d moderate calls (%v), want 4", n, err)
	}
}
