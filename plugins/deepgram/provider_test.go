package main

import (
	"bytes"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	fake "github.com/voxgate/voxgate/internal/fakeupstream/deepgram"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// pluginPath is the plugin binary, built once by TestMain.
var pluginPath string

func TestMain(m *testing.M) { os.Exit(sdktest.MainWithPlugin(m, &pluginPath)) }

func kitConfig(srv *fake.Server, model, voice string) sdktest.Config {
	return sdktest.Config{
		Settings:     map[string]string{"base_url": srv.BaseURL()},
		Model:        model,
		Voice:        voice,
		Credentials:  sdk.Credentials{APIKey: fake.Key},
		InvalidVoice: "nobody-en",
	}
}

// TestConformance runs the kit (planner checks included) against the real
// plugin process talking to the fake over HTTP.
func TestConformance(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	sdktest.Run(t, sdktest.StartPlugin(t, pluginPath), kitConfig(srv, "", ""))
}

// TestConformanceInProcess runs the kit in process for both generations
// (aura-2 adds the native speed check).
func TestConformanceInProcess(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	sdktest.Run(t, New(), kitConfig(srv, "aura-2", "thalia-en"))
	sdktest.Run(t, New(), kitConfig(srv, "aura", "asteria-en"))
}

func configured(t *testing.T, srv *fake.Server, extra map[string]string) *Provider {
	return sdktest.Configure(t, New(), map[string]string{"base_url": srv.BaseURL()}, extra)
}

func request(key string) *sdk.SynthesizeRequest {
	return &sdk.SynthesizeRequest{Model: defaultModel, Voice: "thalia-en", Text: "Hello there, world.", Credentials: sdk.Credentials{APIKey: key}}
}

func TestUpstreamFailures(t *testing.T) {
	const wrongKey = "dg_wrong_9876543210zyxwvutsrq"
	sdktest.Failures[*fake.Server]{
		Fake:     func(t *testing.T) *fake.Server { return fake.New(t, fakeupstream.Options{}) },
		Provider: func(t *testing.T, srv *fake.Server, s map[string]string) sdk.Provider { return configured(t, srv, s) },
		Request:  request,
	}.Run(t, []sdktest.FailureCase[*fake.Server]{
		{Name: "wrong key", Key: wrongKey, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401, Code: "INVALID_AUTH", MessageHas: "deepgram: Invalid credentials."}, Path: fake.SpeakPath, Calls: 1},
		{Name: "missing key", Want: &sdktest.Answer{Kind: sdk.KindUnauthorized}, Path: fake.SpeakPath, Calls: 0},
		{Name: "429 with Retry-After, then success", Key: fake.Key, Path: fake.SpeakPath, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "0.05"}) }},
		{Name: "429 forever", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindRateLimited, Status: 429, Code: "TOO_MANY_REQUESTS", Retryable: true, RetryAfter: 20 * time.Millisecond}, Path: fake.SpeakPath, Calls: 3,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 429, RetryAfter: "0.02"}) }},
		{Name: "out of credits is final", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindUpstream, Status: 402, Code: "ASR_PAYMENT_REQUIRED"}, Path: fake.SpeakPath, Calls: 1,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 402}) }},
		{Name: "503 retried on the stream", Key: fake.Key, Op: sdktest.OpStream, Path: fake.SpeakPath, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 503}) }},
		{Name: "unknown voice", Key: fake.Key, Voice: "nobody-en", Want: &sdktest.Answer{Kind: sdk.KindInvalidRequest, Status: 400, Code: "INVALID_QUERY_PARAMETER", MessageHas: "No such model"}, Path: fake.SpeakPath, Calls: 1},
		{Name: "voice list with a wrong key", Key: wrongKey, Op: sdktest.OpVoices, Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401, Code: "INVALID_AUTH"}, Path: fake.ModelsPath, Calls: 1},
		{Name: "timeout", Key: fake.Key, Settings: map[string]string{"timeout": "200ms"}, Want: &sdktest.Answer{Kind: sdk.KindTimeout, Retryable: true}, Path: fake.SpeakPath, Calls: 1,
			Setup: func(s *fake.Server) { s.SetLatency(time.Minute) }},
	})
}

func TestRequestOnTheWire(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	tests := []struct {
		name, format, model, voice, options string
		rate, bitrate                       int
		speed                               float64
		want                                string // the query, encoded
		media                               string
	}{
		{name: "pcm", want: "container=none&encoding=linear16&model=aura-2-thalia-en&sample_rate=24000", media: "audio/pcm;rate=24000"},
		{name: "wav 16 kHz", format: sdk.FormatWAV, rate: 16000, want: "container=wav&encoding=linear16&model=aura-2-thalia-en&sample_rate=16000", media: "audio/wav"},
		{name: "mp3 with options", format: sdk.FormatMP3, bitrate: 32, options: `{"mip_opt_out": true, "tag": "voxgate"}`,
			want: "bit_rate=32000&encoding=mp3&mip_opt_out=true&model=aura-2-thalia-en&tag=voxgate", media: "audio/mpeg"},
		{name: "mp3 at its default bit rate", format: sdk.FormatMP3, want: "bit_rate=48000&encoding=mp3&model=aura-2-thalia-en", media: "audio/mpeg"},
		{name: "opus", format: sdk.FormatOpus, want: "container=ogg&encoding=opus&model=aura-2-thalia-en", media: "audio/ogg;codecs=opus"},
		{name: "flac", format: sdk.FormatFLAC, want: "encoding=flac&model=aura-2-thalia-en&sample_rate=48000", media: "audio/flac"},
		{name: "mu-law", format: sdk.FormatULaw, want: "container=none&encoding=mulaw&model=aura-2-thalia-en&sample_rate=8000", media: "audio/PCMU;rate=8000"},
		{name: "speed", speed: 1.25, want: "container=none&encoding=linear16&model=aura-2-thalia-en&sample_rate=24000&speed=1.25", media: "audio/pcm;rate=24000"},
		{name: "aura", model: "aura", voice: "angus-en", want: "container=none&encoding=linear16&model=aura-angus-en&sample_rate=24000", media: "audio/pcm;rate=24000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request(fake.Key)
			req.Format, req.SampleRate, req.Bitrate, req.Speed = tt.format, tt.rate, tt.bitrate, tt.speed
			if tt.model != "" {
				req.Model, req.Voice = tt.model, tt.voice
			}
			if tt.options != "" {
				req.Options = []byte(tt.options)
			}
			resp, err := p.Synthesize(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := sdktest.Decode(resp.MediaType, resp.Audio); err != nil || resp.MediaType != tt.media {
				t.Errorf("%s: %v", resp.MediaType, err)
			}
			got, _ := srv.LastRequest()
			if got.Query.Encode() != tt.want || got.Header.Get("Authorization") != "Token "+fake.Key || got.Header.Get("Content-Type") != "application/json" {
				t.Errorf("query %s, headers %v; want %s", got.Query.Encode(), got.Header, tt.want)
			}
			if string(got.Body) != `{"text":"Hello there, world."}` {
				t.Errorf("body %s", got.Body)
			}
		})
	}
}

func TestInvalidRequests(t *testing.T) {
	tests := []sdktest.Refusal{
		{Name: "unknown option", Modify: func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"model": "aura-2-zeus-en"}`) }},
		{Name: "bit rate option", Modify: func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"bit_rate": 32000}`) }},
		{Name: "bit rate for pcm", Modify: func(r *sdk.SynthesizeRequest) { r.Bitrate = 32 }},
		{Name: "mp3 bit rate", Modify: func(r *sdk.SynthesizeRequest) { r.Format, r.Bitrate = sdk.FormatMP3, 64 }},
		{Name: "mp3 rate", Modify: func(r *sdk.SynthesizeRequest) { r.Format, r.SampleRate = sdk.FormatMP3, 44100 }},
		{Name: "mu-law at 16 kHz", Modify: func(r *sdk.SynthesizeRequest) { r.Format, r.SampleRate = sdk.FormatULaw, 16000 }},
		{Name: "speed on aura", Modify: func(r *sdk.SynthesizeRequest) { r.Model, r.Voice, r.Speed = "aura", "asteria-en", 1.2 }},
		{Name: "speed out of range", Modify: func(r *sdk.SynthesizeRequest) { r.Speed = 2 }},
		{Name: "no voice", Modify: func(r *sdk.SynthesizeRequest) { r.Voice = "" }},
		{Name: "voice with the model", Modify: func(r *sdk.SynthesizeRequest) { r.Voice = "aura-2-thalia-en" }},
		{Name: "rate", Modify: func(r *sdk.SynthesizeRequest) { r.SampleRate = 22050 }},
		{Name: "not a model id", Modify: func(r *sdk.SynthesizeRequest) { r.Model = "aura-3-thalia-en" }},
		{Name: "format", Modify: func(r *sdk.SynthesizeRequest) { r.Format = "ogg" }},
	}
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
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

func TestVoices(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, nil)
	creds := sdk.Credentials{APIKey: fake.Key}
	aura2, err := p.Voices(t.Context(), &sdk.VoicesRequest{Credentials: creds})
	if err != nil {
		t.Fatal(err)
	}
	if len(aura2) != 6 || aura2[0] != (sdk.Voice{ID: "thalia-en", Name: "Thalia", Language: "en-US", Gender: "female"}) || aura2[5].ID != "nestor-es" {
		t.Errorf("aura-2 voices %+v", aura2)
	}
	aura, err := p.Voices(t.Context(), &sdk.VoicesRequest{Model: "aura", Credentials: creds})
	if err != nil || len(aura) != 3 || aura[2] != (sdk.Voice{ID: "angus-en", Name: "Angus", Language: "en-IE", Gender: "male"}) {
		t.Errorf("aura voices %+v %v", aura, err)
	}
	// Every listed voice speaks with its model.
	for model, voices := range map[string][]sdk.Voice{"aura-2": aura2, "aura": aura} {
		for _, v := range voices {
			req := request(fake.Key)
			req.Model, req.Voice = model, v.ID
			if _, err := p.Synthesize(t.Context(), req); err != nil {
				t.Errorf("%s %s: %v", model, v.ID, err)
			}
		}
	}
}

// TestPassThroughModel: through the plugin process, an Aura generation
// Deepgram has and the plugin does not list (a newer one) reaches
// Deepgram as {generation}-{voice}, the generation as the caller wrote
// it; an id that cannot be a generation is refused without a call.
func TestPassThroughModel(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{NewModels: []string{"aura-3-thalia-en"}})
	p := sdktest.StartPlugin(t, pluginPath)
	if err := p.Configure(t.Context(), map[string]string{"base_url": srv.BaseURL()}); err != nil {
		t.Fatal(err)
	}
	req := request(fake.Key)
	req.Model = "aura-3"
	fakeupstream.CheckPassThrough(t, p, fakeupstream.PassThrough{
		Fake: srv.Control, Request: *req,
		SentModel: func(r fakeupstream.Request) string {
			model, ok := strings.CutSuffix(r.Query.Get("model"), "-"+req.Voice)
			if !ok {
				return r.Query.Get("model")
			}
			return model
		},
		Invalid: []string{"aura-3-thalia-en", "Aura-3", "aura-", "aura-x", "nova-3", "aura-3&model=x", ""},
	})
}

func TestParseError(t *testing.T) {
	tests := []struct{ body, code, msg string }{
		{`{"err_code": "INVALID_AUTH", "err_msg": "Invalid credentials.", "request_id": "x"}`, "INVALID_AUTH", "Invalid credentials."},
		{`{"category": "INVALID_JSON", "message": "Invalid JSON submitted.", "details": "missing field text", "request_id": "x"}`, "INVALID_JSON", "Invalid JSON submitted. missing field text"},
		{"Bad Request: something\nmore", "", "Bad Request: something"},
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

// TestPlanMatchesSynthesize: a plan, sent with net/http as the gateway
// sends it, is the request Synthesize sends and answers the same audio,
// for clips and streams, in process and over the wire.
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
			media  string
			frame  int
		}{
			{sdk.FormatPCM, false, "audio/pcm;rate=24000", 2},
			{sdk.FormatPCM, true, "audio/pcm;rate=24000", 2},
			{sdk.FormatWAV, false, "audio/wav", 1},
			{sdk.FormatMP3, true, "audio/mpeg", 1},
		} {
			t.Run(name+"/"+tt.format, func(t *testing.T) {
				req := request(fake.Key)
				req.Text, req.Format = planSentence, tt.format
				planReq := *req
				planReq.Text = sdk.PlanText
				pl, err := p.(sdk.Planner).Plan(t.Context(), &sdk.PlanRequest{Request: &planReq, Stream: tt.stream})
				if err != nil {
					t.Fatal(err)
				}
				if pl.MediaType != tt.media || pl.FrameSize != tt.frame || pl.ReuseFor <= 0 {
					t.Errorf("plan %+v", pl)
				}
				planned, f, err := sdktest.SendPlan(t.Context(), http.DefaultClient, pl, req.Text)
				if err != nil || f != nil {
					t.Fatalf("the planned request failed: %v %+v", err, f)
				}
				sent, _ := srv.LastRequest()
				resp, err := p.Synthesize(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				want, _ := srv.LastRequest()
				if resp.MediaType != pl.MediaType || !bytes.Equal(resp.Audio, planned) {
					t.Errorf("Synthesize answers %q, %d bytes; the plan %q, %d bytes", resp.MediaType, len(resp.Audio), pl.MediaType, len(planned))
				}
				if sent.Query.Encode() != want.Query.Encode() || !bytes.Equal(sent.Body, want.Body) || sent.Header.Get("Authorization") != want.Header.Get("Authorization") {
					t.Errorf("planned %s %s\nSynthesize %s %s", sent.Query.Encode(), sent.Body, want.Query.Encode(), want.Body)
				}
			})
		}
	}
}

// TestExplainMatchesSynthesize: an error answer to a planned request is
// explained as Synthesize reports the same answer, without the key.
func TestExplainMatchesSynthesize(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, srv, map[string]string{"max_attempts": "1"})
	for _, fault := range []fakeupstream.Fault{
		{Status: 401, Message: "Invalid credentials for " + fake.Key + "."},
		{Status: 429, RetryAfter: "3"},
		{Status: 402},
		{Status: 503},
	} {
		srv.Reset()
		srv.FailAlways(fault)
		req := request(fake.Key)
		_, err := p.Synthesize(t.Context(), req)
		want := sdktest.AsError(t, err)
		planReq := *req
		planReq.Text = sdk.PlanText
		pl, err := p.Plan(t.Context(), &sdk.PlanRequest{Request: &planReq})
		if err != nil {
			t.Fatal(err)
		}
		_, f, err := sdktest.SendPlan(t.Context(), http.DefaultClient, pl, req.Text)
		if err != nil || f == nil {
			t.Fatalf("%d: the planned request did not fail: %v", fault.Status, err)
		}
		f.Credentials = req.Credentials
		if got := sdktest.AsError(t, p.Explain(t.Context(), f)); *got != *want || strings.Contains(got.Error(), fake.Key) {
			t.Errorf("%d: Explain %+v\nSynthesize %+v", fault.Status, got, want)
		}
	}
}

// TestEncodingsPassThrough asks, through the plugin process, for every
// encoding each model lists: each must reach Deepgram as exactly that
// encoding, container, sample_rate and bit_rate, and the clip and the
// stream must be Deepgram's bytes untouched, with the sdk's media type.
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
	// What each format is called upstream, from the reference.
	wantQuery := func(e sdk.Encoding) url.Values {
		q := url.Values{}
		switch e.Format {
		case "pcm", "wav":
			q.Set("encoding", "linear16")
			q.Set("container", map[string]string{"pcm": "none", "wav": "wav"}[e.Format])
			q.Set("sample_rate", strconv.Itoa(e.SampleRate))
		case "ulaw", "alaw":
			q.Set("encoding", map[string]string{"ulaw": "mulaw", "alaw": "alaw"}[e.Format])
			q.Set("container", "none")
			q.Set("sample_rate", strconv.Itoa(e.SampleRate))
		case "flac":
			q.Set("encoding", "flac")
			q.Set("sample_rate", strconv.Itoa(e.SampleRate))
		case "opus":
			q.Set("encoding", "opus")
			q.Set("container", "ogg")
		default: // mp3 and aac: a fixed rate, not a parameter
			q.Set("encoding", e.Format)
		}
		if e.Bitrate > 0 {
			q.Set("bit_rate", strconv.Itoa(e.Bitrate*1000))
		}
		return q
	}
	for _, m := range desc.Models {
		if m.ID == sdk.AnyModel {
			continue // the ids the plugin passes through: TestPassThroughModel
		}
		voice := map[string]string{"aura-2": "thalia-en", "aura": "asteria-en"}[m.ID]
		for _, e := range m.Encodings {
			t.Run(m.ID+"/"+e.String(), func(t *testing.T) {
				req := request(fake.Key)
				req.Model, req.Voice = m.ID, voice
				req.Format, req.SampleRate, req.Bitrate = e.Format, e.SampleRate, e.Bitrate
				check := func(what string) {
					t.Helper()
					got, _ := srv.LastRequest()
					q := got.Query
					q.Del("model")
					if q.Encode() != wantQuery(e).Encode() {
						t.Errorf("%s: asked %s, want %s", what, q.Encode(), wantQuery(e).Encode())
					}
				}
				resp, err := p.Synthesize(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				check("clip")
				if clip, err := sdktest.Decode(resp.MediaType, resp.Audio); err != nil || clip.Format != e.Format || resp.MediaType != sdk.MediaType(e) ||
					(e.Format != sdk.FormatOpus && clip.SampleRate != e.SampleRate) {
					t.Errorf("the clip is %q, %+v (%v); want %s", resp.MediaType, clip, err, e)
				}
				if !bytes.Equal(resp.Audio, srv.LastAnswer()) {
					t.Errorf("the clip (%d bytes) is not what Deepgram answered (%d bytes)", len(resp.Audio), len(srv.LastAnswer()))
				}
				var streamed []byte
				if err := p.Stream(t.Context(), req, func(c sdk.Chunk) error { streamed = append(streamed, c.Data...); return nil }); err != nil {
					t.Fatal(err)
				}
				check("stream")
				if !bytes.Equal(streamed, srv.LastAnswer()) {
					t.Errorf("the stream (%d bytes) is not what Deepgram answered (%d bytes)", len(streamed), len(srv.LastAnswer()))
				}
			})
		}
	}
}

// TestUsageReadBack: the characters Deepgram says it processed (its
// dg-char-count header) come back as the call's billed characters: a
// clip's on the response, a stream's on its first chunk alone, and the
// plan names the header for the gateway's own sends.
func TestUsageReadBack(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{ChunkSize: 2000})
	p := configured(t, srv, nil)
	req := request(fake.Key)
	want := []sdk.BilledUsage{{Unit: sdk.UnitCharacters, Quantity: int64(len([]rune(req.Text)))}}
	resp, err := p.Synthesize(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(resp.Billed, want) {
		t.Errorf("clip billed %+v, want %+v", resp.Billed, want)
	}
	var chunks []sdk.Chunk
	if err := p.Stream(t.Context(), req, func(c sdk.Chunk) error { chunks = append(chunks, c); return nil }); err != nil {
		t.Fatal(err)
	}
	for i, c := range chunks {
		if (i == 0 && !reflect.DeepEqual(c.Billed, want)) || (i > 0 && c.Billed != nil) {
			t.Errorf("chunk %d of %d: billed %+v; want %+v on the first alone", i, len(chunks), c.Billed, want)
		}
	}
	plan, err := p.Plan(t.Context(), &sdk.PlanRequest{Request: req})
	if err != nil {
		t.Fatal(err)
	}
	if plan.BilledHeaders["dg-char-count"] != sdk.UnitCharacters {
		t.Errorf("the plan names no billed header: %v", plan.BilledHeaders)
	}
}
