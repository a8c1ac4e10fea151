package main

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	fake "github.com/voxgate/voxgate/internal/fakeupstream/mistral"
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
		Voice:        fake.VoiceJane,
		Credentials:  sdk.Credentials{APIKey: fake.Key},
		InvalidVoice: "no_such_voice",
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
	for _, m := range models() {
		t.Run(m.ID, func(t *testing.T) {
			sdktest.Run(t, New(), kitConfig(srv, m.ID))
		})
	}
}

func configured(t *testing.T, baseURL string, extra map[string]string) *Provider {
	return sdktest.Configure(t, New(), map[string]string{"base_url": baseURL}, extra)
}

func request(key string) *sdk.SynthesizeRequest {
	return &sdk.SynthesizeRequest{Model: defaultModel, Voice: fake.VoiceSheila, Text: "Hello there, world.", Credentials: sdk.Credentials{APIKey: key}}
}

func cloneRequest(key string) *sdk.CloneRequest {
	return &sdk.CloneRequest{
		Model: defaultModel, Name: "Narrator", Description: "calm",
		Samples:     []sdk.Sample{{Filename: "me.pcm", MediaType: "audio/pcm;rate=16000", Data: make([]byte, 3200)}},
		Credentials: sdk.Credentials{APIKey: key},
	}
}

func TestUpstreamFailures(t *testing.T) {
	const wrongKey = "ms-wrong-9876543210zyxwvutsrq"
	sdktest.Failures[*fake.Server]{
		Fake: func(t *testing.T) *fake.Server { return fake.New(t, fakeupstream.Options{}) },
		Provider: func(t *testing.T, srv *fake.Server, s map[string]string) sdk.Provider {
			return configured(t, srv.BaseURL(), s)
		},
		Request: request,
		Clone:   cloneRequest,
	}.Run(t, []sdktest.FailureCase[*fake.Server]{
		{Name: "wrong key", Key: wrongKey, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401, MessageHas: "mistral: Unauthorized"}, Path: fake.SpeechPath, Calls: 1},
		{Name: "missing key", Want: &sdktest.Answer{Kind: sdk.KindUnauthorized}, Path: fake.SpeechPath, Calls: 0},
		{Name: "content moderation is the text's fault", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindInvalidRequest, Status: 403, Code: "content_moderation", MessageHas: "content moderation"}, Path: fake.SpeechPath, Calls: 1,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 403}) }},
		{Name: "unknown voice", Key: fake.Key, Voice: "nobody", Want: &sdktest.Answer{Kind: sdk.KindInvalidRequest, Status: 404, Code: "1902", MessageHas: "Voice 'nobody' not found."}, Path: fake.SpeechPath, Calls: 1},
		{Name: "429 with Retry-After, then success", Key: fake.Key, Path: fake.SpeechPath, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "0.05"}) }},
		{Name: "429 forever", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindRateLimited, Status: 429, Code: "rate_limited", Retryable: true, RetryAfter: 20 * time.Millisecond}, Path: fake.SpeechPath, Calls: 3,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 429, RetryAfter: "0.02"}) }},
		{Name: "503 retried", Key: fake.Key, Op: sdktest.OpStream, Path: fake.SpeechPath, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 503}) }},
		{Name: "stream 401", Key: wrongKey, Op: sdktest.OpStream, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401}, Path: fake.SpeechPath, Calls: 1},
		{Name: "voices 401", Key: wrongKey, Op: sdktest.OpVoices, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401}, Path: fake.VoicesPath, Calls: 1},
		{Name: "timeout", Key: fake.Key, Settings: map[string]string{"timeout": "200ms"}, Want: &sdktest.Answer{Kind: sdk.KindTimeout, Retryable: true}, Path: fake.SpeechPath, Calls: 1,
			Setup: func(s *fake.Server) { s.SetLatency(time.Minute) }},
		{Name: "clone succeeds", Key: fake.Key, Op: sdktest.OpClone, Path: fake.VoicesPath, Calls: 1},
		{Name: "clone is never retried", Key: fake.Key, Op: sdktest.OpClone, Want: &sdktest.Answer{Kind: sdk.KindUpstream, Status: 500, Code: "internal_server_error", Retryable: true}, Path: fake.VoicesPath, Calls: 1,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 500}) }},
	})
}

// TestAudioIsExact: Voxtral's float32 samples come back as exactly the
// 16-bit samples the fake rendered, in clips and in streams, and the
// request is what the API documents.
func TestAudioIsExact(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{ChunkSize: 1001}) // chunks that split float32 samples
	p := configured(t, srv.BaseURL(), nil)
	studio, err := fakeupstream.NewStudio()
	if err != nil {
		t.Fatal(err)
	}
	req := request(fake.Key)
	want := studio.PCM(fakeupstream.Speak(req.Text, 1), sampleRate).Bytes()
	for _, tt := range []struct {
		name, format, media string
		stream              bool
		want                []byte
	}{
		{"pcm clip", sdk.FormatPCM, "audio/pcm;rate=24000", false, want},
		{"wav clip", sdk.FormatWAV, "audio/wav", false, append(fakeupstream.WAVHeader(sampleRate, len(want)), want...)},
		{"pcm stream", sdk.FormatPCM, "audio/pcm;rate=24000", true, want},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := *req
			r.Format = tt.format
			var media string
			var audio []byte
			if tt.stream {
				var chunks []sdk.Chunk
				if err := p.Stream(t.Context(), &r, func(c sdk.Chunk) error {
					chunks = append(chunks, c)
					media = cmpStr(media, c.MediaType)
					audio = append(audio, c.Data...)
					return nil
				}); err != nil {
					t.Fatal(err)
				}
				for i, c := range chunks {
					if len(c.Data)%2 != 0 || (i == 0) != (c.MediaType != "") {
						t.Errorf("chunk %d: %d bytes, media type %q", i, len(c.Data), c.MediaType)
					}
				}
				if len(chunks) < 3 {
					t.Errorf("%d chunks", len(chunks))
				}
			} else {
				resp, err := p.Synthesize(t.Context(), &r)
				if err != nil {
					t.Fatal(err)
				}
				media, audio = resp.MediaType, resp.Audio
			}
			if media != tt.media || !bytes.Equal(audio, tt.want) {
				t.Errorf("%q, %d bytes; want %q, %d bytes, identical", media, len(audio), tt.media, len(tt.want))
			}
			got, _ := srv.LastRequest()
			var body map[string]any
			_ = json.Unmarshal(got.Body, &body)
			wantBody := map[string]any{"model": defaultModel, "input": req.Text, "voice_id": fake.VoiceSheila, "response_format": "pcm", "stream": tt.stream}
			if fmt.Sprint(body) != fmt.Sprint(wantBody) {
				t.Errorf("body %v, want %v", body, wantBody)
			}
			accept := map[bool]string{false: "application/json", true: "text/event-stream"}[tt.stream]
			if got.Header.Get("Authorization") != "Bearer "+fake.Key || got.Header.Get("Accept") != accept {
				t.Errorf("headers %v", got.Header)
			}
		})
	}
}

func cmpStr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func TestRequestOptions(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	req := request(fake.Key)
	req.Format = sdk.FormatMP3
	clip := base64.StdEncoding.EncodeToString([]byte("RIFF...."))
	req.Options = []byte(`{"ref_audio": "` + clip + `", "metadata": {"job": "42"}}`)
	resp, err := p.Synthesize(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sdktest.Decode(resp.MediaType, resp.Audio); err != nil || resp.MediaType != "audio/mpeg" {
		t.Fatalf("%q: %v", resp.MediaType, err)
	}
	got, _ := srv.LastRequest()
	var body map[string]any
	_ = json.Unmarshal(got.Body, &body)
	if body["ref_audio"] != clip || body["voice_id"] != nil || body["response_format"] != "mp3" || fmt.Sprint(body["metadata"]) != "map[job:42]" {
		t.Errorf("body %s", got.Body)
	}
}

func TestInt16PCM(t *testing.T) {
	f32 := func(vs ...float32) []byte {
		b := make([]byte, 4*len(vs))
		for i, v := range vs {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		return b
	}
	got := int16PCM(f32(0, 0.5, -0.5, 1, -1, 1.5, -7, float32(math.NaN()), 1.0/32768))
	want := []int16{0, 16384, -16384, 32767, -32768, 32767, -32768, 0, 1}
	for i, w := range want {
		if s := int16(binary.LittleEndian.Uint16(got[2*i:])); s != w {
			t.Errorf("sample %d = %d, want %d", i, s, w)
		}
	}
}

// BenchmarkInt16PCM measures the conversion of every pcm and wav clip: 3
// seconds of Voxtral audio.
func BenchmarkInt16PCM(b *testing.B) {
	f32 := make([]byte, 4*3*sampleRate)
	b.SetBytes(int64(len(f32)))
	b.ReportAllocs()
	for b.Loop() {
		_ = int16PCM(f32)
	}
}

// eventServer answers every request with a fixed event stream.
func eventServer(t *testing.T, body string) *Provider {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return configured(t, srv.URL, nil)
}

// TestStreamEvents drives Stream with hand-written event streams.
func TestStreamEvents(t *testing.T) {
	delta := func(f32 []byte) string {
		return "event: speech.audio.delta\ndata: {\"type\":\"speech.audio.delta\",\"audio_data\":\"" + base64.StdEncoding.EncodeToString(f32) + "\"}\n\n"
	}
	half := make([]byte, 4)
	binary.LittleEndian.PutUint32(half, math.Float32bits(0.5))
	const done = "event: speech.audio.done\ndata: {\"type\":\"speech.audio.done\",\"usage\":{}}\n\n"
	tests := []struct {
		name string
		body string
		want []byte
		kind sdk.ErrorKind // -1: success
	}{
		{"a sample split across events", delta(half[:1]) + delta(half[1:3]) + ": keep-alive\n\n" + delta(half[3:]) + done, []byte{0x00, 0x40}, -1},
		{"events after done are ignored", delta(half) + done + delta(half), []byte{0x00, 0x40}, -1},
		{"unknown events are skipped", "data: {\"type\":\"speech.audio.progress\"}\n\n" + delta(half), []byte{0x00, 0x40}, -1},
		{"an error in the stream", delta(half) + "data: {\"object\":\"error\",\"message\":\"overloaded\",\"type\":\"service_unavailable\",\"code\":null,\"raw_status_code\":503}\n\n",
			[]byte{0x00, 0x40}, sdk.KindUnavailable},
		{"not JSON", "data: hello\n\n", nil, sdk.KindUpstream},
		{"bad base64", "data: {\"type\":\"speech.audio.delta\",\"audio_data\":\"!!\"}\n\n", nil, sdk.KindUpstream},
		{"a dangling part of a sample", delta(half[:3]) + done, nil, sdk.KindUpstream},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := eventServer(t, tt.body)
			var got []byte
			err := p.Stream(t.Context(), request(fake.Key), func(c sdk.Chunk) error {
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
		})
	}
}

func TestVoicesFollowPages(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	// Enough voices of our own for two pages of 100.
	for i := range 100 {
		req := cloneRequest(fake.Key)
		req.Name = fmt.Sprintf("Mine %d", i)
		if _, err := p.Clone(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	srv.Reset()
	voices, err := p.Voices(t.Context(), &sdk.VoicesRequest{Credentials: sdk.Credentials{APIKey: fake.Key}})
	if err != nil {
		t.Fatal(err)
	}
	if len(voices) != 103 || srv.CallsTo(fake.VoicesPath) != 2 {
		t.Fatalf("%d voices in %d calls, want 103 in 2", len(voices), srv.CallsTo(fake.VoicesPath))
	}
	if want := (sdk.Voice{ID: fake.VoiceSheila, Name: "Sheila", Language: "en-us", Gender: "female"}); voices[0] != want {
		t.Errorf("voice 0 = %+v, want %+v", voices[0], want)
	}
	if v := voices[102]; !strings.HasPrefix(v.ID, "c0ffee00-") || v.Name != "Mine 99" {
		t.Errorf("voice 102 = %+v", v)
	}
	reqs := srv.Requests()
	if q := reqs[1].Query; q.Get("offset") != "100" || q.Get("limit") != "100" || q.Get("type") != "all" {
		t.Errorf("second page query %v", q)
	}
}

func TestCloneOnTheWire(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	req := cloneRequest(fake.Key)
	req.Options = []byte(`{"languages": ["en_us"], "gender": "female", "retention_notice": 7, "slug": "my_narrator"}`)
	resp, err := p.Clone(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := srv.LastRequest()
	var body map[string]any
	if err := json.Unmarshal(got.Body, &body); err != nil {
		t.Fatal(err)
	}
	sample, _ := base64.StdEncoding.DecodeString(body["sample_audio"].(string))
	if body["name"] != "Narrator" || body["description"] != "calm" || body["sample_filename"] != "me.wav" || len(sample) != 44+3200 ||
		body["slug"] != "my_narrator" || body["retention_notice"] != 7.0 || fmt.Sprint(body["languages"]) != "[en_us]" {
		t.Errorf("body %.300s", got.Body)
	}
	synth := request(fake.Key)
	synth.Voice = resp.VoiceID
	if _, err := p.Synthesize(t.Context(), synth); err != nil {
		t.Errorf("synthesizing with the saved voice: %v", err)
	}
	for name, bad := range map[string]*sdk.CloneRequest{
		"no samples":     {Credentials: req.Credentials},
		"two samples":    {Samples: append(req.Samples, req.Samples[0]), Credentials: req.Credentials},
		"empty sample":   {Samples: []sdk.Sample{{MediaType: "audio/wav"}}, Credentials: req.Credentials},
		"unknown option": {Samples: req.Samples, Options: []byte(`{"sample_audio": "x"}`), Credentials: req.Credentials},
	} {
		if _, err := p.Clone(t.Context(), bad); sdktest.AsError(t, err).Kind != sdk.KindInvalidRequest {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestInvalidRequests(t *testing.T) {
	tests := []sdktest.Refusal{
		{Name: "unknown option", Modify: func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"instruction": "calm"}`) }},
		{Name: "the gateway's own field", Modify: func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"response_format": "flac"}`) }},
		{Name: "no voice", Modify: func(r *sdk.SynthesizeRequest) { r.Voice = "" }},
		{Name: "blank text", Modify: func(r *sdk.SynthesizeRequest) { r.Text = " " }},
		{Name: "rate", Modify: func(r *sdk.SynthesizeRequest) { r.SampleRate = 16000 }},
		{Name: "not a speech model id", Modify: func(r *sdk.SynthesizeRequest) { r.Model = "voxtral-9" }},
		{Name: "format", Modify: func(r *sdk.SynthesizeRequest) { r.Format = "aac" }},
		{Name: "rate", Modify: func(r *sdk.SynthesizeRequest) { r.Format, r.SampleRate = sdk.FormatMP3, 44100 }},
		{Name: "bitrate", Modify: func(r *sdk.SynthesizeRequest) { r.Format, r.Bitrate = sdk.FormatMP3, 128 }},
	}
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	sdktest.CheckRefusals(t, p, func() *sdk.SynthesizeRequest { return request(fake.Key) }, tests)
	req := request(fake.Key)
	req.Timestamps = true
	if _, err := p.Synthesize(t.Context(), req); sdktest.AsError(t, err).Kind != sdk.KindUnsupported {
		t.Errorf("timestamps: %v", err)
	}
	if n := srv.Calls(); n != 0 {
		t.Errorf("%d upstream calls for invalid requests", n)
	}
}

// TestPassThroughModel: through the plugin process, a speech model
// Mistral has and the plugin does not list (a newer one) reaches Mistral
// under the id the caller wrote; an id that cannot be a Mistral speech
// model is refused without a call.
func TestPassThroughModel(t *testing.T) {
	const newModel = "voxtral-small-tts-2701"
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
		Invalid: []string{"voxtral-mini-2507", "mistral-large-latest", "Voxtral-mini-tts", "voxtral-mini-tts 2", "voxtral-tts/../x", ""},
	})
}

func TestParseError(t *testing.T) {
	tests := []struct{ body, code, msg string }{
		{`{"object":"error","message":"Voice 'x' not found.","type":"invalid_voice","param":null,"code":"1902","raw_status_code":404}`, "1902", "Voice 'x' not found."},
		{`{"object":"error","message":"Either ref_audio or voice must be provided.","type":"invalid_request_error","param":null,"code":null}`, "invalid_request_error", "Either ref_audio or voice must be provided."},
		{`{"object":"error","message":{"detail":[{"type":"extra_forbidden","loc":["body","speed"],"msg":"Extra inputs are not permitted"}]},"type":"invalid_request_error","code":null}`, "invalid_request_error", "speed: Extra inputs are not permitted"},
		{`{"detail":[{"loc":["query","limit"],"msg":"too big"}]}`, "validation_error", "limit: too big"},
		{`{"message":"Unauthorized","request_id":"abc"}`, "", "Unauthorized"},
		{`{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`, "rate_limit_exceeded", "slow down"},
		{`<html>502</html>`, "", ""},
	}
	for _, tt := range tests {
		code, msg := parseError([]byte(tt.body))
		if code != tt.code || msg != tt.msg {
			t.Errorf("parseError(%.60s) = %q, %q; want %q, %q", tt.body, code, msg, tt.code, tt.msg)
		}
	}
}

// TestEncodingsPassThrough asks, through the plugin process, for every
// encoding each model lists, clip and stream: mp3, flac and opus must be
// asked for as that response_format and come back as Mistral's bytes
// untouched; pcm and wav are asked for as pcm (float32) and must be those
// samples in 16 bits, nothing else changed.
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
	// want is what the plugin must hand on for Mistral's answer.
	want := func(format string, answer []byte) []byte {
		if format != sdk.FormatPCM && format != sdk.FormatWAV {
			return answer
		}
		out := make([]byte, 0, len(answer)/2)
		for i := 0; i+4 <= len(answer); i += 4 {
			v := math.Float32frombits(binary.LittleEndian.Uint32(answer[i:]))
			out = binary.LittleEndian.AppendUint16(out, uint16(int16(max(-32768, min(32767, math.Round(float64(v)*32768))))))
		}
		if format == sdk.FormatWAV {
			out = append(fakeupstream.WAVHeader(sampleRate, len(out)), out...)
		}
		return out
	}
	for _, m := range desc.Models {
		if m.ID == sdk.AnyModel {
			continue // the ids the plugin passes through: TestPassThroughModel
		}
		for _, e := range m.Encodings {
			t.Run(m.ID+"/"+e.String(), func(t *testing.T) {
				req := request(fake.Key)
				req.Model, req.Format, req.SampleRate, req.Bitrate = m.ID, e.Format, e.SampleRate, e.Bitrate
				asked := e.Format
				if e.Format == sdk.FormatWAV {
					asked = sdk.FormatPCM
				}
				check := func(what string) {
					t.Helper()
					got, _ := srv.LastRequest()
					var body struct {
						ResponseFormat string `json:"response_format"`
					}
					if err := got.JSON(&body); err != nil || body.ResponseFormat != asked {
						t.Errorf("%s: asked Mistral for %q (%v), want %q", what, body.ResponseFormat, err, asked)
					}
				}
				resp, err := p.Synthesize(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				check("clip")
				if clip, err := sdktest.Decode(resp.MediaType, resp.Audio); err != nil || clip.Format != e.Format || resp.MediaType != sdk.MediaType(e) {
					t.Errorf("the clip is %q, %+v (%v); want %s", resp.MediaType, clip, err, e)
				}
				if !bytes.Equal(resp.Audio, want(e.Format, srv.LastAnswer())) {
					t.Errorf("the clip (%d bytes) is not Mistral's answer (%d bytes)", len(resp.Audio), len(srv.LastAnswer()))
				}
				if e.Format == sdk.FormatWAV {
					return // a streamed WAV has a header of unknown length
				}
				var streamed []byte
				if err := p.Stream(t.Context(), req, func(c sdk.Chunk) error { streamed = append(streamed, c.Data...); return nil }); err != nil {
					t.Fatal(err)
				}
				check("stream")
				if !bytes.Equal(streamed, want(e.Format, srv.LastAnswer())) {
					t.Errorf("the stream (%d bytes) is not Mistral's answer (%d bytes)", len(streamed), len(srv.LastAnswer()))
				}
			})
		}
	}
}
