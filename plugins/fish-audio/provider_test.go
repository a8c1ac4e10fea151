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
	fake "github.com/voxgate/voxgate/internal/fakeupstream/fishaudio"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// pluginPath is the plugin binary, built once by TestMain.
var pluginPath string

func TestMain(m *testing.M) { os.Exit(sdktest.MainWithPlugin(m, &pluginPath)) }

const unknownVoice = "00000000000000000000000000000000"

func kitConfig(srv *fake.Server, model string) sdktest.Config {
	return sdktest.Config{
		Settings:     map[string]string{"base_url": srv.BaseURL()},
		Model:        model,
		Voice:        fake.VoiceNarrator,
		Credentials:  sdk.Credentials{APIKey: fake.Key},
		InvalidVoice: unknownVoice,
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
	const wrongKey = "fa-wrong-9876543210zyxwvutsrq"
	sdktest.Failures[*fake.Server]{
		Fake:     func(t *testing.T) *fake.Server { return fake.New(t, fakeupstream.Options{}) },
		Provider: func(t *testing.T, srv *fake.Server, s map[string]string) sdk.Provider { return configured(t, srv, s) },
		Request:  request,
		Clone:    cloneRequest,
	}.Run(t, []sdktest.FailureCase[*fake.Server]{
		{Name: "wrong key", Key: wrongKey, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401, MessageHas: "fish-audio: Invalid Token"}, Path: fake.TTSPath, Calls: 1},
		{Name: "missing key", Want: &sdktest.Answer{Kind: sdk.KindUnauthorized}, Path: fake.TTSPath, Calls: 0},
		{Name: "no credit", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindUpstream, Status: 402, MessageHas: "Insufficient Balance"}, Path: fake.TTSPath, Calls: 1,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 402}) }},
		{Name: "429 with Retry-After, then success", Key: fake.Key, Path: fake.TTSPath, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "0.05"}) }},
		{Name: "429 forever", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindRateLimited, Status: 429, Retryable: true, RetryAfter: 20 * time.Millisecond}, Path: fake.TTSPath, Calls: 3,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 429, RetryAfter: "0.02"}) }},
		{Name: "503 retried on the timestamps path", Key: fake.Key, Op: sdktest.OpTimestamps, Path: fake.TimestampsPath, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 503}) }},
		{Name: "stream 401", Key: wrongKey, Op: sdktest.OpStream, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401}, Path: fake.TTSPath, Calls: 1},
		{Name: "voices 401", Key: wrongKey, Op: sdktest.OpVoices, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401}, Path: fake.ModelPath, Calls: 1},
		{Name: "timeout", Key: fake.Key, Settings: map[string]string{"timeout": "200ms"}, Want: &sdktest.Answer{Kind: sdk.KindTimeout, Retryable: true}, Path: fake.TTSPath, Calls: 1,
			Setup: func(s *fake.Server) { s.SetLatency(time.Minute) }},
		// Outside the documented range: refused by the plugin, naming
		// the field, with no call.
		{Name: "validation error", Key: fake.Key, Options: []byte(`{"chunk_length": 50}`), Want: &sdktest.Answer{Kind: sdk.KindInvalidRequest, MessageHas: "providerOptions field chunk_length must be between 100 and 300"}, Path: fake.TTSPath, Calls: 0},
		{Name: "clone succeeds", Key: fake.Key, Op: sdktest.OpClone, Path: fake.ModelPath, Calls: 1},
		{Name: "clone is never retried", Key: fake.Key, Op: sdktest.OpClone, Want: &sdktest.Answer{Kind: sdk.KindUnavailable, Status: 503, Retryable: true}, Path: fake.ModelPath, Calls: 1,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 503}) }},
	})
}

func TestRequestOnTheWire(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	tests := []struct {
		name, model, format, options string
		rate                         int
		speed                        float64
		want                         string // the body without text and reference_id, canonical
		media                        string
	}{
		{name: "default", want: `{"format":"pcm","sample_rate":44100}`, media: "audio/pcm;rate=44100"},
		{name: "wav 16 kHz on s1", model: "s1", format: sdk.FormatWAV, rate: 16000, want: `{"format":"wav","sample_rate":16000}`, media: "audio/wav"},
		{name: "mp3 with a bitrate", format: sdk.FormatMP3, options: `{"mp3_bitrate": 192}`, want: `{"format":"mp3","mp3_bitrate":192,"sample_rate":44100}`, media: "audio/mpeg"},
		{name: "speed and options", model: "s2-pro", speed: 1.5, options: `{"latency": "balanced", "prosody": {"volume": -3, "normalize_loudness": false}, "temperature": 0.5, "normalize": false}`,
			want:  `{"format":"pcm","latency":"balanced","normalize":false,"prosody":{"normalize_loudness":false,"speed":1.5,"volume":-3},"sample_rate":44100,"temperature":0.5}`,
			media: "audio/pcm;rate=44100"},
		{name: "speed overrides the option's", speed: 0.75, options: `{"prosody": {"speed": 2}}`, want: `{"format":"pcm","prosody":{"speed":0.75},"sample_rate":44100}`, media: "audio/pcm;rate=44100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request(fake.Key)
			req.Format, req.SampleRate, req.Speed = tt.format, tt.rate, tt.speed
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
			if resp.MediaType != tt.media {
				t.Errorf("media type %q, want %q", resp.MediaType, tt.media)
			}
			clip, err := sdktest.Decode(resp.MediaType, resp.Audio)
			if err != nil {
				t.Fatal(err)
			}
			if want := fakeupstream.Speak(req.Text, cmpSpeed(tt.speed)).Seconds; clip.Format != "mp3" && math.Abs(clip.Seconds()-want) > 0.001 {
				t.Errorf("clip %.3f s, want %.3f s", clip.Seconds(), want)
			}
			got, _ := srv.LastRequest()
			if got.Path != fake.TTSPath || got.Header.Get("Authorization") != "Bearer "+fake.Key ||
				got.Header.Get("model") != req.Model || got.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%s with headers %v", got.Path, got.Header)
			}
			var body map[string]any
			if err := json.Unmarshal(got.Body, &body); err != nil {
				t.Fatal(err)
			}
			if body["text"] != req.Text || body["reference_id"] != fake.VoiceNarrator {
				t.Errorf("body %s", got.Body)
			}
			delete(body, "text")
			delete(body, "reference_id")
			if canonical, _ := json.Marshal(body); string(canonical) != tt.want {
				t.Errorf("body %s, want %s", canonical, tt.want)
			}
		})
	}
}

// wantBody is the format part of the body Fish Audio must be asked for e
// (canonical JSON): the format, its rate, and its bitrate field.
func wantBody(e sdk.Encoding) string {
	switch e.Format {
	case sdk.FormatMP3:
		return fmt.Sprintf(`{"format":"mp3","mp3_bitrate":%d,"sample_rate":%d}`, e.Bitrate, e.SampleRate)
	case sdk.FormatOpus:
		return fmt.Sprintf(`{"format":"opus","opus_bitrate":%d,"sample_rate":%d}`, e.Bitrate*1000, e.SampleRate)
	}
	return fmt.Sprintf(`{"format":%q,"sample_rate":%d}`, e.Format, e.SampleRate)
}

// sentBody is the body of the fake's latest request without text and
// reference_id, canonical.
func sentBody(t *testing.T, body []byte) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "text")
	delete(m, "reference_id")
	b, _ := json.Marshal(m)
	return string(b)
}

// TestEncodings asks Synthesize, Stream and Plan for every encoding the
// models list: each reaches Fish Audio as exactly that format, rate and
// bitrate, and the audio comes back as the fake sent it, byte for byte,
// with the sdk's media type. Encodings the models do not list are refused
// before any call.
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
			if b := sentBody(t, got.Body); got.Path != fake.TTSPath || b != wantBody(e) {
				t.Errorf("clip: %s with %s, want %s", got.Path, b, wantBody(e))
			}
			if !bytes.Equal(resp.Audio, srv.LastAnswer()) || len(resp.Audio) == 0 || resp.MediaType != sdk.MediaType(e) {
				t.Errorf("clip: %d bytes of %q; the fake sent %d, want %q", len(resp.Audio), resp.MediaType, len(srv.LastAnswer()), sdk.MediaType(e))
			}
			var streamed []byte
			var mediaType string
			err = p.Stream(t.Context(), req, func(c sdk.Chunk) error {
				if mediaType == "" {
					mediaType = c.MediaType
				}
				streamed = append(streamed, c.Data...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			got, _ = srv.LastRequest()
			if b := sentBody(t, got.Body); b != wantBody(e) {
				t.Errorf("stream: %s, want %s", b, wantBody(e))
			}
			if !bytes.Equal(streamed, srv.LastAnswer()) || mediaType != sdk.MediaType(e) {
				t.Errorf("stream: %d bytes of %q; the fake sent %d", len(streamed), mediaType, len(srv.LastAnswer()))
			}
			pl, err := planFor(t, p, *req, true)
			if err != nil {
				t.Fatal(err)
			}
			if b := sentBody(t, pl.Body); b != wantBody(e) || pl.MediaType != sdk.MediaType(e) {
				t.Errorf("plan: %s of %q", b, pl.MediaType)
			}
		})
	}
	calls := srv.Calls()
	for _, e := range []sdk.Encoding{
		{Format: sdk.FormatPCM, SampleRate: 22050},
		{Format: sdk.FormatMP3, SampleRate: 24000},
		{Format: sdk.FormatMP3, SampleRate: 44100, Bitrate: 32},
		{Format: sdk.FormatOpus, SampleRate: 48000, Bitrate: 128},
		{Format: sdk.FormatULaw},
		{Format: sdk.FormatFLAC},
	} {
		req := request(fake.Key)
		req.Format, req.SampleRate, req.Bitrate = e.Format, e.SampleRate, e.Bitrate
		_, err := p.Synthesize(t.Context(), req)
		if e := sdktest.AsError(t, err); e.Kind != sdk.KindInvalidRequest || !strings.Contains(e.Message, "opus_48000_32") {
			t.Errorf("%s: got %v, want invalid_request naming what is offered", e, err)
		}
	}
	if n := srv.Calls() - calls; n != 0 {
		t.Errorf("%d upstream calls for encodings no model lists", n)
	}
}

func cmpSpeed(s float64) float64 {
	if s == 0 {
		return 1
	}
	return s
}

// TestTimestampsMatchTheAudio: a text long enough to come in several text
// chunks gets one timestamp per word, with the caller's spelling and the
// fake's exact times, and audio that is whole in every format.
func TestTimestampsMatchTheAudio(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{ChunkSize: 3000})
	p := configured(t, srv, nil)
	text := "Several words arrive in several snapshots, don't they? " +
		"The second sentence is long enough that the API cuts the text into more than one chunk; " +
		"each chunk has its own offset on the clip's timeline, and the plugin adds it."
	for _, format := range []string{sdk.FormatPCM, sdk.FormatWAV, sdk.FormatMP3} {
		t.Run(format, func(t *testing.T) {
			req := request(fake.Key)
			req.Text, req.Timestamps, req.Format = text, true, format
			req.Options = []byte(`{"chunk_length": 100}`)
			resp, err := p.Synthesize(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			want := fakeupstream.Speak(text, 1)
			if len(resp.Timestamps) != len(want.Words) {
				t.Fatalf("%d timestamps, want %d: %+v", len(resp.Timestamps), len(want.Words), resp.Timestamps)
			}
			for i, w := range want.Words {
				got := resp.Timestamps[i]
				if got.Text != w.Text || math.Abs(got.Start-w.Start) > 1e-9 || math.Abs(got.End-w.End) > 1e-9 {
					t.Errorf("word %d = %+v, want %+v", i, got, w)
				}
			}
			clip, err := sdktest.Decode(resp.MediaType, resp.Audio)
			if err != nil {
				t.Fatal(err)
			}
			if format != sdk.FormatMP3 && math.Abs(clip.Seconds()-want.Seconds) > 0.001 {
				t.Errorf("clip %.3f s, want %.3f s", clip.Seconds(), want.Seconds)
			}
			got, _ := srv.LastRequest()
			var body map[string]any
			_ = json.Unmarshal(got.Body, &body)
			wantFormat := format
			if format == sdk.FormatWAV {
				wantFormat = sdk.FormatPCM // the header is written by the plugin
			}
			if got.Path != fake.TimestampsPath || body["format"] != wantFormat {
				t.Errorf("called %s with %s", got.Path, got.Body)
			}
		})
	}
	// With chunk_length 100 the fake cuts this text into at least two
	// chunks, each with its own offset (its own tests hold it to that).
	if len(text) <= 200 {
		t.Fatalf("the text has %d characters; it must need several chunks", len(text))
	}
}

func TestMatchWords(t *testing.T) {
	seg := func(text string, start float64) segment { return segment{Text: text, Start: start, End: start + 0.1} }
	tests := []struct {
		name string
		text string
		segs []segment
		want []string
	}{
		{"punctuation back", "Hello, world. I've done it!", []segment{seg("Hello", 0), seg("world", 1), seg("Ive", 2), seg("done", 3), seg("it", 4)},
			[]string{"Hello,", "world.", "I've", "done", "it!"}},
		{"a dash the API skips", "yes - no", []segment{seg("yes", 0), seg("no", 1)}, []string{"yes", "no"}},
		{"a spelled-out number keeps its own text", "I have 2 cats", []segment{seg("I", 0), seg("have", 1), seg("two", 2), seg("cats", 3)},
			[]string{"I", "have", "two", "cats"}},
		{"empty segments dropped", "a b", []segment{seg("a", 0), seg(" ", 0.5), seg("b", 1)}, []string{"a", "b"}},
		{"case differs", "NASA rocks", []segment{seg("nasa", 0), seg("rocks", 1)}, []string{"NASA", "rocks"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, w := range matchWords(tt.text, tt.segs) {
				got = append(got, w.Text)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// eventServer answers every request with a fixed event stream.
func eventServer(t *testing.T, body string) *Provider {
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

// TestTimestampEvents drives the event reader with hand-written streams:
// snapshots that replace each other, offsets, errors and garbage.
func TestTimestampEvents(t *testing.T) {
	const snap1 = `{"audio_base64":"AQI=","content":"Hello there","alignment":{"audio_duration":1,"segments":[{"text":"Hello","start":0,"end":0.4}]},"chunk_seq":0,"chunk_audio_offset_sec":0}`
	const snap2 = `{"audio_base64":"AwQ=","content":"Hello there","alignment":{"audio_duration":1,"segments":[{"text":"Hello","start":0,"end":0.4},{"text":"there","start":0.4,"end":0.9}]},"chunk_seq":0,"chunk_audio_offset_sec":0}`
	const next = `{"audio_base64":"BQY=","content":"world","alignment":{"audio_duration":0.5,"segments":[{"text":"world","start":0.1,"end":0.4}]},"chunk_seq":1,"chunk_audio_offset_sec":1.0}`
	const noAlign = `{"audio_base64":"Bwg=","content":"world","alignment":null,"chunk_seq":1,"chunk_audio_offset_sec":1.0}`
	tests := []struct {
		name  string
		body  string
		audio []byte
		words []sdk.WordTimestamp
		kind  sdk.ErrorKind // -1: success
	}{
		{"snapshots replace, offsets add", "data: " + snap1 + "\n\n: comment\ndata: " + snap2 + "\n\nevent: message\ndata: " + next + "\n\ndata: " + noAlign + "\n\n",
			[]byte{1, 2, 3, 4, 5, 6, 7, 8},
			[]sdk.WordTimestamp{{Text: "Hello", Start: 0, End: 0.4}, {Text: "there,", Start: 0.4, End: 0.9}, {Text: "world.", Start: 1.1, End: 1.4}}, -1},
		{"no blank line at the end", "data: " + snap2, []byte{1, 2, 3, 4}[2:], []sdk.WordTimestamp{{Text: "Hello", Start: 0, End: 0.4}, {Text: "there,", Start: 0.4, End: 0.9}}, -1},
		{"an error in the stream", "data: " + snap1 + "\n\ndata: {\"status\": 503, \"message\": \"overloaded\"}\n\n", nil, nil, sdk.KindUnavailable},
		{"an error event", "event: error\ndata: {\"message\": \"boom\"}\n\n", nil, nil, sdk.KindUpstream},
		{"not JSON", "data: hello\n\n", nil, nil, sdk.KindUpstream},
		{"bad base64", "data: {\"audio_base64\": \"!!\"}\n\n", nil, nil, sdk.KindUpstream},
		{"a dangling half sample", "data: {\"audio_base64\": \"AQID\"}\n\n", nil, nil, sdk.KindUpstream},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := eventServer(t, tt.body)
			req := request(fake.Key)
			req.Text, req.Timestamps = "Hello there, world.", true
			resp, err := p.Synthesize(t.Context(), req)
			if tt.kind != -1 {
				if e := sdktest.AsError(t, err); e.Kind != tt.kind {
					t.Errorf("got %v, want kind %s", e, tt.kind)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(resp.Audio, tt.audio) {
				t.Errorf("audio % x, want % x", resp.Audio, tt.audio)
			}
			if !reflect.DeepEqual(resp.Timestamps, tt.words) {
				t.Errorf("timestamps %+v, want %+v", resp.Timestamps, tt.words)
			}
		})
	}
}

func TestVoices(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	creds := sdk.Credentials{APIKey: fake.Key}
	p := configured(t, srv, nil)
	// Two voice models of the account's own, then the library.
	for _, name := range []string{"Mine A", "Mine B"} {
		req := cloneRequest(fake.Key)
		req.Name = name
		if _, err := p.Clone(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	srv.Reset()
	voices, err := p.Voices(t.Context(), &sdk.VoicesRequest{Credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range voices {
		names = append(names, v.Name)
	}
	if want := []string{"Mine A", "Mine B", "Calm Narrator", "News Anchor", "Mandarin Host"}; !reflect.DeepEqual(names, want) {
		t.Errorf("voices %q, want %q", names, want)
	}
	if want := (sdk.Voice{ID: fake.VoiceAnchor, Name: "News Anchor", Language: "en", Gender: "female"}); voices[3] != want {
		t.Errorf("voice 3 = %+v, want %+v", voices[3], want)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || reqs[0].Query.Get("self") != "true" || reqs[0].Query.Get("page_size") != "100" ||
		reqs[1].Query.Get("self") != "" || reqs[1].Query.Get("sort_by") != "score" {
		t.Errorf("requests %+v", reqs)
	}

	own := configured(t, srv, map[string]string{"library_voices": "0"})
	voices, err = own.Voices(t.Context(), &sdk.VoicesRequest{Credentials: creds})
	if err != nil || len(voices) != 2 {
		t.Errorf("library_voices 0: %v, %+v", err, voices)
	}
	if err := New().Configure(t.Context(), map[string]string{"library_voices": "101"}); sdktest.AsError(t, err).Kind != sdk.KindInvalidRequest {
		t.Errorf("library_voices 101: %v", err)
	}
}

func TestCloneOnTheWire(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	req := cloneRequest(fake.Key)
	req.Samples = append(req.Samples, sdk.Sample{MediaType: "audio/mpeg", Data: []byte{0xff, 0xfb, 0x90}})
	req.Options = []byte(`{"texts": ["one", "two"], "tags": ["en", "calm"], "enhance_audio_quality": false}`)
	resp, err := p.Clone(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := srv.LastRequest()
	if got.Header.Get("Authorization") != "Bearer "+fake.Key {
		t.Errorf("headers %v", got.Header)
	}
	form, err := fakeupstream.ParseMultipart(got)
	if err != nil {
		t.Fatal(err)
	}
	wantValues := map[string][]string{
		"type": {"tts"}, "train_mode": {"fast"}, "title": {"Narrator"}, "visibility": {"private"}, "description": {"calm"},
		"texts": {"one", "two"}, "tags": {"en", "calm"}, "enhance_audio_quality": {"false"},
	}
	if !reflect.DeepEqual(form.Value, wantValues) {
		t.Errorf("form values %v, want %v", form.Value, wantValues)
	}
	voices := form.File["voices"]
	if len(voices) != 2 || voices[0].Filename != "me.wav" || voices[0].Header.Get("Content-Type") != "audio/wav" || voices[0].Size != 44+3200 ||
		voices[1].Filename != "sample-2.mp3" {
		t.Errorf("voices %+v", voices)
	}
	synth := request(fake.Key)
	synth.Voice = resp.VoiceID
	if _, err := p.Synthesize(t.Context(), synth); err != nil {
		t.Errorf("synthesizing with the cloned voice: %v", err)
	}
	// A public model without a cover image is the API's 400.
	public := cloneRequest(fake.Key)
	public.Options = []byte(`{"visibility": "public"}`)
	if _, err := p.Clone(t.Context(), public); sdktest.AsError(t, err).UpstreamStatus != 400 {
		t.Errorf("public without a cover: %v", err)
	}
	for name, bad := range map[string]*sdk.CloneRequest{
		"no samples":     {Credentials: req.Credentials},
		"empty sample":   {Samples: []sdk.Sample{{MediaType: "audio/wav"}}, Credentials: req.Credentials},
		"unknown option": {Samples: req.Samples, Options: []byte(`{"cover_image": "x"}`), Credentials: req.Credentials},
		"too many texts": {Samples: req.Samples[:1], Options: []byte(`{"texts": ["a", "b"]}`), Credentials: req.Credentials},
	} {
		if _, err := p.Clone(t.Context(), bad); sdktest.AsError(t, err).Kind != sdk.KindInvalidRequest {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestInvalidRequests(t *testing.T) {
	tests := []sdktest.Refusal{
		{Name: "unknown option", Modify: func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"references": []}`) }},
		{Name: "the gateway's own field", Modify: func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"format": "opus"}`) }},
		{Name: "unknown prosody field", Modify: func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"prosody": {"pitch": 1}}`) }},
		{Name: "mp3 bitrate on pcm", Modify: func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"mp3_bitrate": 128}`) }},
		{Name: "speed out of range", Modify: func(r *sdk.SynthesizeRequest) { r.Speed = 3 }},
		{Name: "no voice", Modify: func(r *sdk.SynthesizeRequest) { r.Voice = "" }},
		{Name: "blank text", Modify: func(r *sdk.SynthesizeRequest) { r.Text = " " }},
		{Name: "pcm rate", Modify: func(r *sdk.SynthesizeRequest) { r.SampleRate = 22050 }},
		{Name: "mp3 rate", Modify: func(r *sdk.SynthesizeRequest) { r.Format, r.SampleRate = sdk.FormatMP3, 16000 }},
		{Name: "model", Modify: func(r *sdk.SynthesizeRequest) { r.Model = "speech-1.6" }},
		{Name: "format", Modify: func(r *sdk.SynthesizeRequest) { r.Format = "flac" }},
		{Name: "opus rate", Modify: func(r *sdk.SynthesizeRequest) { r.Format, r.SampleRate = sdk.FormatOpus, 24000 }},
		{Name: "opus bitrate", Modify: func(r *sdk.SynthesizeRequest) { r.Format, r.Bitrate = sdk.FormatOpus, 96 }},
		{Name: "mp3 bitrate", Modify: func(r *sdk.SynthesizeRequest) { r.Format, r.Bitrate = sdk.FormatMP3, 96 }},
		{Name: "mp3_bitrate against the bitrate", Modify: func(r *sdk.SynthesizeRequest) {
			r.Format, r.Bitrate, r.Options = sdk.FormatMP3, 64, []byte(`{"mp3_bitrate": 192}`)
		}},
		{Name: "opus_bitrate is the request's", Modify: func(r *sdk.SynthesizeRequest) {
			r.Format, r.Options = sdk.FormatOpus, []byte(`{"opus_bitrate": 24000}`)
		}},
	}
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	sdktest.CheckRefusals(t, p, func() *sdk.SynthesizeRequest { return request(fake.Key) }, tests)
	if n := srv.Calls(); n != 0 {
		t.Errorf("%d upstream calls for invalid requests", n)
	}
}

func TestParseError(t *testing.T) {
	tests := []struct{ body, code, msg string }{
		{`{"status": 401, "message": "Invalid Token"}`, "", "Invalid Token"},
		{`{"status": 400, "message": "Bad voice", "reason": "reference_not_found"}`, "reference_not_found", "Bad voice"},
		{`[{"loc": ["prosody", "speed"], "type": "value_error", "msg": "too fast", "ctx": {}, "in": "body"}]`, "validation_error", "prosody.speed: too fast"},
		{`{"detail": [{"loc": ["body", "text"], "msg": "Field required", "type": "missing"}]}`, "validation_error", "body.text: Field required"},
		{"Expecting value: line 1 column 1\nmore", "", "Expecting value: line 1 column 1"},
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

// planFor asks p for the plan of req with its text replaced by
// sdk.PlanText.
func planFor(t *testing.T, p sdk.Provider, req sdk.SynthesizeRequest, stream bool) (*sdk.Plan, error) {
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

// TestPlanMatchesSynthesize: a planned clip or stream, sent with net/http,
// is the /v1/tts request Synthesize sends (headers, model header and body)
// and answers the same audio.
func TestPlanMatchesSynthesize(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	tests := []struct {
		name, format, model, options string
		rate                         int
		speed                        float64
		stream                       bool
		media                        string
		frame                        int
	}{
		{name: "pcm", media: "audio/pcm;rate=44100", frame: 2},
		{name: "pcm 16 kHz stream", format: sdk.FormatPCM, rate: 16000, stream: true, media: "audio/pcm;rate=16000", frame: 2},
		{name: "wav on s1", model: "s1", format: sdk.FormatWAV, rate: 24000, media: "audio/wav", frame: 1},
		{name: "mp3 stream", format: sdk.FormatMP3, stream: true, media: "audio/mpeg", frame: 1},
		{name: "options and speed", model: "s2-pro", speed: 1.25, options: `{"latency": "low", "prosody": {"volume": 2}}`, media: "audio/pcm;rate=44100", frame: 2},
	}
	for name, p := range planners(t, map[string]string{"base_url": srv.BaseURL()}) {
		for _, tt := range tests {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				req := request(fake.Key)
				req.Text, req.Format, req.SampleRate, req.Speed = planSentence, tt.format, tt.rate, tt.speed
				if tt.model != "" {
					req.Model = tt.model
				}
				if tt.options != "" {
					req.Options = []byte(tt.options)
				}
				pl, err := planFor(t, p, *req, tt.stream)
				if err != nil {
					t.Fatal(err)
				}
				if pl.MediaType != tt.media || pl.FrameSize != tt.frame || pl.Header["Model"] != req.Model {
					t.Errorf("media type %q, frame size %d, headers %v; want %q, %d, model %s", pl.MediaType, pl.FrameSize, pl.Header, tt.media, tt.frame, req.Model)
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
				for _, h := range []string{"Authorization", "Model", "Content-Type"} {
					if sent.Header.Get(h) != want.Header.Get(h) {
						t.Errorf("%s: planned %q, Synthesize %q", h, sent.Header.Get(h), want.Header.Get(h))
					}
				}
				if sent.Path != fake.TTSPath || want.Path != fake.TTSPath || !reflect.DeepEqual(sentBody, wantBody) {
					t.Errorf("planned %s %s\nSynthesize %s %s", sent.Path, sent.Body, want.Path, want.Body)
				}
			})
		}
	}
}

// TestPlanRefuses: timestamps are refused as unsupported, so that the
// gateway calls the plugin; the caller's mistakes as in Synthesize. No
// refusal calls upstream.
func TestPlanRefuses(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	tests := []struct {
		name   string
		modify func(*sdk.SynthesizeRequest)
		kind   sdk.ErrorKind
	}{
		{"timestamps", func(r *sdk.SynthesizeRequest) { r.Timestamps = true }, sdk.KindUnsupported},
		{"unknown format", func(r *sdk.SynthesizeRequest) { r.Format = "flac" }, sdk.KindInvalidRequest},
		{"unknown option", func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"pitch": 2}`) }, sdk.KindInvalidRequest},
		{"no key", func(r *sdk.SynthesizeRequest) { r.Credentials = sdk.Credentials{} }, sdk.KindUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request(fake.Key)
			tt.modify(req)
			pl, err := planFor(t, p, *req, false)
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
	const wrongKey = "fa-wrong-9876543210zyxwvutsrq"
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
		{name: "key echoed in the message", key: fake.Key, fault: &fakeupstream.Fault{Status: 401, Message: "Invalid Token " + fake.Key}, kind: sdk.KindUnauthorized, status: 401},
		{name: "no credit", key: fake.Key, fault: &fakeupstream.Fault{Status: 402}, kind: sdk.KindUpstream, status: 402},
		{name: "429 with Retry-After", key: fake.Key, fault: &fakeupstream.Fault{Status: 429, RetryAfter: "3"}, kind: sdk.KindRateLimited, status: 429},
		{name: "500", key: fake.Key, fault: &fakeupstream.Fault{Status: 500}, kind: sdk.KindUpstream, status: 500},
		{name: "503", key: fake.Key, fault: &fakeupstream.Fault{Status: 503}, kind: sdk.KindUnavailable, status: 503},
		{name: "unknown voice", key: fake.Key, modify: func(r *sdk.SynthesizeRequest) { r.Voice = unknownVoice }, kind: sdk.KindInvalidRequest, status: 400},
		// A value outside the document's ranges no longer reaches Fish
		// Audio (the plugin refuses it first), so a 422 is injected.
		{name: "422", key: fake.Key, fault: &fakeupstream.Fault{Status: 422, Message: "temperature: Input should be less than or equal to 1"}, kind: sdk.KindInvalidRequest, status: 422},
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
				pl, err := planFor(t, p, *req, false)
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
