package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// pluginPath is the plugin binary built once for this test binary by
// TestMain.
var pluginPath string

func TestMain(m *testing.M) { os.Exit(sdktest.MainWithPlugin(m, &pluginPath)) }

// start launches the built plugin as the gateway does and returns the
// host-side provider.
func start(t *testing.T) sdk.Provider {
	t.Helper()
	return sdktest.StartPlugin(t, pluginPath)
}

// TestPluginConformance runs the SDK's conformance kit over the real plugin
// process: go-plugin, gRPC and all.
func TestPluginConformance(t *testing.T) {
	sdktest.Run(t, start(t), sdktest.Config{
		Voice:        "en",
		InvalidVoice: "klingon",
		// The gateway always configures a plugin, even with no settings.
		Settings:    map[string]string{},
		BadSettings: map[string]string{"stream_stall_timeout": "2h"},
	})
}

func TestPluginDescribe(t *testing.T) {
	d, err := start(t).Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m := d.Models[0]
	if d.ID != "espeak" || d.DefaultModel != "espeak-ng" || m.NativeSampleRate != 22050 || m.MaxTextChars != 5000 ||
		m.Capabilities != (sdk.Capabilities{Streaming: true, Timestamps: true, Speed: true}) {
		t.Errorf("description = %+v", d)
	}
}

func TestPluginSynthesize(t *testing.T) {
	p := start(t)
	tests := []struct {
		voice, text, format, mediaType string
	}{
		{"de", "Grüße aus München! Wie geht's?", "wav", "audio/wav"},
		{"en-us", "Hello from the plugin process, with timestamps.", "pcm", "audio/pcm;rate=22050"},
		// No format named: WAV, a file any player opens.
		{"fr", "Très bien, merci.", "", "audio/wav"},
	}
	for _, tt := range tests {
		t.Run(tt.voice, func(t *testing.T) {
			resp, err := p.Synthesize(context.Background(), &sdk.SynthesizeRequest{
				Model: "espeak-ng", Voice: tt.voice, Text: tt.text, Format: tt.format, Timestamps: true,
			})
			if err != nil {
				t.Fatal(err)
			}
			if resp.MediaType != tt.mediaType {
				t.Errorf("media type %q, want %q", resp.MediaType, tt.mediaType)
			}
			clip, err := sdktest.Decode(resp.MediaType, resp.Audio)
			if err != nil {
				t.Fatal(err)
			}
			if clip.SampleRate != 22050 || clip.Channels != 1 || clip.Seconds() < 0.5 {
				t.Errorf("clip = %+v", clip)
			}
			if err := sdktest.ValidateTimestamps(resp.Timestamps, tt.text, clip.Seconds()); err != nil {
				t.Error(err)
			}
			if n := len(strings.Fields(tt.text)); len(resp.Timestamps) != n {
				t.Errorf("%d timestamps for %d words: %+v", len(resp.Timestamps), n, resp.Timestamps)
			}
		})
	}
}

func TestPluginErrors(t *testing.T) {
	p := start(t)
	ctx := context.Background()
	_, err := p.Synthesize(ctx, &sdk.SynthesizeRequest{Model: "espeak-ng", Voice: "klingon", Text: "Qapla'"})
	if e := sdk.AsError(err); e.Kind != sdk.KindInvalidRequest || !strings.Contains(e.Message, "klingon") {
		t.Errorf("unknown voice: error %v, want invalid_request naming the voice", err)
	}
	err = p.Stream(ctx, &sdk.SynthesizeRequest{Model: "espeak-ng", Voice: "en", Text: "hi", Format: "mp3"}, func(sdk.Chunk) error {
		return errors.New("no chunk was expected")
	})
	if sdk.AsError(err).Kind != sdk.KindInvalidRequest {
		t.Errorf("stream as mp3: error %v, want invalid_request", err)
	}
}

// TestPluginSameBytes checks, over the real plugin process, that one
// request renders to the same bytes every time, also after other voices
// and texts and while others render at the same time.
func TestPluginSameBytes(t *testing.T) {
	p := start(t)
	ctx := context.Background()
	req := &sdk.SynthesizeRequest{Model: "espeak-ng", Voice: "en", Text: "Hello there, my friend. How are you today? This is a test of the system."}
	first, err := p.Synthesize(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	others := []*sdk.SynthesizeRequest{
		{Model: "espeak-ng", Voice: "de", Text: "Grüße aus München, sagte sie."},
		{Model: "espeak-ng", Voice: "en", Text: "Of the system, again and again.", Speed: 1.5},
	}
	for round := range 3 {
		var wg sync.WaitGroup
		for _, o := range others {
			wg.Go(func() { _, _ = p.Synthesize(ctx, o) })
		}
		got, err := p.Synthesize(ctx, req)
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Audio, first.Audio) {
			t.Errorf("round %d: %d bytes, the first rendering had %d (or the same length, other bytes)", round, len(got.Audio), len(first.Audio))
		}
	}
}

func TestPluginStream(t *testing.T) {
	p := start(t)
	req := &sdk.SynthesizeRequest{Model: "espeak-ng", Voice: "en", Text: strings.Repeat("Streaming across the process boundary. ", 40)}
	var audio []byte
	var mediaType string
	chunks := 0
	err := p.Stream(context.Background(), req, func(c sdk.Chunk) error {
		if chunks == 0 {
			mediaType = c.MediaType
		}
		chunks++
		audio = append(audio, c.Data...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	clip, err := sdktest.Decode(mediaType, audio)
	if err != nil {
		t.Fatal(err)
	}
	if chunks < 100 || clip.Seconds() < 60 {
		t.Errorf("%d chunks, %.1f s of audio", chunks, clip.Seconds())
	}

	// The caller going away on the first chunk ends the stream early, and
	// the plugin serves the next call.
	ctx, cancel := context.WithCancel(context.Background())
	received := 0
	err = p.Stream(ctx, req, func(c sdk.Chunk) error {
		received += len(c.Data)
		cancel()
		return nil
	})
	if err == nil || received*4 > len(audio) {
		t.Errorf("cancelled stream: error %v after %d of %d bytes", err, received, len(audio))
	}
	resp, err := p.Synthesize(context.Background(), &sdk.SynthesizeRequest{Model: "espeak-ng", Voice: "en", Text: "Still here."})
	if err != nil || len(resp.Audio) == 0 {
		t.Errorf("after a cancelled stream: %d bytes, error %v", len(resp.Audio), err)
	}
}
