package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	fake "github.com/voxgate/voxgate/internal/fakeupstream/hume"
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
		Voice:        fake.VoiceAva,
		Credentials:  sdk.Credentials{APIKey: fake.Key},
		InvalidVoice: "Nobody At All",
	}
}

// TestConformance runs the kit (planner checks included) against the real
// plugin process talking to the fake over HTTP.
func TestConformance(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	sdktest.Run(t, sdktest.StartPlugin(t, pluginPath), kitConfig(srv, ""))
}

// TestConformanceInProcess runs the kit in process for both models.
func TestConformanceInProcess(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	for _, m := range models() {
		t.Run(m.ID, func(t *testing.T) { sdktest.Run(t, New(), kitConfig(srv, m.ID)) })
	}
}

func configured(t *testing.T, baseURL string, extra map[string]string) *Provider {
	return sdktest.Configure(t, New(), map[string]string{"base_url": baseURL}, extra)
}

func request(key string) *sdk.SynthesizeRequest {
	return &sdk.SynthesizeRequest{Model: defaultModel, Voice: "Ava Song", Text: "Hello there, world.", Credentials: sdk.Credentials{APIKey: key}}
}

func TestUpstreamFailures(t *testing.T) {
	const wrongKey = "hume_wrong_9876543210zyxwvutsrqponm"
	sdktest.Failures[*fake.Server]{
		Fake: func(t *testing.T) *fake.Server { return fake.New(t, fakeupstream.Options{}) },
		Provider: func(t *testing.T, srv *fake.Server, s map[string]string) sdk.Provider {
			return configured(t, srv.BaseURL(), s)
		},
		Request: request,
	}.Run(t, []sdktest.FailureCase[*fake.Server]{
		{Name: "wrong key", Key: wrongKey, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401, Code: "oauth.v2.InvalidApiKey", MessageHas: "hume: Invalid ApiKey"}, Path: fake.FilePath, Calls: 1},
		{Name: "missing key", Want: &sdktest.Answer{Kind: sdk.KindUnauthorized}, Path: fake.FilePath, Calls: 0},
		{Name: "429 with Retry-After, then success", Key: fake.Key, Path: fake.FilePath, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "0.05"}) }},
		{Name: "429 forever", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindRateLimited, Status: 429, Code: "policies.ratelimit.QuotaViolation", Retryable: true, RetryAfter: 20 * time.Millisecond}, Path: fake.FilePath, Calls: 3,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 429, RetryAfter: "0.02"}) }},
		{Name: "unknown voice", Key: fake.Key, Voice: "Nobody", Want: &sdktest.Answer{Kind: sdk.KindInvalidRequest, Status: 400, Code: "voice_not_found", MessageHas: "No voice found"}, Path: fake.FilePath, Calls: 1},
		{Name: "503 retried on the stream", Key: fake.Key, Op: sdktest.OpStream, Path: fake.StreamFilePath, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 503}) }},
		{Name: "500 retried for timestamps", Key: fake.Key, Op: sdktest.OpTimestamps, Path: fake.JSONPath, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 500}) }},
		{Name: "voice list with a wrong key", Key: wrongKey, Op: sdktest.OpVoices, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401, Code: "oauth.v2.InvalidApiKey"}, Path: fake.VoicesPath, Calls: 1},
		{Name: "timeout", Key: fake.Key, Settings: map[string]string{"timeout": "200ms"}, Want: &sdktest.Answer{Kind: sdk.KindTimeout, Retryable: true}, Path: fake.FilePath, Calls: 1,
			Setup: func(s *fake.Server) { s.SetLatency(time.Minute) }},
	})
}

func TestRequestOnTheWire(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	tests := []struct {
		name, voice, model, format, options string
		speed                               float64
		want                                string // the body, canonical JSON
	}{
		{name: "library voice by name", want: `{"format":{"type":"pcm"},"utterances":[{"text":"Hello there, world.","voice":{"name":"Ava Song","provider":"HUME_AI"}}],"version":"2"}`},
		{name: "library voice by id, wav, speed", voice: fake.VoiceAva, format: sdk.FormatWAV, speed: 1.25,
			want: `{"format":{"type":"wav"},"utterances":[{"speed":1.25,"text":"Hello there, world.","voice":{"id":"` + fake.VoiceAva + `","provider":"HUME_AI"}}],"version":"2"}`},
		{name: "own voice on octave-1, mp3, options", voice: "custom:" + fake.VoiceDavid, model: "octave-1", format: sdk.FormatMP3,
			options: `{"description": "calm, slow", "trailing_silence": 0.5, "instant_mode": false, "context": {"generation_id": "abc"}}`,
			want:    `{"context":{"generation_id":"abc"},"format":{"type":"mp3"},"instant_mode":false,"utterances":[{"description":"calm, slow","text":"Hello there, world.","trailing_silence":0.5,"voice":{"id":"` + fake.VoiceDavid + `","provider":"CUSTOM_VOICE"}}],"version":"1"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request(fake.Key)
			req.Format, req.Speed = tt.format, tt.speed
			if tt.voice != "" {
				req.Voice = tt.voice
			}
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
			if _, err := sdktest.Decode(resp.MediaType, resp.Audio); err != nil {
				t.Fatal(err)
			}
			got, _ := srv.LastRequest()
			var body any
			_ = json.Unmarshal(got.Body, &body)
			canonical, _ := json.Marshal(body)
			if string(canonical) != tt.want || got.Path != fake.FilePath || got.Header.Get("X-Hume-Api-Key") != fake.Key {
				t.Errorf("%s %s\nwant %s", got.Path, canonical, tt.want)
			}
		})
	}
}

// TestTimestampsMatchTheAudio: word timings from /tts are the fake's, in
// seconds, and the audio is whole.
func TestTimestampsMatchTheAudio(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	for _, format := range []string{sdk.FormatPCM, sdk.FormatWAV, sdk.FormatMP3} {
		req := request(fake.Key)
		req.Text, req.Timestamps, req.Format = "Several words with their own times.", true, format
		resp, err := p.Synthesize(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		want := fakeupstream.Speak(req.Text, 1)
		if len(resp.Timestamps) != len(want.Words) {
			t.Fatalf("%s: got %v, want %v", format, resp.Timestamps, want.Words)
		}
		for i, w := range want.Words {
			got := resp.Timestamps[i]
			if got.Text != w.Text || math.Abs(got.Start-w.Start) > 0.0005 || math.Abs(got.End-w.End) > 0.0005 {
				t.Errorf("%s: word %d = %+v, want %+v", format, i, got, w)
			}
		}
		if clip, err := sdktest.Decode(resp.MediaType, resp.Audio); err != nil || (format != sdk.FormatMP3 && math.Abs(clip.Seconds()-want.Seconds) > 0.001) {
			t.Errorf("%s: clip %+v (%v), want %.3f s", format, clip, err, want.Seconds)
		}
		got, _ := srv.LastRequest()
		var body map[string]any
		_ = json.Unmarshal(got.Body, &body)
		if got.Path != fake.JSONPath || body["split_utterances"] != false || fmt.Sprint(body["include_timestamp_types"]) != "[word]" {
			t.Errorf("%s: called %s with %s", format, got.Path, got.Body)
		}
	}
	req := request(fake.Key)
	req.Model, req.Timestamps = "octave-1", true
	if _, err := p.Synthesize(t.Context(), req); sdktest.AsError(t, err).Kind != sdk.KindUnsupported {
		t.Errorf("octave-1 timestamps: %v", err)
	}
}

func TestInvalidRequests(t *testing.T) {
	tests := []sdktest.Refusal{
		{Name: "unknown option", Modify: func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"num_generations": 2}`) }},
		{Name: "speed", Modify: func(r *sdk.SynthesizeRequest) { r.Speed = 2 }},
		{Name: "no voice", Modify: func(r *sdk.SynthesizeRequest) { r.Voice = "" }},
		{Name: "empty custom voice", Modify: func(r *sdk.SynthesizeRequest) { r.Voice = "custom:" }},
		{Name: "rate", Modify: func(r *sdk.SynthesizeRequest) { r.SampleRate = 24000 }},
		{Name: "not a model id", Modify: func(r *sdk.SynthesizeRequest) { r.Model = "octave-3.5" }},
		{Name: "format", Modify: func(r *sdk.SynthesizeRequest) { r.Format = "opus" }},
		{Name: "bitrate", Modify: func(r *sdk.SynthesizeRequest) { r.Format, r.Bitrate = sdk.FormatMP3, 128 }},
	}
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	sdktest.CheckRefusals(t, p, func() *sdk.SynthesizeRequest { return request(fake.Key) }, tests)
	if _, err := p.Clone(t.Context(), &sdk.CloneRequest{}); sdktest.AsError(t, err).Kind != sdk.KindUnsupported {
		t.Errorf("clone: %v", err)
	}
	if n := srv.Calls(); n != 0 {
		t.Errorf("%d upstream calls for invalid requests", n)
	}
}

func TestVoices(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	creds := sdk.Credentials{APIKey: fake.Key}
	v2, err := p.Voices(t.Context(), &sdk.VoicesRequest{Credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	want := []sdk.Voice{{ID: fake.VoiceAva, Name: "Ava Song"}, {ID: fake.VoiceActor, Name: "Male English Actor"}, {ID: "custom:" + fake.VoiceDavid, Name: "David Hume"}, {ID: "custom:" + fake.VoiceGoliath, Name: "Goliath Hume"}}
	if fmt.Sprint(v2) != fmt.Sprint(want) {
		t.Errorf("octave-2 voices %v, want %v", v2, want)
	}
	v1, err := p.Voices(t.Context(), &sdk.VoicesRequest{Model: "octave-1", Credentials: creds})
	if err != nil || len(v1) != 5 {
		t.Errorf("octave-1 voices %v %v", v1, err)
	}
	// Every listed voice speaks.
	for _, v := range v1 {
		req := request(fake.Key)
		req.Model, req.Voice = "octave-1", v.ID
		if _, err := p.Synthesize(t.Context(), req); err != nil {
			t.Errorf("%s: %v", v.ID, err)
		}
	}
}

// TestVoicesFollowPages: an account with more voices than a page.
func TestVoicesFollowPages(t *testing.T) {
	pages := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pages++
		q := r.URL.Query()
		w.Header().Set("Content-Type", "application/json")
		if q.Get("provider") == "CUSTOM_VOICE" {
			fmt.Fprint(w, `{"page_number": 0, "page_size": 100, "total_pages": 0, "voices_page": []}`)
			return
		}
		n := q.Get("page_number")
		fmt.Fprintf(w, `{"page_number": %s, "page_size": 100, "total_pages": 3, "voices_page": [{"id": "v%s", "name": "Voice %s", "provider": "HUME_AI"}]}`, n, n, n)
	}))
	t.Cleanup(srv.Close)
	p := configured(t, srv.URL, nil)
	voices, err := p.Voices(t.Context(), &sdk.VoicesRequest{Credentials: sdk.Credentials{APIKey: fake.Key}})
	if err != nil || len(voices) != 3 || voices[2].ID != "v2" || pages != 4 {
		t.Errorf("%v %v in %d calls", voices, err, pages)
	}
}

// TestPassThroughModel: through the plugin process, an Octave version
// Hume has and the plugin does not list (a newer one) is asked for by
// its number; an id that cannot be an Octave version is refused without
// a call.
func TestPassThroughModel(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{NewModels: []string{"octave-3"}})
	p := sdktest.StartPlugin(t, pluginPath)
	if err := p.Configure(t.Context(), map[string]string{"base_url": srv.BaseURL()}); err != nil {
		t.Fatal(err)
	}
	req := request(fake.Key)
	req.Model = "octave-3"
	fakeupstream.CheckPassThrough(t, p, fakeupstream.PassThrough{
		Fake: srv.Control, Request: *req,
		SentModel: func(r fakeupstream.Request) string {
			var b struct{ Version string }
			if r.JSON(&b) != nil || b.Version == "" {
				return ""
			}
			return "octave-" + b.Version
		},
		Invalid: []string{"octave-3.5", "Octave-3", "octave-0", "octave-", "octave", "evi-3", "octave-3 ", ""},
	})
}

func TestParseError(t *testing.T) {
	tests := []struct{ body, code, msg string }{
		{`{"fault": {"faultstring": "Invalid ApiKey", "detail": {"errorcode": "oauth.v2.InvalidApiKey"}}}`, "oauth.v2.InvalidApiKey", "Invalid ApiKey"},
		{`{"code": "voice_not_found", "error": "Bad Request", "message": "No voice found."}`, "voice_not_found", "No voice found."},
		{`{"detail": [{"loc": ["body", "utterances", 0, "speed"], "msg": "Input should be less than 3", "type": "less_than_equal"}]}`, "less_than_equal", "body.utterances.0.speed: Input should be less than 3"},
		{`{"detail": "Not Found"}`, "", "Not Found"},
		{`{"error": "Internal Server Error"}`, "Internal Server Error", "Internal Server Error"},
		{"<html>502</html>", "", ""},
	}
	for _, tt := range tests {
		code, msg := parseError([]byte(tt.body))
		if code != tt.code || msg != tt.msg {
			t.Errorf("parseError(%q) = %q, %q; want %q, %q", tt.body, code, msg, tt.code, tt.msg)
		}
	}
}

// TestPlanMatchesSynthesize: clips plan to /tts/file and streams to
// /tts/stream/file; each plan, sent as the gateway sends it, is the
// request the plugin sends and answers the same audio.
func TestPlanMatchesSynthesize(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	providers := map[string]sdk.Provider{"in process": New(), "over the wire": sdktest.StartPlugin(t, pluginPath)}
	for name, p := range providers {
		if err := p.Configure(t.Context(), map[string]string{"base_url": srv.BaseURL()}); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			format string
			stream bool
			path   string
			media  string
			frame  int
		}{
			{sdk.FormatPCM, false, fake.FilePath, "audio/pcm;rate=48000", 2},
			{sdk.FormatPCM, true, fake.StreamFilePath, "audio/pcm;rate=48000", 2},
			{sdk.FormatWAV, false, fake.FilePath, "audio/wav", 1},
			{sdk.FormatMP3, true, fake.StreamFilePath, "audio/mpeg", 1},
		} {
			t.Run(fmt.Sprintf("%s/%s/%v", name, tt.format, tt.stream), func(t *testing.T) {
				req := request(fake.Key)
				req.Text, req.Format = "She said \"ready\" \\ then paused,\tnaïve <and> calm.", tt.format
				planReq := *req
				planReq.Text = sdk.PlanText
				pl, err := p.(sdk.Planner).Plan(t.Context(), &sdk.PlanRequest{Request: &planReq, Stream: tt.stream})
				if err != nil {
					t.Fatal(err)
				}
				if pl.MediaType != tt.media || pl.FrameSize != tt.frame {
					t.Errorf("plan %+v", pl)
				}
				planned, f, err := sdktest.SendPlan(t.Context(), http.DefaultClient, pl, req.Text)
				if err != nil || f != nil {
					t.Fatalf("the planned request failed: %v %+v", err, f)
				}
				sent, _ := srv.LastRequest()
				var audio []byte
				if tt.stream {
					err = p.Stream(t.Context(), req, func(c sdk.Chunk) error { audio = append(audio, c.Data...); return nil })
				} else {
					var resp *sdk.SynthesizeResponse
					resp, err = p.Synthesize(t.Context(), req)
					if resp != nil {
						audio = resp.Audio
					}
				}
				if err != nil {
					t.Fatal(err)
				}
				want, _ := srv.LastRequest()
				if !bytes.Equal(audio, planned) || sent.Path != tt.path || want.Path != tt.path || !bytes.Equal(sent.Body, want.Body) {
					t.Errorf("planned %s %s (%d bytes)\nplugin %s %s (%d bytes)", sent.Path, sent.Body, len(planned), want.Path, want.Body, len(audio))
				}
			})
		}
	}
}

// TestEncodingsPassThrough asks, through the plugin process, for every
// encoding each model lists: each must reach Hume as exactly that format
// type, and the clip and the stream must be Hume's bytes untouched, with
// the sdk's media type.
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
		for _, e := range m.Encodings {
			t.Run(m.ID+"/"+e.String(), func(t *testing.T) {
				req := request(fake.Key)
				req.Model, req.Voice = m.ID, fake.VoiceAva
				req.Format, req.SampleRate, req.Bitrate = e.Format, e.SampleRate, e.Bitrate
				check := func(what string) {
					t.Helper()
					got, _ := srv.LastRequest()
					var body struct {
						Format struct {
							Type string `json:"type"`
						} `json:"format"`
					}
					if err := got.JSON(&body); err != nil || body.Format.Type != e.Format {
						t.Errorf("%s: asked Hume for %q (%v), want %q", what, body.Format.Type, err, e.Format)
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
					t.Errorf("the clip (%d bytes) is not what Hume answered (%d bytes)", len(resp.Audio), len(srv.LastAnswer()))
				}
				var streamed []byte
				if err := p.Stream(t.Context(), req, func(c sdk.Chunk) error { streamed = append(streamed, c.Data...); return nil }); err != nil {
					t.Fatal(err)
				}
				check("stream")
				if !bytes.Equal(streamed, srv.LastAnswer()) {
					t.Errorf("the stream (%d bytes) is not what Hume answered (%d bytes)", len(streamed), len(srv.LastAnswer()))
				}
			})
		}
	}
}
