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
	fake "github.com/voxgate/voxgate/internal/fakeupstream/openai"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// pluginPath is the plugin binary, built once by TestMain.
var pluginPath string

func TestMain(m *testing.M) { os.Exit(sdktest.MainWithPlugin(m, &pluginPath)) }

func kitConfig(srv *fake.Server, model string) sdktest.Config {
	return sdktest.Config{
		Settings:     map[string]string{"base_url": srv.BaseURL()},
		Model:        model,
		Credentials:  sdk.Credentials{APIKey: fake.Key},
		InvalidVoice: "no-such-voice",
		BadSettings:  map[string]string{"base_url": "api.openai.com", "max_attempts": "three", "timeout": "-1s"},
	}
}

// TestConformance runs the kit against the real plugin process talking to
// the fake over HTTP, as the gateway would see it.
func TestConformance(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	sdktest.Run(t, sdktest.StartPlugin(t, pluginPath), kitConfig(srv, ""))
}

// TestConformanceInProcess runs the kit in process for every model, so
// the race detector sees the plugin's code and tts-1's native speed is
// checked.
func TestConformanceInProcess(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	for _, m := range []string{"gpt-4o-mini-tts", "tts-1", "tts-1-hd"} {
		t.Run(m, func(t *testing.T) {
			sdktest.Run(t, New(), kitConfig(srv, m))
		})
	}
}

// configured returns a provider pointed at srv, with extra settings.
func configured(t *testing.T, srv *fake.Server, extra map[string]string) *Provider {
	return sdktest.Configure(t, New(), map[string]string{"base_url": srv.BaseURL()}, extra)
}

func request(key string) *sdk.SynthesizeRequest {
	return &sdk.SynthesizeRequest{Model: "gpt-4o-mini-tts", Voice: "alloy", Text: "Hello there.", Credentials: sdk.Credentials{APIKey: key}}
}

// TestUpstreamFailures holds the plugin to the error contract against the
// fake's injected failures: kinds, upstream status and code, retries.
func TestUpstreamFailures(t *testing.T) {
	const wrongKey = "sk-wrong-key-9876543210zyxw"
	sdktest.Failures[*fake.Server]{
		Fake:     func(t *testing.T) *fake.Server { return fake.New(t, fakeupstream.Options{}) },
		Provider: func(t *testing.T, srv *fake.Server, s map[string]string) sdk.Provider { return configured(t, srv, s) },
		Request:  request,
		Path:     fake.SpeechPath,
		Check: func(t *testing.T, e *sdk.Error) {
			if strings.Contains(e.Error(), "***") {
				t.Errorf("the error %q shows a masked API key", e.Error())
			}
		},
	}.Run(t, []sdktest.FailureCase[*fake.Server]{
		{Name: "wrong key", Key: wrongKey, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401, Code: "invalid_api_key"}, Calls: 1},
		{Name: "missing key", Key: "", Want: &sdktest.Answer{Kind: sdk.KindUnauthorized}, Calls: 0},
		{Name: "429 with Retry-After, then success", Key: fake.Key, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "0.05"}) }},
		{Name: "429 forever", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindRateLimited, Status: 429, Code: "rate_limit_exceeded", Retryable: true, RetryAfter: 20 * time.Millisecond}, Calls: 3,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 429, RetryAfter: "0.02"}) }},
		{Name: "quota exhausted is not retryable", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindUpstream, Status: 429, Code: "insufficient_quota"}, Calls: 3,
			Setup: func(s *fake.Server) {
				s.FailAlways(fakeupstream.Fault{Status: 429, Code: "insufficient_quota", Message: "You exceeded your current quota.", RetryAfter: "0.01"})
			}},
		{Name: "500 retried", Key: fake.Key, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 500}) }},
		{Name: "503 forever", Key: fake.Key, Settings: map[string]string{"max_attempts": "3"}, Want: &sdktest.Answer{Kind: sdk.KindUnavailable, Status: 503, Code: "server_error", Retryable: true, RetryAfter: 10 * time.Millisecond}, Calls: 3,
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

// TestKeyNeverInErrorsThroughPlugin checks the 401 message as the gateway
// sees it, across the process boundary.
func TestKeyNeverInErrorsThroughPlugin(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := sdktest.StartPlugin(t, pluginPath)
	if err := p.Configure(t.Context(), map[string]string{"base_url": srv.BaseURL()}); err != nil {
		t.Fatal(err)
	}
	const wrongKey = "sk-proj-abcdefgh0123456789"
	for _, stream := range []bool{false, true} {
		var err error
		if stream {
			err = p.Stream(t.Context(), request(wrongKey), func(sdk.Chunk) error { return nil })
		} else {
			_, err = p.Synthesize(t.Context(), request(wrongKey))
		}
		e := sdktest.AsError(t, err)
		if e.Kind != sdk.KindUnauthorized || e.UpstreamStatus != 401 || e.UpstreamCode != "invalid_api_key" {
			t.Errorf("stream=%v: got %+v", stream, e)
		}
		if strings.Contains(e.Message, "abcdefgh") || strings.Contains(e.Message, "6789") {
			t.Errorf("stream=%v: message %q shows the key", stream, e.Message)
		}
	}
}

func TestRequestOnTheWire(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, map[string]string{"organization": "org-123", "project": "proj_9"})
	req := request(fake.Key)
	req.Options = []byte(`{"instructions": "Speak calmly."}`)
	req.Format = sdk.FormatMP3
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
	if got.Header.Get("OpenAI-Organization") != "org-123" || got.Header.Get("OpenAI-Project") != "proj_9" {
		t.Errorf("organization/project headers: %v", got.Header)
	}
	var body map[string]any
	if err := json.Unmarshal(got.Body, &body); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"model": "gpt-4o-mini-tts", "input": "Hello there.", "voice": "alloy", "instructions": "Speak calmly.", "response_format": "mp3"}
	if fmt.Sprint(body) != fmt.Sprint(want) {
		t.Errorf("body %v, want %v", body, want)
	}

	req = request(fake.Key)
	req.Model, req.Speed = "tts-1", 1.5
	if _, err := p.Synthesize(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	got, _ = srv.LastRequest()
	if err := json.Unmarshal(got.Body, &body); err != nil || body["speed"] != 1.5 {
		t.Errorf("tts-1 body %s: want speed 1.5", got.Body)
	}
}

// TestInvalidRequests: mistakes of the caller are caught before any
// upstream call.
func TestInvalidRequests(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*sdk.SynthesizeRequest)
		kind   sdk.ErrorKind
	}{
		{"unknown option", func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"temperature": 1}`) }, sdk.KindInvalidRequest},
		{"options not an object", func(r *sdk.SynthesizeRequest) { r.Options = []byte(`[1]`) }, sdk.KindInvalidRequest},
		{"instructions on tts-1", func(r *sdk.SynthesizeRequest) {
			r.Model, r.Options = "tts-1", []byte(`{"instructions": "Whisper."}`)
		}, sdk.KindInvalidRequest},
		{"speed on gpt-4o-mini-tts", func(r *sdk.SynthesizeRequest) { r.Speed = 2 }, sdk.KindInvalidRequest},
		{"speed out of range", func(r *sdk.SynthesizeRequest) { r.Model, r.Speed = "tts-1", 5 }, sdk.KindInvalidRequest},
		{"not a model id", func(r *sdk.SynthesizeRequest) { r.Model = "TTS 2" }, sdk.KindInvalidRequest},
		{"no voice", func(r *sdk.SynthesizeRequest) { r.Voice = "" }, sdk.KindInvalidRequest},
		{"sample rate", func(r *sdk.SynthesizeRequest) { r.SampleRate = 16000 }, sdk.KindInvalidRequest},
		{"format", func(r *sdk.SynthesizeRequest) { r.Format = "ulaw" }, sdk.KindInvalidRequest},
		{"bitrate", func(r *sdk.SynthesizeRequest) { r.Format, r.Bitrate = sdk.FormatMP3, 128 }, sdk.KindInvalidRequest},
		{"opus rate", func(r *sdk.SynthesizeRequest) { r.Format, r.SampleRate = sdk.FormatOpus, 24000 }, sdk.KindInvalidRequest},
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

// TestPassThroughModel: through the plugin process, a model OpenAI has
// and the plugin does not list (a newer one) reaches OpenAI under the
// id the caller wrote; an id that cannot be OpenAI's is refused without
// a call.
func TestPassThroughModel(t *testing.T) {
	const newModel = "gpt-5-mini-tts-2027-01-01"
	srv := fake.New(t, fakeupstream.Options{NewModels: []string{newModel}})
	p := sdktest.StartPlugin(t, pluginPath)
	if err := p.Configure(t.Context(), map[string]string{"base_url": srv.BaseURL()}); err != nil {
		t.Fatal(err)
	}
	req := request(fake.Key)
	req.Model = newModel
	fakeupstream.CheckPassThrough(t, p, fakeupstream.PassThrough{
		Fake: srv.Control, Request: *req,
		SentModel: func(r fakeupstream.Request) string {
			var b struct{ Model string }
			_ = r.JSON(&b)
			return b.Model
		},
		Invalid: []string{"GPT-4o-mini-tts", "tts 1", "-tts", "tts-1/../x", "tts_1", "", strings.Repeat("a", 101)},
	})
}

func TestConfigureRejectsBadSettings(t *testing.T) {
	for _, s := range []map[string]string{
		{"base_url": "not a url"},
		{"timeout": "soon"},
		{"max_attempts": "0"},
	} {
		if err := New().Configure(t.Context(), s); err == nil {
			t.Errorf("Configure(%v) succeeded", s)
		}
	}
}

// TestStreamArrivesInPieces: with a slow upstream the plugin forwards
// each piece as it comes instead of collecting the body.
func TestStreamArrivesInPieces(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{ChunkSize: 2400, ChunkDelay: 5 * time.Millisecond})
	p := configured(t, srv, nil)
	var chunks int
	var total int
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
	if want := 2400; chunks < total/want {
		t.Errorf("%d bytes in %d chunks; the fake sent %d-byte pieces", total, chunks, want)
	}
}

// BenchmarkSynthesize measures the plugin's own cost per whole clip
// against the fake's fixed 3-second body (in process, so no gRPC).
func BenchmarkSynthesize(b *testing.B) {
	srv := fake.New(b, fakeupstream.Options{FixedSeconds: 3})
	p := New()
	if err := p.Configure(b.Context(), map[string]string{"base_url": srv.BaseURL()}); err != nil {
		b.Fatal(err)
	}
	req := request(fake.Key)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Synthesize(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStream measures forwarding a 3-second stream in 4 KiB pieces.
func BenchmarkStream(b *testing.B) {
	srv := fake.New(b, fakeupstream.Options{FixedSeconds: 3})
	p := New()
	if err := p.Configure(b.Context(), map[string]string{"base_url": srv.BaseURL()}); err != nil {
		b.Fatal(err)
	}
	req := request(fake.Key)
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Stream(b.Context(), req, func(sdk.Chunk) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEncodingsPassThrough asks, through the plugin process, for every
// encoding each model lists: each must reach OpenAI as exactly that
// response_format, and the plugin must hand back the fake's bytes
// untouched with the sdk's media type, clip and stream alike.
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
	for _, m := range desc.Models {
		if m.ID == sdk.AnyModel {
			continue // the ids the plugin passes through: TestPassThroughModel
		}
		if len(m.Encodings) == 0 {
			t.Fatalf("%s lists no encodings", m.ID)
		}
		for _, e := range m.Encodings {
			t.Run(m.ID+"/"+e.String(), func(t *testing.T) {
				req := request(fake.Key)
				req.Model, req.Voice = m.ID, "alloy"
				req.Format, req.SampleRate, req.Bitrate = e.Format, e.SampleRate, e.Bitrate
				resp, err := p.Synthesize(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				checkAsked(t, srv, e)
				if resp.MediaType != sdk.MediaType(e) {
					t.Errorf("media type %q, want %q", resp.MediaType, sdk.MediaType(e))
				}
				if clip, err := sdktest.Decode(resp.MediaType, resp.Audio); err != nil || clip.Format != e.Format {
					t.Errorf("the clip is %+v (%v), want %s", clip, err, e.Format)
				}
				if !bytes.Equal(resp.Audio, srv.LastAnswer()) {
					t.Errorf("the clip (%d bytes) is not what OpenAI answered (%d bytes)", len(resp.Audio), len(srv.LastAnswer()))
				}
				var streamed []byte
				var first string
				err = p.Stream(t.Context(), req, func(c sdk.Chunk) error {
					if first == "" {
						first = c.MediaType
					}
					streamed = append(streamed, c.Data...)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				checkAsked(t, srv, e)
				if first != sdk.MediaType(e) || !bytes.Equal(streamed, srv.LastAnswer()) {
					t.Errorf("stream: media type %q, %d bytes; want %q and the %d bytes OpenAI answered", first, len(streamed), sdk.MediaType(e), len(srv.LastAnswer()))
				}
			})
		}
	}
}

// checkAsked checks that the last speech request asked for e.
func checkAsked(t *testing.T, srv *fake.Server, e sdk.Encoding) {
	t.Helper()
	got, _ := srv.LastRequest()
	var body struct {
		ResponseFormat string `json:"response_format"`
	}
	if err := got.JSON(&body); err != nil {
		t.Fatal(err)
	}
	// OpenAI's response_format values are the sdk's format names.
	if body.ResponseFormat != e.Format {
		t.Errorf("asked OpenAI for response_format %q, want %q", body.ResponseFormat, e.Format)
	}
}
