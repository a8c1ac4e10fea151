package main

import (
	"bytes"
	"encoding/base64"
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
	fake "github.com/voxgate/voxgate/internal/fakeupstream/inworld"
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
		Voice:        fake.VoiceDennis,
		Credentials:  sdk.Credentials{APIKey: fake.Key},
		InvalidVoice: "Nobody",
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

func configured(t *testing.T, baseURL string, extra map[string]string) *Provider {
	return sdktest.Configure(t, New(), map[string]string{"base_url": baseURL}, extra)
}

func request(key string) *sdk.SynthesizeRequest {
	return &sdk.SynthesizeRequest{Model: defaultModel, Voice: fake.VoiceDennis, Text: "Hello there, world.", Credentials: sdk.Credentials{APIKey: key}}
}

func cloneRequest(key string) *sdk.CloneRequest {
	return &sdk.CloneRequest{
		Model: defaultModel, Name: "Narrator", Description: "calm",
		Samples:     []sdk.Sample{{Filename: "me.pcm", MediaType: "audio/pcm;rate=16000", Data: make([]byte, 3200)}},
		Credentials: sdk.Credentials{APIKey: key},
	}
}

func TestDescribe(t *testing.T) {
	d, err := New().Describe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != "inworld" || d.DefaultModel != "inworld-tts-1.5-max" || len(d.Models) != 6 || d.Models[5].ID != sdk.AnyModel {
		t.Fatalf("%+v", d)
	}
	for _, m := range d.Models {
		if !m.Capabilities.Streaming || !m.Capabilities.Timestamps || !m.Capabilities.Cloning || !m.Capabilities.Speed ||
			m.MaxTextChars != 2000 || m.MinSpeed != 0.5 || m.MaxSpeed != 1.5 || m.Encodings[0] != (sdk.Encoding{Format: sdk.FormatPCM, SampleRate: 48000}) {
			t.Errorf("model %+v", m)
		}
	}
	if _, ok := any(New()).(sdk.Planner); ok {
		t.Error("the plugin plans, but every Inworld answer is JSON around base64 audio")
	}
}

// TestDescribePrices: the two models Inworld's billing page prices carry
// its rates per million characters, with the page as their source; the
// models it does not name, and the ids passed through, stay unpublished
// (zero, said so) rather than borrow a neighbour's rate.
func TestDescribePrices(t *testing.T) {
	d, err := New().Describe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"inworld-tts-1.5-mini": 5, "inworld-tts-1.5-max": 10,
		"inworld-tts-2": 0, "inworld-tts-1": 0, "inworld-tts-1-max": 0, sdk.AnyModel: 0}
	for _, m := range d.Models {
		amount, ok := want[m.ID]
		if !ok {
			t.Errorf("model %s: no price expected", m.ID)
			continue
		}
		delete(want, m.ID)
		if len(m.Prices) != 1 {
			t.Errorf("%s: prices %+v", m.ID, m.Prices)
			continue
		}
		p := m.Prices[0]
		wantSource := "https://docs.inworld.ai/docs/portal/billing"
		if amount == 0 {
			wantSource = sdk.PriceUnpublished
		}
		if p.Unit != sdk.UnitCharacters || p.Currency != "USD" || p.Amount != amount || (amount > 0 && p.Per != 1_000_000) || p.Source != wantSource || p.Date == "" {
			t.Errorf("%s: price %+v, want %v USD per million characters from %s", m.ID, p, amount, wantSource)
		}
	}
	if len(want) > 0 {
		t.Errorf("models not described: %v", want)
	}
}

func TestUpstreamFailures(t *testing.T) {
	const wrongKey = "d3JvbmctaWQ6d3Jvbmctc2VjcmV0LTk4NzY1NDMyMTA="
	sdktest.Failures[*fake.Server]{
		Fake: func(t *testing.T) *fake.Server { return fake.New(t, fakeupstream.Options{}) },
		Provider: func(t *testing.T, srv *fake.Server, s map[string]string) sdk.Provider {
			return configured(t, srv.BaseURL(), s)
		},
		Request: request,
		Clone:   cloneRequest,
	}.Run(t, []sdktest.FailureCase[*fake.Server]{
		{Name: "wrong key", Key: wrongKey, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401, Code: "UNAUTHENTICATED", MessageHas: "invalid authorization credentials"}, Path: fake.SynthesizePath, Calls: 1},
		{Name: "missing key", Want: &sdktest.Answer{Kind: sdk.KindUnauthorized}, Path: fake.SynthesizePath, Calls: 0},
		{Name: "unknown voice", Key: fake.Key, Voice: "Nobody", Want: &sdktest.Answer{Kind: sdk.KindInvalidRequest, Status: 404, Code: "NOT_FOUND"}, Path: fake.SynthesizePath, Calls: 1,
			Setup: func(*fake.Server) {}},
		{Name: "429 with Retry-After, then success", Key: fake.Key, Path: fake.SynthesizePath, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "0.05"}) }},
		{Name: "429 forever", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindRateLimited, Status: 429, Code: "RESOURCE_EXHAUSTED", Retryable: true, RetryAfter: 20 * time.Millisecond}, Path: fake.SynthesizePath, Calls: 3,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 429, RetryAfter: "0.02"}) }},
		{Name: "503 retried", Key: fake.Key, Path: fake.SynthesizePath, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 503}) }},
		{Name: "500 forever", Key: fake.Key, Settings: map[string]string{"max_attempts": "2"}, Want: &sdktest.Answer{Kind: sdk.KindUpstream, Status: 500, Code: "INTERNAL", Retryable: true}, Path: fake.SynthesizePath, Calls: 2,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 500}) }},
		{Name: "stream 401", Key: wrongKey, Op: sdktest.OpStream, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401, Code: "UNAUTHENTICATED"}, Path: fake.StreamPath, Calls: 1},
		{Name: "stream 429 retried", Key: fake.Key, Op: sdktest.OpStream, Path: fake.StreamPath, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "0.01"}) }},
		{Name: "timeout", Key: fake.Key, Settings: map[string]string{"timeout": "200ms"}, Want: &sdktest.Answer{Kind: sdk.KindTimeout, Retryable: true}, Path: fake.SynthesizePath, Calls: 1,
			Setup: func(s *fake.Server) { s.SetLatency(time.Minute) }},
		{Name: "clone succeeds", Key: fake.Key, Op: sdktest.OpClone, Path: fake.ClonePath, Calls: 1},
		{Name: "clone is never retried", Key: fake.Key, Op: sdktest.OpClone, Want: &sdktest.Answer{Kind: sdk.KindUnavailable, Status: 503, Code: "UNAVAILABLE", Retryable: true}, Path: fake.ClonePath, Calls: 1,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 503}) }},
		{Name: "key echoed in a message", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401, Code: "UNAUTHENTICATED"}, Path: fake.SynthesizePath, Calls: 1,
			Setup: func(s *fake.Server) {
				s.FailAlways(fakeupstream.Fault{Status: 401, Message: "credentials " + fake.Key + " were revoked"})
			}},
	})
}

func TestRequestOnTheWire(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	tests := []struct {
		format, options string
		rate            int
		speed           float64
		timestamps      bool
		wantConfig      string
		wantExtra       string
		mediaType       string
	}{
		{wantConfig: `{"audioEncoding":"PCM","sampleRateHertz":48000}`, mediaType: "audio/pcm;rate=48000"},
		{format: sdk.FormatPCM, rate: 16000, speed: 1.25, wantConfig: `{"audioEncoding":"PCM","sampleRateHertz":16000,"speakingRate":1.25}`, mediaType: "audio/pcm;rate=16000"},
		{format: sdk.FormatWAV, rate: 22050, wantConfig: `{"audioEncoding":"WAV","sampleRateHertz":22050}`, mediaType: "audio/wav"},
		{format: sdk.FormatMP3, options: `{"bitRate": 64000}`, wantConfig: `{"audioEncoding":"MP3","bitRate":64000,"sampleRateHertz":48000}`, mediaType: "audio/mpeg"},
		{options: `{"temperature": 0.7, "applyTextNormalization": "OFF", "deliveryMode": "STABLE", "language": "en-US"}`, wantConfig: `{"audioEncoding":"PCM","sampleRateHertz":48000}`,
			wantExtra: `"applyTextNormalization":"OFF","audioConfig"`, mediaType: "audio/pcm;rate=48000"},
		{timestamps: true, wantConfig: `{"audioEncoding":"PCM","sampleRateHertz":48000}`, wantExtra: `"timestampType":"WORD"`, mediaType: "audio/pcm;rate=48000"},
	}
	for i, tt := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			req := request(fake.Key)
			req.Format, req.SampleRate, req.Speed, req.Timestamps = tt.format, tt.rate, tt.speed, tt.timestamps
			if tt.options != "" {
				req.Options = []byte(tt.options)
			}
			resp, err := p.Synthesize(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if resp.MediaType != tt.mediaType {
				t.Errorf("media type %q, want %q", resp.MediaType, tt.mediaType)
			}
			clip, err := sdktest.Decode(resp.MediaType, resp.Audio)
			if err != nil {
				t.Fatal(err)
			}
			if want := fakeupstream.Speak(req.Text, max(tt.speed, 1)).Seconds; clip.Format != "mp3" && math.Abs(clip.Seconds()-want) > 0.001 {
				t.Errorf("%.3f s, want %.3f", clip.Seconds(), want)
			}
			got, _ := srv.LastRequest()
			if got.Path != fake.SynthesizePath || got.Header.Get("Authorization") != "Basic "+fake.Key || got.Header.Get("Content-Type") != "application/json" {
				t.Errorf("%s with headers %v", got.Path, got.Header)
			}
			var body map[string]json.RawMessage
			if err := json.Unmarshal(got.Body, &body); err != nil {
				t.Fatal(err)
			}
			var ac map[string]any
			_ = json.Unmarshal(body["audioConfig"], &ac)
			if b, _ := json.Marshal(ac); string(b) != tt.wantConfig {
				t.Errorf("audioConfig %s, want %s", b, tt.wantConfig)
			}
			if string(body["voiceId"]) != `"Dennis"` || string(body["modelId"]) != `"inworld-tts-1.5-max"` || string(body["text"]) != `"Hello there, world."` {
				t.Errorf("body %s", got.Body)
			}
			canonical, _ := json.Marshal(body)
			if tt.wantExtra != "" && !strings.Contains(string(canonical), tt.wantExtra) {
				t.Errorf("body %s lacks %s", canonical, tt.wantExtra)
			}
			if !tt.timestamps && body["timestampType"] != nil {
				t.Errorf("timestamps asked without need: %s", got.Body)
			}
		})
	}
}

func TestInvalidRequests(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*sdk.SynthesizeRequest)
	}{
		{"unknown option", func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"audioConfig": {}}`) }},
		{"option of the wrong type", func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"temperature": "hot"}`) }},
		{"bit rate for pcm", func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"bitRate": 64000}`) }},
		{"speed out of range", func(r *sdk.SynthesizeRequest) { r.Speed = 2 }},
		{"no voice", func(r *sdk.SynthesizeRequest) { r.Voice = "" }},
		{"blank text", func(r *sdk.SynthesizeRequest) { r.Text = " \n" }},
		{"rate", func(r *sdk.SynthesizeRequest) { r.SampleRate = 11025 }},
		{"mp3 rate", func(r *sdk.SynthesizeRequest) { r.Format, r.SampleRate = sdk.FormatMP3, 8000 }},
		{"not a model id", func(r *sdk.SynthesizeRequest) { r.Model = "inworld_tts_9" }},
		{"format", func(r *sdk.SynthesizeRequest) { r.Format = "aac" }},
		{"mp3 bitrate", func(r *sdk.SynthesizeRequest) { r.Format, r.Bitrate = sdk.FormatMP3, 40 }},
		{"MPEG-2 mp3 bitrate", func(r *sdk.SynthesizeRequest) { r.Format, r.SampleRate, r.Bitrate = sdk.FormatMP3, 24000, 192 }},
		{"bitRate against the bitrate", func(r *sdk.SynthesizeRequest) {
			r.Format, r.Bitrate, r.Options = sdk.FormatMP3, 64, []byte(`{"bitRate": 96000}`)
		}},
		{"opus rate", func(r *sdk.SynthesizeRequest) { r.Format, r.SampleRate = sdk.FormatOpus, 24000 }},
		{"mulaw", func(r *sdk.SynthesizeRequest) { r.Format = sdk.FormatULaw }},
	}
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request(fake.Key)
			tt.modify(req)
			_, err := p.Synthesize(t.Context(), req)
			if e := sdktest.AsError(t, err); e.Kind != sdk.KindInvalidRequest {
				t.Errorf("Synthesize: got %v, want invalid_request", e)
			}
			err = p.Stream(t.Context(), req, func(sdk.Chunk) error { return nil })
			if e := sdktest.AsError(t, err); e.Kind != sdk.KindInvalidRequest {
				t.Errorf("Stream: got %v, want invalid_request", e)
			}
		})
	}
	if n := srv.Calls(); n != 0 {
		t.Errorf("%d upstream calls for invalid requests", n)
	}
}

// TestTimestampsMatchTheAudio: the word alignment of the fake, for pcm,
// wav and mp3, comes back as the exact timings of the words.
func TestTimestampsMatchTheAudio(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	for _, format := range []string{sdk.FormatPCM, sdk.FormatWAV, sdk.FormatMP3} {
		req := request(fake.Key)
		req.Text, req.Timestamps, req.Format, req.Speed = `"Quoted" words, with punctuation; and more.`, true, format, 1.5
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
			if got.Text != w.Text || math.Abs(got.Start-w.Start) > 1e-9 || math.Abs(got.End-w.End) > 1e-9 {
				t.Errorf("%s: word %d = %+v, want %+v", format, i, got, w)
			}
		}
	}
}

// TestWords: the alignment's tokens become the text's words, whether
// Inworld sends words as spelled ("Hello,") or whitespace and punctuation
// as tokens of their own.
func TestWords(t *testing.T) {
	w := func(text string, start, end float64) sdk.WordTimestamp {
		return sdk.WordTimestamp{Text: text, Start: start, End: end}
	}
	tests := []struct {
		name   string
		tokens []string
		want   []sdk.WordTimestamp
	}{
		{"words as spelled", []string{"Hello,", "world!"}, []sdk.WordTimestamp{w("Hello,", 0, 1), w("world!", 1, 2)}},
		{"empty tokens dropped", []string{"Hello", "", "world"}, []sdk.WordTimestamp{w("Hello", 0, 1), w("world", 2, 3)}},
		{"punctuation joins the word before", []string{"Hello", ",", "world", "."}, []sdk.WordTimestamp{w("Hello,", 0, 2), w("world.", 2, 4)}},
		{"explicit spaces", []string{"Hello", ",", " ", "world", "-", "wide", " ", "\"", "yes", "\""}, []sdk.WordTimestamp{w("Hello,", 0, 2), w("world-wide", 3, 6), w("\"yes\"", 7, 10)}},
		{"leading punctuation", []string{"(", "hi", ")"}, []sdk.WordTimestamp{w("(hi)", 0, 3)}},
		{"only punctuation", []string{"..."}, []sdk.WordTimestamp{w("...", 0, 0)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &alignment{Words: tt.tokens}
			for i := range tt.tokens {
				a.Starts = append(a.Starts, float64(i))
				a.Ends = append(a.Ends, float64(i+1))
			}
			got := a.words()
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	// Arrays of unequal length: the shortest wins.
	a := &alignment{Words: []string{"a", "b"}, Starts: []float64{0}, Ends: []float64{1, 2}}
	if got := a.words(); len(got) != 1 {
		t.Errorf("got %v", got)
	}
}

// streamServer answers the stream endpoint with a fixed body.
func streamServer(t *testing.T, body string) *Provider {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return configured(t, srv.URL, nil)
}

func line(audio []byte) string {
	return `{"result":{"audioContent":"` + base64.StdEncoding.EncodeToString(audio) + `"}}` + "\n"
}

// TestStreamLines drives Stream with hand-written answers: odd chunk
// sizes, blank lines, lines without audio, error lines, garbage.
func TestStreamLines(t *testing.T) {
	tests := []struct {
		name string
		body string
		want []byte
		kind sdk.ErrorKind // -1: success
		code string
	}{
		{"odd chunks are regrouped into whole samples",
			line([]byte{1, 2, 3}) + "\n" + line([]byte{4}) + `{"result":{"usage":{"processedCharactersCount":5}}}` + "\n" + line([]byte{5, 6}),
			[]byte{1, 2, 3, 4, 5, 6}, -1, ""},
		{"CRLF and no final newline", strings.TrimSuffix(strings.ReplaceAll(line([]byte{1, 2}), "\n", "\r\n"), "\r\n"), []byte{1, 2}, -1, ""},
		{"error line", line([]byte{1, 2}) + `{"error":{"code":8,"message":"Resource exhausted","details":[]}}` + "\n" + line([]byte{3, 4}),
			[]byte{1, 2}, sdk.KindRateLimited, "RESOURCE_EXHAUSTED"},
		{"error line with a string code", `{"error":{"code":"INVALID_ARGUMENT","message":"bad text"}}`, nil, sdk.KindInvalidRequest, "INVALID_ARGUMENT"},
		{"error line with an unknown code", `{"error":{"code":99,"message":"odd"}}`, nil, sdk.KindUpstream, "99"},
		{"not JSON", "hello\n", nil, sdk.KindUpstream, ""},
		{"bad base64", `{"result":{"audioContent":"!!"}}` + "\n", nil, sdk.KindUpstream, ""},
		{"a dangling half sample", line([]byte{1, 2, 3}), []byte{1, 2}, sdk.KindUpstream, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := streamServer(t, tt.body)
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
			} else if e := sdktest.AsError(t, err); e.Kind != tt.kind || e.UpstreamCode != tt.code {
				t.Errorf("got %+v, want kind %s, code %q", e, tt.kind, tt.code)
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
	// An empty stream still names its media type.
	p := streamServer(t, "")
	var chunks []sdk.Chunk
	if err := p.Stream(t.Context(), request(fake.Key), func(c sdk.Chunk) error { chunks = append(chunks, c); return nil }); err != nil || len(chunks) != 1 || chunks[0].MediaType != "audio/pcm;rate=48000" {
		t.Errorf("empty stream: %v, %+v", err, chunks)
	}
}

// TestStreamFormats: each format streams from the fake as it answers,
// first chunk first, and the whole decodes.
// audioConfigOf is the audioConfig of a synthesis body, as canonical JSON.
func audioConfigOf(t *testing.T, body []byte) string {
	t.Helper()
	var b struct {
		AudioConfig map[string]any `json:"audioConfig"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(b.AudioConfig)
	return string(out)
}

// TestEncodings asks Synthesize and Stream for every encoding the models
// list: each reaches Inworld as exactly that audioEncoding, rate and bit
// rate, and the audio comes back as the fake sent it, byte for byte, with
// the sdk's media type. Stream refuses FLAC and Ogg Opus, whose streamed
// chunks the reference does not describe; encodings the models do not
// list are refused. No refusal calls upstream.
func TestEncodings(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	names := map[string]string{sdk.FormatPCM: "PCM", sdk.FormatWAV: "WAV", sdk.FormatMP3: "MP3", sdk.FormatFLAC: "FLAC", sdk.FormatOpus: "OGG_OPUS"}
	for _, e := range models()[0].Encodings {
		t.Run(e.String(), func(t *testing.T) {
			want := fmt.Sprintf(`{"audioEncoding":%q,"sampleRateHertz":%d}`, names[e.Format], e.SampleRate)
			if e.Bitrate > 0 {
				want = fmt.Sprintf(`{"audioEncoding":%q,"bitRate":%d,"sampleRateHertz":%d}`, names[e.Format], e.Bitrate*1000, e.SampleRate)
			}
			req := request(fake.Key)
			req.Format, req.SampleRate, req.Bitrate = e.Format, e.SampleRate, e.Bitrate
			resp, err := p.Synthesize(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := srv.LastRequest()
			if c := audioConfigOf(t, got.Body); c != want {
				t.Errorf("clip: audioConfig %s, want %s", c, want)
			}
			if !bytes.Equal(resp.Audio, srv.LastAnswer()) || resp.MediaType != sdk.MediaType(e) {
				t.Errorf("clip: %d bytes of %q; the fake sent %d, want %q", len(resp.Audio), resp.MediaType, len(srv.LastAnswer()), sdk.MediaType(e))
			}
			calls := srv.Calls()
			var streamed []byte
			var mediaType string
			err = p.Stream(t.Context(), req, func(c sdk.Chunk) error {
				if mediaType == "" {
					mediaType = c.MediaType
				}
				streamed = append(streamed, c.Data...)
				return nil
			})
			if e.Format == sdk.FormatFLAC || e.Format == sdk.FormatOpus {
				if sdktest.AsError(t, err).Kind != sdk.KindInvalidRequest || srv.Calls() != calls {
					t.Errorf("stream: %v after %d calls, want invalid_request and none", err, srv.Calls()-calls)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ = srv.LastRequest()
			if c := audioConfigOf(t, got.Body); c != want || got.Path != fake.StreamPath {
				t.Errorf("stream: %s with audioConfig %s, want %s", got.Path, c, want)
			}
			if !bytes.Equal(streamed, srv.LastAnswer()) || mediaType != sdk.MediaType(e) {
				t.Errorf("stream: %d bytes of %q; the fake sent %d", len(streamed), mediaType, len(srv.LastAnswer()))
			}
		})
	}
}

func TestStreamFormats(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{ChunkSize: 3001})
	p := configured(t, srv.BaseURL(), nil)
	for _, tt := range []struct{ format, mediaType string }{
		{sdk.FormatPCM, "audio/pcm;rate=24000"},
		{sdk.FormatWAV, "audio/wav"},
		{sdk.FormatMP3, "audio/mpeg"},
	} {
		req := request(fake.Key)
		req.Format, req.SampleRate, req.Text = tt.format, 24000, "A longer sentence streams in several lines of JSON."
		var audio []byte
		var chunks []sdk.Chunk
		if err := p.Stream(t.Context(), req, func(c sdk.Chunk) error {
			chunks = append(chunks, c)
			audio = append(audio, c.Data...)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if len(chunks) < 2 || chunks[0].MediaType != tt.mediaType {
			t.Fatalf("%s: %d chunks, first %q", tt.format, len(chunks), chunks[0].MediaType)
		}
		clip, err := sdktest.Decode(tt.mediaType, audio)
		if err != nil {
			t.Fatalf("%s: %v", tt.format, err)
		}
		if want := fakeupstream.Speak(req.Text, 1).Seconds; clip.Format != "mp3" && math.Abs(clip.Seconds()-want) > 0.001 {
			t.Errorf("%s: %.3f s, want %.3f", tt.format, clip.Seconds(), want)
		}
		got, _ := srv.LastRequest()
		if got.Path != fake.StreamPath {
			t.Errorf("%s: called %s", tt.format, got.Path)
		}
	}
}

// TestPassThroughModel: through the plugin process, a model Inworld has
// and the plugin does not list (a newer one) reaches Inworld under the
// id the caller wrote; an id that cannot be Inworld's is refused without
// a call.
func TestPassThroughModel(t *testing.T) {
	const newModel = "inworld-tts-3-max"
	srv := fake.New(t, fakeupstream.Options{NewModels: []string{newModel}})
	p := sdktest.StartPlugin(t, pluginPath)
	if err := p.Configure(t.Context(), map[string]string{"base_url": srv.BaseURL()}); err != nil {
		t.Fatal(err)
	}
	req := request(fake.Key)
	req.Model = newModel
	fakeupstream.CheckPassThrough(t, p, fakeupstream.PassThrough{
		Fake: srv.Control, Request: *req,
		SentModel: fakeupstream.BodyField("modelId"),
		Invalid:   []string{"Inworld-tts-3", "inworld-tts-", "inworld-3", "tts-3", "inworld-tts-3 max", ""},
	})
}

func TestParseError(t *testing.T) {
	tests := []struct{ body, code, msg string }{
		{`{"code": 16, "message": "Unauthenticated", "details": []}`, "UNAUTHENTICATED", "Unauthenticated"},
		{`{"code": 3, "message": "text is required"}`, "INVALID_ARGUMENT", "text is required"},
		{`{"code": "NOT_FOUND", "message": "Voice x not found."}`, "NOT_FOUND", "Voice x not found."},
		{`{"error": {"code": 14, "message": "down"}}`, "UNAVAILABLE", "down"},
		{`{"code": 42, "message": "?"}`, "42", "?"},
		{`<html>502</html>`, "", ""},
		{``, "", ""},
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
	p := configured(t, srv.BaseURL(), nil)
	voices, err := p.Voices(t.Context(), &sdk.VoicesRequest{Credentials: sdk.Credentials{APIKey: fake.Key}})
	if err != nil {
		t.Fatal(err)
	}
	if len(voices) != 4 || srv.CallsTo(fake.VoicesPath) != 4 {
		t.Fatalf("%d voices in %d calls, want 4 in 4", len(voices), srv.CallsTo(fake.VoicesPath))
	}
	if want := (sdk.Voice{ID: fake.VoiceMathieu, Name: "Mathieu", Language: "fr-FR", Gender: "male"}); voices[3] != want {
		t.Errorf("voice 3 = %+v, want %+v", voices[3], want)
	}
	got, _ := srv.LastRequest()
	if got.Query.Get("pageSize") != "100" || got.Query.Get("pageToken") != "3" || got.Header.Get("Authorization") != "Basic "+fake.Key {
		t.Errorf("last page request %v %v", got.Query, got.Header)
	}
	if _, err := p.Voices(t.Context(), &sdk.VoicesRequest{}); sdktest.AsError(t, err).Kind != sdk.KindUnauthorized {
		t.Errorf("no key: %v", err)
	}
}

func TestCloneOnTheWire(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv.BaseURL(), nil)
	req := cloneRequest(fake.Key)
	req.Samples = append(req.Samples, sdk.Sample{MediaType: "audio/mpeg", Data: []byte{0xFF, 0xFB, 0x90, 0x64}})
	req.Options = []byte(`{"langCode": "FR_FR", "tags": ["calm"], "removeBackgroundNoise": true, "transcriptions": ["bonjour"]}`)
	resp, err := p.Clone(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := srv.LastRequest()
	var body struct {
		DisplayName  string `json:"displayName"`
		LangCode     string `json:"langCode"`
		Description  string `json:"description"`
		Tags         []string
		VoiceSamples []struct {
			AudioData     []byte `json:"audioData"`
			Transcription string `json:"transcription"`
		} `json:"voiceSamples"`
		AudioProcessingConfig struct {
			RemoveBackgroundNoise bool `json:"removeBackgroundNoise"`
		} `json:"audioProcessingConfig"`
	}
	if err := json.Unmarshal(got.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.DisplayName != "Narrator" || body.LangCode != "FR_FR" || body.Description != "calm" || len(body.Tags) != 1 || !body.AudioProcessingConfig.RemoveBackgroundNoise {
		t.Errorf("body %s", got.Body)
	}
	if len(body.VoiceSamples) != 2 || !bytes.HasPrefix(body.VoiceSamples[0].AudioData, []byte("RIFF")) || len(body.VoiceSamples[0].AudioData) != 44+3200 ||
		body.VoiceSamples[0].Transcription != "bonjour" || body.VoiceSamples[1].Transcription != "" {
		t.Errorf("samples: raw PCM must go as WAV, with its transcription")
	}
	synth := request(fake.Key)
	synth.Voice = resp.VoiceID
	if _, err := p.Synthesize(t.Context(), synth); err != nil {
		t.Errorf("synthesizing with the cloned voice: %v", err)
	}
	for name, bad := range map[string]*sdk.CloneRequest{
		"no samples":              {Credentials: req.Credentials},
		"empty sample":            {Samples: []sdk.Sample{{MediaType: "audio/wav"}}, Credentials: req.Credentials},
		"unknown option":          {Samples: req.Samples, Options: []byte(`{"accent": "x"}`), Credentials: req.Credentials},
		"too many transcriptions": {Samples: req.Samples[:1], Options: []byte(`{"transcriptions": ["a", "b"]}`), Credentials: req.Credentials},
	} {
		if _, err := p.Clone(t.Context(), bad); sdktest.AsError(t, err).Kind != sdk.KindInvalidRequest {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The fake refuses a language code Inworld does not know: the
	// upstream's word reaches the caller.
	bad := cloneRequest(fake.Key)
	bad.Options = []byte(`{"langCode": "xx"}`)
	if _, err := p.Clone(t.Context(), bad); sdktest.AsError(t, err).UpstreamCode != "INVALID_ARGUMENT" {
		t.Errorf("bad language: %v", err)
	}
}

func TestLanguage(t *testing.T) {
	for in, want := range map[string]string{"EN_US": "en-US", "ZH_CN": "zh-CN", "AUTO": "", "": "", "FR": "fr"} {
		if got := language(in); got != want {
			t.Errorf("language(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestUsageReadBack: the characters Inworld says it processed (the
// answer's usage.processedCharactersCount) come back as the call's billed
// characters: a clip's on the response, a stream's on a last chunk of
// its own once its lines are read.
func TestUsageReadBack(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{ChunkSize: 2000})
	req := request(fake.Key)
	sdktest.CheckBilledReadBack(t, configured(t, srv.BaseURL(), nil), req,
		[]sdk.BilledUsage{{Unit: sdk.UnitCharacters, Quantity: int64(len([]rune(req.Text)))}})
}
