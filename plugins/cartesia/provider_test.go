package main

import (
	"bytes"
	"cmp"
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
	fake "github.com/voxgate/voxgate/internal/fakeupstream/cartesia"
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
		InvalidVoice: "00000000-0000-0000-0000-000000000000",
	}
}

// TestConformance runs the kit against the real plugin process talking to
// the fake over HTTP.
func TestConformance(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	sdktest.Run(t, sdktest.StartPlugin(t, pluginPath), kitConfig(srv, ""))
}

// TestConformanceInProcess runs the kit in process for every model
// (sonic-3 adds the native speed check).
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
	return &sdk.SynthesizeRequest{Model: defaultModel, Voice: fake.VoiceKatie, Text: "Hello there, world.", Credentials: sdk.Credentials{APIKey: key}}
}

func cloneRequest(key string) *sdk.CloneRequest {
	return &sdk.CloneRequest{
		Model: defaultModel, Name: "Narrator", Description: "calm",
		Samples:     []sdk.Sample{{Filename: "me.pcm", MediaType: "audio/pcm;rate=16000", Data: make([]byte, 3200)}},
		Credentials: sdk.Credentials{APIKey: key},
	}
}

func TestUpstreamFailures(t *testing.T) {
	const wrongKey = "sk_car_wrong_9876543210zyxw"
	sdktest.Failures[*fake.Server]{
		Fake: func(t *testing.T) *fake.Server { return fake.New(t, fakeupstream.Options{}) },
		Provider: func(t *testing.T, srv *fake.Server, s map[string]string) sdk.Provider {
			if s["api_version"] == "1999-01-01" {
				// A version no document lists breaks the document on
				// purpose.
				t.Cleanup(func() { srv.TakeViolations() })
			}
			return configured(t, srv, s)
		},
		Request: request,
		Clone:   cloneRequest,
	}.Run(t, []sdktest.FailureCase[*fake.Server]{
		{Name: "wrong key, plain-text errors", Key: wrongKey, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401, MessageHas: "Unauthorized: Invalid API key."}, Path: fake.BytesPath, Calls: 1},
		{Name: "wrong key, JSON errors", Key: wrongKey, Settings: map[string]string{"api_version": "2026-03-01"}, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401, Code: "invalid_api_key", MessageHas: "cartesia: Invalid API key."}, Path: fake.BytesPath, Calls: 1},
		{Name: "unknown version", Key: fake.Key, Settings: map[string]string{"api_version": "1999-01-01"}, Want: &sdktest.Answer{Kind: sdk.KindInvalidRequest, Status: 400}, Path: fake.BytesPath, Calls: 1},
		{Name: "missing key", Want: &sdktest.Answer{Kind: sdk.KindUnauthorized}, Path: fake.BytesPath, Calls: 0},
		{Name: "429 with Retry-After, then success", Key: fake.Key, Path: fake.BytesPath, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "0.05"}) }},
		{Name: "429 forever", Key: fake.Key, Settings: map[string]string{"api_version": "2026-03-01"}, Want: &sdktest.Answer{Kind: sdk.KindRateLimited, Status: 429, Code: "concurrency_limited", Retryable: true, RetryAfter: 20 * time.Millisecond}, Path: fake.BytesPath, Calls: 3,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 429, RetryAfter: "0.02"}) }},
		{Name: "500 retried on the SSE path", Key: fake.Key, Op: sdktest.OpTimestamps, Path: fake.SSEPath, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 500}) }},
		{Name: "stream 401", Key: wrongKey, Op: sdktest.OpStream, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401}, Path: fake.SSEPath, Calls: 1},
		{Name: "timeout", Key: fake.Key, Settings: map[string]string{"timeout": "200ms"}, Want: &sdktest.Answer{Kind: sdk.KindTimeout, Retryable: true}, Path: fake.BytesPath, Calls: 1,
			Setup: func(s *fake.Server) { s.SetLatency(time.Minute) }},
		{Name: "clone succeeds", Key: fake.Key, Op: sdktest.OpClone, Path: fake.ClonePath, Calls: 1},
		{Name: "clone is never retried", Key: fake.Key, Op: sdktest.OpClone, Want: &sdktest.Answer{Kind: sdk.KindUpstream, Status: 500, Retryable: true}, Path: fake.ClonePath, Calls: 1,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 500}) }},
		{Name: "clone 503 is never retried", Key: fake.Key, Op: sdktest.OpClone, Want: &sdktest.Answer{Kind: sdk.KindUnavailable, Status: 503, Retryable: true}, Path: fake.ClonePath, Calls: 1,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 503}) }},
	})
}

func TestRequestOnTheWire(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	tests := []struct {
		format, options string
		rate            int
		speedModel      string
		speed           float64
		wantFormat      string
		wantExtra       string
	}{
		{format: "", wantFormat: `{"container":"raw","encoding":"pcm_s16le","sample_rate":24000}`},
		{format: sdk.FormatWAV, rate: 16000, wantFormat: `{"container":"wav","encoding":"pcm_s16le","sample_rate":16000}`},
		{format: sdk.FormatMP3, wantFormat: `{"bit_rate":128000,"container":"mp3","sample_rate":44100}`},
		{format: "", options: `{"language": "en", "generation_config": {"volume": 1.5}}`, wantFormat: `{"container":"raw","encoding":"pcm_s16le","sample_rate":24000}`,
			wantExtra: `"generation_config":{"volume":1.5},"language":"en"`},
		{format: "", speedModel: "sonic-3", speed: 1.25, wantFormat: `{"container":"raw","encoding":"pcm_s16le","sample_rate":24000}`,
			wantExtra: `"generation_config":{"speed":1.25}`},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			req := request(fake.Key)
			req.Format, req.SampleRate, req.Speed = tt.format, tt.rate, tt.speed
			if tt.speedModel != "" {
				req.Model = tt.speedModel
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
			if got.Header.Get("Authorization") != "Bearer "+fake.Key || got.Header.Get("Cartesia-Version") != apiVersion {
				t.Errorf("headers %v", got.Header)
			}
			var body map[string]json.RawMessage
			if err := json.Unmarshal(got.Body, &body); err != nil {
				t.Fatal(err)
			}
			var of map[string]any
			_ = json.Unmarshal(body["output_format"], &of)
			if b, _ := json.Marshal(of); string(b) != tt.wantFormat {
				t.Errorf("output_format %s, want %s", b, tt.wantFormat)
			}
			if string(body["voice"]) != `{"mode":"id","id":"`+fake.VoiceKatie+`"}` || string(body["transcript"]) != `"Hello there, world."` {
				t.Errorf("body %s", got.Body)
			}
			canonical, _ := json.Marshal(body)
			if tt.wantExtra != "" && !strings.Contains(string(canonical), tt.wantExtra) {
				t.Errorf("body %s lacks %s", canonical, tt.wantExtra)
			}
		})
	}
}

// wantOutputFormat is the output_format Cartesia must be asked for e, as
// JSON with sorted keys: /tts/bytes takes every container; /tts/sse
// (streams of all but mp3, and word timestamps) the raw one, so a wav
// comes as its PCM.
func wantOutputFormat(e sdk.Encoding, rawOnly bool) string {
	raw := map[string]string{sdk.FormatPCM: "pcm_s16le", sdk.FormatWAV: "pcm_s16le", sdk.FormatULaw: "pcm_mulaw", sdk.FormatALaw: "pcm_alaw"}
	switch {
	case e.Format == sdk.FormatMP3:
		return fmt.Sprintf(`{"bit_rate":%d,"container":"mp3","sample_rate":%d}`, e.Bitrate*1000, e.SampleRate)
	case e.Format == sdk.FormatWAV && !rawOnly:
		return fmt.Sprintf(`{"container":"wav","encoding":"pcm_s16le","sample_rate":%d}`, e.SampleRate)
	}
	return fmt.Sprintf(`{"container":"raw","encoding":"%s","sample_rate":%d}`, raw[e.Format], e.SampleRate)
}

// sentOutputFormat is the output_format of the request the fake last
// received, as JSON with sorted keys.
func sentOutputFormat(t *testing.T, srv *fake.Server) (path, format string) {
	t.Helper()
	got, _ := srv.LastRequest()
	var body struct {
		OutputFormat map[string]any `json:"output_format"`
	}
	if err := json.Unmarshal(got.Body, &body); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(body.OutputFormat)
	return got.Path, string(b)
}

// TestEncodings asks Synthesize, Stream and Plan for every encoding the
// models list: each reaches Cartesia as exactly that output_format, and
// the audio comes back as the fake sent it, byte for byte (a streamed or
// timed wav: the PCM behind the header the plugin adds), with the sdk's
// media type. Encodings the models do not list are refused before any
// call.
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
			if path, f := sentOutputFormat(t, srv); path != fake.BytesPath || f != wantOutputFormat(e, false) {
				t.Errorf("clip: %s with output_format %s, want %s", path, f, wantOutputFormat(e, false))
			}
			if !bytes.Equal(resp.Audio, srv.LastAnswer()) || len(resp.Audio) == 0 || resp.MediaType != sdk.MediaType(e) {
				t.Errorf("clip: %d bytes of %q; the fake sent %d, want %q", len(resp.Audio), resp.MediaType, len(srv.LastAnswer()), sdk.MediaType(e))
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
			want, wantPath := srv.LastAnswer(), fake.SSEPath
			switch e.Format {
			case sdk.FormatWAV:
				want = append(upstream.WAVHeader(e.SampleRate, upstream.StreamingWAV), want...)
			case sdk.FormatMP3:
				wantPath = fake.BytesPath
			}
			if path, f := sentOutputFormat(t, srv); path != wantPath || f != wantOutputFormat(e, e.Format != sdk.FormatMP3) {
				t.Errorf("stream: %s with output_format %s", path, f)
			}
			if !bytes.Equal(streamed, want) || mediaType != sdk.MediaType(e) {
				t.Errorf("stream: %d bytes of %q, want %d of %q", len(streamed), mediaType, len(want), sdk.MediaType(e))
			}

			pl, err := planClip(t, p, *req, false)
			if err != nil {
				t.Fatal(err)
			}
			var body struct {
				OutputFormat map[string]any `json:"output_format"`
			}
			if err := json.Unmarshal(pl.Body, &body); err != nil {
				t.Fatal(err)
			}
			if f, _ := json.Marshal(body.OutputFormat); string(f) != wantOutputFormat(e, false) || pl.MediaType != sdk.MediaType(e) {
				t.Errorf("plan: output_format %s, media type %q", f, pl.MediaType)
			}
		})
	}
	calls := srv.Calls()
	for _, e := range []sdk.Encoding{
		{Format: sdk.FormatPCM, SampleRate: 11025},
		{Format: sdk.FormatMP3, SampleRate: 8000},
		{Format: sdk.FormatMP3, SampleRate: 24000, Bitrate: 192},
		{Format: sdk.FormatMP3, SampleRate: 44100, Bitrate: 48},
		{Format: sdk.FormatULaw, SampleRate: 16000},
		{Format: sdk.FormatOpus},
		{Format: sdk.FormatFLAC},
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

// TestTimestampsMatchTheAudio: word timings gathered from several SSE
// timestamp events are the fake's exact timings, and the audio is whole.
func TestTimestampsMatchTheAudio(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{ChunkSize: 2000})
	p := configured(t, srv, nil)
	for _, format := range []string{sdk.FormatPCM, sdk.FormatWAV, sdk.FormatULaw} {
		req := request(fake.Key)
		req.Text, req.Timestamps, req.Format = "Several words arrive in several timestamp events here.", true, format
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
			if got.Text != w.Text || math.Abs(got.Start-w.Start) > 1e-9 || math.Abs(got.End-w.End) > 1e-9 {
				t.Errorf("%s: word %d = %+v, want %+v", format, i, got, w)
			}
		}
		clip, err := sdktest.Decode(resp.MediaType, resp.Audio)
		if err != nil || math.Abs(clip.Seconds()-want.Seconds) > 0.001 {
			t.Errorf("%s: clip %+v (%v), want %.3f s", format, clip, err, want.Seconds)
		}
		got, _ := srv.LastRequest()
		var body map[string]any
		_ = json.Unmarshal(got.Body, &body)
		if got.Path != fake.SSEPath || body["add_timestamps"] != true {
			t.Errorf("%s: called %s with %s", format, got.Path, got.Body)
		}
	}
	req := request(fake.Key)
	req.Timestamps, req.Format = true, sdk.FormatMP3
	if _, err := p.Synthesize(t.Context(), req); sdktest.AsError(t, err).Kind != sdk.KindInvalidRequest {
		t.Errorf("mp3 with timestamps: %v", err)
	}
}

func TestVoicesFollowPages(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	srv.SetPageSize(1)
	p := configured(t, srv, nil)
	voices, err := p.Voices(t.Context(), &sdk.VoicesRequest{Credentials: sdk.Credentials{APIKey: fake.Key}})
	if err != nil {
		t.Fatal(err)
	}
	if len(voices) != 4 || srv.CallsTo(fake.VoicesPath) != 4 {
		t.Fatalf("%d voices in %d calls, want 4 in 4", len(voices), srv.CallsTo(fake.VoicesPath))
	}
	if want := (sdk.Voice{ID: fake.VoiceBarber, Name: "Barbershop Man", Language: "en", Gender: "male"}); voices[1] != want {
		t.Errorf("voice 1 = %+v, want %+v", voices[1], want)
	}
}

func TestCloneOnTheWire(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	req := cloneRequest(fake.Key)
	req.Options = []byte(`{"language": "fr", "base_voice_id": "` + fake.VoiceKatie + `"}`)
	resp, err := p.Clone(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := srv.LastRequest()
	form, err := fakeupstream.ParseMultipart(got)
	if err != nil {
		t.Fatal(err)
	}
	if form.Value["name"][0] != "Narrator" || form.Value["language"][0] != "fr" || form.Value["base_voice_id"][0] != fake.VoiceKatie || form.Value["description"][0] != "calm" {
		t.Errorf("form values %v", form.Value)
	}
	clip := form.File["clip"]
	if len(clip) != 1 || clip[0].Filename != "me.wav" || clip[0].Header.Get("Content-Type") != "audio/wav" || clip[0].Size != 44+3200 {
		t.Errorf("clip %+v", clip)
	}
	synth := request(fake.Key)
	synth.Voice = resp.VoiceID
	if _, err := p.Synthesize(t.Context(), synth); err != nil {
		t.Errorf("synthesizing with the cloned voice: %v", err)
	}
	two := cloneRequest(fake.Key)
	two.Samples = append(two.Samples, two.Samples[0])
	if _, err := p.Clone(t.Context(), two); sdktest.AsError(t, err).Kind != sdk.KindInvalidRequest {
		t.Errorf("two clips: %v", err)
	}
	if _, err := p.Clone(t.Context(), &sdk.CloneRequest{Samples: req.Samples, Options: []byte(`{"accent": "x"}`), Credentials: req.Credentials}); sdktest.AsError(t, err).Kind != sdk.KindInvalidRequest {
		t.Errorf("unknown option: %v", err)
	}
}

func TestInvalidRequests(t *testing.T) {
	tests := []sdktest.Refusal{
		{Name: "unknown option", Modify: func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"output_format": {}}`) }},
		{Name: "unknown generation setting", Modify: func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"generation_config": {"pitch": 1}}`) }},
		{Name: "speed on sonic-2", Modify: func(r *sdk.SynthesizeRequest) { r.Speed = 1.3 }},
		{Name: "no voice", Modify: func(r *sdk.SynthesizeRequest) { r.Voice = "" }},
		{Name: "rate", Modify: func(r *sdk.SynthesizeRequest) { r.SampleRate = 11025 }},
		{Name: "not a model id", Modify: func(r *sdk.SynthesizeRequest) { r.Model = "Sonic 9" }},
		{Name: "format", Modify: func(r *sdk.SynthesizeRequest) { r.Format = "flac" }},
	}
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	sdktest.CheckRefusals(t, p, func() *sdk.SynthesizeRequest { return request(fake.Key) }, tests)
	if n := srv.Calls(); n != 0 {
		t.Errorf("%d upstream calls for invalid requests", n)
	}
}

// TestPassThroughModel: through the plugin process, a model Cartesia has
// and the plugin does not list (a newer one) reaches Cartesia under the
// id the caller wrote; an id that cannot be Cartesia's is refused
// without a call.
func TestPassThroughModel(t *testing.T) {
	const newModel = "sonic-4.1-2027-02-01"
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
		Invalid:   []string{"Sonic-4", "sonic_4", "ink-whisper", "sonic 4", "sonic-4/../x", ""},
	})
}

func TestSpeedClampedWithWarning(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	req := request(fake.Key)
	req.Model, req.Speed = "sonic-3", 3
	resp, err := p.Synthesize(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := srv.LastRequest()
	if len(resp.Warnings) != 1 || !strings.Contains(string(got.Body), `"generation_config":{"speed":1.5}`) {
		t.Errorf("warnings %v, body %s", resp.Warnings, got.Body)
	}
}

// sseServer answers /tts/sse with a fixed event stream.
func sseServer(t *testing.T, body string) *Provider {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	p := New()
	if err := p.Configure(t.Context(), map[string]string{"base_url": srv.URL}); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStreamEvents drives Stream with hand-written event streams: odd
// chunk sizes, multi-line data, comments, error events, garbage.
func TestStreamEvents(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []byte
		kind sdk.ErrorKind // -1: success
	}{
		{"odd chunks are regrouped into whole samples",
			": a comment\nevent: chunk\ndata: {\"type\":\"chunk\",\"data\":\"AQID\"}\n\n" + // 01 02 03
				"data: {\"type\":\"chunk\",\n" + "data: \"data\":\"BA==\"}\n\n" + // 04, over two data lines
				"data: {\"type\":\"done\",\"done\":true}\n\n" +
				"data: {\"type\":\"chunk\",\"data\":\"BQY=\"}\n\n", // after done: ignored
			[]byte{1, 2, 3, 4}, -1},
		{"CRLF line ends", "data: {\"type\":\"chunk\",\"data\":\"AQI=\"}\r\n\r\n", []byte{1, 2}, -1},
		{"no done event", "data: {\"type\":\"chunk\",\"data\":\"AQI=\"}", []byte{1, 2}, -1},
		{"error event", "data: {\"type\":\"chunk\",\"data\":\"AQI=\"}\n\ndata: {\"type\":\"error\",\"status_code\":429,\"error\":\"slow down\",\"done\":true}\n\n",
			[]byte{1, 2}, sdk.KindRateLimited},
		{"error event without status", "data: {\"type\":\"error\",\"error\":\"boom\"}\n\n", nil, sdk.KindUpstream},
		{"not JSON", "data: hello\n\n", nil, sdk.KindUpstream},
		{"bad base64", "data: {\"type\":\"chunk\",\"data\":\"!!\"}\n\n", nil, sdk.KindUpstream},
		{"a dangling half sample", "data: {\"type\":\"chunk\",\"data\":\"AQID\"}\n\n", []byte{1, 2}, sdk.KindUpstream},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := sseServer(t, tt.body)
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

func TestParseError(t *testing.T) {
	tests := []struct{ body, code, msg string }{
		{`{"error_code": "concurrency_limited", "title": "Too many", "message": "Slow down.", "request_id": "x"}`, "concurrency_limited", "Slow down."},
		{`{"error_code": null, "title": "Bad Request", "message": "No."}`, "", "No."},
		{`{"error": "Invalid voice"}`, "", "Invalid voice"},
		{"Unauthorized: Invalid API key.\n", "", "Unauthorized: Invalid API key."},
		{"<html>502</html>", "", ""},
	}
	for _, tt := range tests {
		code, msg := parseError([]byte(tt.body))
		if code != tt.code || msg != tt.msg {
			t.Errorf("parseError(%q) = %q, %q; want %q, %q", tt.body, code, msg, tt.code, tt.msg)
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

// planClip asks p for the whole-clip plan of req with its text replaced by
// sdk.PlanText.
func planClip(t *testing.T, p sdk.Provider, req sdk.SynthesizeRequest, stream bool) (*sdk.Plan, error) {
	t.Helper()
	req.Text = sdk.PlanText
	return p.(sdk.Planner).Plan(t.Context(), &sdk.PlanRequest{Request: &req, Stream: stream})
}

// sendPlan sends pl as the gateway does, text JSON-escaped in its slot. It
// returns the body of a 2xx answer, or the Failure Explain reads.
func sendPlan(t *testing.T, pl *sdk.Plan, text string, creds sdk.Credentials) ([]byte, *sdk.Failure) {
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

// TestPlanMatchesSynthesize: a planned whole clip, sent with net/http, is
// the /tts/bytes request Synthesize sends and answers the same audio, for
// both error formats' API versions.
func TestPlanMatchesSynthesize(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	tests := []struct {
		name, format, model, options string
		rate                         int
		speed                        float64
		media                        string
		frame                        int
	}{
		{name: "pcm", media: "audio/pcm;rate=24000", frame: 2},
		{name: "pcm 16 kHz", format: sdk.FormatPCM, rate: 16000, media: "audio/pcm;rate=16000", frame: 2},
		{name: "wav, made by Cartesia", format: sdk.FormatWAV, rate: 44100, media: "audio/wav"},
		{name: "mp3", format: sdk.FormatMP3, media: "audio/mpeg"},
		{name: "options and speed", model: "sonic-3", speed: 1.25, options: `{"language": "en", "generation_config": {"volume": 1.5}}`,
			media: "audio/pcm;rate=24000", frame: 2},
	}
	for _, version := range []string{apiVersion, "2026-03-01"} {
		for name, p := range planners(t, map[string]string{"base_url": srv.BaseURL(), "api_version": version}) {
			for _, tt := range tests {
				t.Run(version+"/"+name+"/"+tt.name, func(t *testing.T) {
					req := request(fake.Key)
					req.Text, req.Format, req.SampleRate, req.Speed = planSentence, tt.format, tt.rate, tt.speed
					req.Model = cmp.Or(tt.model, req.Model)
					if tt.options != "" {
						req.Options = []byte(tt.options)
					}
					pl, err := planClip(t, p, *req, false)
					if err != nil {
						t.Fatal(err)
					}
					if pl.MediaType != tt.media || pl.FrameSize != tt.frame {
						t.Errorf("media type %q, frame size %d; want %q, %d", pl.MediaType, pl.FrameSize, tt.media, tt.frame)
					}
					planned, f := sendPlan(t, pl, req.Text, req.Credentials)
					if f != nil {
						t.Fatalf("the planned request failed: %d %s", f.Status, f.Body)
					}
					sent, _ := srv.LastRequest()
					resp, err := p.Synthesize(t.Context(), req)
					if err != nil {
						t.Fatal(err)
					}
					if resp.MediaType != pl.MediaType || !bytes.Equal(resp.Audio, planned) {
						t.Errorf("Synthesize answers %q, %d bytes; the plan %q, %d bytes", resp.MediaType, len(resp.Audio), pl.MediaType, len(planned))
					}
					want, _ := srv.LastRequest()
					var sentBody, wantBody any
					_ = json.Unmarshal(sent.Body, &sentBody)
					_ = json.Unmarshal(want.Body, &wantBody)
					for _, h := range []string{"X-API-Key", "Cartesia-Version", "Content-Type"} {
						if sent.Header.Get(h) != want.Header.Get(h) {
							t.Errorf("%s: planned %q, Synthesize %q", h, sent.Header.Get(h), want.Header.Get(h))
						}
					}
					if sent.Path != fake.BytesPath || want.Path != fake.BytesPath || !reflect.DeepEqual(sentBody, wantBody) {
						t.Errorf("planned %s %s\nSynthesize %s %s", sent.Path, sent.Body, want.Path, want.Body)
					}
				})
			}
		}
	}
}

// TestPlanRefuses: streams, timestamps and a clip with warnings are
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
		{"pcm stream", func(*sdk.SynthesizeRequest) {}, true, sdk.KindUnsupported},
		{"wav stream", func(r *sdk.SynthesizeRequest) { r.Format = sdk.FormatWAV }, true, sdk.KindUnsupported},
		{"mp3 stream", func(r *sdk.SynthesizeRequest) { r.Format = sdk.FormatMP3 }, true, sdk.KindUnsupported},
		{"timestamps", func(r *sdk.SynthesizeRequest) { r.Timestamps = true }, false, sdk.KindUnsupported},
		{"clamped speed, whose warning a plan cannot carry", func(r *sdk.SynthesizeRequest) { r.Model, r.Speed = "sonic-3", 3 }, false, sdk.KindUnsupported},
		{"speed on sonic-2", func(r *sdk.SynthesizeRequest) { r.Speed = 1.3 }, false, sdk.KindInvalidRequest},
		{"unknown format", func(r *sdk.SynthesizeRequest) { r.Format = "flac" }, true, sdk.KindInvalidRequest},
		{"no key", func(r *sdk.SynthesizeRequest) { r.Credentials = sdk.Credentials{} }, false, sdk.KindUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request(fake.Key)
			tt.modify(req)
			pl, err := planClip(t, p, *req, tt.stream)
			if pl != nil || sdktest.AsError(t, err).Kind != tt.kind {
				t.Errorf("got %+v, %v; want %s", pl, err, tt.kind)
			}
		})
	}
	if n := srv.Calls(); n != 0 {
		t.Errorf("%d upstream calls", n)
	}
}

// TestExplainMatchesSynthesize: an error answer to a planned request, as
// plain text (API versions before 2026-03-01) or JSON, is explained as
// Synthesize reports the same answer, without the key.
func TestExplainMatchesSynthesize(t *testing.T) {
	const wrongKey = "sk_car_wrong_9876543210zyxw"
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
		{name: "key echoed in the message", key: fake.Key, fault: &fakeupstream.Fault{Status: 401, Message: "Invalid API key " + fake.Key + "."}, kind: sdk.KindUnauthorized, status: 401},
		{name: "429 with Retry-After", key: fake.Key, fault: &fakeupstream.Fault{Status: 429, RetryAfter: "3"}, kind: sdk.KindRateLimited, status: 429},
		{name: "500", key: fake.Key, fault: &fakeupstream.Fault{Status: 500}, kind: sdk.KindUpstream, status: 500},
		{name: "503", key: fake.Key, fault: &fakeupstream.Fault{Status: 503}, kind: sdk.KindUnavailable, status: 503},
		{name: "unknown voice", key: fake.Key, modify: func(r *sdk.SynthesizeRequest) { r.Voice = "00000000-0000-0000-0000-000000000000" }, kind: sdk.KindInvalidRequest, status: 404},
		// A value outside the document's ranges no longer reaches
		// Cartesia (the plugin refuses it first), so a 400 is injected.
		{name: "400", key: fake.Key, fault: &fakeupstream.Fault{Status: 400, Message: "transcript is too long"}, kind: sdk.KindInvalidRequest, status: 400},
	}
	for _, version := range []string{apiVersion, "2026-03-01"} {
		// One attempt: Synthesize reports the first answer, as the plan's is.
		for name, p := range planners(t, map[string]string{"base_url": srv.BaseURL(), "api_version": version, "max_attempts": "1"}) {
			for _, tt := range tests {
				t.Run(version+"/"+name+"/"+tt.name, func(t *testing.T) {
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
					pl, err := planClip(t, p, *req, false)
					if err != nil {
						t.Fatal(err)
					}
					if _, f := sendPlan(t, pl, req.Text, req.Credentials); f == nil {
						t.Error("the planned request succeeded")
					} else if got := sdktest.AsError(t, p.(sdk.Planner).Explain(t.Context(), f)); *got != *want || got.Kind != tt.kind || got.UpstreamStatus != tt.status {
						t.Errorf("Explain: %+v\nSynthesize: %+v\nwant kind %s, status %d", got, want, tt.kind, tt.status)
					} else if strings.Contains(got.Error(), tt.key) {
						t.Errorf("the explanation %q shows the API key", got.Error())
					}
				})
			}
		}
	}
}
