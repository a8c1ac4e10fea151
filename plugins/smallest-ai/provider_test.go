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
	fake "github.com/voxgate/voxgate/internal/fakeupstream/smallestai"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
	"github.com/voxgate/voxgate/sdk/upstream"
)

// pluginPath is the plugin binary, built once by TestMain.
var pluginPath string

func TestMain(m *testing.M) { os.Exit(sdktest.MainWithPlugin(m, &pluginPath)) }

func kitConfig(srv *fake.Server, model string) sdktest.Config {
	return sdktest.Config{
		Settings:     map[string]string{"base_url": srv.BaseURL()},
		Model:        model,
		Voice:        fake.VoiceMagnus,
		Credentials:  sdk.Credentials{APIKey: fake.Key},
		InvalidVoice: "no-such-voice",
	}
}

// TestConformance runs the kit against the real plugin process talking to
// the fake over HTTP, as the gateway would see it.
func TestConformance(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	sdktest.Run(t, sdktest.StartPlugin(t, pluginPath), kitConfig(srv, ""))
}

// TestConformanceInProcess runs the kit in process for every model, so
// the race detector sees the plugin's code.
func TestConformanceInProcess(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	for _, m := range []string{"lightning_v3.1", "lightning_v3.1_pro"} {
		t.Run(m, func(t *testing.T) { sdktest.Run(t, New(), kitConfig(srv, m)) })
	}
}

// configured returns a provider pointed at srv, with extra settings.
func configured(t *testing.T, srv *fake.Server, extra map[string]string) *Provider {
	return sdktest.Configure(t, New(), map[string]string{"base_url": srv.BaseURL()}, extra)
}

func request(key string) *sdk.SynthesizeRequest {
	return &sdk.SynthesizeRequest{Model: "lightning_v3.1", Voice: fake.VoiceMagnus, Text: "Hello there.", Credentials: sdk.Credentials{APIKey: key}}
}

// TestUpstreamFailures holds the plugin to the error contract against the
// fake's injected failures: kinds, upstream status and code, retries.
func TestUpstreamFailures(t *testing.T) {
	const wrongKey = "sk_wrong_key_9876543210zyxw"
	sdktest.Failures[*fake.Server]{
		Fake:     func(t *testing.T) *fake.Server { return fake.New(t, fakeupstream.Options{}) },
		Provider: func(t *testing.T, srv *fake.Server, s map[string]string) sdk.Provider { return configured(t, srv, s) },
		Request:  request,
		Path:     fake.TTSPath,
	}.Run(t, []sdktest.FailureCase[*fake.Server]{
		{Name: "wrong key", Key: wrongKey, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401, Code: "Unauthorized"}, Calls: 1},
		{Name: "missing key", Key: "", Want: &sdktest.Answer{Kind: sdk.KindUnauthorized}, Calls: 0},
		{Name: "429 with Retry-After, then success", Key: fake.Key, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "0.05"}) }},
		{Name: "429 forever", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindRateLimited, Status: 429, Code: "TooManyRequests", Retryable: true, RetryAfter: 20 * time.Millisecond}, Calls: 3,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 429, RetryAfter: "0.02"}) }},
		{Name: "retired model route", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindInvalidRequest, Status: 410, Code: "MODEL_DEPRECATED"}, Calls: 1,
			Setup: func(s *fake.Server) {
				s.FailAlways(fakeupstream.Fault{Status: 410, Code: "MODEL_DEPRECATED", Message: "This model is retired."})
			}},
		{Name: "500 retried", Key: fake.Key, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 500}) }},
		{Name: "503 forever", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindUnavailable, Status: 503, Code: "ServiceUnavailable", Retryable: true, RetryAfter: 10 * time.Millisecond}, Calls: 3,
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

// TestParseError reads each documented error body shape.
func TestParseError(t *testing.T) {
	tests := []struct{ body, code, msg string }{
		{`{"error":"InvalidRequest","message":"The 'text' field is required."}`, "InvalidRequest", "The 'text' field is required."},
		{`{"error":"clone limit exceeded, consider upgrading"}`, "", "clone limit exceeded, consider upgrading"},
		{`{"error":"Voice clone timed out","error_code":"voice_clone_timeout"}`, "voice_clone_timeout", "Voice clone timed out"},
		{`{"status":"error","error_code":"MODEL_DEPRECATED","message":"This model is retired."}`, "MODEL_DEPRECATED", "This model is retired."},
		{`<html>bad gateway</html>`, "", ""},
	}
	for _, tt := range tests {
		code, msg := parseError([]byte(tt.body))
		if code != tt.code || msg != tt.msg {
			t.Errorf("parseError(%s) = %q, %q; want %q, %q", tt.body, code, msg, tt.code, tt.msg)
		}
	}
}

// TestExplain maps planned answers' failures as Synthesize would, key
// redacted.
func TestExplain(t *testing.T) {
	p := New()
	const key = "sk_live_abcdefgh12345678"
	err := p.Explain(t.Context(), &sdk.Failure{Status: 429, Header: map[string]string{"Retry-After": "3"},
		Body: []byte(`{"error":"TooManyRequests","message":"Concurrency limit reached for ` + key + `"}`), Credentials: sdk.Credentials{APIKey: key}})
	e := sdktest.AsError(t, err)
	if e.Kind != sdk.KindRateLimited || e.RetryAfter != 3*time.Second || e.UpstreamCode != "TooManyRequests" || strings.Contains(e.Message, "abcdefgh") {
		t.Errorf("got %+v", e)
	}
}

func TestRequestOnTheWire(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	req := request(fake.Key)
	req.Options = []byte(`{"language": "en", "math_notation": true, "request_id": "r-1"}`)
	req.Format, req.SampleRate, req.Speed = sdk.FormatMP3, 24000, 1.5
	resp, err := p.Synthesize(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.MediaType != "audio/mpeg" {
		t.Errorf("media type %q", resp.MediaType)
	}
	got, _ := srv.LastRequest()
	if got.Header.Get("Authorization") != "Bearer "+fake.Key || got.Header.Get("Accept") != "audio/wav" {
		t.Errorf("headers %v", got.Header)
	}
	var body map[string]any
	if err := json.Unmarshal(got.Body, &body); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"text": "Hello there.", "voice_id": "magnus", "model": "lightning_v3.1", "sample_rate": 24000.0, "speed": 1.5,
		"output_format": "mp3", "language": "en", "math_notation": true, "request_id": "r-1"}
	if fmt.Sprint(body) != fmt.Sprint(want) {
		t.Errorf("body %v, want %v", body, want)
	}

	// The plan carries the same request.
	plan, err := p.Plan(t.Context(), &sdk.PlanRequest{Request: &sdk.SynthesizeRequest{Model: "lightning_v3.1_pro", Voice: fake.VoiceMeher, Text: sdk.PlanText, Credentials: sdk.Credentials{APIKey: fake.Key}}})
	if err != nil {
		t.Fatal(err)
	}
	if plan.URL != srv.BaseURL()+"/tts" || plan.Header["Accept"] != "audio/wav" || plan.MediaType != "audio/pcm;rate=44100" || plan.FrameSize != 2 {
		t.Errorf("plan %+v", plan)
	}
	if _, err := p.Plan(t.Context(), &sdk.PlanRequest{Stream: true, Request: &sdk.SynthesizeRequest{Model: "lightning_v3.1", Voice: "magnus", Text: sdk.PlanText, Credentials: sdk.Credentials{APIKey: fake.Key}}}); sdktest.AsError(t, err).Kind != sdk.KindUnsupported {
		t.Errorf("a stream plan: %v", err)
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
		{"speed out of range", func(r *sdk.SynthesizeRequest) { r.Speed = 3 }, sdk.KindInvalidRequest},
		{"retired model", func(r *sdk.SynthesizeRequest) { r.Model = "lightning-large" }, sdk.KindInvalidRequest},
		{"no voice", func(r *sdk.SynthesizeRequest) { r.Voice = "" }, sdk.KindInvalidRequest},
		{"sample rate", func(r *sdk.SynthesizeRequest) { r.SampleRate = 22050 }, sdk.KindInvalidRequest},
		{"format", func(r *sdk.SynthesizeRequest) { r.Format = "ulaw" }, sdk.KindInvalidRequest},
		{"mp3 at 8 kHz", func(r *sdk.SynthesizeRequest) { r.Format, r.SampleRate = sdk.FormatMP3, 8000 }, sdk.KindInvalidRequest},
		{"mp3 bitrate", func(r *sdk.SynthesizeRequest) { r.Format, r.Bitrate = sdk.FormatMP3, 128 }, sdk.KindInvalidRequest},
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

// TestEncodings asks Synthesize, Stream and Plan for every encoding the
// models list: each reaches Smallest AI as exactly that output_format and
// sample_rate (a stream's wav as pcm, /tts/live framing wav per event),
// and the audio comes back as the fake sent it, byte for byte (a streamed
// wav behind the header the plugin adds), with the sdk's media type.
func TestEncodings(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	sent := func(t *testing.T, body []byte) string {
		t.Helper()
		var b struct {
			OutputFormat string `json:"output_format"`
			SampleRate   int    `json:"sample_rate"`
		}
		if err := json.Unmarshal(body, &b); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%s %d", b.OutputFormat, b.SampleRate)
	}
	d, err := p.Describe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range d.Models[0].Encodings {
		t.Run(e.String(), func(t *testing.T) {
			want := fmt.Sprintf("%s %d", e.Format, e.SampleRate)
			req := request(fake.Key)
			req.Format, req.SampleRate = e.Format, e.SampleRate
			resp, err := p.Synthesize(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := srv.LastRequest()
			if f := sent(t, got.Body); f != want || got.Path != fake.TTSPath {
				t.Errorf("clip: %s asked %s, want %s", got.Path, f, want)
			}
			if !bytes.Equal(resp.Audio, srv.LastAnswer()) || resp.MediaType != sdk.MediaType(e) {
				t.Errorf("clip: %d bytes of %q; the fake sent %d, want %q", len(resp.Audio), resp.MediaType, len(srv.LastAnswer()), sdk.MediaType(e))
			}
			var streamed []byte
			var mediaType string
			err = p.Stream(t.Context(), req, func(c sdk.Chunk) error {
				mediaType += c.MediaType
				streamed = append(streamed, c.Data...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			asked, answer := e.Format, srv.LastAnswer()
			if e.Format == sdk.FormatWAV {
				asked, answer = sdk.FormatPCM, append(upstream.WAVHeader(e.SampleRate, upstream.StreamingWAV), answer...)
			}
			got, _ = srv.LastRequest()
			if f := sent(t, got.Body); f != fmt.Sprintf("%s %d", asked, e.SampleRate) || got.Path != fake.LivePath {
				t.Errorf("stream: %s asked %s", got.Path, f)
			}
			if !bytes.Equal(streamed, answer) || mediaType != sdk.MediaType(e) {
				t.Errorf("stream: %d bytes of %q, want %d", len(streamed), mediaType, len(answer))
			}
			r := *req
			r.Text = sdk.PlanText
			pl, err := p.Plan(t.Context(), &sdk.PlanRequest{Request: &r})
			if err != nil {
				t.Fatal(err)
			}
			if f := sent(t, pl.Body); f != want || pl.MediaType != sdk.MediaType(e) {
				t.Errorf("plan: asks %s of %q", f, pl.MediaType)
			}
		})
	}
}

// TestStream: the events' audio is forwarded as it arrives, PCM in whole
// samples, a WAV stream opened with a header, MP3 as it comes.
func TestStream(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{ChunkSize: 2400, ChunkDelay: 2 * time.Millisecond})
	p := configured(t, srv, nil)
	for _, format := range []string{sdk.FormatPCM, sdk.FormatWAV, sdk.FormatMP3} {
		t.Run(format, func(t *testing.T) {
			req := request(fake.Key)
			req.Format, req.SampleRate = format, 24000
			req.Text = "A longer sentence so that the stream has several events in it."
			var chunks [][]byte
			mediaType := ""
			err := p.Stream(t.Context(), req, func(c sdk.Chunk) error {
				if len(chunks) == 0 {
					mediaType = c.MediaType
				} else if c.MediaType != "" {
					t.Errorf("chunk %d carries a media type", len(chunks))
				}
				if format == sdk.FormatPCM && len(c.Data)%2 != 0 {
					t.Errorf("a chunk of %d bytes splits a sample", len(c.Data))
				}
				chunks = append(chunks, c.Data)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(chunks) < 3 {
				t.Errorf("%d chunks", len(chunks))
			}
			var all []byte
			for _, c := range chunks {
				all = append(all, c...)
			}
			if _, err := sdktest.Decode(mediaType, all); err != nil {
				t.Errorf("the stream (%s) does not decode: %v", mediaType, err)
			}
			last, _ := srv.LastRequest()
			if last.Path != fake.LivePath || (format == sdk.FormatWAV && !strings.Contains(string(last.Body), `"output_format":"pcm"`)) {
				t.Errorf("request %s %s", last.Path, last.Body)
			}
		})
	}
}

// TestStreamCutShort: a stream without its closing event is an error, not
// a short clip.
func TestStreamCutShort(t *testing.T) {
	var got []byte
	err := readEvents(t.Context(), strings.NewReader("event: audio\ndata: {\"audio\":\"AAAA\",\"done\":false,\"status\":\"206\"}\n\n"), func(b []byte) error {
		got = append(got, b...)
		return nil
	})
	if e := sdktest.AsError(t, err); e.Kind != sdk.KindUnavailable || len(got) != 3 {
		t.Errorf("got %v after %d bytes", e, len(got))
	}
	err = readEvents(t.Context(), strings.NewReader("data: {\"status\":\"500\",\"error\":\"InternalServerError\",\"message\":\"boom\"}\n\n"), func([]byte) error { return nil })
	if e := sdktest.AsError(t, err); e.Kind != sdk.KindUpstream || e.UpstreamStatus != 500 || e.UpstreamCode != "InternalServerError" {
		t.Errorf("error event: %+v", e)
	}
}

func TestVoicesAndClone(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	creds := sdk.Credentials{APIKey: fake.Key}
	clone, err := p.Clone(t.Context(), &sdk.CloneRequest{Model: "lightning_v3.1_pro", Name: "Mine", Description: "test",
		Options:     []byte(`{"language":"en","tags":"a, b"}`),
		Samples:     []sdk.Sample{{MediaType: "audio/pcm;rate=16000", Data: make([]byte, 32000)}},
		Credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	last, _ := srv.LastRequest()
	form, err := fakeupstream.ParseMultipart(last)
	if err != nil {
		t.Fatal(err)
	}
	if form.Value["model"][0] != "lightning-v3.1-pro" || form.Value["displayName"][0] != "Mine" || form.File["file"][0].Header.Get("Content-Type") != "audio/wav" {
		t.Errorf("clone form %v %v", form.Value, form.File["file"][0].Header)
	}
	voices, err := p.Voices(t.Context(), &sdk.VoicesRequest{Credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	if len(voices) != 4 || voices[0].ID != fake.VoiceMagnus || voices[0].Gender != "male" || voices[0].Language != "english" || voices[3].ID != clone.VoiceID {
		t.Errorf("voices %+v", voices)
	}
	if _, err := p.Clone(t.Context(), &sdk.CloneRequest{Model: "lightning_v3.1", Samples: []sdk.Sample{{MediaType: "audio/wav", Data: make([]byte, 6<<20)}}, Credentials: creds}); sdktest.AsError(t, err).Kind != sdk.KindInvalidRequest {
		t.Errorf("a 6 MB sample: %v", err)
	}
}

func TestConfigureRejectsBadSettings(t *testing.T) {
	for _, s := range []map[string]string{{"base_url": "not a url"}, {"timeout": "soon"}, {"max_attempts": "0"}} {
		if err := New().Configure(t.Context(), s); err == nil {
			t.Errorf("Configure(%v) succeeded", s)
		}
	}
}
