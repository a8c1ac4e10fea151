package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
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
	fake "github.com/voxgate/voxgate/internal/fakeupstream/resemble"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// pluginPath is the plugin binary, built once by TestMain.
var pluginPath string

func TestMain(m *testing.M) { os.Exit(sdktest.MainWithPlugin(m, &pluginPath)) }

func settings(srv *fake.Server) map[string]string {
	return map[string]string{"base_url": srv.BaseURL(), "synthesis_url": srv.SynthesisURL()}
}

func kitConfig(srv *fake.Server, model string) sdktest.Config {
	return sdktest.Config{
		Settings:     settings(srv),
		Model:        model,
		Voice:        fake.VoiceLucy,
		Credentials:  sdk.Credentials{APIKey: fake.Key},
		InvalidVoice: "00000000",
		// The kit clones from one sample without options; Resemble needs
		// at least 3 recordings with their transcripts (TestClone).
		Skip: []string{sdktest.CheckClone},
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
		t.Run(m.ID, func(t *testing.T) { sdktest.Run(t, New(), kitConfig(srv, m.ID)) })
	}
}

func configured(t *testing.T, set map[string]string, extra map[string]string) *Provider {
	return sdktest.Configure(t, New(), set, extra)
}

func request(key string) *sdk.SynthesizeRequest {
	return &sdk.SynthesizeRequest{Model: defaultModel, Voice: fake.VoiceLucy, Text: "Hello there, world.", Credentials: sdk.Credentials{APIKey: key}}
}

func TestDescribeAndConfigure(t *testing.T) {
	d, err := New().Describe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != "resemble" || d.DefaultModel != "chatterbox" || len(d.Models) != 3 || d.Models[2].ID != sdk.AnyModel {
		t.Fatalf("%+v", d)
	}
	for _, m := range d.Models {
		c := m.Capabilities
		if !c.Streaming || !c.Timestamps || !c.Cloning || c.Speed || m.MaxTextChars != 3000 || m.Encodings[0] != (sdk.Encoding{Format: sdk.FormatPCM, SampleRate: 22050}) {
			t.Errorf("model %+v", m)
		}
	}
	if c := New().cfg.Load(); c.BaseURL != "https://app.resemble.ai/api/v2" || c.synthesisURL != "https://f.cluster.resemble.ai" {
		t.Errorf("defaults %s, %s", c.BaseURL, c.synthesisURL)
	}
	if err := New().Configure(t.Context(), map[string]string{"synthesis_url": "f.cluster.resemble.ai"}); sdktest.AsError(t, err).Kind != sdk.KindInvalidRequest {
		t.Errorf("a synthesis_url without scheme: %v", err)
	}
	// Synthesis goes to synthesis_url, everything else to base_url.
	synth := fake.New(t, fakeupstream.Options{})
	apiHost := fake.New(t, fakeupstream.Options{})
	p := configured(t, map[string]string{"base_url": apiHost.BaseURL(), "synthesis_url": synth.SynthesisURL() + "/"}, nil)
	if _, err := p.Synthesize(t.Context(), request(fake.Key)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Voices(t.Context(), &sdk.VoicesRequest{Credentials: sdk.Credentials{APIKey: fake.Key}}); err != nil {
		t.Fatal(err)
	}
	if synth.CallsTo(fake.SynthesizePath) != 1 || synth.CallsTo(fake.VoicesPath) != 0 || apiHost.CallsTo(fake.VoicesPath) != 1 || apiHost.CallsTo(fake.SynthesizePath) != 0 {
		t.Errorf("synthesis host %d calls, API host %d calls", synth.Calls(), apiHost.Calls())
	}
}

func TestUpstreamFailures(t *testing.T) {
	const wrongKey = "rsmbl-wrong-token-9876543210zyxw"
	sdktest.Failures[*fake.Server]{
		Fake: func(t *testing.T) *fake.Server { return fake.New(t, fakeupstream.Options{}) },
		Provider: func(t *testing.T, srv *fake.Server, s map[string]string) sdk.Provider {
			return configured(t, settings(srv), s)
		},
		Request: request,
	}.Run(t, []sdktest.FailureCase[*fake.Server]{
		{Name: "wrong key", Key: wrongKey, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401, MessageHas: "Invalid API token"}, Path: fake.SynthesizePath, Calls: 1},
		{Name: "missing key", Want: &sdktest.Answer{Kind: sdk.KindUnauthorized}, Path: fake.SynthesizePath, Calls: 0},
		{Name: "unknown voice", Key: fake.Key, Voice: "00000000", Want: &sdktest.Answer{Kind: sdk.KindInvalidRequest, Status: 404, MessageHas: "not found"}, Path: fake.SynthesizePath, Calls: 1},
		{Name: "429 with Retry-After, then success", Key: fake.Key, Path: fake.SynthesizePath, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "0.05"}) }},
		{Name: "429 forever", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindRateLimited, Status: 429, Retryable: true, RetryAfter: 20 * time.Millisecond}, Path: fake.SynthesizePath, Calls: 3,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 429, RetryAfter: "0.02"}) }},
		{Name: "503 retried on the stream", Key: fake.Key, Op: sdktest.OpStream, Path: fake.StreamPath, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 503}) }},
		{Name: "stream 401", Key: wrongKey, Op: sdktest.OpStream, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401}, Path: fake.StreamPath, Calls: 1},
		{Name: "timeout", Key: fake.Key, Settings: map[string]string{"timeout": "200ms"}, Want: &sdktest.Answer{Kind: sdk.KindTimeout, Retryable: true}, Path: fake.SynthesizePath, Calls: 1,
			Setup: func(s *fake.Server) { s.SetLatency(time.Minute) }},
		{Name: "key echoed in a message", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401}, Path: fake.SynthesizePath, Calls: 1,
			Setup: func(s *fake.Server) {
				s.FailAlways(fakeupstream.Fault{Status: 401, Message: "token " + fake.Key + " expired"})
			}},
	})
}

func TestRequestOnTheWire(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, settings(srv), nil)
	tests := []struct {
		model, format, options string
		rate                   int
		stream                 bool
		path                   string
		want                   string // the body without voice_uuid and data
		mediaType              string
	}{
		{path: fake.SynthesizePath, mediaType: "audio/pcm;rate=22050",
			want: `{"output_format":"wav","precision":"PCM_16","sample_rate":"22050"}`},
		{model: "chatterbox-turbo", format: sdk.FormatWAV, rate: 44100, options: `{"project_uuid":"p1","title":"t","use_hd":true,"apply_custom_pronunciations":true}`,
			path: fake.SynthesizePath, mediaType: "audio/wav",
			want: `{"apply_custom_pronunciations":true,"model":"chatterbox-turbo","output_format":"wav","precision":"PCM_16","project_uuid":"p1","sample_rate":"44100","title":"t","use_hd":true}`},
		{format: sdk.FormatMP3, rate: 48000, path: fake.SynthesizePath, mediaType: "audio/mpeg",
			want: `{"output_format":"mp3","sample_rate":"48000"}`},
		{stream: true, rate: 16000, path: fake.StreamPath, mediaType: "audio/pcm;rate=16000",
			want: `{"precision":"PCM_16","sample_rate":"16000"}`},
		{stream: true, format: sdk.FormatWAV, options: `{"use_hd":false}`, path: fake.StreamPath, mediaType: "audio/wav",
			want: `{"precision":"PCM_16","sample_rate":"22050","use_hd":false}`},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			req := request(fake.Key)
			req.Format, req.SampleRate = tt.format, tt.rate
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
			if want := fakeupstream.Speak(req.Text, 1).Seconds; clip.Format != "mp3" && math.Abs(clip.Seconds()-want) > 0.001 {
				t.Errorf("%.3f s, want %.3f", clip.Seconds(), want)
			}
			got, _ := srv.LastRequest()
			if got.Path != tt.path || got.Header.Get("Authorization") != "Bearer "+fake.Key || got.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%s with headers %v", got.Path, got.Header)
			}
			var body map[string]any
			if err := json.Unmarshal(got.Body, &body); err != nil {
				t.Fatal(err)
			}
			if body["voice_uuid"] != fake.VoiceLucy || body["data"] != "Hello there, world." {
				t.Errorf("body %s", got.Body)
			}
			delete(body, "voice_uuid")
			delete(body, "data")
			if b, _ := json.Marshal(body); string(b) != tt.want {
				t.Errorf("body %s\nwant %s", b, tt.want)
			}
		})
	}
}

// TestEncodings asks Synthesize and Stream for every encoding the models
// list: each reaches Resemble as exactly that output_format, precision and
// sample_rate, and the audio comes back as the fake sent it, byte for byte
// (pcm: the WAV's samples without its 44-byte header), with the sdk's
// media type. An mp3 stream is refused without a call.
func TestEncodings(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, settings(srv), nil)
	sent := func(t *testing.T) string {
		t.Helper()
		got, _ := srv.LastRequest()
		var b struct {
			OutputFormat string `json:"output_format"`
			Precision    string `json:"precision"`
			SampleRate   string `json:"sample_rate"`
		}
		if err := json.Unmarshal(got.Body, &b); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%s %s %s %s", got.Path, b.OutputFormat, b.Precision, b.SampleRate)
	}
	for _, e := range models()[0].Encodings {
		t.Run(e.String(), func(t *testing.T) {
			want := fmt.Sprintf("%s wav PCM_16 %d", fake.SynthesizePath, e.SampleRate)
			if e.Format == sdk.FormatMP3 {
				want = fmt.Sprintf("%s mp3  %d", fake.SynthesizePath, e.SampleRate)
			}
			req := request(fake.Key)
			req.Format, req.SampleRate = e.Format, e.SampleRate
			resp, err := p.Synthesize(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if got := sent(t); got != want {
				t.Errorf("clip: asked %q, want %q", got, want)
			}
			answer := srv.LastAnswer()
			if e.Format == sdk.FormatPCM {
				answer = answer[44:]
			}
			if !bytes.Equal(resp.Audio, answer) || resp.MediaType != sdk.MediaType(e) {
				t.Errorf("clip: %d bytes of %q; want %d of %q", len(resp.Audio), resp.MediaType, len(answer), sdk.MediaType(e))
			}
			calls := srv.Calls()
			var streamed []byte
			var mediaType string
			err = p.Stream(t.Context(), req, func(c sdk.Chunk) error {
				mediaType += c.MediaType
				streamed = append(streamed, c.Data...)
				return nil
			})
			if e.Format == sdk.FormatMP3 {
				if sdktest.AsError(t, err).Kind != sdk.KindInvalidRequest || srv.Calls() != calls {
					t.Errorf("an mp3 stream: %v after %d calls", err, srv.Calls()-calls)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := sent(t), fmt.Sprintf("%s  PCM_16 %d", fake.StreamPath, e.SampleRate); got != want {
				t.Errorf("stream: asked %q, want %q", got, want)
			}
			answer = srv.LastAnswer()
			if e.Format == sdk.FormatPCM {
				answer = answer[44:]
			}
			if !bytes.Equal(streamed, answer) || mediaType != sdk.MediaType(e) {
				t.Errorf("stream: %d bytes of %q; want %d", len(streamed), mediaType, len(answer))
			}
		})
	}
}

func TestInvalidRequests(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*sdk.SynthesizeRequest)
		stream bool
		kind   sdk.ErrorKind
	}{
		{"unknown option", func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"precision":"PCM_32"}`) }, false, sdk.KindInvalidRequest},
		{"option of the wrong type", func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"use_hd":"yes"}`) }, false, sdk.KindInvalidRequest},
		{"title on a stream", func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"title":"x"}`) }, true, sdk.KindInvalidRequest},
		{"stream text limit", func(r *sdk.SynthesizeRequest) { r.Text = strings.Repeat("a", 2001) }, true, sdk.KindInvalidRequest},
		{"mp3 stream", func(r *sdk.SynthesizeRequest) { r.Format = sdk.FormatMP3 }, true, sdk.KindInvalidRequest},
		{"speed", func(r *sdk.SynthesizeRequest) { r.Speed = 1.2 }, false, sdk.KindInvalidRequest},
		{"no voice", func(r *sdk.SynthesizeRequest) { r.Voice = "" }, false, sdk.KindInvalidRequest},
		{"blank text", func(r *sdk.SynthesizeRequest) { r.Text = "\n" }, false, sdk.KindInvalidRequest},
		{"rate", func(r *sdk.SynthesizeRequest) { r.SampleRate = 24000 }, false, sdk.KindInvalidRequest},
		{"not a model id", func(r *sdk.SynthesizeRequest) { r.Model = "Chatterbox 9" }, false, sdk.KindInvalidRequest},
		{"format", func(r *sdk.SynthesizeRequest) { r.Format = "flac" }, false, sdk.KindInvalidRequest},
	}
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, settings(srv), nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request(fake.Key)
			tt.modify(req)
			var err error
			if tt.stream {
				err = p.Stream(t.Context(), req, func(sdk.Chunk) error { return nil })
			} else {
				_, err = p.Synthesize(t.Context(), req)
			}
			if e := sdktest.AsError(t, err); e.Kind != tt.kind {
				t.Errorf("got %v, want %s", e, tt.kind)
			}
		})
	}
	if n := srv.Calls(); n != 0 {
		t.Errorf("%d upstream calls for invalid requests", n)
	}
}

// TestTimestampsMatchTheAudio: graphemes grouped into words give the
// fake's exact word timings, for every format.
func TestTimestampsMatchTheAudio(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, settings(srv), nil)
	for _, format := range []string{sdk.FormatPCM, sdk.FormatWAV, sdk.FormatMP3} {
		req := request(fake.Key)
		req.Text, req.Timestamps, req.Format = `"Quoted" words,  with  double spaces.`, true, format
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
	}
	// Malformed times are skipped, not trusted.
	ts := &timestamps{GraphChars: []string{"a", "b", " ", "c"}, GraphTimes: [][]float64{{0, 1}, {1}, {2, 3}}}
	if got := fmt.Sprint(ts.words()); got != "[{a 0 1}]" {
		t.Errorf("got %s", got)
	}
}

// wavFile is a 16-bit mono WAV of n zero samples at rate, with a LIST
// chunk before fmt when list is set.
func wavFile(rate, n int, list bool) []byte {
	var b bytes.Buffer
	b.WriteString("RIFF")
	_ = binary.Write(&b, binary.LittleEndian, uint32(0))
	b.WriteString("WAVE")
	if list {
		b.WriteString("LIST")
		_ = binary.Write(&b, binary.LittleEndian, uint32(5))
		b.WriteString("INFOx\x00") // 5 bytes and a pad byte
	}
	b.WriteString("fmt ")
	_ = binary.Write(&b, binary.LittleEndian, []uint32{16})
	_ = binary.Write(&b, binary.LittleEndian, []uint16{1, 1})
	_ = binary.Write(&b, binary.LittleEndian, []uint32{uint32(rate), uint32(2 * rate)})
	_ = binary.Write(&b, binary.LittleEndian, []uint16{2, 16})
	b.WriteString("data")
	_ = binary.Write(&b, binary.LittleEndian, uint32(2*n))
	b.Write(make([]byte, 2*n))
	return b.Bytes()
}

func TestWAV(t *testing.T) {
	for _, list := range []bool{false, true} {
		w := wavFile(16000, 10, list)
		pcm, err := pcmOfWAV(w, 16000)
		if err != nil || len(pcm) != 20 {
			t.Errorf("list %v: %d bytes, %v", list, len(pcm), err)
		}
		br := bufio.NewReader(bytes.NewReader(w))
		if err := skipWAVHeader(br, 16000); err != nil {
			t.Fatalf("list %v: %v", list, err)
		}
		if rest, _ := br.Peek(100); len(rest) != 20 {
			t.Errorf("list %v: %d bytes after the header", list, len(rest))
		}
	}
	stereo := wavFile(16000, 10, false)
	binary.LittleEndian.PutUint16(stereo[22:], 2)
	for name, tt := range map[string]struct {
		data []byte
		rate int
	}{
		"not a WAV":   {[]byte("ID3 mp3 data here"), 16000},
		"wrong rate":  {wavFile(22050, 4, false), 16000},
		"stereo":      {stereo, 16000},
		"no data":     {wavFile(16000, 4, false)[:36], 16000},
		"cut short":   {wavFile(16000, 4, false)[:20], 16000},
		"data first?": {append([]byte("RIFF\x00\x00\x00\x00WAVEdata\x04\x00\x00\x00"), 0, 0, 0, 0), 16000},
	} {
		if _, err := pcmOfWAV(tt.data, tt.rate); err == nil {
			t.Errorf("pcmOfWAV: %s accepted", name)
		}
		if err := skipWAVHeader(bufio.NewReader(bytes.NewReader(tt.data)), tt.rate); err == nil {
			t.Errorf("skipWAVHeader: %s accepted", name)
		}
	}
}

// streamServer answers /stream with a fixed body.
func streamServer(t *testing.T, body []byte) *Provider {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "audio/wav")
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return configured(t, map[string]string{"synthesis_url": srv.URL}, nil)
}

func TestStreamBodies(t *testing.T) {
	req := request(fake.Key)
	req.SampleRate = 16000
	// pcm: the header goes, the samples stay.
	p := streamServer(t, wavFile(16000, 5, true))
	var got []byte
	if err := p.Stream(t.Context(), req, func(c sdk.Chunk) error { got = append(got, c.Data...); return nil }); err != nil || len(got) != 10 {
		t.Errorf("%d bytes, %v", len(got), err)
	}
	// A stream of another rate, or not a WAV, is the upstream's fault.
	for _, body := range [][]byte{wavFile(8000, 5, false), []byte("<html>oops</html>"), []byte("RIFF")} {
		p := streamServer(t, body)
		err := p.Stream(t.Context(), req, func(sdk.Chunk) error { return nil })
		if e := sdktest.AsError(t, err); e.Kind != sdk.KindUpstream && e.Kind != sdk.KindUnavailable {
			t.Errorf("%q: %v", body[:4], e)
		}
	}
	// wav: passed on whole, header included.
	req.Format = sdk.FormatWAV
	p = streamServer(t, wavFile(16000, 5, false))
	got = nil
	if err := p.Stream(t.Context(), req, func(c sdk.Chunk) error { got = append(got, c.Data...); return nil }); err != nil || !bytes.Equal(got, wavFile(16000, 5, false)) {
		t.Errorf("%d bytes, %v", len(got), err)
	}
}

func TestSynthesisAnswers(t *testing.T) {
	wav := base64.StdEncoding.EncodeToString(wavFile(22050, 8, false))
	tests := []struct {
		name     string
		body     string
		wav      bool
		kind     sdk.ErrorKind // -1: success
		warnings int
	}{
		{"issues become warnings", `{"success":true,"audio_content":"` + wav + `","issues":["slow voice"]}`, false, -1, 1},
		{"success false", `{"success":false,"message":"voice busy"}`, false, sdk.KindUpstream, 0},
		{"bad base64", `{"success":true,"audio_content":"!!"}`, false, sdk.KindUpstream, 0},
		{"no audio", `{"success":true,"audio_content":""}`, false, sdk.KindUpstream, 0},
		{"pcm wanted, mp3 given", `{"success":true,"audio_content":"SUQzBAAAAAAA"}`, false, sdk.KindUpstream, 0},
		{"wav passed on", `{"success":true,"audio_content":"` + wav + `"}`, true, -1, 0},
		{"not JSON", `<html>`, false, sdk.KindUpstream, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, tt.body)
			}))
			t.Cleanup(srv.Close)
			p := configured(t, map[string]string{"synthesis_url": srv.URL}, nil)
			req := request(fake.Key)
			if tt.wav {
				req.Format = sdk.FormatWAV
			}
			resp, err := p.Synthesize(t.Context(), req)
			if tt.kind == -1 {
				if err != nil {
					t.Fatal(err)
				}
				if len(resp.Warnings) != tt.warnings {
					t.Errorf("warnings %v", resp.Warnings)
				}
				return
			}
			if e := sdktest.AsError(t, err); e.Kind != tt.kind {
				t.Errorf("got %+v, want kind %s", e, tt.kind)
			}
		})
	}
}

// TestPassThroughModel: through the plugin process, a model Resemble has
// and the plugin does not list (a newer one) reaches Resemble under the
// id the caller wrote; an id that cannot be Resemble's is refused
// without a call.
func TestPassThroughModel(t *testing.T) {
	const newModel = "chatterbox-2-pro"
	srv := fake.New(t, fakeupstream.Options{NewModels: []string{newModel}})
	p := sdktest.StartPlugin(t, pluginPath)
	if err := p.Configure(t.Context(), settings(srv)); err != nil {
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
		Invalid: []string{"Chatterbox", "chatterbox_2", "2-chatterbox", "chatterbox 2", "chatterbox/../x", ""},
	})
}

func TestParseError(t *testing.T) {
	tests := []struct{ body, code, msg string }{
		{`{"success":false,"message":"Invalid API token"}`, "", "Invalid API token"},
		{`{"success":false,"message":"Invalid parameters","errors":{"voice_uuid":["can't be blank"],"data":["is too long"]}}`, "", "Invalid parameters; data: is too long; voice_uuid: can't be blank"},
		{`{"success":false,"error":"voice_not_found","message":"Voice not found"}`, "voice_not_found", "Voice not found"},
		{`{"success":false,"error":"Something went wrong"}`, "", "Something went wrong"},
		{`{"errors":{"name":["can't be blank"]}}`, "", "name: can't be blank"},
		{`<html>502</html>`, "", ""},
	}
	for _, tt := range tests {
		code, msg := parseError([]byte(tt.body))
		if code != tt.code || msg != tt.msg {
			t.Errorf("parseError(%q) = %q, %q; want %q, %q", tt.body, code, msg, tt.code, tt.msg)
		}
	}
}

func TestVoicesFollowPages(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	srv.SetPageSize(1)
	p := configured(t, settings(srv), nil)
	voices, err := p.Voices(t.Context(), &sdk.VoicesRequest{Credentials: sdk.Credentials{APIKey: fake.Key}})
	if err != nil {
		t.Fatal(err)
	}
	if len(voices) != 3 || srv.CallsTo(fake.VoicesPath) != 3 {
		t.Fatalf("%d voices in %d calls, want 3 in 3", len(voices), srv.CallsTo(fake.VoicesPath))
	}
	if want := (sdk.Voice{ID: fake.VoiceMarie, Name: "Marie", Language: "fr-FR"}); voices[2] != want {
		t.Errorf("voice 2 = %+v, want %+v", voices[2], want)
	}
	got, _ := srv.LastRequest()
	if got.Query.Get("page") != "3" || got.Query.Get("page_size") != "100" || got.Header.Get("Authorization") != "Bearer "+fake.Key {
		t.Errorf("last request %v %v", got.Query, got.Header)
	}
}

// cloneRequest has n samples of 2 s of 16 kHz PCM, with transcripts.
func cloneRequest(n int) *sdk.CloneRequest {
	req := &sdk.CloneRequest{Model: defaultModel, Name: "Narrator", Credentials: sdk.Credentials{APIKey: fake.Key}}
	var texts []string
	for i := range n {
		req.Samples = append(req.Samples, sdk.Sample{MediaType: "audio/pcm;rate=16000", Data: make([]byte, 64000)})
		texts = append(texts, fmt.Sprintf("Sample number %d.", i+1))
	}
	req.Options, _ = json.Marshal(map[string]any{"transcripts": texts, "emotion": "happy", "language": "en-GB"})
	return req
}

func TestClone(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, settings(srv), nil)
	resp, err := p.Clone(t.Context(), cloneRequest(3))
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 5 || reqs[0].Path != fake.VoicesPath || reqs[4].Path != fake.VoicePath(resp.VoiceID, "/build") {
		t.Fatalf("requests %v", reqs)
	}
	var created map[string]any
	_ = json.Unmarshal(reqs[0].Body, &created)
	if !reflect.DeepEqual(created, map[string]any{"name": "Narrator", "voice_type": "rapid", "language": "en-GB"}) {
		t.Errorf("creation body %s", reqs[0].Body)
	}
	form, err := fakeupstream.ParseMultipart(reqs[2])
	if err != nil {
		t.Fatal(err)
	}
	if form.Value["text"][0] != "Sample number 2." || form.Value["emotion"][0] != "happy" || form.Value["is_active"][0] != "true" || form.Value["name"][0] != "Narrator 2" {
		t.Errorf("recording form %v", form.Value)
	}
	if f := form.File["file"]; len(f) != 1 || f[0].Header.Get("Content-Type") != "audio/wav" || f[0].Size != 44+64000 {
		t.Errorf("recording file %+v", f)
	}
	synth := request(fake.Key)
	synth.Voice = resp.VoiceID
	if _, err := p.Synthesize(t.Context(), synth); err != nil {
		t.Errorf("synthesizing with the cloned voice: %v", err)
	}

	for name, bad := range map[string]*sdk.CloneRequest{
		"one sample": cloneRequest(1),
		"no transcripts": func() *sdk.CloneRequest {
			r := cloneRequest(3)
			r.Options = nil
			return r
		}(),
		"empty sample": func() *sdk.CloneRequest {
			r := cloneRequest(3)
			r.Samples[1].Data = nil
			return r
		}(),
		"unknown option": func() *sdk.CloneRequest {
			r := cloneRequest(3)
			r.Options = []byte(`{"transcripts":["a","b","c"],"voice_type":"professional"}`)
			return r
		}(),
	} {
		srv.Reset()
		if _, err := p.Clone(t.Context(), bad); sdktest.AsError(t, err).Kind != sdk.KindInvalidRequest || srv.Calls() != 0 {
			t.Errorf("%s: %v after %d calls", name, err, srv.Calls())
		}
	}

	// A recording Resemble refuses (under a second): the half-made voice
	// is deleted, nothing is retried.
	srv.Reset()
	short := cloneRequest(3)
	short.Samples[2].Data = make([]byte, 3200)
	before := len(srv.VoiceIDs())
	_, err = p.Clone(t.Context(), short)
	if e := sdktest.AsError(t, err); e.Kind != sdk.KindInvalidRequest || e.UpstreamStatus != 400 || !strings.Contains(e.Message, "1 and 12 seconds") {
		t.Errorf("short recording: %+v", e)
	}
	if len(srv.VoiceIDs()) != before {
		t.Errorf("the half-made voice was left: %v", srv.VoiceIDs())
	}
	if last, _ := srv.LastRequest(); last.Method != http.MethodDelete {
		t.Errorf("last request %s %s, want the DELETE", last.Method, last.Path)
	}
	// A 503 while uploading is not retried either (the voice's own
	// paths start with VoicesPath + "/"; its creation's does not).
	srv.Reset()
	before = len(srv.VoiceIDs())
	srv.FailNext(1, fakeupstream.Fault{Path: fake.VoicesPath + "/", Status: 503})
	if _, err := p.Clone(t.Context(), cloneRequest(3)); sdktest.AsError(t, err).Kind != sdk.KindUnavailable {
		t.Errorf("503 while uploading: %v", err)
	}
	if n := srv.Calls(); n != 3 || len(srv.VoiceIDs()) != before { // create, one recording, the DELETE
		t.Errorf("%d calls, want 3; voices %v", n, srv.VoiceIDs())
	}
}

// planSentence needs JSON escaping: quotes, a backslash, a tab, HTML
// characters and non-ASCII letters.
const planSentence = "She said \"ready\" \\ then paused,\tnaïve <and> calm & done."

func planners(t *testing.T, set map[string]string) map[string]sdk.Provider {
	t.Helper()
	out := map[string]sdk.Provider{"in process": New(), "over the wire": sdktest.StartPlugin(t, pluginPath)}
	for name, p := range out {
		if err := p.Configure(t.Context(), set); err != nil {
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

// TestPlanMatchesStream: a planned wav stream, sent with net/http, is the
// /stream request Stream sends and answers the same bytes.
func TestPlanMatchesStream(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	for name, p := range planners(t, settings(srv)) {
		t.Run(name, func(t *testing.T) {
			req := request(fake.Key)
			req.Model, req.Text, req.Format, req.SampleRate = "chatterbox-turbo", planSentence, sdk.FormatWAV, 32000
			req.Options = []byte(`{"project_uuid":"p1"}`)
			pl, err := plan(t, p, *req, true)
			if err != nil {
				t.Fatal(err)
			}
			if pl.MediaType != "audio/wav" || pl.FrameSize != 2 || pl.URL != srv.SynthesisURL()+fake.StreamPath {
				t.Errorf("plan %+v", pl)
			}
			planned, f, err := sdktest.SendPlan(t.Context(), http.DefaultClient, pl, req.Text)
			if err != nil || f != nil {
				t.Fatalf("%v %+v", err, f)
			}
			sent, _ := srv.LastRequest()
			var audio []byte
			if err := p.Stream(t.Context(), req, func(c sdk.Chunk) error { audio = append(audio, c.Data...); return nil }); err != nil {
				t.Fatal(err)
			}
			want, _ := srv.LastRequest()
			if !bytes.Equal(audio, planned) {
				t.Errorf("Stream %d bytes, the plan %d", len(audio), len(planned))
			}
			var sentBody, wantBody any
			_ = json.Unmarshal(sent.Body, &sentBody)
			_ = json.Unmarshal(want.Body, &wantBody)
			if sent.Path != want.Path || sent.Header.Get("Authorization") != want.Header.Get("Authorization") || !reflect.DeepEqual(sentBody, wantBody) {
				t.Errorf("planned %s %s\nStream %s %s", sent.Path, sent.Body, want.Path, want.Body)
			}
		})
	}
}

// TestPlanRefuses: what a plan cannot express is unsupported, so the
// gateway calls the plugin; the caller's mistakes are refused as by the
// plugin. No refusal calls upstream.
func TestPlanRefuses(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, settings(srv), nil)
	tests := []struct {
		name   string
		modify func(*sdk.SynthesizeRequest)
		stream bool
		kind   sdk.ErrorKind
	}{
		{"whole clip", func(*sdk.SynthesizeRequest) {}, false, sdk.KindUnsupported},
		{"wav clip", func(r *sdk.SynthesizeRequest) { r.Format = sdk.FormatWAV }, false, sdk.KindUnsupported},
		{"pcm stream", func(*sdk.SynthesizeRequest) {}, true, sdk.KindUnsupported},
		{"mp3 stream", func(r *sdk.SynthesizeRequest) { r.Format = sdk.FormatMP3 }, true, sdk.KindUnsupported},
		{"no key", func(r *sdk.SynthesizeRequest) { r.Credentials = sdk.Credentials{} }, false, sdk.KindUnauthorized},
		{"bad rate", func(r *sdk.SynthesizeRequest) { r.SampleRate = 11025 }, true, sdk.KindInvalidRequest},
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

// TestExplainMatchesStream: an error answer to a planned stream is
// explained as Stream reports it, without the key.
func TestExplainMatchesStream(t *testing.T) {
	const wrongKey = "rsmbl-wrong-token-9876543210zyxw"
	srv := fake.New(t, fakeupstream.Options{})
	set := settings(srv)
	set["max_attempts"] = "1"
	tests := []struct {
		name   string
		key    string
		fault  *fakeupstream.Fault
		voice  string
		kind   sdk.ErrorKind
		status int
	}{
		{name: "wrong key", key: wrongKey, kind: sdk.KindUnauthorized, status: 401},
		{name: "key echoed", key: fake.Key, fault: &fakeupstream.Fault{Status: 401, Message: "token " + fake.Key + " revoked"}, kind: sdk.KindUnauthorized, status: 401},
		{name: "429", key: fake.Key, fault: &fakeupstream.Fault{Status: 429, RetryAfter: "3"}, kind: sdk.KindRateLimited, status: 429},
		{name: "503", key: fake.Key, fault: &fakeupstream.Fault{Status: 503}, kind: sdk.KindUnavailable, status: 503},
		{name: "unknown voice", key: fake.Key, voice: "00000000", kind: sdk.KindInvalidRequest, status: 404},
	}
	for name, p := range planners(t, set) {
		for _, tt := range tests {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				srv.Reset()
				if tt.fault != nil {
					srv.FailAlways(*tt.fault)
				}
				req := request(tt.key)
				req.Format = sdk.FormatWAV
				if tt.voice != "" {
					req.Voice = tt.voice
				}
				want := sdktest.AsError(t, p.Stream(t.Context(), req, func(sdk.Chunk) error { return nil }))
				pl, err := plan(t, p, *req, true)
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
					t.Errorf("Explain: %+v\nStream: %+v\nwant kind %s, status %d", got, want, tt.kind, tt.status)
				}
				if strings.Contains(got.Error(), tt.key) {
					t.Errorf("the explanation %q shows the API key", got.Error())
				}
			})
		}
	}
}
