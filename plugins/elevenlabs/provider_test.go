package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	fake "github.com/voxgate/voxgate/internal/fakeupstream/elevenlabs"
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
		Credentials:  sdk.Credentials{APIKey: fake.Key},
		InvalidVoice: "no-such-voice",
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
			cfg := kitConfig(srv, m.ID)
			if m.ID != defaultModel {
				// Every model lists the same encodings, asked for
				// through the same code, its requests differing only
				// in the model id: the default model is asked every
				// encoding (here and over the wire), the others PCM.
				cfg.Formats = []string{sdk.FormatPCM}
			}
			sdktest.Run(t, New(), cfg)
		})
	}
}

func configured(t *testing.T, srv *fake.Server, extra map[string]string) *Provider {
	return sdktest.Configure(t, New(), map[string]string{"base_url": srv.BaseURL()}, extra)
}

func request(key string) *sdk.SynthesizeRequest {
	return &sdk.SynthesizeRequest{Model: defaultModel, Voice: fake.VoiceRachel, Text: "Hello there, world.", Credentials: sdk.Credentials{APIKey: key}}
}

func cloneRequest(key string) *sdk.CloneRequest {
	return &sdk.CloneRequest{
		Model: defaultModel, Name: "Narrator", Description: "calm",
		Samples:     []sdk.Sample{{MediaType: "audio/pcm;rate=16000", Data: make([]byte, 3200)}},
		Credentials: sdk.Credentials{APIKey: key},
	}
}

func TestUpstreamFailures(t *testing.T) {
	const wrongKey = "xi-wrong-key-9876543210zyxw"
	sdktest.Failures[*fake.Server]{
		Fake:     func(t *testing.T) *fake.Server { return fake.New(t, fakeupstream.Options{}) },
		Provider: func(t *testing.T, srv *fake.Server, s map[string]string) sdk.Provider { return configured(t, srv, s) },
		Request:  request,
		Clone:    cloneRequest,
		Path:     fake.TTSPath(fake.VoiceRachel),
	}.Run(t, []sdktest.FailureCase[*fake.Server]{
		{Name: "wrong key", Key: wrongKey, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401, Code: "invalid_api_key"}, Calls: 1},
		{Name: "missing key", Want: &sdktest.Answer{Kind: sdk.KindUnauthorized}, Calls: 0},
		{Name: "quota exceeded", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindUpstream, Status: 401, Code: "quota_exceeded"}, Calls: 1,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 401, Code: "quota_exceeded"}) }},
		{Name: "429 with Retry-After, then success", Key: fake.Key, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "0.05"}) }},
		{Name: "429 forever", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindRateLimited, Status: 429, Code: "too_many_concurrent_requests", Retryable: true, RetryAfter: 20 * time.Millisecond}, Calls: 3,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 429, RetryAfter: "0.02"}) }},
		{Name: "500 retried", Key: fake.Key, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 500}) }},
		{Name: "timeout", Key: fake.Key, Settings: map[string]string{"timeout": "200ms"}, Want: &sdktest.Answer{Kind: sdk.KindTimeout, Retryable: true}, Calls: 1,
			Setup: func(s *fake.Server) { s.SetLatency(time.Minute) }},
		{Name: "clone succeeds", Key: fake.Key, Op: sdktest.OpClone, Path: fake.ClonePath, Calls: 1},
		{Name: "clone is never retried", Key: fake.Key, Op: sdktest.OpClone, Path: fake.ClonePath, Want: &sdktest.Answer{Kind: sdk.KindUpstream, Status: 500, Code: "internal_server_error", Retryable: true}, Calls: 1,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 500}) }},
		{Name: "clone is never retried on 429", Key: fake.Key, Op: sdktest.OpClone, Path: fake.ClonePath, Want: &sdktest.Answer{Kind: sdk.KindRateLimited, Status: 429, Code: "too_many_concurrent_requests", Retryable: true, RetryAfter: 10 * time.Millisecond}, Calls: 1,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 429, RetryAfter: "0.01"}) }},
		{Name: "clone with a wrong key", Key: wrongKey, Op: sdktest.OpClone, Path: fake.ClonePath, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401, Code: "invalid_api_key"}, Calls: 1},
	})
}

func TestRequestOnTheWire(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	tests := []struct {
		format      string
		rate        int
		options     string
		wantQuery   string
		wantMedia   string
		wantBodyKey string
	}{
		{"", 0, "", "output_format=pcm_24000", "audio/pcm;rate=24000", ""},
		{sdk.FormatPCM, 16000, "", "output_format=pcm_16000", "audio/pcm;rate=16000", ""},
		{sdk.FormatWAV, 44100, "", "output_format=wav_44100", "audio/wav", ""},
		{sdk.FormatMP3, 0, "", "output_format=mp3_44100_128", "audio/mpeg", ""},
		{"", 0, `{"seed": 7, "voice_settings": {"stability": 0.4}, "optimize_streaming_latency": 2, "enable_logging": false}`,
			"enable_logging=false&optimize_streaming_latency=2&output_format=pcm_24000", "audio/pcm;rate=24000", "seed"},
		{"", 0, `{"previous_request_ids": ["req-1", "req-2", "req-3"], "next_request_ids": ["req-5"]}`,
			"output_format=pcm_24000", "audio/pcm;rate=24000", "previous_request_ids"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s_%d_%s", tt.format, tt.rate, tt.wantBodyKey), func(t *testing.T) {
			req := request(fake.Key)
			req.Format, req.SampleRate = tt.format, tt.rate
			if tt.options != "" {
				req.Options = []byte(tt.options)
			}
			resp, err := p.Synthesize(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.MediaType != tt.wantMedia {
				t.Errorf("media type %q, want %q", resp.MediaType, tt.wantMedia)
			}
			clip, err := sdktest.Decode(resp.MediaType, resp.Audio)
			if err != nil {
				t.Fatal(err)
			}
			if tt.rate != 0 && clip.SampleRate != tt.rate {
				t.Errorf("rate %d, want %d", clip.SampleRate, tt.rate)
			}
			got, _ := srv.LastRequest()
			if got.Header.Get("xi-api-key") != fake.Key {
				t.Errorf("xi-api-key %q", got.Header.Get("xi-api-key"))
			}
			if q := got.Query.Encode(); q != tt.wantQuery {
				t.Errorf("query %q, want %q", q, tt.wantQuery)
			}
			var body map[string]any
			if err := json.Unmarshal(got.Body, &body); err != nil {
				t.Fatal(err)
			}
			if body["text"] != req.Text || body["model_id"] != defaultModel {
				t.Errorf("body %s", got.Body)
			}
			if tt.wantBodyKey != "" && body[tt.wantBodyKey] == nil {
				t.Errorf("body %s lacks %s", got.Body, tt.wantBodyKey)
			}
		})
	}
}

// TestEncodings asks Synthesize, Stream and Plan for every encoding the
// models list: each reaches ElevenLabs as exactly that output_format (a
// stream's wav as pcm at its rate, /stream having no wav), and the audio
// comes back as the fake sent it, byte for byte, with the sdk's media
// type. Encodings the models do not list are refused before any call.
func TestEncodings(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	for _, e := range models()[0].Encodings {
		t.Run(e.String(), func(t *testing.T) {
			req := request(fake.Key)
			req.Format, req.SampleRate, req.Bitrate = e.Format, e.SampleRate, e.Bitrate
			resp, err := p.Synthesize(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := srv.LastRequest()
			if f := got.Query.Get("output_format"); f != e.String() {
				t.Errorf("clip: output_format %q, want %q", f, e.String())
			}
			if !bytes.Equal(resp.Audio, srv.LastAnswer()) || len(resp.Audio) == 0 {
				t.Errorf("clip: %d bytes differ from the %d the fake sent", len(resp.Audio), len(srv.LastAnswer()))
			}
			if resp.MediaType != sdk.MediaType(e) {
				t.Errorf("clip: media type %q, want %q", resp.MediaType, sdk.MediaType(e))
			}

			var streamed []byte
			var mediaType string
			err = p.Stream(t.Context(), req, func(c sdk.Chunk) error {
				mediaType = cmp.Or(mediaType, c.MediaType)
				streamed = append(streamed, c.Data...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			got, _ = srv.LastRequest()
			asked, want := e, srv.LastAnswer()
			if e.Format == sdk.FormatWAV {
				asked.Format = sdk.FormatPCM
				want = append(upstream.WAVHeader(e.SampleRate, upstream.StreamingWAV), want...)
			}
			if f := got.Query.Get("output_format"); f != asked.String() || got.Path != fake.TTSPath(fake.VoiceRachel)+"/stream" {
				t.Errorf("stream: %s with output_format %q, want %q", got.Path, f, asked.String())
			}
			if !bytes.Equal(streamed, want) {
				t.Errorf("stream: %d bytes differ from the %d expected", len(streamed), len(want))
			}
			if mediaType != sdk.MediaType(e) {
				t.Errorf("stream: media type %q, want %q", mediaType, sdk.MediaType(e))
			}

			for _, stream := range []bool{false, true} {
				pl, err := plan(t, p, *req, stream)
				if stream && e.Format == sdk.FormatWAV {
					if sdktest.AsError(t, err).Kind != sdk.KindUnsupported {
						t.Errorf("a wav stream planned: %+v, %v", pl, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("plan (stream %v): %v", stream, err)
				}
				u, _ := url.Parse(pl.URL)
				if f := u.Query().Get("output_format"); f != e.String() || pl.MediaType != sdk.MediaType(e) {
					t.Errorf("plan (stream %v): output_format %q, media type %q", stream, f, pl.MediaType)
				}
			}
		})
	}
	calls := srv.Calls()
	for _, e := range []sdk.Encoding{
		{Format: sdk.FormatPCM, SampleRate: 11025},
		{Format: sdk.FormatMP3, SampleRate: 48000},
		{Format: sdk.FormatMP3, SampleRate: 44100, Bitrate: 320},
		{Format: sdk.FormatOpus, SampleRate: 48000, Bitrate: 48},
		{Format: sdk.FormatALaw, SampleRate: 16000},
		{Format: sdk.FormatFLAC},
		{Format: sdk.FormatAAC},
	} {
		req := request(fake.Key)
		req.Format, req.SampleRate, req.Bitrate = e.Format, e.SampleRate, e.Bitrate
		_, err := p.Synthesize(t.Context(), req)
		if e := sdktest.AsError(t, err); e.Kind != sdk.KindInvalidRequest || !strings.Contains(e.Message, "mp3_44100_128") {
			t.Errorf("%s: got %v, want invalid_request naming what is offered", e, err)
		}
	}
	if n := srv.Calls() - calls; n != 0 {
		t.Errorf("%d upstream calls for encodings no model lists", n)
	}
}

// TestTimestampsMatchTheAudio holds the alignment-to-words conversion to
// the fake's exact timing.
func TestTimestampsMatchTheAudio(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	req := request(fake.Key)
	req.Text, req.Timestamps = "  Hello,   brave new\tworld. ", true
	resp, err := p.Synthesize(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := fakeupstream.Speak(req.Text, 1).Words
	if len(resp.Timestamps) != len(want) {
		t.Fatalf("got %v, want %v", resp.Timestamps, want)
	}
	for i, w := range want {
		got := resp.Timestamps[i]
		if got.Text != w.Text || math.Abs(got.Start-w.Start) > 0.001 || math.Abs(got.End-w.End) > 0.001 {
			t.Errorf("word %d = %+v, want %+v", i, got, w)
		}
	}
	if req, _ := srv.LastRequest(); req.Path != fake.TTSPath(fake.VoiceRachel)+"/with-timestamps" {
		t.Errorf("called %s", req.Path)
	}
}

func TestAlignmentToWords(t *testing.T) {
	a := alignment{
		Characters: []string{" ", "H", "i", " ", " ", "y", "o", "u", "!", " "},
		Starts:     []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9},
		Ends:       []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0},
	}
	got := a.words()
	want := []sdk.WordTimestamp{{Text: "Hi", Start: 0.1, End: 0.3}, {Text: "you!", Start: 0.5, End: 0.9}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
	// Mismatched arrays are cut to the shortest rather than indexed past.
	a.Ends = a.Ends[:3]
	if got := a.words(); len(got) != 1 || got[0].Text != "Hi" {
		t.Errorf("short arrays: %v", got)
	}
}

// TestSpeed: speeds within ElevenLabs' range are sent as they are and
// change the clip; speeds outside are clamped with a warning.
func TestSpeed(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	durations := map[float64]float64{}
	for _, tt := range []struct {
		speed, sent float64
		warn        bool
	}{{0, 0, false}, {1.2, 1.2, false}, {0.8, 0.8, false}, {2, 1.2, true}, {0.25, 0.7, true}} {
		req := request(fake.Key)
		req.Speed = tt.speed
		resp, err := p.Synthesize(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if (len(resp.Warnings) > 0) != tt.warn {
			t.Errorf("speed %g: warnings %v", tt.speed, resp.Warnings)
		}
		got, _ := srv.LastRequest()
		var body struct {
			VoiceSettings *struct {
				Speed float64 `json:"speed"`
			} `json:"voice_settings"`
		}
		_ = json.Unmarshal(got.Body, &body)
		switch {
		case tt.sent == 0 && body.VoiceSettings != nil:
			t.Errorf("speed %g: sent voice_settings %s", tt.speed, got.Body)
		case tt.sent != 0 && (body.VoiceSettings == nil || body.VoiceSettings.Speed != tt.sent):
			t.Errorf("speed %g: body %s, want voice_settings.speed %g", tt.speed, got.Body, tt.sent)
		}
		clip, _ := sdktest.Decode(resp.MediaType, resp.Audio)
		durations[tt.speed] = clip.Seconds()
	}
	if !(durations[1.2] < durations[0] && durations[0] < durations[0.8]) {
		t.Errorf("durations by speed %v: want faster speech shorter", durations)
	}
}

func TestCloneOnTheWire(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	req := cloneRequest(fake.Key)
	req.Samples = append(req.Samples, sdk.Sample{Filename: "take2.mp3", MediaType: "audio/mpeg", Data: []byte{0xff, 0xfb, 1, 2}})
	req.Options = []byte(`{"remove_background_noise": true, "labels": {"accent": "irish"}}`)
	resp, err := p.Clone(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := srv.LastRequest()
	form, err := fakeupstream.ParseMultipart(got)
	if err != nil {
		t.Fatal(err)
	}
	if form.Value["name"][0] != "Narrator" || form.Value["description"][0] != "calm" ||
		form.Value["remove_background_noise"][0] != "true" || form.Value["labels"][0] != `{"accent":"irish"}` {
		t.Errorf("form values %v", form.Value)
	}
	files := form.File["files"]
	if len(files) != 2 || files[0].Filename != "sample-1.wav" || files[0].Header.Get("Content-Type") != "audio/wav" ||
		files[0].Size != 44+3200 || files[1].Filename != "take2.mp3" {
		t.Errorf("files %+v", files)
	}
	// The new voice speaks.
	synth := request(fake.Key)
	synth.Voice = resp.VoiceID
	if _, err := p.Synthesize(t.Context(), synth); err != nil {
		t.Errorf("synthesizing with the cloned voice: %v", err)
	}
	if _, err := p.Clone(t.Context(), &sdk.CloneRequest{Credentials: sdk.Credentials{APIKey: fake.Key}}); sdktest.AsError(t, err).Kind != sdk.KindInvalidRequest {
		t.Errorf("clone without samples: %v", err)
	}
}

func TestVoices(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	voices, err := p.Voices(t.Context(), &sdk.VoicesRequest{Credentials: sdk.Credentials{APIKey: fake.Key}})
	if err != nil {
		t.Fatal(err)
	}
	want := sdk.Voice{ID: fake.VoiceAdam, Name: "Adam", Language: "en", Gender: "male"}
	found := false
	for _, v := range voices {
		found = found || v == want
	}
	if !found || len(voices) != 3 {
		t.Errorf("voices %+v, want 3 with %+v", voices, want)
	}
}

// TestOptionsCheckedBeforeTheCall: providerOptions outside what
// ElevenLabs documents are refused naming the field, and ElevenLabs is
// not called; the values at the edges of each range reach it (and its
// published document, which judges the fake, accepts them).
func TestOptionsCheckedBeforeTheCall(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	locators := func(n int) string {
		l := make([]string, n)
		for i := range l {
			l[i] = fmt.Sprintf(`{"pronunciation_dictionary_id": "dict%d"}`, i)
		}
		return `{"pronunciation_dictionary_locators": [` + strings.Join(l, ",") + `]}`
	}
	refused := []struct {
		name, model, options, field string
	}{
		{"voice_settings.speed above 1.2", "", `{"voice_settings": {"speed": 1.5}}`, "voice_settings.speed"},
		{"voice_settings.speed below 0.7", "", `{"voice_settings": {"speed": 0.5}}`, "voice_settings.speed"},
		{"stability above 1", "", `{"voice_settings": {"stability": 1.1}}`, "voice_settings.stability"},
		{"shorthand similarity below 0", "", `{"similarity_boost": -0.1}`, "similarity_boost"},
		{"seed above 2^32-1", "", `{"seed": 4294967296}`, "seed"},
		{"seed -1", "", `{"seed": -1}`, "seed"},
		{"four dictionary locators", "", locators(4), "pronunciation_dictionary_locators"},
		{"a locator without its id", "", `{"pronunciation_dictionary_locators": [{"version_id": "v1"}]}`, "pronunciation_dictionary_locators.0.pronunciation_dictionary_id"},
		{"a normalization mode that is not one", "", `{"apply_text_normalization": "sometimes"}`, "apply_text_normalization"},
		{"language_code on multilingual v2", "eleven_multilingual_v2", `{"language_code": "fr"}`, "language_code"},
		{"language_code on flash v2", "eleven_flash_v2", `{"language_code": "en"}`, "language_code"},
		{"latency level 9", "", `{"optimize_streaming_latency": 9}`, "optimize_streaming_latency"},
		{"four previous request ids", "", `{"previous_request_ids": ["a", "b", "c", "d"]}`, "previous_request_ids"},
		{"four next request ids", "", `{"next_request_ids": ["a", "b", "c", "d"]}`, "next_request_ids"},
		{"an unknown voice setting", "", `{"voice_settings": {"pitch": 2}}`, "voice_settings.pitch"},
		{"a wrong type", "", `{"enable_logging": "no"}`, "enable_logging"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			req := request(fake.Key)
			req.Model = cmp.Or(tt.model, req.Model)
			req.Options = []byte(tt.options)
			for _, call := range []func() error{
				func() error { _, err := p.Synthesize(t.Context(), req); return err },
				func() error { return p.Stream(t.Context(), req, func(sdk.Chunk) error { return nil }) },
				func() error { _, err := p.Plan(t.Context(), &sdk.PlanRequest{Request: req}); return err },
			} {
				e := sdktest.AsError(t, call())
				if e.Kind != sdk.KindInvalidRequest || e.Field != tt.field || !strings.Contains(e.Message, tt.field) {
					t.Errorf("got %#v, want invalid_request naming %s", e, tt.field)
				}
			}
		})
	}
	if n := srv.Calls(); n != 0 {
		t.Errorf("%d calls to ElevenLabs for refused options", n)
	}
	accepted := []struct{ name, model, options string }{
		{"the edges of speed", "", `{"voice_settings": {"speed": 0.7, "stability": 0, "similarity_boost": 1}}`},
		{"the top of speed", "", `{"voice_settings": {"speed": 1.2}}`},
		{"the edges of seed", "", `{"seed": 0}`},
		{"the top of seed", "", `{"seed": 4294967295}`},
		{"three locators", "", locators(3)},
		{"normalization off", "", `{"apply_text_normalization": "off"}`},
		{"language_code on flash v2.5", "eleven_flash_v2_5", `{"language_code": "fr"}`},
		{"language_code on v3", "eleven_v3", `{"language_code": "fr"}`},
		{"latency level 4", "", `{"optimize_streaming_latency": 4}`},
		{"stitching and zero retention", "", `{"previous_request_ids": ["a", "b", "c"], "next_request_ids": ["d"], "previous_text": "Before.", "next_text": "After.", "enable_logging": false}`},
	}
	for _, tt := range accepted {
		t.Run(tt.name, func(t *testing.T) {
			req := request(fake.Key)
			req.Model = cmp.Or(tt.model, req.Model)
			req.Options = []byte(tt.options)
			if _, err := p.Synthesize(t.Context(), req); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestInvalidRequests(t *testing.T) {
	tests := []sdktest.Refusal{
		{Name: "unknown option", Modify: func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"output_format": "pcm_8000"}`) }},
		{Name: "unknown voice setting", Modify: func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"voice_settings": {"pitch": 2}}`) }},
		{Name: "wrong option type", Modify: func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"seed": "seven"}`) }},
		{Name: "no voice", Modify: func(r *sdk.SynthesizeRequest) { r.Voice = "" }},
		{Name: "rate", Modify: func(r *sdk.SynthesizeRequest) { r.SampleRate = 11025 }},
		{Name: "mp3 rate", Modify: func(r *sdk.SynthesizeRequest) { r.Format, r.SampleRate = sdk.FormatMP3, 16000 }},
		{Name: "mp3 bitrate", Modify: func(r *sdk.SynthesizeRequest) { r.Format, r.Bitrate = sdk.FormatMP3, 320 }},
		{Name: "bitrate at a rate that has another", Modify: func(r *sdk.SynthesizeRequest) { r.Format, r.SampleRate, r.Bitrate = sdk.FormatMP3, 22050, 128 }},
		{Name: "opus rate", Modify: func(r *sdk.SynthesizeRequest) { r.Format, r.SampleRate = sdk.FormatOpus, 24000 }},
		{Name: "ulaw rate", Modify: func(r *sdk.SynthesizeRequest) { r.Format, r.SampleRate = sdk.FormatULaw, 16000 }},
		{Name: "format", Modify: func(r *sdk.SynthesizeRequest) { r.Format = sdk.FormatFLAC }},
		{Name: "not a model id", Modify: func(r *sdk.SynthesizeRequest) { r.Model = "Eleven v9" }},
	}
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	sdktest.CheckRefusals(t, p, func() *sdk.SynthesizeRequest { return request(fake.Key) }, tests)
	if n := srv.Calls(); n != 0 {
		t.Errorf("%d upstream calls for invalid requests", n)
	}
}

// TestPassThroughModel: through the plugin process, a model ElevenLabs
// has and the plugin does not list (a newer one) reaches ElevenLabs
// under the id the caller wrote; an id that cannot be ElevenLabs' is
// refused without a call.
func TestPassThroughModel(t *testing.T) {
	const newModel = "eleven_v4_preview"
	srv := fake.New(t, fakeupstream.Options{NewModels: []string{newModel}})
	p := sdktest.StartPlugin(t, pluginPath)
	if err := p.Configure(t.Context(), map[string]string{"base_url": srv.BaseURL()}); err != nil {
		t.Fatal(err)
	}
	req := request(fake.Key)
	req.Model = newModel
	fakeupstream.CheckPassThrough(t, p, fakeupstream.PassThrough{
		Fake: srv.Control, Request: *req,
		SentModel: fakeupstream.BodyField("model_id"),
		Invalid:   []string{"eleven-v4", "Eleven_v4", "eleven_", "v4", "eleven_v4/../x", "eleven_v4 ", ""},
	})
}

func TestParseError(t *testing.T) {
	tests := []struct{ body, code, msg string }{
		{`{"detail": {"status": "voice_not_found", "message": "A voice was not found."}}`, "voice_not_found", "A voice was not found."},
		{`{"detail": {"type": "validation_error", "code": "invalid_uid", "message": "bad id", "status": "invalid_uid"}}`, "invalid_uid", "bad id"},
		{`{"detail": [{"loc": ["body", "text"], "msg": "field required", "type": "value_error.missing"}]}`, "validation_error", "body.text: field required"},
		{`{"detail": "Not Found"}`, "", "Not Found"},
		{`<html>bad gateway</html>`, "", ""},
	}
	for _, tt := range tests {
		code, msg := parseError([]byte(tt.body))
		if code != tt.code || msg != tt.msg {
			t.Errorf("parseError(%s) = %q, %q; want %q, %q", tt.body, code, msg, tt.code, tt.msg)
		}
	}
}

// TestStreamWAV: a WAV stream opens with a header of unknown length and
// carries PCM after it.
func TestStreamWAV(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{ChunkSize: 1000})
	p := configured(t, srv, nil)
	req := request(fake.Key)
	req.Format = sdk.FormatWAV
	var audio []byte
	var chunks []sdk.Chunk
	err := p.Stream(t.Context(), req, func(c sdk.Chunk) error {
		chunks = append(chunks, c)
		audio = append(audio, c.Data...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if chunks[0].MediaType != "audio/wav" || len(chunks[0].Data) != 44 {
		t.Errorf("first chunk %q with %d bytes", chunks[0].MediaType, len(chunks[0].Data))
	}
	for i, c := range chunks[1:] {
		if c.MediaType != "" {
			t.Errorf("chunk %d repeats the media type", i+1)
		}
	}
	clip, err := sdktest.Decode("audio/wav", audio)
	if err != nil || clip.SampleRate != nativeRate {
		t.Errorf("streamed WAV: %+v, %v", clip, err)
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
		if _, ok := p.(sdk.Planner); !ok {
			t.Fatalf("%s: %T is no sdk.Planner", name, p)
		}
	}
	return out
}

// plan asks p for the plan of req with its text replaced by sdk.PlanText.
func plan(t *testing.T, p sdk.Provider, req sdk.SynthesizeRequest, stream bool) (*sdk.Plan, error) {
	t.Helper()
	req.Text = sdk.PlanText
	return p.(sdk.Planner).Plan(t.Context(), &sdk.PlanRequest{Request: &req, Stream: stream})
}

// execute sends pl as the gateway does, with text JSON-escaped in its
// slot, and returns the answer; a status >= 300 comes as the Failure
// Explain reads.
func execute(t *testing.T, pl *sdk.Plan, text string, creds sdk.Credentials) ([]byte, *sdk.Failure) {
	t.Helper()
	audio, f, err := sdktest.SendPlan(t.Context(), http.DefaultClient, pl, text)
	if err != nil {
		t.Fatal(err)
	}
	if f != nil {
		f.Credentials = creds
	}
	return audio, f
}

// TestPlanMatchesThePlugin: a planned request, sent with net/http, is the
// request Synthesize or Stream sends and answers the same audio.
func TestPlanMatchesThePlugin(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{ChunkSize: 1000})
	tests := []struct {
		name       string
		format     string
		rate       int
		speed      float64
		options    string
		stream     bool
		media      string
		frame      int
		pathSuffix string
	}{
		{name: "pcm", media: "audio/pcm;rate=24000", frame: 2},
		{name: "pcm 16 kHz", format: sdk.FormatPCM, rate: 16000, media: "audio/pcm;rate=16000", frame: 2},
		{name: "mp3", format: sdk.FormatMP3, media: "audio/mpeg"},
		{name: "options and speed", speed: 0.8, options: `{"seed": 3, "voice_settings": {"stability": 0.4}, "optimize_streaming_latency": 2, "enable_logging": false}`,
			media: "audio/pcm;rate=24000", frame: 2},
		{name: "pcm stream", stream: true, media: "audio/pcm;rate=24000", frame: 2, pathSuffix: "/stream"},
		{name: "mp3 stream", format: sdk.FormatMP3, stream: true, media: "audio/mpeg", pathSuffix: "/stream"},
		{name: "clamped speed stream", speed: 2, stream: true, media: "audio/pcm;rate=24000", frame: 2, pathSuffix: "/stream"},
	}
	for name, p := range planners(t, map[string]string{"base_url": srv.BaseURL()}) {
		for _, tt := range tests {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				req := request(fake.Key)
				req.Text, req.Format, req.SampleRate, req.Speed = planSentence, tt.format, tt.rate, tt.speed
				if tt.options != "" {
					req.Options = []byte(tt.options)
				}
				pl, err := plan(t, p, *req, tt.stream)
				if err != nil {
					t.Fatal(err)
				}
				if pl.MediaType != tt.media || max(pl.FrameSize, 1) != max(tt.frame, 1) {
					t.Errorf("media type %q, frame size %d; want %q, %d", pl.MediaType, pl.FrameSize, tt.media, tt.frame)
				}
				planned, f := execute(t, pl, req.Text, req.Credentials)
				if f != nil {
					t.Fatalf("the planned request failed: %d %s", f.Status, f.Body)
				}
				sent, _ := srv.LastRequest()
				var media string
				var audio []byte
				if tt.stream {
					err = p.Stream(t.Context(), req, func(c sdk.Chunk) error {
						media = cmp.Or(media, c.MediaType)
						audio = append(audio, c.Data...)
						return nil
					})
				} else {
					var resp *sdk.SynthesizeResponse
					if resp, err = p.Synthesize(t.Context(), req); err == nil {
						media, audio = resp.MediaType, resp.Audio
					}
				}
				if err != nil {
					t.Fatal(err)
				}
				if media != pl.MediaType || !bytes.Equal(audio, planned) {
					t.Errorf("the plugin answers %q, %d bytes; the plan %q, %d bytes", media, len(audio), pl.MediaType, len(planned))
				}
				want, _ := srv.LastRequest()
				if sent.Path != fake.TTSPath(fake.VoiceRachel)+tt.pathSuffix || sent.Path != want.Path || sent.Query.Encode() != want.Query.Encode() ||
					sent.Header.Get("xi-api-key") != want.Header.Get("xi-api-key") || !sameJSON(sent.Body, want.Body) {
					t.Errorf("planned %s?%s %s\nplugin  %s?%s %s", sent.Path, sent.Query.Encode(), sent.Body, want.Path, want.Query.Encode(), want.Body)
				}
			})
		}
	}
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b []byte) bool {
	var va, vb any
	return json.Unmarshal(a, &va) == nil && json.Unmarshal(b, &vb) == nil && reflect.DeepEqual(va, vb)
}

// TestPlanRefuses: what the plugin does besides passing the audio on is
// refused as unsupported, so that the gateway calls the plugin; the
// caller's mistakes are refused as in Synthesize. No refusal calls
// upstream.
func TestPlanRefuses(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	tests := []struct {
		name   string
		modify func(*sdk.SynthesizeRequest)
		stream bool
		kind   sdk.ErrorKind
	}{
		{"wav stream", func(r *sdk.SynthesizeRequest) { r.Format = sdk.FormatWAV }, true, sdk.KindUnsupported},
		{"timestamps", func(r *sdk.SynthesizeRequest) { r.Timestamps = true }, false, sdk.KindUnsupported},
		{"clamped speed, whose warning a plan cannot carry", func(r *sdk.SynthesizeRequest) { r.Speed = 2 }, false, sdk.KindUnsupported},
		{"not a model id", func(r *sdk.SynthesizeRequest) { r.Model = "eleven-v9" }, false, sdk.KindInvalidRequest},
		{"mp3 rate", func(r *sdk.SynthesizeRequest) { r.Format, r.SampleRate = sdk.FormatMP3, 16000 }, true, sdk.KindInvalidRequest},
		{"no key", func(r *sdk.SynthesizeRequest) { r.Credentials = sdk.Credentials{} }, false, sdk.KindUnauthorized},
		{"a stitched piece, whose request-id the plugin reads", func(r *sdk.SynthesizeRequest) { r.Neighbours = &sdk.Neighbours{NextText: "After."} }, false, sdk.KindUnsupported},
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

// TestExplainMatchesSynthesize: an error answer to a planned request is
// explained as Synthesize reports the same answer, without the key.
func TestExplainMatchesSynthesize(t *testing.T) {
	const wrongKey = "xi-wrong-key-9876543210zyxw"
	srv := fake.New(t, fakeupstream.Options{})
	tests := []struct {
		name   string
		key    string
		fault  *fakeupstream.Fault
		modify func(*sdk.SynthesizeRequest)
		kind   sdk.ErrorKind
		status int
	}{
		{name: "wrong key", key: wrongKey, kind: sdk.KindUnauthorized, status: 401},
		{name: "key echoed in the message", key: fake.Key, fault: &fakeupstream.Fault{Status: 401, Message: "Invalid API key: " + fake.Key}, kind: sdk.KindUnauthorized, status: 401},
		{name: "key echoed as the code", key: fake.Key, fault: &fakeupstream.Fault{Status: 403, Code: fake.Key}, kind: sdk.KindUnauthorized, status: 403},
		{name: "quota exceeded", key: fake.Key, fault: &fakeupstream.Fault{Status: 401, Code: "quota_exceeded"}, kind: sdk.KindUpstream, status: 401},
		{name: "429 with Retry-After", key: fake.Key, fault: &fakeupstream.Fault{Status: 429, RetryAfter: "3"}, kind: sdk.KindRateLimited, status: 429},
		{name: "500", key: fake.Key, fault: &fakeupstream.Fault{Status: 500}, kind: sdk.KindUpstream, status: 500},
		{name: "503", key: fake.Key, fault: &fakeupstream.Fault{Status: 503}, kind: sdk.KindUnavailable, status: 503},
		{name: "unknown voice", key: fake.Key, modify: func(r *sdk.SynthesizeRequest) { r.Voice = "no-such-voice" }, kind: sdk.KindInvalidRequest, status: 404},
		// A value outside the documented ranges no longer reaches
		// ElevenLabs (the plugin refuses it first), so its validation
		// list is injected.
		{name: "validation list", key: fake.Key, fault: &fakeupstream.Fault{Status: 422, Code: "value_error", Message: "ensure this value is less than or equal to 4"}, kind: sdk.KindInvalidRequest, status: 422},
	}
	// One attempt: Synthesize reports the first answer, as the plan's is.
	for name, p := range planners(t, map[string]string{"base_url": srv.BaseURL(), "max_attempts": "1"}) {
		for _, tt := range tests {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				srv.Reset()
				if tt.fault != nil {
					srv.FailAlways(*tt.fault)
				}
				req := request(tt.key)
				if tt.modify != nil {
					tt.modify(req)
				}
				_, err := p.Synthesize(t.Context(), req)
				want := sdktest.AsError(t, err)
				pl, err := plan(t, p, *req, false)
				if err != nil {
					t.Fatal(err)
				}
				_, f := execute(t, pl, req.Text, req.Credentials)
				if f == nil {
					t.Fatal("the planned request succeeded")
				}
				got := sdktest.AsError(t, p.(sdk.Planner).Explain(t.Context(), f))
				if got.Kind != tt.kind || got.UpstreamStatus != tt.status {
					t.Errorf("explained as %s %d, want %s %d", got.Kind, got.UpstreamStatus, tt.kind, tt.status)
				}
				if got.Kind != want.Kind || got.UpstreamStatus != want.UpstreamStatus || got.UpstreamCode != want.UpstreamCode ||
					got.Message != want.Message || got.Retryable != want.Retryable || got.RetryAfter != want.RetryAfter {
					t.Errorf("Explain: %+v\nSynthesize: %+v", got, want)
				}
				for _, e := range []*sdk.Error{got, want} {
					if strings.Contains(e.Error(), tt.key) {
						t.Errorf("the error %q shows the API key", e.Error())
					}
				}
			})
		}
	}
}

// TestVoiceSettingsShorthand: the voice settings may be given at the top
// level of providerOptions, as the hosted service's guides do; an explicit
// voice_settings field wins.
func TestVoiceSettingsShorthand(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	req := request(fake.Key)
	req.Options = []byte(`{"stability": 0.5, "style": 0.2, "voice_settings": {"style": 0.7}}`)
	if _, err := p.Synthesize(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	got, _ := srv.LastRequest()
	var body struct {
		VoiceSettings map[string]any `json:"voice_settings"`
		Stability     any            `json:"stability"`
	}
	if err := json.Unmarshal(got.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.VoiceSettings["stability"] != 0.5 || body.VoiceSettings["style"] != 0.7 || body.Stability != nil {
		t.Errorf("body %s", got.Body)
	}
}

// TestStitching: the neighbours of a piece of a longer text become
// ElevenLabs' request stitching on the models that have it: the ids of
// the pieces before (or, without them or under zero retention, the text
// before) and the text after, replacing the caller's own fields on the
// sides the gateway knows; eleven_v3 gets none. The answer's request-id
// comes back as the ContextID.
func TestStitching(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	caller := `{"previous_text": "Caller before.", "next_text": "Caller after.", "previous_request_ids": ["caller-1"]}`
	tests := []struct {
		name       string
		model      string
		options    string
		neighbours *sdk.Neighbours
		want       string // the stitching fields of the body, as JSON
	}{
		{"whole text", "", caller, nil,
			`{"next_text":"Caller after.","previous_request_ids":["caller-1"],"previous_text":"Caller before."}`},
		{"first piece: the caller's past, the next piece's text", "", caller, &sdk.Neighbours{NextText: "Piece two."},
			`{"next_text":"Piece two.","previous_request_ids":["caller-1"],"previous_text":"Caller before."}`},
		{"middle piece: ids before, text after", "", "", &sdk.Neighbours{PreviousText: "Piece one.", NextText: "Piece three.", PreviousIDs: []string{"r1"}},
			`{"next_text":"Piece three.","previous_request_ids":["r1"]}`},
		{"last piece: the caller's future", "", caller, &sdk.Neighbours{PreviousText: "Piece two.", PreviousIDs: []string{"r1", "r2"}},
			`{"next_text":"Caller after.","previous_request_ids":["r1","r2"]}`},
		{"no ids: the text before", "", "", &sdk.Neighbours{PreviousText: "Piece one.", NextText: "Piece three."},
			`{"next_text":"Piece three.","previous_text":"Piece one."}`},
		{"zero retention: the text before, never ids", "", `{"enable_logging": false}`, &sdk.Neighbours{PreviousText: "Piece one.", PreviousIDs: []string{"r1"}},
			`{"previous_text":"Piece one."}`},
		{"eleven_v3 has no stitching", "eleven_v3", "", &sdk.Neighbours{PreviousText: "Piece one.", NextText: "Piece three.", PreviousIDs: []string{"r1"}},
			`{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request(fake.Key)
			req.Neighbours = tt.neighbours
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
			got, _ := srv.LastRequest()
			var body map[string]json.RawMessage
			if err := json.Unmarshal(got.Body, &body); err != nil {
				t.Fatal(err)
			}
			stitching := map[string]json.RawMessage{}
			for _, k := range []string{"previous_text", "next_text", "previous_request_ids", "next_request_ids"} {
				if v, ok := body[k]; ok {
					stitching[k] = v
				}
			}
			if b, _ := json.Marshal(stitching); string(b) != tt.want {
				t.Errorf("sent %s, want %s", b, tt.want)
			}
			ids := srv.RequestIDs()
			if wantID := ids[len(ids)-1]; tt.neighbours != nil && tt.model == "" && resp.ContextID != wantID {
				t.Errorf("ContextID %q, want the answer's request-id %q", resp.ContextID, wantID)
			}
		})
	}
}

// TestBilledFromTheAnswer: what ElevenLabs says it billed (the
// character-cost header, in credits) comes back with the clip, from the
// plugin's own call and in the plan the gateway sends itself.
func TestBilledFromTheAnswer(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	for model, want := range map[string]int64{"eleven_multilingual_v2": 11, "eleven_flash_v2_5": 6} {
		req := request(fake.Key)
		req.Model, req.Text = model, "Hello world"
		resp, err := p.Synthesize(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(resp.Billed, []sdk.BilledUsage{{Unit: sdk.UnitCharacters, Quantity: want}}) {
			t.Errorf("%s: billed %+v, want %d characters (credits)", model, resp.Billed, want)
		}
		// A stream's header rides on its first chunk, and only there.
		var billed [][]sdk.BilledUsage
		if err := p.Stream(t.Context(), req, func(c sdk.Chunk) error { billed = append(billed, c.Billed); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(billed) == 0 || !reflect.DeepEqual(billed[0], []sdk.BilledUsage{{Unit: sdk.UnitCharacters, Quantity: want}}) || slices.ContainsFunc(billed[1:], func(b []sdk.BilledUsage) bool { return b != nil }) {
			t.Errorf("%s: the stream's chunks say billed %+v, want %d characters on the first alone", model, billed, want)
		}
	}
	req := request(fake.Key)
	plan, err := p.Plan(t.Context(), &sdk.PlanRequest{Request: req})
	if err != nil {
		t.Fatal(err)
	}
	if plan.BilledHeaders["character-cost"] != sdk.UnitCharacters {
		t.Errorf("the plan names no billed header: %v", plan.BilledHeaders)
	}
}
