package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	fake "github.com/voxgate/voxgate/internal/fakeupstream/google"
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
		Voice:        "Kore",
		Credentials:  sdk.Credentials{APIKey: fake.Key},
		InvalidVoice: "Alloy",
	}
}

// TestConformance runs the kit against the real plugin process talking to
// the fake over HTTP.
func TestConformance(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	sdktest.Run(t, sdktest.StartPlugin(t, pluginPath), kitConfig(srv, ""))
}

// TestConformanceInProcess runs the kit in process for every model.
func TestConformanceInProcess(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	for _, m := range ttsModels() {
		t.Run(m.id, func(t *testing.T) { sdktest.Run(t, New(), kitConfig(srv, m.id)) })
	}
}

func configured(t *testing.T, baseURL string, extra map[string]string) *Provider {
	return sdktest.Configure(t, New(), map[string]string{"base_url": baseURL}, extra)
}

func request(key string) *sdk.SynthesizeRequest {
	return &sdk.SynthesizeRequest{Model: defaultModel, Voice: "Kore", Text: "Hello there, world.", Credentials: sdk.Credentials{APIKey: key}}
}

var generatePath = fake.Path(defaultModel, "generateContent")

func TestUpstreamFailures(t *testing.T) {
	const wrongKey = "AIzaSyWrong-9876543210zyxwvutsrq"
	streamPath := fake.Path(defaultModel, "streamGenerateContent")
	sdktest.Failures[*fake.Server]{
		Fake: func(t *testing.T) *fake.Server { return fake.New(t, fakeupstream.Options{}) },
		Provider: func(t *testing.T, srv *fake.Server, s map[string]string) sdk.Provider {
			return configured(t, srv.BaseURL(), s)
		},
		Request: request,
	}.Run(t, []sdktest.FailureCase[*fake.Server]{
		{Name: "wrong key: 400 API_KEY_INVALID", Key: wrongKey, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 400, Code: "API_KEY_INVALID", MessageHas: "google: API key not valid"}, Path: generatePath, Calls: 1},
		{Name: "missing key", Want: &sdktest.Answer{Kind: sdk.KindUnauthorized}, Path: generatePath, Calls: 0},
		{Name: "401", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401, Code: "UNAUTHENTICATED"}, Path: generatePath, Calls: 1,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 401}) }},
		{Name: "429 with Retry-After, then success", Key: fake.Key, Path: generatePath, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "0.05"}) }},
		{Name: "429 forever", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindRateLimited, Status: 429, Code: "RESOURCE_EXHAUSTED", Retryable: true, RetryAfter: 20 * time.Millisecond, MessageHas: "exceeded your current quota"}, Path: generatePath, Calls: 3,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 429, RetryAfter: "0.02"}) }},
		{Name: "503 retried", Key: fake.Key, Path: generatePath, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 503}) }},
		{Name: "500 retried on the stream", Key: fake.Key, Op: sdktest.OpStream, Path: streamPath, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 500}) }},
		{Name: "stream with a wrong key", Key: wrongKey, Op: sdktest.OpStream, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 400, Code: "API_KEY_INVALID"}, Path: streamPath, Calls: 1},
		{Name: "unknown voice", Key: fake.Key, Voice: "Alloy", Want: &sdktest.Answer{Kind: sdk.KindInvalidRequest, Status: 400, Code: "INVALID_ARGUMENT", MessageHas: "not supported"}, Path: generatePath, Calls: 1},
		{Name: "timeout", Key: fake.Key, Settings: map[string]string{"timeout": "200ms"}, Want: &sdktest.Answer{Kind: sdk.KindTimeout, Retryable: true}, Path: generatePath, Calls: 1,
			Setup: func(s *fake.Server) { s.SetLatency(time.Minute) }},
	})
}

// TestRetryInfo: Google gives the wait of a 429 in the body (RetryInfo)
// without a Retry-After header; the plugin waits it out when short and
// reports it when long.
func TestRetryInfo(t *testing.T) {
	for _, tt := range []struct {
		delay    string
		failures int32
		wantErr  bool
		after    time.Duration
		calls    int32
	}{
		{delay: "0.05s", failures: 1, calls: 2},
		{delay: "30s", failures: 100, wantErr: true, after: 30 * time.Second, calls: 1},
	} {
		t.Run(tt.delay, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if calls.Add(1) <= tt.failures {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusTooManyRequests)
					fmt.Fprintf(w, `{"error": {"code": 429, "message": "Quota exceeded.", "status": "RESOURCE_EXHAUSTED", "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": %q}]}}`, tt.delay)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"candidates": [{"content": {"parts": [{"inlineData": {"mimeType": "audio/L16;codec=pcm;rate=24000", "data": "AQI="}}]}, "finishReason": "STOP"}]}`)
			}))
			t.Cleanup(srv.Close)
			p := configured(t, srv.URL+"/v1beta", nil)
			_, err := p.Synthesize(t.Context(), request(fake.Key))
			if calls.Load() != tt.calls {
				t.Errorf("%d calls, want %d", calls.Load(), tt.calls)
			}
			if !tt.wantErr {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if e := sdktest.AsError(t, err); e.Kind != sdk.KindRateLimited || e.RetryAfter != tt.after {
				t.Errorf("got %+v, want rate limited after %v", e, tt.after)
			}
		})
	}
}

func TestRetryDelay(t *testing.T) {
	for body, want := range map[string]time.Duration{
		`{"error": {"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "23s"}]}}`:   23 * time.Second,
		`{"error": {"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.5s"}]}}`:  1500 * time.Millisecond,
		`{"error": {"details": [{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "retryDelay": "9s"}]}}`: 0,
		`{"error": {"message": "no details"}}`: 0,
		`<html>`:                               0,
	} {
		if got := retryDelay([]byte(body)); got != want {
			t.Errorf("retryDelay(%s) = %v, want %v", body, got, want)
		}
	}
}

func TestRequestOnTheWire(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	multi := `{"speakerVoiceConfigs":[{"speaker":"Joe","voiceConfig":{"prebuiltVoiceConfig":{"voiceName":"Kore"}}},{"speaker":"Jane","voiceConfig":{"prebuiltVoiceConfig":{"voiceName":"Puck"}}}]}`
	tests := []struct {
		name, format, options string
		model                 string
		wantMedia             string
		wantSpeech            string
		wantExtra             string
		warnings              int
	}{
		{name: "pcm", wantMedia: "audio/pcm;rate=24000", wantSpeech: `{"voiceConfig":{"prebuiltVoiceConfig":{"voiceName":"Kore"}}}`},
		{name: "wav on pro", format: sdk.FormatWAV, model: "gemini-2.5-pro-preview-tts", wantMedia: "audio/wav", wantSpeech: `{"voiceConfig":{"prebuiltVoiceConfig":{"voiceName":"Kore"}}}`},
		{name: "language, temperature and seed", options: `{"languageCode": "fr-FR", "temperature": 0.7, "seed": 42}`, wantMedia: "audio/pcm;rate=24000",
			wantSpeech: `{"languageCode":"fr-FR","voiceConfig":{"prebuiltVoiceConfig":{"voiceName":"Kore"}}}`, wantExtra: `"temperature":0.7,"seed":42`},
		{name: "two speakers", options: `{"multiSpeakerVoiceConfig": ` + multi + `}`, wantMedia: "audio/pcm;rate=24000",
			wantSpeech: `{"multiSpeakerVoiceConfig":` + multi + `}`, warnings: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request(fake.Key)
			req.Format = tt.format
			if tt.model != "" {
				req.Model = tt.model
			}
			if tt.options != "" {
				req.Options = []byte(tt.options)
			}
			resp, err := p.Synthesize(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			clip, err := sdktest.Decode(resp.MediaType, resp.Audio)
			if err != nil || resp.MediaType != tt.wantMedia || math.Abs(clip.Seconds()-fakeupstream.Speak(req.Text, 1).Seconds) > 0.001 {
				t.Errorf("%s %+v %v", resp.MediaType, clip, err)
			}
			if len(resp.Warnings) != tt.warnings {
				t.Errorf("warnings %v", resp.Warnings)
			}
			got, _ := srv.LastRequest()
			if got.Header.Get("X-Goog-Api-Key") != fake.Key || got.Query.Get("key") != "" || got.Path != fake.Path(req.Model, "generateContent") {
				t.Errorf("%s with headers %v", got.Path, got.Header)
			}
			var body struct {
				Contents         []map[string]any           `json:"contents"`
				GenerationConfig map[string]json.RawMessage `json:"generationConfig"`
			}
			if err := json.Unmarshal(got.Body, &body); err != nil {
				t.Fatal(err)
			}
			if b, _ := json.Marshal(body.Contents); string(b) != `[{"parts":[{"text":"Hello there, world."}],"role":"user"}]` {
				t.Errorf("contents %s", b)
			}
			var speech any
			_ = json.Unmarshal(body.GenerationConfig["speechConfig"], &speech)
			if b, _ := json.Marshal(speech); string(b) != tt.wantSpeech {
				t.Errorf("speechConfig %s, want %s", b, tt.wantSpeech)
			}
			if string(body.GenerationConfig["responseModalities"]) != `["AUDIO"]` {
				t.Errorf("generationConfig %s", got.Body)
			}
			if tt.wantExtra != "" && !strings.Contains(string(got.Body), tt.wantExtra) {
				t.Errorf("body %s lacks %s", got.Body, tt.wantExtra)
			}
		})
	}
}

func TestInvalidRequests(t *testing.T) {
	tests := []sdktest.Refusal{
		{Name: "unknown option", Modify: func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"speed": 1.2}`) }},
		{Name: "snake_case option", Modify: func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"language_code": "en-US"}`) }},
		{Name: "speaker without a voice", Modify: func(r *sdk.SynthesizeRequest) {
			r.Options = []byte(`{"multiSpeakerVoiceConfig": {"speakerVoiceConfigs": [{"speaker": "Joe"}]}}`)
		}},
		{Name: "speed", Modify: func(r *sdk.SynthesizeRequest) { r.Speed = 1.5 }},
		{Name: "no voice", Modify: func(r *sdk.SynthesizeRequest) { r.Voice = "" }},
		{Name: "rate", Modify: func(r *sdk.SynthesizeRequest) { r.SampleRate = 16000 }},
		{Name: "a model that answers text", Modify: func(r *sdk.SynthesizeRequest) { r.Model = "gemini-2.5-flash" }},
		{Name: "mp3", Modify: func(r *sdk.SynthesizeRequest) { r.Format = sdk.FormatMP3 }},
		{Name: "blank text", Modify: func(r *sdk.SynthesizeRequest) { r.Text = "  " }},
	}
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	sdktest.CheckRefusals(t, p, func() *sdk.SynthesizeRequest { return request(fake.Key) }, tests)
	req := request(fake.Key)
	req.Timestamps = true
	if _, err := p.Synthesize(t.Context(), req); sdktest.AsError(t, err).Kind != sdk.KindUnsupported {
		t.Errorf("timestamps: %v", err)
	}
	if _, err := p.Clone(t.Context(), &sdk.CloneRequest{}); sdktest.AsError(t, err).Kind != sdk.KindUnsupported {
		t.Errorf("clone: %v", err)
	}
	if n := srv.Calls(); n != 0 {
		t.Errorf("%d upstream calls for invalid requests", n)
	}
}

func TestVoices(t *testing.T) {
	p := configured(t, "http://127.0.0.1:1/v1beta", nil) // never called
	voices, err := p.Voices(t.Context(), &sdk.VoicesRequest{})
	if err != nil || len(voices) != 30 || voices[3] != (sdk.Voice{ID: "Kore", Name: "Kore (Firm)"}) {
		t.Fatalf("%v %v", voices, err)
	}
	for i, v := range voices {
		if v.ID != fake.Voices()[i] {
			t.Errorf("voice %d is %s, the fake's %s", i, v.ID, fake.Voices()[i])
		}
	}
	if _, err := p.Voices(t.Context(), &sdk.VoicesRequest{Model: "tts-1"}); sdktest.AsError(t, err).Kind != sdk.KindInvalidRequest {
		t.Errorf("unknown model: %v", err)
	}
}

// TestPassThroughModel: through the plugin process, a TTS model the
// Gemini API has and the plugin does not list (a newer one) is called
// under the id the caller wrote; an id that cannot be a Gemini TTS
// model is refused without a call.
func TestPassThroughModel(t *testing.T) {
	const newModel = "gemini-4-flash-tts-preview"
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
			model, _, _ := strings.Cut(strings.TrimPrefix(r.Path, fake.APIRoot+"/models/"), ":")
			return model
		},
		Invalid: []string{"gemini-2.5-flash", "Gemini-4-tts", "gemini-4-tts/../x", "gemini-4-tts:generate", "tts-1", "models/gemini-4-tts", ""},
	})
}

// answering is a server that answers every request with status and body.
func answering(t *testing.T, status int, contentType, body string) *Provider {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return configured(t, srv.URL, map[string]string{"max_attempts": "1"})
}

// TestAnswersWithoutAudio: what Google answers instead of audio maps to
// the caller's mistake (a blocked text) or to Google's failure.
func TestAnswersWithoutAudio(t *testing.T) {
	tests := []struct {
		name, body string
		kind       sdk.ErrorKind
		code       string
	}{
		{"blocked prompt", `{"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}}`, sdk.KindInvalidRequest, "PROHIBITED_CONTENT"},
		{"safety stop", `{"candidates": [{"finishReason": "SAFETY"}]}`, sdk.KindInvalidRequest, "SAFETY"},
		{"text instead of audio", `{"candidates": [{"content": {"parts": [{"text": "Sure!"}]}, "finishReason": "OTHER"}]}`, sdk.KindUpstream, "OTHER"},
		{"wrong audio type", `{"candidates": [{"content": {"parts": [{"inlineData": {"mimeType": "audio/mpeg", "data": "AAAA"}}]}}]}`, sdk.KindUpstream, ""},
		{"bad base64", `{"candidates": [{"content": {"parts": [{"inlineData": {"mimeType": "audio/L16;codec=pcm;rate=24000", "data": "!!"}}]}}]}`, sdk.KindUpstream, ""},
		{"half a sample", `{"candidates": [{"content": {"parts": [{"inlineData": {"mimeType": "audio/L16;codec=pcm;rate=24000", "data": "AQID"}}]}}]}`, sdk.KindUpstream, ""},
		{"not JSON", `<html>`, sdk.KindUpstream, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := answering(t, 200, "application/json", tt.body)
			_, err := p.Synthesize(t.Context(), request(fake.Key))
			if e := sdktest.AsError(t, err); e.Kind != tt.kind || e.UpstreamCode != tt.code {
				t.Errorf("got %+v, want %s %q", e, tt.kind, tt.code)
			}
		})
	}
}

// TestStreamEvents drives Stream with hand-written event streams: odd
// chunk sizes, CRLF framing, comments, an error event, garbage.
func TestStreamEvents(t *testing.T) {
	ev := func(b64 string) string {
		return `data: {"candidates": [{"content": {"parts": [{"inlineData": {"mimeType": "audio/L16;codec=pcm;rate=24000", "data": "` + b64 + `"}}]}}]}` + "\r\n\r\n"
	}
	tests := []struct {
		name, body string
		want       []byte
		kind       sdk.ErrorKind // -1: no error
	}{
		{"whole samples", ev("AQI=") + ev("AwQ="), []byte{1, 2, 3, 4}, -1},
		{"odd pieces rejoined", ev("AQID") + ": keep-alive\r\n\r\n" + ev("BA=="), []byte{1, 2, 3, 4}, -1},
		{"error event", ev("AQI=") + `data: {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}` + "\r\n\r\n", []byte{1, 2}, sdk.KindUnavailable},
		{"no audio at all", `data: {"candidates": [{"finishReason": "OTHER"}]}` + "\r\n\r\n", nil, sdk.KindUpstream},
		{"not JSON", "data: hello\r\n\r\n", nil, sdk.KindUpstream},
		{"a dangling half sample", ev("AQID"), []byte{1, 2}, sdk.KindUpstream},
		{"rate changes", ev("AQI=") + strings.Replace(ev("AwQ="), "24000", "16000", 1), []byte{1, 2}, sdk.KindUpstream},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := answering(t, 200, "text/event-stream", tt.body)
			var got []byte
			var chunks []sdk.Chunk
			err := p.Stream(t.Context(), request(fake.Key), func(c sdk.Chunk) error {
				chunks = append(chunks, c)
				got = append(got, c.Data...)
				return nil
			})
			if tt.kind == -1 {
				if err != nil {
					t.Fatal(err)
				}
			} else if e := sdktest.AsError(t, err); e.Kind != tt.kind {
				t.Errorf("got %v, want kind %s", e, tt.kind)
			}
			if !bytes.Equal(got, tt.want) {
				t.Errorf("audio % x, want % x", got, tt.want)
			}
			for i, c := range chunks {
				if len(c.Data)%2 != 0 {
					t.Errorf("chunk %d has %d bytes", i, len(c.Data))
				}
				if (i == 0) != (c.MediaType != "") {
					t.Errorf("chunk %d media type %q", i, c.MediaType)
				}
			}
		})
	}
}

// TestStreamWAV: a WAV stream opens with a header of unknown length, then
// the PCM of the events.
func TestStreamWAV(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{ChunkSize: 1000})
	p := configured(t, srv.BaseURL(), nil)
	req := request(fake.Key)
	req.Format = sdk.FormatWAV
	var chunks []sdk.Chunk
	var all []byte
	if err := p.Stream(t.Context(), req, func(c sdk.Chunk) error { chunks = append(chunks, c); all = append(all, c.Data...); return nil }); err != nil {
		t.Fatal(err)
	}
	if chunks[0].MediaType != "audio/wav" || len(chunks[0].Data) != 44 || len(chunks) < 3 {
		t.Errorf("first chunk %q, %d bytes, %d chunks", chunks[0].MediaType, len(chunks[0].Data), len(chunks))
	}
	clip, err := sdktest.Decode("audio/wav", all)
	if err != nil || math.Abs(clip.Seconds()-fakeupstream.Speak(req.Text, 1).Seconds) > 0.001 {
		t.Errorf("%+v %v", clip, err)
	}
	if got, _ := srv.LastRequest(); got.Query.Get("alt") != "sse" {
		t.Errorf("query %v", got.Query)
	}
}

func TestParseError(t *testing.T) {
	tests := []struct{ body, code, msg string }{
		{`{"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.", "status": "INVALID_ARGUMENT", "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com"}]}}`, "API_KEY_INVALID", "API key not valid. Please pass a valid API key."},
		{`{"error": {"code": 429, "message": "Quota exceeded.", "status": "RESOURCE_EXHAUSTED", "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3s"}]}}`, "RESOURCE_EXHAUSTED", "Quota exceeded."},
		{`{"error": {"code": 404, "message": "models/x is not found", "status": "NOT_FOUND"}}`, "NOT_FOUND", "models/x is not found"},
		{"<html>502</html>", "", ""},
		{`{"message": "other shape"}`, "", ""},
	}
	for _, tt := range tests {
		code, msg := parseError([]byte(tt.body))
		if code != tt.code || msg != tt.msg {
			t.Errorf("parseError(%q) = %q, %q; want %q, %q", tt.body, code, msg, tt.code, tt.msg)
		}
	}
}

// TestAudioTokenRate: the price table turns a second of audio into as
// many audio tokens as Google documents, the rate the fake reports in
// usageMetadata, so an estimate from the audio's length is what Google
// bills for it.
func TestAudioTokenRate(t *testing.T) {
	d, err := New().Describe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	priced := 0
	for _, m := range d.Models {
		for _, p := range m.Prices {
			if p.Unit != sdk.UnitAudioTokens {
				continue
			}
			priced++
			if p.TokensPerSecond != fake.AudioTokensPerSecond {
				t.Errorf("%s: %v audio tokens a second, Google documents %d", m.ID, p.TokensPerSecond, fake.AudioTokensPerSecond)
			}
		}
	}
	if priced == 0 {
		t.Error("no model is priced in audio tokens")
	}
}

// TestNotAPlanner: the answer is JSON with base64 audio, which a plan
// cannot express, so the plugin does not offer plans at all.
func TestNotAPlanner(t *testing.T) {
	if _, ok := any(New()).(sdk.Planner); ok {
		t.Error("the plugin implements sdk.Planner")
	}
	d, err := sdktest.StartPlugin(t, pluginPath).Describe(t.Context())
	if err != nil || d.Plans {
		t.Errorf("Describe over the wire: plans %v, %v", d != nil && d.Plans, err)
	}
}

// TestEncodingsPassThrough asks, through the plugin process, for every
// encoding each model lists: the clip and the stream must be the PCM the
// Gemini API answered, untouched (behind a WAV header for wav), with the
// sdk's media type; an unlisted encoding is refused without a call.
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
	// The models the API serves, and the sdk.AnyModel entry.
	if desc.DefaultModel != "gemini-3.8-flash-tts" || len(desc.Models) != len(fake.Models())+1 {
		t.Errorf("default %s, %d models; want gemini-3.8-flash-tts, the %d the API serves and sdk.AnyModel", desc.DefaultModel, len(desc.Models), len(fake.Models()))
	}
	for _, m := range desc.Models {
		if m.ID == sdk.AnyModel {
			continue // the ids the plugin passes through: TestPassThroughModel
		}
		for _, e := range m.Encodings {
			t.Run(m.ID+"/"+e.String(), func(t *testing.T) {
				req := request(fake.Key)
				req.Model, req.Format, req.SampleRate, req.Bitrate = m.ID, e.Format, e.SampleRate, e.Bitrate
				want := func() []byte {
					if e.Format == sdk.FormatWAV {
						return append(fakeupstream.WAVHeader(e.SampleRate, len(srv.LastAnswer())), srv.LastAnswer()...)
					}
					return srv.LastAnswer()
				}
				resp, err := p.Synthesize(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				if clip, err := sdktest.Decode(resp.MediaType, resp.Audio); err != nil || clip.Format != e.Format || clip.SampleRate != e.SampleRate || resp.MediaType != sdk.MediaType(e) {
					t.Errorf("the clip is %q, %+v (%v); want %s", resp.MediaType, clip, err, e)
				}
				if !bytes.Equal(resp.Audio, want()) {
					t.Errorf("the clip (%d bytes) is not the API's audio (%d bytes)", len(resp.Audio), len(srv.LastAnswer()))
				}
				if e.Format == sdk.FormatWAV {
					return // a streamed WAV has a header of unknown length
				}
				var streamed []byte
				if err := p.Stream(t.Context(), req, func(c sdk.Chunk) error { streamed = append(streamed, c.Data...); return nil }); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(streamed, want()) {
					t.Errorf("the stream (%d bytes) is not the API's audio (%d bytes)", len(streamed), len(srv.LastAnswer()))
				}
			})
		}
	}
	calls := srv.Calls()
	for _, e := range []sdk.Encoding{{Format: sdk.FormatPCM, SampleRate: 16000}, {Format: sdk.FormatMP3}, {Format: sdk.FormatWAV, SampleRate: 24000, Bitrate: 64}} {
		req := request(fake.Key)
		req.Format, req.SampleRate, req.Bitrate = e.Format, e.SampleRate, e.Bitrate
		if _, err := p.Synthesize(t.Context(), req); sdktest.AsError(t, err).Kind != sdk.KindInvalidRequest {
			t.Errorf("%s: %v, want invalid_request", e, err)
		}
	}
	if srv.Calls() != calls {
		t.Errorf("%d upstream calls for unlisted encodings", srv.Calls()-calls)
	}
}

// TestUsageReadBack: what Google's answer says the call used
// (usageMetadata: the prompt's text tokens, the answer's audio tokens)
// comes back as the call's billed units, a clip's on the response and a
// stream's on a last chunk of its own, after the audio; an answer
// without usage says nothing.
func TestUsageReadBack(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{ChunkSize: 4000})
	p := configured(t, srv.BaseURL(), nil)
	req := request(fake.Key)
	// The fake's usage: about four bytes of text a token, 32 tokens a
	// second of audio.
	want := []sdk.BilledUsage{
		{Unit: sdk.UnitTextTokens, Quantity: int64(max(len(req.Text)/4, 1))},
		{Unit: sdk.UnitAudioTokens, Quantity: int64(math.Ceil(fakeupstream.Speak(req.Text, 1).Seconds * 32))},
	}
	sdktest.CheckBilledReadBack(t, p, req, want)

	// Details missing: the totals; no usage at all: nothing.
	u := &usageMetadata{PromptTokenCount: 7, CandidatesTokenCount: 50}
	if got := u.billed(); !reflect.DeepEqual(got, []sdk.BilledUsage{{Unit: sdk.UnitTextTokens, Quantity: 7}, {Unit: sdk.UnitAudioTokens, Quantity: 50}}) {
		t.Errorf("totals: %+v", got)
	}
	if got := (*usageMetadata)(nil).billed(); got != nil {
		t.Errorf("no usage: %+v", got)
	}
	noUsage := answering(t, 200, "application/json", `{"candidates": [{"content": {"parts": [{"inlineData": {"mimeType": "audio/L16;codec=pcm;rate=24000", "data": "AQI="}}]}}]}`)
	if resp, err := noUsage.Synthesize(t.Context(), request(fake.Key)); err != nil || resp.Billed != nil {
		t.Errorf("an answer without usage: billed %+v, %v", resp.Billed, err)
	}
}
