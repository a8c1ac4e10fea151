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
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	fake "github.com/voxgate/voxgate/internal/fakeupstream/murf"
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
		Voice:        fake.VoiceNatalie,
		Credentials:  sdk.Credentials{APIKey: fake.Key},
		InvalidVoice: "en-US-nobody",
	}
}

// TestConformance runs the kit against the real plugin process talking to
// the fake over HTTP, for both models (FALCON's clips plan, GEN2's do not).
func TestConformance(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := sdktest.StartPlugin(t, pluginPath)
	for _, m := range modelList() {
		t.Run(m.id, func(t *testing.T) { sdktest.Run(t, p, kitConfig(srv, m.id)) })
	}
}

// TestConformanceInProcess runs the kit in process for every model.
func TestConformanceInProcess(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	for _, m := range modelList() {
		t.Run(m.id, func(t *testing.T) { sdktest.Run(t, New(), kitConfig(srv, m.id)) })
	}
}

func configured(t *testing.T, baseURL string, extra map[string]string) *Provider {
	return sdktest.Configure(t, New(), map[string]string{"base_url": baseURL}, extra)
}

func request(key string) *sdk.SynthesizeRequest {
	return &sdk.SynthesizeRequest{Model: defaultModel, Voice: fake.VoiceNatalie, Text: "Hello there, world.", Credentials: sdk.Credentials{APIKey: key}}
}

func TestDescribe(t *testing.T) {
	d, err := New().Describe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != "murf" || d.DefaultModel != "GEN2" || len(d.Models) != 3 || d.Models[2].ID != sdk.AnyModel {
		t.Fatalf("%+v", d)
	}
	gen2, falcon := d.Models[0], d.Models[1]
	if !gen2.Capabilities.Timestamps || falcon.Capabilities.Timestamps || gen2.Capabilities.Cloning || falcon.Capabilities.Cloning ||
		!gen2.Capabilities.Streaming || !falcon.Capabilities.Speed || gen2.MinSpeed != 0.5 || gen2.MaxSpeed != 1.5 ||
		gen2.Encodings[0] != (sdk.Encoding{Format: sdk.FormatPCM, SampleRate: 44100}) ||
		falcon.Encodings[0] != (sdk.Encoding{Format: sdk.FormatPCM, SampleRate: 24000}) || gen2.MaxTextChars != 3000 {
		t.Errorf("models %+v", d.Models)
	}
}

func TestConfigure(t *testing.T) {
	if err := New().Configure(t.Context(), map[string]string{"stream_base_url": "global.api.murf.ai"}); sdktest.AsError(t, err).Kind != sdk.KindInvalidRequest {
		t.Errorf("a stream_base_url without scheme: %v", err)
	}
	if err := New().Configure(t.Context(), map[string]string{"base_url": "::"}); sdktest.AsError(t, err).Kind != sdk.KindInvalidRequest {
		t.Errorf("a bad base_url: %v", err)
	}
	// stream_base_url takes /v1/speech/stream elsewhere; the rest stays.
	streams := fake.New(t, fakeupstream.Options{})
	rest := fake.New(t, fakeupstream.Options{})
	p := configured(t, rest.BaseURL(), map[string]string{"stream_base_url": streams.BaseURL() + "/"})
	if err := p.Stream(t.Context(), request(fake.Key), func(sdk.Chunk) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Synthesize(t.Context(), request(fake.Key)); err != nil {
		t.Fatal(err)
	}
	if streams.CallsTo(fake.StreamPath) != 1 || rest.CallsTo(fake.GeneratePath) != 1 || rest.CallsTo(fake.StreamPath) != 0 {
		t.Errorf("stream host %d calls, base host %d generate and %d stream calls", streams.Calls(), rest.CallsTo(fake.GeneratePath), rest.CallsTo(fake.StreamPath))
	}
}

func TestUpstreamFailures(t *testing.T) {
	const wrongKey = "ap2_wrong000-9999-8888-7777-666655554444"
	sdktest.Failures[*fake.Server]{
		Fake: func(t *testing.T) *fake.Server { return fake.New(t, fakeupstream.Options{}) },
		Provider: func(t *testing.T, srv *fake.Server, s map[string]string) sdk.Provider {
			return configured(t, srv.BaseURL(), s)
		},
		Request: request,
	}.Run(t, []sdktest.FailureCase[*fake.Server]{
		{Name: "wrong key", Key: wrongKey, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 403, Code: "403", MessageHas: "Invalid 'api-key' header passed"}, Path: fake.GeneratePath, Calls: 1},
		{Name: "missing key", Want: &sdktest.Answer{Kind: sdk.KindUnauthorized}, Path: fake.GeneratePath, Calls: 0},
		{Name: "unknown voice", Key: fake.Key, Voice: "en-US-nobody", Want: &sdktest.Answer{Kind: sdk.KindInvalidRequest, Status: 400, Code: "400", MessageHas: "Invalid voice_id"}, Path: fake.GeneratePath, Calls: 1},
		{Name: "quota spent", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindUpstream, Status: 402, Code: "402", MessageHas: "Character limit"}, Path: fake.GeneratePath, Calls: 1,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 402}) }},
		{Name: "429 with Retry-After, then success", Key: fake.Key, Path: fake.GeneratePath, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "0.05"}) }},
		{Name: "429 forever", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindRateLimited, Status: 429, Code: "429", Retryable: true, RetryAfter: 20 * time.Millisecond}, Path: fake.GeneratePath, Calls: 3,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 429, RetryAfter: "0.02"}) }},
		{Name: "503 retried on FALCON's clip", Key: fake.Key, Model: "FALCON", Path: fake.StreamPath, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 503}) }},
		{Name: "stream 403", Key: wrongKey, Op: sdktest.OpStream, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 403, Code: "403"}, Path: fake.StreamPath, Calls: 1},
		{Name: "timeout", Key: fake.Key, Settings: map[string]string{"timeout": "200ms"}, Want: &sdktest.Answer{Kind: sdk.KindTimeout, Retryable: true}, Path: fake.GeneratePath, Calls: 1,
			Setup: func(s *fake.Server) { s.SetLatency(time.Minute) }},
		{Name: "key echoed in a message", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 403, Code: "403"}, Path: fake.GeneratePath, Calls: 1,
			Setup: func(s *fake.Server) {
				s.FailAlways(fakeupstream.Fault{Status: 403, Message: "api-key " + fake.Key + " is disabled"})
			}},
	})
}

func TestRequestOnTheWire(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	tests := []struct {
		model, format, options string
		rate                   int
		speed                  float64
		stream                 bool
		path                   string
		want                   string // the body without voiceId and text, canonical
		mediaType              string
	}{
		{path: fake.GeneratePath, mediaType: "audio/pcm;rate=44100",
			want: `{"channelType":"MONO","encodeAsBase64":true,"format":"PCM","modelVersion":"GEN2","sampleRate":44100}`},
		{format: sdk.FormatWAV, rate: 8000, speed: 1.25, path: fake.GeneratePath, mediaType: "audio/wav",
			want: `{"channelType":"MONO","encodeAsBase64":true,"format":"WAV","modelVersion":"GEN2","rate":25,"sampleRate":8000}`},
		{format: sdk.FormatMP3, options: `{"style":"Promo","pitch":-5,"variation":2,"locale":"en-UK","multiNativeLocale":"en-UK","pronunciationDictionary":{"live":{"type":"IPA","pronunciation":"laɪv"}},"audioDuration":0,"wordDurationsAsOriginalText":true}`,
			path: fake.GeneratePath, mediaType: "audio/mpeg",
			want: `{"audioDuration":0,"channelType":"MONO","encodeAsBase64":true,"format":"MP3","locale":"en-UK","modelVersion":"GEN2","multiNativeLocale":"en-UK","pitch":-5,"pronunciationDictionary":{"live":{"pronunciation":"laɪv","type":"IPA"}},"sampleRate":44100,"style":"Promo","variation":2,"wordDurationsAsOriginalText":true}`},
		{model: "FALCON", rate: 16000, speed: 0.75, path: fake.StreamPath, mediaType: "audio/pcm;rate=16000",
			want: `{"channelType":"MONO","format":"PCM","model":"FALCON","rate":-25,"sampleRate":16000}`},
		{format: sdk.FormatWAV, stream: true, path: fake.StreamPath, mediaType: "audio/wav",
			want: `{"channelType":"MONO","format":"WAV","model":"GEN2","sampleRate":44100}`},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			req := request(fake.Key)
			req.Format, req.SampleRate, req.Speed = tt.format, tt.rate, tt.speed
			if tt.model != "" {
				req.Model = tt.model
			}
			if tt.options != "" {
				req.Options = []byte(tt.options)
			}
			var audio []byte
			var mediaType string
			if tt.stream {
				if err := p.Stream(t.Context(), req, func(c sdk.Chunk) error {
					mediaType += c.MediaType
					audio = append(audio, c.Data...)
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			} else {
				resp, err := p.Synthesize(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				audio, mediaType = resp.Audio, resp.MediaType
			}
			if mediaType != tt.mediaType {
				t.Errorf("media type %q, want %q", mediaType, tt.mediaType)
			}
			clip, err := sdktest.Decode(mediaType, audio)
			if err != nil {
				t.Fatal(err)
			}
			if want := fakeupstream.Speak(req.Text, max(tt.speed, 0)).Seconds; clip.Format != "mp3" && math.Abs(clip.Seconds()-want) > 0.001 {
				t.Errorf("%.3f s, want %.3f", clip.Seconds(), want)
			}
			got, _ := srv.LastRequest()
			if got.Path != tt.path || got.Header.Get("api-key") != fake.Key || got.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%s with headers %v", got.Path, got.Header)
			}
			var body map[string]any
			if err := json.Unmarshal(got.Body, &body); err != nil {
				t.Fatal(err)
			}
			if body["voiceId"] != fake.VoiceNatalie || body["text"] != "Hello there, world." {
				t.Errorf("body %s", got.Body)
			}
			delete(body, "voiceId")
			delete(body, "text")
			if b, _ := json.Marshal(body); string(b) != tt.want {
				t.Errorf("body %s\nwant %s", b, tt.want)
			}
		})
	}
}

func TestInvalidRequests(t *testing.T) {
	tests := []sdktest.Refusal{
		{Name: "unknown option", Modify: func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"speed": 2}`) }},
		{Name: "option of the wrong type", Modify: func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"style": 3}`) }},
		{Name: "pitch", Modify: func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"pitch": 80}`) }},
		{Name: "pronunciations not an object", Modify: func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"pronunciationDictionary": [1]}`) }},
		{Name: "variation on FALCON", Modify: func(r *sdk.SynthesizeRequest) { r.Model, r.Options = "FALCON", []byte(`{"variation": 1}`) }},
		{Name: "audioDuration on FALCON", Modify: func(r *sdk.SynthesizeRequest) { r.Model, r.Options = "FALCON", []byte(`{"audioDuration": 3}`) }},
		{Name: "speed out of range", Modify: func(r *sdk.SynthesizeRequest) { r.Speed = 1.6 }},
		{Name: "no voice", Modify: func(r *sdk.SynthesizeRequest) { r.Voice = "" }},
		{Name: "blank text", Modify: func(r *sdk.SynthesizeRequest) { r.Text = " \t" }},
		{Name: "GEN2 at 16 kHz", Modify: func(r *sdk.SynthesizeRequest) { r.SampleRate = 16000 }},
		{Name: "rate", Modify: func(r *sdk.SynthesizeRequest) { r.Model, r.SampleRate = "FALCON", 22050 }},
		{Name: "not a model id", Modify: func(r *sdk.SynthesizeRequest) { r.Model = "gen1" }},
		{Name: "format", Modify: func(r *sdk.SynthesizeRequest) { r.Format = sdk.FormatULaw }},
		{Name: "mp3 bitrate", Modify: func(r *sdk.SynthesizeRequest) { r.Format, r.Bitrate = sdk.FormatMP3, 128 }},
		{Name: "mp3 at 8 kHz", Modify: func(r *sdk.SynthesizeRequest) { r.Format, r.SampleRate = sdk.FormatMP3, 8000 }},
	}
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	sdktest.CheckRefusals(t, p, func() *sdk.SynthesizeRequest { return request(fake.Key) }, tests)
	if n := srv.Calls(); n != 0 {
		t.Errorf("%d upstream calls for invalid requests", n)
	}
	// FALCON gives no timestamps: unsupported, not a wrong request.
	req := request(fake.Key)
	req.Model, req.Timestamps = "FALCON", true
	if _, err := p.Synthesize(t.Context(), req); sdktest.AsError(t, err).Kind != sdk.KindUnsupported {
		t.Errorf("FALCON timestamps: %v", err)
	}
	if _, err := p.Clone(t.Context(), &sdk.CloneRequest{}); sdktest.AsError(t, err).Kind != sdk.KindUnsupported {
		t.Errorf("Clone: %v", err)
	}
}

// TestTimestampsMatchTheAudio: word durations come back as the fake's
// exact timings (to the millisecond Murf reports).
func TestTimestampsMatchTheAudio(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	for _, format := range []string{sdk.FormatPCM, sdk.FormatWAV, sdk.FormatMP3} {
		req := request(fake.Key)
		req.Text, req.Timestamps, req.Format, req.Speed = "Several words, timed to the millisecond.", true, format, 1.5
		resp, err := p.Synthesize(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		want := fakeupstream.Speak(req.Text, 1.5)
		if len(resp.Timestamps) != len(want.Words) {
			t.Fatalf("%s: got %v, want %v", format, resp.Timestamps, want.Words)
		}
		for i, w := range want.Words {
			got := resp.Timestamps[i]
			if got.Text != w.Text || math.Abs(got.Start-w.Start) > 0.0005 || math.Abs(got.End-w.End) > 0.0005 {
				t.Errorf("%s: word %d = %+v, want %+v", format, i, got, w)
			}
		}
	}
	// Without asking, none.
	resp, err := p.Synthesize(t.Context(), request(fake.Key))
	if err != nil || resp.Timestamps != nil {
		t.Errorf("%v, %v", resp.Timestamps, err)
	}
}

// TestAudioFileFallback: an answer with only an audioFile URL is fetched
// from there, without the key.
func TestAudioFileFallback(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	srv.SetAudioFileOnly(true)
	p := configured(t, srv.BaseURL(), nil)
	resp, err := p.Synthesize(t.Context(), request(fake.Key))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sdktest.Decode(resp.MediaType, resp.Audio); err != nil {
		t.Fatal(err)
	}
	got, _ := srv.LastRequest()
	if !strings.HasPrefix(got.Path, fake.FilesPath) || got.Header.Get("api-key") != "" {
		t.Errorf("fetched %s with headers %v", got.Path, got.Header)
	}
}

// answerServer answers /v1/speech/generate with a fixed JSON body (and
// /files/x with 404).
func answerServer(t *testing.T, body string) *Provider {
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/empty" {
			return
		}
		if r.URL.Path == "/files/x" {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, "<Error><Code>NoSuchKey</Code></Error>")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, strings.ReplaceAll(body, "{URL}", srv.URL))
	}))
	t.Cleanup(srv.Close)
	return configured(t, srv.URL, nil)
}

func TestGenerateAnswers(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		kind     sdk.ErrorKind // -1: success
		status   int
		warnings int
	}{
		{"warning passed on", `{"encodedAudio":"AQI=","audioFile":"","warning":"style ignored","wordDurations":[]}`, -1, 0, 1},
		{"bad base64", `{"encodedAudio":"!!"}`, sdk.KindUpstream, 0, 0},
		{"no audio at all", `{"encodedAudio":null,"audioFile":""}`, sdk.KindUpstream, 0, 0},
		{"empty audio", `{"encodedAudio":null,"audioFile":"{URL}/empty"}`, sdk.KindUpstream, 0, 0},
		{"odd PCM", `{"encodedAudio":"AQID"}`, sdk.KindUpstream, 0, 0},
		{"not JSON", `<html>`, sdk.KindUpstream, 0, 0},
		{"audioFile missing", `{"audioFile":"{URL}/files/x"}`, sdk.KindInvalidRequest, 404, 0},
		{"audioFile not http", `{"audioFile":"ftp://x/y"}`, sdk.KindUpstream, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := answerServer(t, tt.body)
			resp, err := p.Synthesize(t.Context(), request(fake.Key))
			if tt.kind == -1 {
				if err != nil {
					t.Fatal(err)
				}
				if len(resp.Warnings) != tt.warnings {
					t.Errorf("warnings %v", resp.Warnings)
				}
				return
			}
			if e := sdktest.AsError(t, err); e.Kind != tt.kind || e.UpstreamStatus != tt.status {
				t.Errorf("got %+v, want kind %s, status %d", e, tt.kind, tt.status)
			}
		})
	}
}

// TestPassThroughModel: through the plugin process, a model Murf has and
// the plugin does not list (a newer one) reaches Murf's stream endpoint
// under the id the caller wrote; an id that cannot be Murf's is refused
// without a call.
func TestPassThroughModel(t *testing.T) {
	const newModel = "GEN3"
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
		Invalid: []string{"gen3", "Gen3", "G", "GEN 3", "GEN-3", "3GEN", ""},
	})
}

func TestParseError(t *testing.T) {
	tests := []struct{ body, code, msg string }{
		{`{"error_message":"Invalid 'api-key' header passed","error_code":403}`, "403", "Invalid 'api-key' header passed"},
		{`{"errorMessage":"Bad voice","errorCode":"VOICE_NOT_FOUND"}`, "VOICE_NOT_FOUND", "Bad voice"},
		{`{"message":"Internal server error"}`, "", "Internal server error"},
		{`{"error_code":null}`, "", ""},
		{`<html>502</html>`, "", ""},
	}
	for _, tt := range tests {
		code, msg := parseError([]byte(tt.body))
		if code != tt.code || msg != tt.msg {
			t.Errorf("parseError(%q) = %q, %q; want %q, %q", tt.body, code, msg, tt.code, tt.msg)
		}
	}
}

func TestVoices(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	voices, err := p.Voices(t.Context(), &sdk.VoicesRequest{Model: "FALCON", Credentials: sdk.Credentials{APIKey: fake.Key}})
	if err != nil {
		t.Fatal(err)
	}
	if want := (sdk.Voice{ID: fake.VoiceHazel, Name: "Hazel (F)", Language: "en-UK", Gender: "female"}); len(voices) != 4 || voices[2] != want {
		t.Errorf("voices %+v", voices)
	}
	got, _ := srv.LastRequest()
	if got.Query.Get("model") != "FALCON" || got.Header.Get("api-key") != fake.Key {
		t.Errorf("request %v %v", got.Query, got.Header)
	}
	if _, err := p.Voices(t.Context(), &sdk.VoicesRequest{Credentials: sdk.Credentials{APIKey: fake.Key}}); err != nil {
		t.Errorf("default model: %v", err)
	}
	if got, _ := srv.LastRequest(); got.Query.Get("model") != "GEN2" {
		t.Errorf("default model asked as %q", got.Query.Get("model"))
	}
	if _, err := p.Voices(t.Context(), &sdk.VoicesRequest{Model: "gen9"}); sdktest.AsError(t, err).Kind != sdk.KindInvalidRequest {
		t.Errorf("not a model id: %v", err)
	}
	for in, want := range map[string]string{"Male": "male", "Female": "female", "NonBinary": "neutral", "": ""} {
		if got := gender(in); got != want {
			t.Errorf("gender(%q) = %q", in, got)
		}
	}
}

// planSentence needs JSON escaping: quotes, a backslash, a tab, HTML
// characters and non-ASCII letters.
const planSentence = "She said \"ready\" \\ then paused,\tnaïve <and> calm & done."

// planners are the plugin in process and over the wire, both configured
// with settings; the gateway plans through the latter.
func planners(t *testing.T, settings map[string]string) map[string]sdk.Provider {
	t.Helper()
	out := map[string]sdk.Provider{"in process": New(), "over the wire": sdktest.StartPlugin(t, pluginPath)}
	for name, p := range out {
		if err := p.Configure(t.Context(), settings); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	return out
}

func plan(t *testing.T, p sdk.Provider, req sdk.SynthesizeRequest, stream bool) (*sdk.Plan, error) {
	t.Helper()
	req.Text = sdk.PlanText
	return p.(sdk.Planner).Plan(t.Context(), &sdk.PlanRequest{Request: &req, Stream: stream})
}

// TestPlanMatchesPlugin: a planned request, sent with net/http, is the
// /v1/speech/stream request the plugin sends for the same call (FALCON's
// clips, and streams of both models) and answers the same audio.
func TestPlanMatchesPlugin(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	tests := []struct {
		name, model, format, options string
		rate                         int
		speed                        float64
		stream                       bool
		media                        string
		frame                        int
	}{
		{name: "FALCON pcm clip", model: "FALCON", media: "audio/pcm;rate=24000", frame: 2},
		{name: "FALCON wav clip at 16 kHz", model: "FALCON", format: sdk.FormatWAV, rate: 16000, media: "audio/wav", frame: 1},
		{name: "FALCON mp3 stream, faster", model: "FALCON", format: sdk.FormatMP3, speed: 1.2, stream: true, media: "audio/mpeg", frame: 1},
		{name: "GEN2 pcm stream with options", model: "GEN2", options: `{"style":"Promo","variation":2}`, stream: true, media: "audio/pcm;rate=44100", frame: 2},
	}
	for name, p := range planners(t, map[string]string{"base_url": srv.BaseURL()}) {
		for _, tt := range tests {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				req := request(fake.Key)
				req.Model, req.Text, req.Format, req.SampleRate, req.Speed = tt.model, planSentence, tt.format, tt.rate, tt.speed
				if tt.options != "" {
					req.Options = []byte(tt.options)
				}
				pl, err := plan(t, p, *req, tt.stream)
				if err != nil {
					t.Fatal(err)
				}
				if pl.MediaType != tt.media || pl.FrameSize != tt.frame || pl.URL != srv.BaseURL()+fake.StreamPath {
					t.Errorf("plan %s: media type %q, frame size %d; want %q, %d", pl.URL, pl.MediaType, pl.FrameSize, tt.media, tt.frame)
				}
				planned, f, err := sdktest.SendPlan(t.Context(), http.DefaultClient, pl, req.Text)
				if err != nil || f != nil {
					t.Fatalf("the planned request failed: %v %+v", err, f)
				}
				sent, _ := srv.LastRequest()
				var audio []byte
				mediaType := ""
				if tt.stream {
					err = p.Stream(t.Context(), req, func(c sdk.Chunk) error {
						mediaType += c.MediaType
						audio = append(audio, c.Data...)
						return nil
					})
				} else {
					var resp *sdk.SynthesizeResponse
					if resp, err = p.Synthesize(t.Context(), req); err == nil {
						audio, mediaType = resp.Audio, resp.MediaType
					}
				}
				if err != nil {
					t.Fatal(err)
				}
				if mediaType != pl.MediaType || !bytes.Equal(audio, planned) {
					t.Errorf("the plugin answers %q, %d bytes; the plan %q, %d bytes", mediaType, len(audio), pl.MediaType, len(planned))
				}
				want, _ := srv.LastRequest()
				var sentBody, wantBody any
				_ = json.Unmarshal(sent.Body, &sentBody)
				_ = json.Unmarshal(want.Body, &wantBody)
				for _, h := range []string{"api-key", "Content-Type"} {
					if sent.Header.Get(h) != want.Header.Get(h) {
						t.Errorf("%s: planned %q, plugin %q", h, sent.Header.Get(h), want.Header.Get(h))
					}
				}
				if sent.Path != want.Path || !reflect.DeepEqual(sentBody, wantBody) {
					t.Errorf("planned %s %s\nplugin %s %s", sent.Path, sent.Body, want.Path, want.Body)
				}
			})
		}
	}
}

// TestEncodings asks Synthesize, Stream and Plan for every encoding of
// both models: each reaches Murf as exactly that format and sample rate
// (GEN2's clips on /v1/speech/generate, the rest on /v1/speech/stream),
// and the audio comes back as the fake sent it, byte for byte, with the
// sdk's media type.
func TestEncodings(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	d, err := p.Describe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{sdk.FormatPCM: "PCM", sdk.FormatWAV: "WAV", sdk.FormatMP3: "MP3", sdk.FormatFLAC: "FLAC"}
	sent := func(t *testing.T, body []byte) string {
		t.Helper()
		var b struct {
			Format     string `json:"format"`
			SampleRate int    `json:"sampleRate"`
		}
		if err := json.Unmarshal(body, &b); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%s %d", b.Format, b.SampleRate)
	}
	for _, m := range d.Models {
		if m.ID == sdk.AnyModel {
			continue // the ids the plugin passes through: TestPassThroughModel
		}
		for _, e := range m.Encodings {
			t.Run(m.ID+"/"+e.String(), func(t *testing.T) {
				want := fmt.Sprintf("%s %d", names[e.Format], e.SampleRate)
				req := request(fake.Key)
				req.Model, req.Format, req.SampleRate = m.ID, e.Format, e.SampleRate
				resp, err := p.Synthesize(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				got, _ := srv.LastRequest()
				wantPath := fake.StreamPath
				if m.ID == "GEN2" {
					wantPath = fake.GeneratePath
				}
				if f := sent(t, got.Body); f != want || got.Path != wantPath {
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
				got, _ = srv.LastRequest()
				if f := sent(t, got.Body); f != want || got.Path != fake.StreamPath {
					t.Errorf("stream: %s asked %s, want %s", got.Path, f, want)
				}
				if !bytes.Equal(streamed, srv.LastAnswer()) || mediaType != sdk.MediaType(e) {
					t.Errorf("stream: %d bytes of %q; the fake sent %d", len(streamed), mediaType, len(srv.LastAnswer()))
				}
				pl, err := plan(t, p, *req, true)
				if err != nil {
					t.Fatal(err)
				}
				if f := sent(t, pl.Body); f != want || pl.MediaType != sdk.MediaType(e) {
					t.Errorf("plan: asks %s of %q", f, pl.MediaType)
				}
			})
		}
	}
}

// TestPlanRefuses: GEN2's whole clips and timestamps are refused as
// unsupported so the gateway calls the plugin; the caller's mistakes as
// in Synthesize. No refusal calls upstream.
func TestPlanRefuses(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	tests := []struct {
		name   string
		modify func(*sdk.SynthesizeRequest)
		stream bool
		kind   sdk.ErrorKind
	}{
		{"GEN2 clip", func(*sdk.SynthesizeRequest) {}, false, sdk.KindUnsupported},
		{"GEN2 timestamps", func(r *sdk.SynthesizeRequest) { r.Timestamps = true }, false, sdk.KindUnsupported},
		{"FALCON timestamps", func(r *sdk.SynthesizeRequest) { r.Model, r.Timestamps = "FALCON", true }, false, sdk.KindUnsupported},
		{"unknown format", func(r *sdk.SynthesizeRequest) { r.Format = "ogg" }, true, sdk.KindInvalidRequest},
		{"not a model id", func(r *sdk.SynthesizeRequest) { r.Model = "Gen 1" }, true, sdk.KindInvalidRequest},
		{"no key", func(r *sdk.SynthesizeRequest) { r.Credentials = sdk.Credentials{} }, true, sdk.KindUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request(fake.Key)
			tt.modify(req)
			pl, err := plan(t, p, *req, tt.stream)
			if pl != nil || sdktest.AsError(t, err).Kind != tt.kind {
				t.Errorf("got %+v, %v; want %s", pl, err, tt.kind)
			}
		})
	}
	if n := srv.Calls(); n != 0 {
		t.Errorf("%d upstream calls", n)
	}
}

// TestExplainMatchesPlugin: an error answer to a planned request is
// explained as the plugin reports the same answer, without the key.
func TestExplainMatchesPlugin(t *testing.T) {
	const wrongKey = "ap2_wrong000-9999-8888-7777-666655554444"
	srv := fake.New(t, fakeupstream.Options{})
	tests := []struct {
		name   string
		key    string
		fault  *fakeupstream.Fault
		voice  string
		kind   sdk.ErrorKind
		status int
	}{
		{name: "wrong key", key: wrongKey, kind: sdk.KindUnauthorized, status: 403},
		{name: "key echoed", key: fake.Key, fault: &fakeupstream.Fault{Status: 403, Message: "api-key " + fake.Key + " revoked"}, kind: sdk.KindUnauthorized, status: 403},
		{name: "quota", key: fake.Key, fault: &fakeupstream.Fault{Status: 402}, kind: sdk.KindUpstream, status: 402},
		{name: "429", key: fake.Key, fault: &fakeupstream.Fault{Status: 429, RetryAfter: "3"}, kind: sdk.KindRateLimited, status: 429},
		{name: "503", key: fake.Key, fault: &fakeupstream.Fault{Status: 503}, kind: sdk.KindUnavailable, status: 503},
		{name: "unknown voice", key: fake.Key, voice: "en-US-nobody", kind: sdk.KindInvalidRequest, status: 400},
	}
	// One attempt: the plugin reports the first answer, as the plan's is.
	for name, p := range planners(t, map[string]string{"base_url": srv.BaseURL(), "max_attempts": "1"}) {
		for _, tt := range tests {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				srv.Reset()
				if tt.fault != nil {
					srv.FailAlways(*tt.fault)
				}
				req := request(tt.key)
				req.Model = "FALCON"
				if tt.voice != "" {
					req.Voice = tt.voice
				}
				_, err := p.Synthesize(t.Context(), req)
				want := sdktest.AsError(t, err)
				pl, err := plan(t, p, *req, false)
				if err != nil {
					t.Fatal(err)
				}
				_, f, err := sdktest.SendPlan(t.Context(), http.DefaultClient, pl, req.Text)
				if err != nil || f == nil {
					t.Fatalf("the planned request succeeded: %v", err)
				}
				f.Credentials = req.Credentials
				got := sdktest.AsError(t, p.(sdk.Planner).Explain(t.Context(), f))
				if *got != *want || got.Kind != tt.kind || got.UpstreamStatus != tt.status {
					t.Errorf("Explain: %+v\nSynthesize: %+v\nwant kind %s, status %d", got, want, tt.kind, tt.status)
				}
				if strings.Contains(got.Error(), tt.key) {
					t.Errorf("the explanation %q shows the API key", got.Error())
				}
			})
		}
	}
}

// TestUsageReadBack: the characters Murf says a GEN2 clip consumed
// (consumedCharacterCount) come back as the call's billed characters.
func TestUsageReadBack(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	req := request(fake.Key)
	req.Model = "GEN2"
	resp, err := p.Synthesize(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if want := []sdk.BilledUsage{{Unit: sdk.UnitCharacters, Quantity: int64(len([]rune(req.Text)))}}; !reflect.DeepEqual(resp.Billed, want) {
		t.Errorf("clip billed %+v, want %+v", resp.Billed, want)
	}
}
