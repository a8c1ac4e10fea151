package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	fake "github.com/voxgate/voxgate/internal/fakeupstream/minimax"
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
		Voice:        fake.VoiceNarrator,
		Credentials:  sdk.Credentials{APIKey: fake.Key},
		InvalidVoice: "no_such_voice_at_all",
	}
}

// TestConformance runs the kit against the real plugin process talking to
// the fake over HTTP.
func TestConformance(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	sdktest.Run(t, sdktest.StartPlugin(t, pluginPath), kitConfig(srv, ""))
}

// TestConformanceInProcess runs the kit in process for two models, the
// newest and an older generation: every model shares one description and
// one code path, so running all ten would test the same thing ten times.
func TestConformanceInProcess(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	for _, m := range []string{defaultModel, "speech-02-turbo"} {
		t.Run(m, func(t *testing.T) {
			sdktest.Run(t, New(), kitConfig(srv, m))
		})
	}
}

func configured(t *testing.T, baseURL string, extra map[string]string) *Provider {
	return sdktest.Configure(t, New(), map[string]string{"base_url": baseURL}, extra)
}

func request(key string) *sdk.SynthesizeRequest {
	return &sdk.SynthesizeRequest{Model: defaultModel, Voice: fake.VoiceNarrator, Text: "Hello there, world.", Credentials: sdk.Credentials{APIKey: key}}
}

func cloneRequest(key string) *sdk.CloneRequest {
	return &sdk.CloneRequest{
		Model: defaultModel, Name: "Narrator", Description: "calm",
		Samples:     []sdk.Sample{{Filename: "me.pcm", MediaType: "audio/pcm;rate=16000", Data: make([]byte, 3200)}},
		Credentials: sdk.Credentials{APIKey: key},
	}
}

func TestUpstreamFailures(t *testing.T) {
	const wrongKey = "mm-wrong-9876543210zyxwvutsrq"
	sdktest.Failures[*fake.Server]{
		Fake: func(t *testing.T) *fake.Server { return fake.New(t, fakeupstream.Options{}) },
		Provider: func(t *testing.T, srv *fake.Server, s map[string]string) sdk.Provider {
			return configured(t, srv.BaseURL(), s)
		},
		Request: request,
		Clone:   cloneRequest,
	}.Run(t, []sdktest.FailureCase[*fake.Server]{
		{Name: "wrong key: HTTP 200, status_code 1004", Key: wrongKey, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401, Code: "1004", MessageHas: "minimax: login fail"}, Path: fake.T2APath, Calls: 1},
		{Name: "missing key", Want: &sdktest.Answer{Kind: sdk.KindUnauthorized}, Path: fake.T2APath, Calls: 0},
		{Name: "group id mismatch", Key: fake.Key, Settings: map[string]string{"group_id": "42"}, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401, Code: "1004", MessageHas: "token not match group"}, Path: fake.T2APath, Calls: 1},
		{Name: "group id", Key: fake.Key, Settings: map[string]string{"group_id": fake.GroupID}, Path: fake.T2APath, Calls: 1},
		{Name: "no balance", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindUpstream, Status: 402, Code: "1008"}, Path: fake.T2APath, Calls: 1,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 402}) }},
		{Name: "rate limit once, then success", Key: fake.Key, Path: fake.T2APath, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "0.05"}) }},
		{Name: "rate limit forever", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindRateLimited, Status: 429, Code: "1002", Retryable: true, RetryAfter: 20 * time.Millisecond}, Path: fake.T2APath, Calls: 3,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 429, RetryAfter: "0.02"}) }},
		{Name: "rate limit with a long Retry-After is passed on", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindRateLimited, Status: 429, Code: "1002", Retryable: true, RetryAfter: 30 * time.Second}, Path: fake.T2APath, Calls: 1,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 429, RetryAfter: "30"}) }},
		{Name: "token rate limit code", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindRateLimited, Status: 429, Code: "1039", Retryable: true}, Path: fake.T2APath, Calls: 3,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Code: "1039"}) }},
		{Name: "internal error code retried", Key: fake.Key, Path: fake.T2APath, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Code: "1024"}) }},
		{Name: "HTTP 503 retried", Key: fake.Key, Path: fake.T2APath, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 503}) }},
		{Name: "HTTP 502 forever", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindUnavailable, Status: 502, Code: "1000", Retryable: true}, Path: fake.T2APath, Calls: 3,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 502}) }},
		// A value outside the documented ranges no longer reaches MiniMax
		// (the plugin refuses it first), so its code 2013 is injected.
		{Name: "invalid params", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindInvalidRequest, Status: 400, Code: "2013", MessageHas: "pitch"}, Path: fake.T2APath, Calls: 1,
			Setup: func(s *fake.Server) {
				s.FailNext(1, fakeupstream.Fault{Code: "2013", Message: "invalid params, voice_setting.pitch must be an integer in [-12, 12]"})
			}},
		{Name: "timeout", Key: fake.Key, Settings: map[string]string{"timeout": "200ms"}, Want: &sdktest.Answer{Kind: sdk.KindTimeout, Retryable: true}, Path: fake.T2APath, Calls: 1,
			Setup: func(s *fake.Server) { s.SetLatency(time.Minute) }},
		{Name: "stream: wrong key", Key: wrongKey, Op: sdktest.OpStream, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401, Code: "1004"}, Path: fake.T2APath, Calls: 1},
		{Name: "stream: rate limit once, retried before any audio", Key: fake.Key, Op: sdktest.OpStream, Path: fake.T2APath, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 429}) }},
		{Name: "stream: HTTP 503 retried", Key: fake.Key, Op: sdktest.OpStream, Path: fake.T2APath, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 503}) }},
		{Name: "voices: wrong key", Key: wrongKey, Op: sdktest.OpVoices, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401, Code: "1004"}, Path: fake.VoicesPath, Calls: 1},
		{Name: "clone: upload never retried", Key: fake.Key, Op: sdktest.OpClone, Want: &sdktest.Answer{Kind: sdk.KindUpstream, Status: 500, Code: "1024", Retryable: true}, Path: fake.UploadPath, Calls: 1,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Path: fake.UploadPath, Code: "1024"}) }},
	})
}

func TestRequestOnTheWire(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), map[string]string{"group_id": fake.GroupID})
	tests := []struct {
		name, format, options string
		rate                  int
		speed                 float64
		stream                bool
		want                  string // the body without model, text and voice_id, canonical
	}{
		{name: "default", want: `{"audio_setting":{"channel":1,"format":"pcm","sample_rate":32000},"output_format":"hex","stream":false,"voice_setting":{}}`},
		{name: "wav is MiniMax's", format: sdk.FormatWAV, rate: 16000, want: `{"audio_setting":{"channel":1,"format":"wav","sample_rate":16000},"output_format":"hex","stream":false,"voice_setting":{}}`},
		{name: "a wav stream is pcm with our header", format: sdk.FormatWAV, rate: 16000, stream: true, want: `{"audio_setting":{"channel":1,"format":"pcm","sample_rate":16000},"stream":true,"stream_options":{"exclude_aggregated_audio":true},"voice_setting":{}}`},
		{name: "mp3 with options", format: sdk.FormatMP3, options: `{"audio_setting": {"bitrate": 256000}, "voice_setting": {"emotion": "happy", "vol": 2}, "language_boost": "English", "pronunciation_dict": {"tone": ["omg/oh my god"]}}`,
			want: `{"audio_setting":{"bitrate":256000,"channel":1,"format":"mp3","sample_rate":32000},"language_boost":"English","output_format":"hex","pronunciation_dict":{"tone":["omg/oh my god"]},"stream":false,"voice_setting":{"emotion":"happy","vol":2}}`},
		{name: "speed overrides the option's", speed: 1.5, options: `{"voice_setting": {"speed": 0.6}}`, want: `{"audio_setting":{"channel":1,"format":"pcm","sample_rate":32000},"output_format":"hex","stream":false,"voice_setting":{"speed":1.5}}`},
		{name: "stream", stream: true, want: `{"audio_setting":{"channel":1,"format":"pcm","sample_rate":32000},"stream":true,"stream_options":{"exclude_aggregated_audio":true},"voice_setting":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request(fake.Key)
			req.Format, req.SampleRate, req.Speed = tt.format, tt.rate, tt.speed
			if tt.options != "" {
				req.Options = []byte(tt.options)
			}
			var mediaType string
			var audio []byte
			if tt.stream {
				err := p.Stream(t.Context(), req, func(c sdk.Chunk) error {
					mediaType = cmpStr(mediaType, c.MediaType)
					audio = append(audio, c.Data...)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			} else {
				resp, err := p.Synthesize(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				mediaType, audio = resp.MediaType, resp.Audio
			}
			clip, err := sdktest.Decode(mediaType, audio)
			if err != nil {
				t.Fatal(err)
			}
			speed := tt.speed
			if speed == 0 {
				speed = 1
			}
			if want := fakeupstream.Speak(req.Text, speed).Seconds; clip.Format != "mp3" && math.Abs(clip.Seconds()-want) > 0.001 {
				t.Errorf("clip %.3f s, want %.3f s", clip.Seconds(), want)
			}
			got, _ := srv.LastRequest()
			if got.Header.Get("Authorization") != "Bearer "+fake.Key || got.Header.Get("Content-Type") != "application/json" || got.Query.Get("GroupId") != fake.GroupID {
				t.Errorf("headers %v, query %v", got.Header, got.Query)
			}
			var body map[string]any
			if err := json.Unmarshal(got.Body, &body); err != nil {
				t.Fatal(err)
			}
			vs, _ := body["voice_setting"].(map[string]any)
			if body["model"] != defaultModel || body["text"] != req.Text || vs["voice_id"] != fake.VoiceNarrator {
				t.Errorf("body %s", got.Body)
			}
			delete(body, "model")
			delete(body, "text")
			delete(vs, "voice_id")
			if canonical, _ := json.Marshal(body); string(canonical) != tt.want {
				t.Errorf("body %s\nwant %s", canonical, tt.want)
			}
		})
	}
}

// TestEncodings asks Synthesize and Stream for every encoding the models
// list: each reaches MiniMax as exactly that format, sample rate and
// bitrate (a streamed wav as pcm, MiniMax streaming no wav), and the audio
// comes back as the fake sent it, byte for byte (a streamed wav behind the
// header the plugin adds), with the sdk's media type. Encodings the models
// do not list are refused before any call.
func TestEncodings(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	setting := func(t *testing.T) string {
		t.Helper()
		got, _ := srv.LastRequest()
		var b struct {
			AudioSetting map[string]any `json:"audio_setting"`
		}
		if err := json.Unmarshal(got.Body, &b); err != nil {
			t.Fatal(err)
		}
		out, _ := json.Marshal(b.AudioSetting)
		return string(out)
	}
	want := func(format string, e sdk.Encoding) string {
		if e.Bitrate > 0 {
			return fmt.Sprintf(`{"bitrate":%d,"channel":1,"format":%q,"sample_rate":%d}`, e.Bitrate*1000, format, e.SampleRate)
		}
		return fmt.Sprintf(`{"channel":1,"format":%q,"sample_rate":%d}`, format, e.SampleRate)
	}
	for _, e := range models()[0].Encodings {
		t.Run(e.String(), func(t *testing.T) {
			req := request(fake.Key)
			req.Format, req.SampleRate, req.Bitrate = e.Format, e.SampleRate, e.Bitrate
			resp, err := p.Synthesize(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if got := setting(t); got != want(e.Format, e) {
				t.Errorf("clip: audio_setting %s, want %s", got, want(e.Format, e))
			}
			if !bytes.Equal(resp.Audio, srv.LastAnswer()) || resp.MediaType != sdk.MediaType(e) {
				t.Errorf("clip: %d bytes of %q; the fake sent %d, want %q", len(resp.Audio), resp.MediaType, len(srv.LastAnswer()), sdk.MediaType(e))
			}
			var streamed []byte
			var mediaType string
			err = p.Stream(t.Context(), req, func(c sdk.Chunk) error {
				mediaType = cmpStr(mediaType, c.MediaType)
				streamed = append(streamed, c.Data...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			asked, sent := e.Format, srv.LastAnswer()
			if e.Format == sdk.FormatWAV {
				asked, sent = sdk.FormatPCM, append(upstream.WAVHeader(e.SampleRate, upstream.StreamingWAV), sent...)
			}
			if got := setting(t); got != want(asked, e) {
				t.Errorf("stream: audio_setting %s, want %s", got, want(asked, e))
			}
			if !bytes.Equal(streamed, sent) || mediaType != sdk.MediaType(e) {
				t.Errorf("stream: %d bytes of %q, want %d", len(streamed), mediaType, len(sent))
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

// eventServer answers every request with a fixed body of contentType.
func eventServer(t *testing.T, contentType, body string) (*Provider, *atomic.Int32) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", contentType)
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return configured(t, srv.URL, nil), &calls
}

// TestStreamEvents drives Stream with hand-written answers: the final
// event's aggregated audio, odd chunk sizes, errors before and after audio
// went out, and garbage.
func TestStreamEvents(t *testing.T) {
	ev := func(audio string, status int) string {
		return fmt.Sprintf("data: {\"data\":{\"audio\":%q,\"status\":%d},\"base_resp\":{\"status_code\":0,\"status_msg\":\"\"}}\n\n", audio, status)
	}
	const limited = "data: {\"base_resp\":{\"status_code\":1002,\"status_msg\":\"rate limit\"}}\n\n"
	tests := []struct {
		name        string
		contentType string
		body        string
		want        []byte
		kind        sdk.ErrorKind // -1: success
		calls       int32
	}{
		{"aggregated audio at the end is not sent twice", "text/event-stream", ev("0102", 1) + ev("0304", 1) + ev("01020304", 2), []byte{1, 2, 3, 4}, -1, 1},
		{"a single final event is the audio", "text/event-stream", ev("0102", 2), []byte{1, 2}, -1, 1},
		{"odd chunks kept to whole samples", "text/event-stream", ev("01", 1) + ev("0203", 1) + ev("04", 1) + ev("", 2) + "data: [DONE]\n\n", []byte{1, 2, 3, 4}, -1, 1},
		{"an error before any audio is retried", "text/event-stream", limited, nil, sdk.KindRateLimited, 3},
		{"an error after audio went out is not", "text/event-stream", ev("0102", 1) + limited, []byte{1, 2}, sdk.KindRateLimited, 1},
		{"an error as plain JSON", "application/json", `{"base_resp":{"status_code":1004,"status_msg":"invalid api key"}}`, nil, sdk.KindUnauthorized, 1},
		{"not JSON", "text/event-stream", "data: hello\n\n", nil, sdk.KindUpstream, 1},
		{"not hex", "text/event-stream", ev("zz", 1), nil, sdk.KindUpstream, 1},
		{"a dangling half sample", "text/event-stream", ev("010203", 1) + ev("", 2), []byte{1, 2}, sdk.KindUpstream, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, calls := eventServer(t, tt.contentType, tt.body)
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
			if calls.Load() != tt.calls {
				t.Errorf("%d calls, want %d", calls.Load(), tt.calls)
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

// TestWAVStream: a wav stream opens with a header of unknown length, then
// the PCM, and the whole decodes.
func TestWAVStream(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{ChunkSize: 1001})
	p := configured(t, srv.BaseURL(), nil)
	req := request(fake.Key)
	req.Format, req.SampleRate = sdk.FormatWAV, 24000
	var chunks []sdk.Chunk
	var all []byte
	if err := p.Stream(t.Context(), req, func(c sdk.Chunk) error {
		chunks = append(chunks, c)
		all = append(all, c.Data...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(chunks) < 3 || chunks[0].MediaType != "audio/wav" || len(chunks[0].Data) != 44 || chunks[1].MediaType != "" {
		t.Fatalf("%d chunks, first %q with %d bytes", len(chunks), chunks[0].MediaType, len(chunks[0].Data))
	}
	clip, err := sdktest.Decode("audio/wav", all)
	if err != nil || clip.SampleRate != 24000 || math.Abs(clip.Seconds()-fakeupstream.Speak(req.Text, 1).Seconds) > 0.001 {
		t.Errorf("clip %+v, %v", clip, err)
	}
}

func TestVoices(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	creds := sdk.Credentials{APIKey: fake.Key}
	clone := cloneRequest(fake.Key)
	clone.Options = []byte(`{"voice_id": "my_cloned_voice_1"}`)
	if _, err := p.Clone(t.Context(), clone); err != nil {
		t.Fatal(err)
	}
	voices, err := p.Voices(t.Context(), &sdk.VoicesRequest{Credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	if len(voices) != 4 {
		t.Fatalf("voices %+v", voices)
	}
	if want := (sdk.Voice{ID: fake.VoiceNarrator, Name: "Expressive Narrator", Language: "en"}); voices[0] != want {
		t.Errorf("voice 0 = %+v, want %+v", voices[0], want)
	}
	if want := (sdk.Voice{ID: "my_cloned_voice_1", Name: "my_cloned_voice_1"}); voices[3] != want {
		t.Errorf("voice 3 = %+v, want %+v", voices[3], want)
	}
	got, _ := srv.LastRequest()
	if got.Path != fake.VoicesPath || string(got.Body) != `{"voice_type":"all"}` {
		t.Errorf("%s %s", got.Path, got.Body)
	}
}

func TestCloneOnTheWire(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), map[string]string{"group_id": fake.GroupID})
	req := cloneRequest(fake.Key)
	req.Name = "Ünïcode Narrator #2"
	req.Options = []byte(`{"need_noise_reduction": true, "accuracy": 0.8}`)
	resp, err := p.Clone(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(resp.VoiceID, "voxgate_n_code_Narrator_2_") || !voiceIDRule.MatchString(resp.VoiceID) {
		t.Errorf("voice id %q", resp.VoiceID)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[0].Path != fake.UploadPath || reqs[1].Path != fake.ClonePath || reqs[0].Query.Get("GroupId") != fake.GroupID {
		t.Fatalf("requests %+v", reqs)
	}
	form, err := fakeupstream.ParseMultipart(reqs[0])
	if err != nil {
		t.Fatal(err)
	}
	files := form.File["file"]
	if form.Value["purpose"][0] != "voice_clone" || len(files) != 1 || files[0].Filename != "me.wav" || files[0].Size != 44+3200 {
		t.Errorf("upload %v %+v", form.Value, files)
	}
	var body map[string]any
	_ = json.Unmarshal(reqs[1].Body, &body)
	if body["voice_id"] != resp.VoiceID || body["need_noise_reduction"] != true || body["accuracy"] != 0.8 || body["file_id"] == nil {
		t.Errorf("clone body %s", reqs[1].Body)
	}
	synth := request(fake.Key)
	synth.Voice = resp.VoiceID
	if _, err := p.Synthesize(t.Context(), synth); err != nil {
		t.Errorf("synthesizing with the cloned voice: %v", err)
	}
	// A voice id the account already has is MiniMax's 2039.
	again := cloneRequest(fake.Key)
	again.Options = []byte(`{"voice_id": "` + resp.VoiceID + `"}`)
	if _, err := p.Clone(t.Context(), again); sdktest.AsError(t, err).UpstreamCode != "2039" {
		t.Errorf("duplicate voice id: %v", err)
	}
	for name, bad := range map[string]*sdk.CloneRequest{
		"no samples":       {Credentials: req.Credentials},
		"two samples":      {Samples: append(req.Samples, req.Samples[0]), Credentials: req.Credentials},
		"empty sample":     {Samples: []sdk.Sample{{MediaType: "audio/wav"}}, Credentials: req.Credentials},
		"unknown option":   {Samples: req.Samples, Options: []byte(`{"text": "hi"}`), Credentials: req.Credentials},
		"invalid voice id": {Samples: req.Samples, Options: []byte(`{"voice_id": "1short"}`), Credentials: req.Credentials},
	} {
		if _, err := p.Clone(t.Context(), bad); sdktest.AsError(t, err).Kind != sdk.KindInvalidRequest {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestNewVoiceID(t *testing.T) {
	for _, name := range []string{"", "Narrator", "---", "日本語", "a very long name that goes on and on and on for more than forty characters", "ends with _"} {
		id := newVoiceID(name)
		if !voiceIDRule.MatchString(id) || len(id) > 256 {
			t.Errorf("newVoiceID(%q) = %q breaks the rule", name, id)
		}
	}
	if newVoiceID("x") == newVoiceID("x") {
		t.Error("two voices of one name got the same id")
	}
}

func TestInvalidRequests(t *testing.T) {
	tests := []sdktest.Refusal{
		{Name: "unknown option", Modify: func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"subtitle_enable": true}`) }},
		{Name: "the gateway's own field", Modify: func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"audio_setting": {"format": "flac"}}`) }},
		{Name: "voice id in options", Modify: func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"voice_setting": {"voice_id": "x"}}`) }},
		{Name: "bitrate on pcm", Modify: func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"audio_setting": {"bitrate": 128000}}`) }},
		{Name: "speed out of range", Modify: func(r *sdk.SynthesizeRequest) { r.Speed = 3 }},
		{Name: "no voice", Modify: func(r *sdk.SynthesizeRequest) { r.Voice = "" }},
		{Name: "blank text", Modify: func(r *sdk.SynthesizeRequest) { r.Text = "\n" }},
		{Name: "rate", Modify: func(r *sdk.SynthesizeRequest) { r.SampleRate = 48000 }},
		{Name: "not a model id", Modify: func(r *sdk.SynthesizeRequest) { r.Model = "speech_9" }},
		{Name: "format", Modify: func(r *sdk.SynthesizeRequest) { r.Format = sdk.FormatOpus }},
		{Name: "mp3 at 8 kHz", Modify: func(r *sdk.SynthesizeRequest) { r.Format, r.SampleRate = sdk.FormatMP3, 8000 }},
		{Name: "mp3 bitrate", Modify: func(r *sdk.SynthesizeRequest) { r.Format, r.Bitrate = sdk.FormatMP3, 96 }},
		{Name: "MPEG-2 mp3 at 256", Modify: func(r *sdk.SynthesizeRequest) { r.Format, r.SampleRate, r.Bitrate = sdk.FormatMP3, 24000, 256 }},
		{Name: "bitrate option against the bitrate", Modify: func(r *sdk.SynthesizeRequest) {
			r.Format, r.Bitrate, r.Options = sdk.FormatMP3, 64, []byte(`{"audio_setting": {"bitrate": 32000}}`)
		}},
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

func TestStatusCodes(t *testing.T) {
	tests := []struct {
		code      int
		kind      sdk.ErrorKind
		status    int
		retryable bool
	}{
		{1000, sdk.KindUpstream, 500, true},
		{1001, sdk.KindTimeout, 504, true},
		{1002, sdk.KindRateLimited, 429, true},
		{1004, sdk.KindUnauthorized, 401, false},
		{1008, sdk.KindUpstream, 402, false},
		{1026, sdk.KindInvalidRequest, 400, false},
		{1039, sdk.KindRateLimited, 429, true},
		{2013, sdk.KindInvalidRequest, 400, false},
		{2049, sdk.KindUnauthorized, 401, false},
	}
	for _, tt := range tests {
		e := respError(baseResp{StatusCode: tt.code, StatusMsg: "msg"}, time.Second)
		if e.Kind != tt.kind || e.UpstreamStatus != tt.status || e.Retryable != tt.retryable || e.UpstreamCode != fmt.Sprint(tt.code) || e.Message != "minimax: msg" {
			t.Errorf("code %d: %+v; want %s, %d, retryable %v", tt.code, e, tt.kind, tt.status, tt.retryable)
		}
	}
}

// TestPassThroughModel: through the plugin process, a model MiniMax has
// and the plugin does not list (a newer one) reaches MiniMax under the
// id the caller wrote; an id that cannot be MiniMax's is refused without
// a call.
func TestPassThroughModel(t *testing.T) {
	const newModel = "speech-3.0-hd"
	srv := fake.New(t, fakeupstream.Options{NewModels: []string{newModel}})
	p := sdktest.StartPlugin(t, pluginPath)
	if err := p.Configure(t.Context(), map[string]string{"base_url": srv.BaseURL()}); err != nil {
		t.Fatal(err)
	}
	req := request(fake.Key)
	req.Model = newModel
	fakeupstream.CheckPassThrough(t, p, fakeupstream.PassThrough{
		Fake: srv.Control, Request: *req,
		SentModel: fakeupstream.BodyField("model"),
		Invalid:   []string{"Speech-3.0-hd", "speech-", "speech_3", "t2a-v2", "speech-3 hd", ""},
	})
}

func TestParseError(t *testing.T) {
	tests := []struct{ body, code, msg string }{
		{`{"base_resp": {"status_code": 1000, "status_msg": "unknown error"}}`, "1000", "unknown error"},
		{`{"base_resp": {"status_code": 0, "status_msg": ""}}`, "", ""},
		{`<html>502 Bad Gateway</html>`, "", ""},
		{`{"error": "x"}`, "", ""},
	}
	for _, tt := range tests {
		code, msg := parseError([]byte(tt.body))
		if code != tt.code || msg != tt.msg {
			t.Errorf("parseError(%q) = %q, %q; want %q, %q", tt.body, code, msg, tt.code, tt.msg)
		}
	}
}

// TestUsageReadBack: the characters MiniMax says it billed
// (extra_info.usage_characters) come back as the call's billed
// characters: a clip's on the response, a stream's on a last chunk of
// its own once its last event is read.
func TestUsageReadBack(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{ChunkSize: 2000})
	req := request(fake.Key)
	sdktest.CheckBilledReadBack(t, configured(t, srv.BaseURL(), nil), req,
		[]sdk.BilledUsage{{Unit: sdk.UnitCharacters, Quantity: int64(len([]rune(req.Text)))}})
}
