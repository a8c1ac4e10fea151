package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	fake "github.com/voxgate/voxgate/internal/fakeupstream/xai"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// pluginPath is the plugin binary, built once by TestMain.
var pluginPath string

func TestMain(m *testing.M) { os.Exit(sdktest.MainWithPlugin(m, &pluginPath)) }

func kitConfig(srv *fake.Server) sdktest.Config {
	return sdktest.Config{
		Settings:     map[string]string{"base_url": srv.BaseURL()},
		Voice:        fake.VoiceEve,
		Credentials:  sdk.Credentials{APIKey: fake.Key},
		InvalidVoice: "no-such-voice",
	}
}

// TestConformance runs the kit against the real plugin process talking to
// the fake over HTTP, as the gateway would see it.
func TestConformance(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	sdktest.Run(t, sdktest.StartPlugin(t, pluginPath), kitConfig(srv))
}

// TestConformanceInProcess runs the kit in process, so the race detector
// sees the plugin's code.
func TestConformanceInProcess(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	sdktest.Run(t, New(), kitConfig(srv))
}

func configured(t *testing.T, srv *fake.Server, extra map[string]string) *Provider {
	return sdktest.Configure(t, New(), map[string]string{"base_url": srv.BaseURL()}, extra)
}

func request(key string) *sdk.SynthesizeRequest {
	return &sdk.SynthesizeRequest{Model: modelID, Voice: fake.VoiceAra, Text: "Hello there.", Credentials: sdk.Credentials{APIKey: key}}
}

// TestUpstreamFailures holds the plugin to the error contract against the
// fake's injected failures: kinds, upstream status and code, retries.
func TestUpstreamFailures(t *testing.T) {
	const wrongKey = "xai-wrong-key-9876543210zyxw"
	sdktest.Failures[*fake.Server]{
		Fake:     func(t *testing.T) *fake.Server { return fake.New(t, fakeupstream.Options{}) },
		Provider: func(t *testing.T, srv *fake.Server, s map[string]string) sdk.Provider { return configured(t, srv, s) },
		Request:  request,
		Path:     fake.TTSPath,
		Check: func(t *testing.T, e *sdk.Error) {
			if strings.Contains(e.Error(), "***") {
				t.Errorf("the error %q shows a masked API key", e.Error())
			}
		},
	}.Run(t, []sdktest.FailureCase[*fake.Server]{
		{Name: "wrong key (400)", Key: wrongKey, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 400, Code: "Client specified an invalid argument"}, Calls: 1},
		{Name: "missing key", Key: "", Want: &sdktest.Answer{Kind: sdk.KindUnauthorized}, Calls: 0},
		{Name: "401", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401, Code: "Unauthenticated"}, Calls: 1,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 401}) }},
		{Name: "429 with Retry-After, then success", Key: fake.Key, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "0.05"}) }},
		{Name: "429 forever", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindRateLimited, Status: 429, Code: "Too many requests", Retryable: true, RetryAfter: 20 * time.Millisecond}, Calls: 3,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 429, RetryAfter: "0.02"}) }},
		{Name: "500 retried", Key: fake.Key, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 500}) }},
		{Name: "503 forever", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindUnavailable, Status: 503, Code: "Service unavailable", Retryable: true, RetryAfter: 10 * time.Millisecond}, Calls: 3,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 503, RetryAfter: "0.01"}) }},
		{Name: "caller deadline", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindTimeout, Retryable: true}, Calls: 1,
			Setup: func(s *fake.Server) { s.SetLatency(time.Minute) },
			Context: func(ctx context.Context) (context.Context, context.CancelFunc) {
				return context.WithTimeout(ctx, 200*time.Millisecond)
			}},
		{Name: "timeout setting", Key: fake.Key, Settings: map[string]string{"timeout": "200ms", "max_attempts": "1"}, Want: &sdktest.Answer{Kind: sdk.KindTimeout, Retryable: true}, Calls: 1,
			Setup: func(s *fake.Server) { s.SetLatency(time.Minute) }},
	})
}

func TestParseError(t *testing.T) {
	tests := []struct{ body, code, msg string }{
		{`{"code":"Client specified an invalid argument","error":"text is required"}`, "Client specified an invalid argument", "text is required"},
		{`{"error":{"message":"Rate limit","type":"rate_limit","code":"rate_limit_exceeded"}}`, "rate_limit_exceeded", "Rate limit"},
		{`not json`, "", ""},
	}
	for _, tt := range tests {
		if code, msg := parseError([]byte(tt.body)); code != tt.code || msg != tt.msg {
			t.Errorf("parseError(%s) = %q, %q", tt.body, code, msg)
		}
	}
}

func TestRequestOnTheWire(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	req := request(fake.Key)
	req.Options = []byte(`{"language": "pt-BR", "text_normalization": true}`)
	req.Format, req.SampleRate, req.Bitrate = sdk.FormatMP3, 44100, 64
	resp, err := p.Synthesize(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.MediaType != "audio/mpeg" {
		t.Errorf("media type %q", resp.MediaType)
	}
	got, _ := srv.LastRequest()
	if h := got.Header.Get("Authorization"); h != "Bearer "+fake.Key {
		t.Errorf("Authorization %q", h)
	}
	var body map[string]any
	if err := json.Unmarshal(got.Body, &body); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"text": "Hello there.", "voice_id": "ara", "language": "pt-BR", "text_normalization": true,
		"output_format": map[string]any{"codec": "mp3", "sample_rate": 44100.0, "bit_rate": 64000.0}}
	if fmt.Sprint(body) != fmt.Sprint(want) {
		t.Errorf("body %v, want %v", body, want)
	}
	// Without a language option the plugin sends auto: the API requires one.
	if _, err := p.Synthesize(t.Context(), request(fake.Key)); err != nil {
		t.Fatal(err)
	}
	got, _ = srv.LastRequest()
	if !strings.Contains(string(got.Body), `"language":"auto"`) || !strings.Contains(string(got.Body), `"codec":"pcm","sample_rate":24000`) {
		t.Errorf("default body %s", got.Body)
	}
}

func TestInvalidRequests(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*sdk.SynthesizeRequest)
		kind   sdk.ErrorKind
	}{
		{"unknown option", func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"speed": 1.2}`) }, sdk.KindInvalidRequest},
		{"bit rate option", func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"bit_rate": 64000}`) }, sdk.KindInvalidRequest},
		{"bit rate on pcm", func(r *sdk.SynthesizeRequest) { r.Bitrate = 64 }, sdk.KindInvalidRequest},
		{"mp3 pair MP3 cannot carry", func(r *sdk.SynthesizeRequest) { r.Format, r.SampleRate, r.Bitrate = sdk.FormatMP3, 24000, 192 }, sdk.KindInvalidRequest},
		{"ulaw at 16 kHz", func(r *sdk.SynthesizeRequest) { r.Format, r.SampleRate = sdk.FormatULaw, 16000 }, sdk.KindInvalidRequest},
		{"unknown model", func(r *sdk.SynthesizeRequest) { r.Model = "grok-4" }, sdk.KindInvalidRequest},
		{"no voice", func(r *sdk.SynthesizeRequest) { r.Voice = "" }, sdk.KindInvalidRequest},
		{"sample rate", func(r *sdk.SynthesizeRequest) { r.SampleRate = 11025 }, sdk.KindInvalidRequest},
		{"format", func(r *sdk.SynthesizeRequest) { r.Format = "opus" }, sdk.KindInvalidRequest},
		{"timestamps", func(r *sdk.SynthesizeRequest) { r.Timestamps = true }, sdk.KindUnsupported},
	}
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request(fake.Key)
			tt.modify(req)
			_, err := p.Synthesize(t.Context(), req)
			if e := sdktest.AsError(t, err); e.Kind != tt.kind {
				t.Errorf("got %v, want kind %s", e, tt.kind)
			}
		})
	}
	if n := srv.Calls(); n != 0 {
		t.Errorf("%d upstream calls for invalid requests", n)
	}
}

func TestStreamArrivesInPieces(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{ChunkSize: 2400, ChunkDelay: 5 * time.Millisecond})
	p := configured(t, srv, nil)
	chunks, total := 0, 0
	err := p.Stream(t.Context(), request(fake.Key), func(c sdk.Chunk) error {
		if chunks == 0 && c.MediaType != "audio/pcm;rate=24000" {
			t.Errorf("first chunk media type %q", c.MediaType)
		}
		if len(c.Data)%2 != 0 {
			t.Errorf("chunk of %d bytes splits a sample", len(c.Data))
		}
		chunks++
		total += len(c.Data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if chunks < total/2400 {
		t.Errorf("%d bytes in %d chunks", total, chunks)
	}
}

func TestVoices(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	voices, err := p.Voices(t.Context(), &sdk.VoicesRequest{Credentials: sdk.Credentials{APIKey: fake.Key}})
	if err != nil {
		t.Fatal(err)
	}
	if len(voices) != 5 || voices[0].ID != "eve" || voices[0].Name != "Eve" {
		t.Errorf("voices %+v", voices)
	}
	if _, err := p.Clone(t.Context(), &sdk.CloneRequest{}); sdktest.AsError(t, err).Kind != sdk.KindUnsupported {
		t.Errorf("clone: %v", err)
	}
}

func TestConfigureRejectsBadSettings(t *testing.T) {
	for _, s := range []map[string]string{{"base_url": "not a url"}, {"timeout": "soon"}, {"max_attempts": "0"}} {
		if err := New().Configure(t.Context(), s); err == nil {
			t.Errorf("Configure(%v) succeeded", s)
		}
	}
}

// TestEncodingsPassThrough asks, through the plugin process, for every
// encoding the model lists: each must reach xAI as exactly that
// output_format (codec, sample_rate, bit_rate in bit/s), and the clip and
// the stream must be xAI's bytes untouched, with the sdk's media type.
func TestEncodingsPassThrough(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{ChunkSize: 1000})
	p := sdktest.StartPlugin(t, pluginPath)
	if err := p.Configure(t.Context(), map[string]string{"base_url": srv.BaseURL()}); err != nil {
		t.Fatal(err)
	}
	desc, err := p.Describe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	codec := map[string]string{"pcm": "pcm", "wav": "wav", "mp3": "mp3", "ulaw": "mulaw", "alaw": "alaw"}
	for _, e := range desc.Models[0].Encodings {
		t.Run(e.String(), func(t *testing.T) {
			req := request(fake.Key)
			req.Format, req.SampleRate, req.Bitrate = e.Format, e.SampleRate, e.Bitrate
			check := func(what string) {
				t.Helper()
				got, _ := srv.LastRequest()
				var body struct {
					OutputFormat map[string]any `json:"output_format"`
				}
				if err := got.JSON(&body); err != nil {
					t.Fatal(err)
				}
				want := map[string]any{"codec": codec[e.Format], "sample_rate": float64(e.SampleRate)}
				if e.Bitrate > 0 {
					want["bit_rate"] = float64(e.Bitrate * 1000)
				}
				if fmt.Sprint(body.OutputFormat) != fmt.Sprint(want) {
					t.Errorf("%s: output_format %v, want %v", what, body.OutputFormat, want)
				}
			}
			resp, err := p.Synthesize(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			check("clip")
			if clip, err := sdktest.Decode(resp.MediaType, resp.Audio); err != nil || clip.Format != e.Format || clip.SampleRate != e.SampleRate || resp.MediaType != sdk.MediaType(e) {
				t.Errorf("the clip is %q, %+v (%v); want %s", resp.MediaType, clip, err, e)
			}
			if !bytes.Equal(resp.Audio, srv.LastAnswer()) {
				t.Errorf("the clip (%d bytes) is not what xAI answered (%d bytes)", len(resp.Audio), len(srv.LastAnswer()))
			}
			var streamed []byte
			if err := p.Stream(t.Context(), req, func(c sdk.Chunk) error { streamed = append(streamed, c.Data...); return nil }); err != nil {
				t.Fatal(err)
			}
			check("stream")
			if !bytes.Equal(streamed, srv.LastAnswer()) {
				t.Errorf("the stream (%d bytes) is not what xAI answered (%d bytes)", len(streamed), len(srv.LastAnswer()))
			}
		})
	}
}
