package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
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

// prefix is where the fake mounts the API: not OpenAI's /v1, as a
// self-hosted server would.
const prefix = "/kokoro/api/v1"

// settings declare a deployment of two of the fake's models.
func settings(srv *fake.Server, extra ...string) map[string]string {
	s := map[string]string{
		"base_url":               srv.BaseURL(),
		"name":                   "Kokoro",
		"models":                 "tts-1, gpt-4o-mini-tts",
		"voices":                 "alloy, echo",
		"voices.gpt-4o-mini-tts": "nova, ballad",
		"formats":                "wav, pcm, mp3, opus, aac, flac",
		"key_required":           "true",
		"max_text_chars":         "4096",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		s[extra[i]] = extra[i+1]
	}
	return s
}

func kitConfig(s map[string]string, model string) sdktest.Config {
	return sdktest.Config{Settings: s, Model: model, Credentials: sdk.Credentials{APIKey: fake.Key}, InvalidVoice: "no-such-voice"}
}

// TestConformance runs the kit against the real plugin process talking to
// the fake over HTTP, as the gateway would see it.
func TestConformance(t *testing.T) {
	srv := fake.NewAt(t, fakeupstream.Options{}, prefix)
	sdktest.Run(t, sdktest.StartPlugin(t, pluginPath), kitConfig(settings(srv), ""))
}

// TestConformanceInProcess runs the kit in process: tts-1 with native
// speed declared, gpt-4o-mini-tts (which ignores speed) without.
func TestConformanceInProcess(t *testing.T) {
	srv := fake.NewAt(t, fakeupstream.Options{}, prefix)
	t.Run("tts-1", func(t *testing.T) { sdktest.Run(t, New(), kitConfig(settings(srv, "speed", "0.25-4"), "tts-1")) })
	t.Run("gpt-4o-mini-tts", func(t *testing.T) { sdktest.Run(t, New(), kitConfig(settings(srv), "gpt-4o-mini-tts")) })
}

func configured(t *testing.T, s map[string]string) *Provider {
	return sdktest.Configure(t, New(), s)
}

func request(key string) *sdk.SynthesizeRequest {
	return &sdk.SynthesizeRequest{Model: "tts-1", Voice: "alloy", Text: "Hello there.", Credentials: sdk.Credentials{APIKey: key}}
}

func TestDescribe(t *testing.T) {
	srv := fake.NewAt(t, fakeupstream.Options{}, prefix)
	p := configured(t, settings(srv, "id", "kokoro", "default_model", "gpt-4o-mini-tts", "speed", "0.5-2", "streaming", "false", "sample_rate", "22050"))
	d, err := p.Describe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != "kokoro" || d.Name != "Kokoro" || d.DefaultModel != "gpt-4o-mini-tts" || len(d.Models) != 3 || d.Models[2].ID != sdk.AnyModel {
		t.Fatalf("description %+v", d)
	}
	m := d.Models[0]
	if m.ID != "tts-1" || m.Capabilities.Streaming || !m.Capabilities.Speed || m.MinSpeed != 0.5 || m.MaxSpeed != 2 ||
		m.MaxTextChars != 4096 || fmt.Sprint(m.Encodings) != "[wav_22050 pcm_22050 mp3_22050 opus_48000 aac_22050 flac_22050]" {
		t.Errorf("model %+v", m)
	}
	voices, _ := p.Voices(t.Context(), &sdk.VoicesRequest{})
	if len(voices) != 2 || voices[0].ID != "nova" {
		t.Errorf("default model's voices %+v", voices)
	}
	voices, _ = p.Voices(t.Context(), &sdk.VoicesRequest{Model: "tts-1"})
	if len(voices) != 2 || voices[1].ID != "echo" {
		t.Errorf("tts-1 voices %+v", voices)
	}
	if _, err := New().Describe(t.Context()); sdktest.AsError(t, err).Kind != sdk.KindUnavailable {
		t.Errorf("unconfigured: %v", err)
	}
}

func TestConfigureRejectsBadSettings(t *testing.T) {
	const url = "http://127.0.0.1:1/v1"
	for _, bad := range []map[string]string{
		{"models": "a"},   // no base_url
		{"base_url": url}, // no models
		{"base_url": url, "models": "a, a"},
		{"base_url": url, "models": "a", "default_model": "b"},
		{"base_url": url, "models": "a", "voices.b": "x"},
		{"base_url": url, "models": "a", "formats": "ogg"},
		{"base_url": url, "models": "a", "formats": "ulaw"},
		{"base_url": url, "models": "a", "formats": "wav, wav"},
		{"base_url": url, "models": "a", "sample_rate": "fast"},
		{"base_url": url, "models": "a", "streaming": "maybe"},
		{"base_url": url, "models": "a", "key_required": "maybe"},
		{"base_url": url, "models": "a", "speed": "2-1"},
		{"base_url": url, "models": "a", "speed": "fast"},
		{"base_url": url, "models": "a", "max_text_chars": "-3"},
		{"base_url": url, "models": "a", "id": "a/b"},
		{"base_url": url, "models": "a", "timeout": "soon"},
	} {
		if err := New().Configure(t.Context(), bad); err == nil {
			t.Errorf("Configure(%v) succeeded", bad)
		}
	}
}

// TestUpstreamFailures holds the plugin to the error contract against the
// fake's injected failures.
func TestUpstreamFailures(t *testing.T) {
	sdktest.Failures[*fake.Server]{
		Fake: func(t *testing.T) *fake.Server { return fake.NewAt(t, fakeupstream.Options{}, prefix) },
		Provider: func(t *testing.T, srv *fake.Server, s map[string]string) sdk.Provider {
			return sdktest.Configure(t, New(), settings(srv), s)
		},
		Request: request,
		Path:    prefix + "/audio/speech", // the fake's SpeechURLPath
		Check: func(t *testing.T, e *sdk.Error) {
			if !strings.HasPrefix(e.Message, "Kokoro: ") {
				t.Errorf("message %q does not name the deployment", e.Message)
			}
		},
	}.Run(t, []sdktest.FailureCase[*fake.Server]{
		{Name: "wrong key", Key: "sk-wrong-key-9876543210zyxw", Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401, Code: "invalid_api_key"}, Calls: 1},
		{Name: "missing key, key required", Key: "", Want: &sdktest.Answer{Kind: sdk.KindUnauthorized}, Calls: 0},
		{Name: "429 once", Key: fake.Key, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "0.05"}) }},
		{Name: "503 forever", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindUnavailable, Status: 503, Code: "server_error", Retryable: true}, Calls: 3,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 503}) }},
		{Name: "timeout setting", Key: fake.Key, Settings: map[string]string{"timeout": "200ms", "max_attempts": "1"}, Want: &sdktest.Answer{Kind: sdk.KindTimeout, Retryable: true}, Calls: 1,
			Setup: func(s *fake.Server) { s.SetLatency(time.Minute) }},
	})
}

// TestNoKeyNoAuthorization: a deployment that does not require a key
// calls without one, and sends no Authorization header at all.
func TestNoKeyNoAuthorization(t *testing.T) {
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = append(auth, r.Header.Values("Authorization")...)
		w.Header().Set("Content-Type", "audio/pcm")
		_, _ = w.Write(make([]byte, 4800))
	}))
	defer srv.Close()
	p := configured(t, map[string]string{"base_url": srv.URL + "/v1", "models": "kokoro", "voices": "af_heart"})
	resp, err := p.Synthesize(t.Context(), &sdk.SynthesizeRequest{Model: "kokoro", Voice: "af_heart", Text: "Hi."})
	if err != nil || resp.MediaType != "audio/pcm;rate=24000" {
		t.Fatalf("%v %+v", err, resp)
	}
	plan, err := p.Plan(t.Context(), &sdk.PlanRequest{Request: &sdk.SynthesizeRequest{Model: "kokoro", Voice: "af_heart", Text: sdk.PlanText}})
	if err != nil {
		t.Fatal(err)
	}
	if _, has := plan.Header["Authorization"]; has || plan.URL != srv.URL+"/v1/audio/speech" {
		t.Errorf("plan %+v", plan)
	}
	if len(auth) != 0 {
		t.Errorf("Authorization sent: %q", auth)
	}
	for k, v := range plan.Header {
		if strings.Contains(v, "no-key") || strings.Contains(k, "no-key") {
			t.Errorf("the placeholder leaked into header %s", k)
		}
	}
}

func TestRequestOnTheWire(t *testing.T) {
	srv := fake.NewAt(t, fakeupstream.Options{}, prefix)
	p := configured(t, settings(srv, "speed", "0.25-4"))
	req := request(fake.Key)
	req.Speed, req.Format = 1.5, sdk.FormatMP3
	if _, err := p.Synthesize(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	got, _ := srv.LastRequest()
	if got.Path != prefix+"/audio/speech" || got.Header.Get("Authorization") != "Bearer "+fake.Key {
		t.Errorf("request %s %v", got.Path, got.Header)
	}
	var body map[string]any
	_ = json.Unmarshal(got.Body, &body)
	want := map[string]any{"model": "tts-1", "input": "Hello there.", "voice": "alloy", "response_format": "mp3", "speed": 1.5}
	if fmt.Sprint(body) != fmt.Sprint(want) {
		t.Errorf("body %v, want %v", body, want)
	}
	req = request(fake.Key)
	req.Model, req.Voice, req.Options = "gpt-4o-mini-tts", "nova", []byte(`{"instructions":"Calmly."}`)
	if _, err := p.Synthesize(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	got, _ = srv.LastRequest()
	if !strings.Contains(string(got.Body), `"instructions":"Calmly."`) || !strings.Contains(string(got.Body), `"response_format":"wav"`) {
		t.Errorf("body %s: want the option passed through and the first declared format", got.Body)
	}
}

func TestInvalidRequests(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*sdk.SynthesizeRequest)
	}{
		{"options set the model", func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"model": "tts-1-hd"}`) }},
		{"options not an object", func(r *sdk.SynthesizeRequest) { r.Options = []byte(`"x"`) }},
		{"not a model id", func(r *sdk.SynthesizeRequest) { r.Model = "tts 1" }},
		{"undeclared speed", func(r *sdk.SynthesizeRequest) { r.Speed = 2 }},
		{"sample rate", func(r *sdk.SynthesizeRequest) { r.SampleRate = 16000 }},
		{"no voice", func(r *sdk.SynthesizeRequest) { r.Voice = "" }},
		{"bitrate", func(r *sdk.SynthesizeRequest) { r.Bitrate = 128 }},
	}
	srv := fake.NewAt(t, fakeupstream.Options{}, prefix)
	p := configured(t, settings(srv, "formats", "pcm"))
	for _, tt := range append(tests, struct {
		name   string
		modify func(*sdk.SynthesizeRequest)
	}{"undeclared format", func(r *sdk.SynthesizeRequest) { r.Format = sdk.FormatMP3 }}) {
		t.Run(tt.name, func(t *testing.T) {
			req := request(fake.Key)
			tt.modify(req)
			_, err := p.Synthesize(t.Context(), req)
			e := sdktest.AsError(t, err)
			if e.Kind != sdk.KindInvalidRequest {
				t.Errorf("got %v", e)
			}
			// An option the request sets itself is the caller's field.
			if want := map[string]string{"options set the model": "model"}[tt.name]; e.Field != want {
				t.Errorf("field %q, want %q", e.Field, want)
			}
		})
	}
	if n := srv.Calls(); n != 0 {
		t.Errorf("%d upstream calls", n)
	}
}

// TestPassThroughModel: through the plugin process, a model the server
// hosts and the deployment does not declare (tts-1-hd) reaches the
// server under the id the caller wrote, with the declaration's
// abilities; an id that cannot be a model id is refused without a call.
func TestPassThroughModel(t *testing.T) {
	srv := fake.NewAt(t, fakeupstream.Options{}, prefix)
	p := sdktest.StartPlugin(t, pluginPath)
	if err := p.Configure(t.Context(), settings(srv)); err != nil {
		t.Fatal(err)
	}
	req := request(fake.Key)
	req.Model = "tts-1-hd"
	fakeupstream.CheckPassThrough(t, p, fakeupstream.PassThrough{
		Fake: srv.Control, Request: *req,
		SentModel: func(r fakeupstream.Request) string {
			var b struct{ Model string }
			_ = r.JSON(&b)
			return b.Model
		},
		Invalid: []string{"tts 1", "-tts", "/tts", "tts-1\n", "tts\u00e9", "tts-1?x", "", strings.Repeat("a", 201)},
	})
}

func TestParseError(t *testing.T) {
	tests := []struct{ body, code, msg string }{
		{`{"error":{"message":"bad voice","type":"invalid_request_error","code":"invalid_value"}}`, "invalid_value", "bad voice"},
		{`{"detail":"Voice not found"}`, "", "Voice not found"},
		{`{"detail":{"error":"validation_error","message":"Unsupported format","type":"invalid_request_error"}}`, "invalid_request_error", "Unsupported format"},
		{`{"error":"model not loaded"}`, "", "model not loaded"},
		{`{"error":"not_found","message":"no such model"}`, "not_found", "no such model"},
		{`Internal Server Error`, "", ""},
	}
	for _, tt := range tests {
		if code, msg := parseError([]byte(tt.body)); code != tt.code || msg != tt.msg {
			t.Errorf("parseError(%s) = %q, %q; want %q, %q", tt.body, code, msg, tt.code, tt.msg)
		}
	}
}

func TestStreamArrivesInPieces(t *testing.T) {
	srv := fake.NewAt(t, fakeupstream.Options{ChunkSize: 2400, ChunkDelay: 2 * time.Millisecond}, prefix)
	p := configured(t, settings(srv, "formats", "pcm"))
	chunks := 0
	err := p.Stream(t.Context(), request(fake.Key), func(c sdk.Chunk) error {
		if len(c.Data)%2 != 0 {
			t.Errorf("a chunk splits a sample")
		}
		chunks++
		return nil
	})
	if err != nil || chunks < 3 {
		t.Errorf("%d chunks, %v", chunks, err)
	}
}

// TestEncodingsPassThrough asks, through the plugin process, for every
// encoding a deployment declares: each must reach the server as exactly
// that response_format, and the clip and the stream must be the server's
// bytes untouched, with the sdk's media type.
func TestEncodingsPassThrough(t *testing.T) {
	srv := fake.NewAt(t, fakeupstream.Options{ChunkSize: 1000}, prefix)
	p := sdktest.StartPlugin(t, pluginPath)
	if err := p.Configure(t.Context(), settings(srv)); err != nil {
		t.Fatal(err)
	}
	desc, err := p.Describe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	m := desc.Models[0]
	if len(m.Encodings) != 6 {
		t.Fatalf("%s lists %v, want the six declared formats", m.ID, m.Encodings)
	}
	for _, e := range m.Encodings {
		t.Run(e.String(), func(t *testing.T) {
			req := request(fake.Key)
			req.Model, req.Format, req.SampleRate, req.Bitrate = m.ID, e.Format, e.SampleRate, e.Bitrate
			resp, err := p.Synthesize(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			checkAsked(t, srv, e)
			if clip, err := sdktest.Decode(resp.MediaType, resp.Audio); err != nil || clip.Format != e.Format || resp.MediaType != sdk.MediaType(e) {
				t.Errorf("the clip is %q, %+v (%v); want %s", resp.MediaType, clip, err, e)
			}
			if !bytes.Equal(resp.Audio, srv.LastAnswer()) {
				t.Errorf("the clip (%d bytes) is not what the server answered (%d bytes)", len(resp.Audio), len(srv.LastAnswer()))
			}
			var streamed []byte
			err = p.Stream(t.Context(), req, func(c sdk.Chunk) error {
				streamed = append(streamed, c.Data...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			checkAsked(t, srv, e)
			if !bytes.Equal(streamed, srv.LastAnswer()) {
				t.Errorf("the stream (%d bytes) is not what the server answered (%d bytes)", len(streamed), len(srv.LastAnswer()))
			}
		})
	}
}

// checkAsked checks that the last speech request asked for e: OpenAI's
// response_format values are the sdk's format names.
func checkAsked(t *testing.T, srv *fake.Server, e sdk.Encoding) {
	t.Helper()
	got, _ := srv.LastRequest()
	var body struct {
		ResponseFormat string `json:"response_format"`
	}
	if err := got.JSON(&body); err != nil || body.ResponseFormat != e.Format {
		t.Errorf("asked the server for response_format %q (%v), want %q", body.ResponseFormat, err, e.Format)
	}
}
