package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	fake "github.com/voxgate/voxgate/internal/fakeupstream/fal"
	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// pluginPath is the plugin binary, built once by TestMain.
var pluginPath string

func TestMain(m *testing.M) { os.Exit(sdktest.MainWithPlugin(m, &pluginPath)) }

// settings point the plugin at srv and add, with the models setting, an
// MP3 model the plugin does not build in.
func settings(srv *fake.Server) map[string]string {
	return map[string]string{"base_url": srv.BaseURL(), "models": fake.ElevenV3 + "=mp3", "voices." + fake.ElevenV3: "Rachel, Aria"}
}

func kitConfig(srv *fake.Server, model, voice string) sdktest.Config {
	return sdktest.Config{
		Settings:     settings(srv),
		Model:        model,
		Voice:        voice,
		Credentials:  sdk.Credentials{APIKey: fake.Key},
		InvalidVoice: "no-such-voice",
	}
}

// TestConformance runs the kit against the real plugin process talking to
// the fake over HTTP, as the gateway would see it.
func TestConformance(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	sdktest.Run(t, sdktest.StartPlugin(t, pluginPath), kitConfig(srv, "", "af_heart"))
}

// TestConformanceInProcess runs the kit in process for the built-in
// models and one added by the models setting.
func TestConformanceInProcess(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	for _, c := range []struct{ model, voice string }{
		{fake.KokoroGB, "bm_george"}, {fake.Orpheus, "tara"}, {fake.F5, "https://example.com/reference.wav"}, {fake.ElevenV3, "Rachel"},
	} {
		t.Run(c.model, func(t *testing.T) {
			cfg := kitConfig(srv, c.model, c.voice)
			if c.model == fake.F5 {
				// F5-TTS's voices are URLs: Voices says KindUnsupported,
				// which the kit's Voices check does not accept.
				cfg.Skip = []string{sdktest.CheckVoices}
			}
			sdktest.Run(t, New(), cfg)
		})
	}
}

func configured(t *testing.T, s map[string]string) *Provider {
	return sdktest.Configure(t, New(), s)
}

func request(key string) *sdk.SynthesizeRequest {
	return &sdk.SynthesizeRequest{Model: fake.KokoroUS, Voice: "af_bella", Text: "Hello there.", Credentials: sdk.Credentials{APIKey: key}}
}

func TestUpstreamFailures(t *testing.T) {
	sdktest.Failures[*fake.Server]{
		Fake: func(t *testing.T) *fake.Server { return fake.New(t, fakeupstream.Options{}) },
		Provider: func(t *testing.T, srv *fake.Server, s map[string]string) sdk.Provider {
			return sdktest.Configure(t, New(), settings(srv), s)
		},
		Request: request,
		Path:    "/" + fake.KokoroUS,
	}.Run(t, []sdktest.FailureCase[*fake.Server]{
		{Name: "wrong key", Key: "fal-wrong:0123456789", Want: &sdktest.Answer{Kind: sdk.KindUnauthorized, Status: 401}, Calls: 1},
		{Name: "missing key", Key: "", Want: &sdktest.Answer{Kind: sdk.KindUnauthorized}, Calls: 0},
		{Name: "429 with Retry-After, then success", Key: fake.Key, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "0.05"}) }},
		{Name: "429 forever", Key: fake.Key, Want: &sdktest.Answer{Kind: sdk.KindRateLimited, Status: 429, Retryable: true, RetryAfter: 20 * time.Millisecond}, Calls: 3,
			Setup: func(s *fake.Server) { s.FailAlways(fakeupstream.Fault{Status: 429, RetryAfter: "0.02"}) }},
		{Name: "503 retried", Key: fake.Key, Calls: 2,
			Setup: func(s *fake.Server) { s.FailNext(1, fakeupstream.Fault{Status: 503}) }},
		{Name: "timeout setting", Key: fake.Key, Settings: map[string]string{"timeout": "200ms", "max_attempts": "1"}, Want: &sdktest.Answer{Kind: sdk.KindTimeout, Retryable: true}, Calls: 1,
			Setup: func(s *fake.Server) { s.SetLatency(time.Minute) }},
	})
}

// TestRequestOnTheWire: Kokoro's input names the text prompt; options go
// into the input; the key goes to the API, never to the file host.
func TestRequestOnTheWire(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	var fileAuth []string
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fileAuth = append(fileAuth, r.Header.Get("Authorization"))
		http.Redirect(w, r, srv.URL+r.URL.Path, http.StatusFound)
	}))
	defer files.Close()
	// A proxy in front of the fake that rewrites file URLs to another
	// host, as fal's storage host is another host.
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequest(r.Method, srv.URL+r.URL.Path, r.Body)
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		if a, ok := body["audio"].(map[string]any); ok {
			a["url"] = strings.Replace(a["url"].(string), srv.URL, files.URL, 1)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.StatusCode)
		_ = json.NewEncoder(w).Encode(body)
	}))
	defer api.Close()
	p := configured(t, map[string]string{"base_url": api.URL})
	req := request(fake.Key)
	req.Speed = 1.25
	req.Options = []byte(`{"enable_safety_checker": false}`)
	resp, err := p.Synthesize(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.MediaType != "audio/wav" {
		t.Errorf("media type %q", resp.MediaType)
	}
	got, _ := srv.LastRequest()
	if got.Path != "/"+fake.KokoroUS || got.Header.Get("Authorization") != "Key "+fake.Key {
		t.Errorf("request %s %v", got.Path, got.Header)
	}
	var body map[string]any
	_ = json.Unmarshal(got.Body, &body)
	if body["prompt"] != "Hello there." || body["voice"] != "af_bella" || body["speed"] != 1.25 || body["enable_safety_checker"] != false || len(body) != 4 {
		t.Errorf("input %s", got.Body)
	}
	if len(fileAuth) != 1 || fileAuth[0] != "" {
		t.Errorf("the file host saw Authorization %q", fileAuth)
	}
}

func TestInvalidRequests(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*sdk.SynthesizeRequest)
		kind   sdk.ErrorKind
	}{
		{"options set the text", func(r *sdk.SynthesizeRequest) { r.Options = []byte(`{"prompt": "other"}`) }, sdk.KindInvalidRequest},
		{"options not an object", func(r *sdk.SynthesizeRequest) { r.Options = []byte(`[1]`) }, sdk.KindInvalidRequest},
		{"format", func(r *sdk.SynthesizeRequest) { r.Format = sdk.FormatMP3 }, sdk.KindInvalidRequest},
		{"sample rate", func(r *sdk.SynthesizeRequest) { r.SampleRate = 16000 }, sdk.KindInvalidRequest},
		{"speed on orpheus", func(r *sdk.SynthesizeRequest) { r.Model, r.Speed = fake.Orpheus, 1.5 }, sdk.KindInvalidRequest},
		{"f5 voice not a URL", func(r *sdk.SynthesizeRequest) { r.Model, r.Voice = fake.F5, "tara" }, sdk.KindInvalidRequest},
		{"f5 voice not http", func(r *sdk.SynthesizeRequest) { r.Model, r.Voice = fake.F5, "file:///etc/passwd" }, sdk.KindInvalidRequest},
		{"f5 options set the reference", func(r *sdk.SynthesizeRequest) {
			r.Model, r.Voice, r.Options = fake.F5, "https://example.com/a.wav", []byte(`{"ref_audio_url": "https://example.com/b.wav"}`)
		}, sdk.KindInvalidRequest},
		{"pcm from a pass-through model", func(r *sdk.SynthesizeRequest) { r.Model, r.Format = "fal-ai/dia-tts", sdk.FormatPCM }, sdk.KindInvalidRequest},
		{"speed on a pass-through model", func(r *sdk.SynthesizeRequest) { r.Model, r.Speed = "fal-ai/dia-tts", 1.5 }, sdk.KindInvalidRequest},
		{"sample rate on a pass-through model", func(r *sdk.SynthesizeRequest) { r.Model, r.SampleRate = "fal-ai/dia-tts", 24000 }, sdk.KindInvalidRequest},
		{"options set a pass-through model's text", func(r *sdk.SynthesizeRequest) { r.Model, r.Options = "fal-ai/dia-tts", []byte(`{"text": "x"}`) }, sdk.KindInvalidRequest},
		{"timestamps", func(r *sdk.SynthesizeRequest) { r.Timestamps = true }, sdk.KindUnsupported},
	}
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, settings(srv))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request(fake.Key)
			tt.modify(req)
			_, err := p.Synthesize(t.Context(), req)
			e := sdktest.AsError(t, err)
			if e.Kind != tt.kind {
				t.Errorf("got %v, want kind %s", e, tt.kind)
			}
			// An option the request sets itself is the caller's field.
			if want := map[string]string{"options set the text": "prompt", "f5 options set the reference": "ref_audio_url", "options set a pass-through model's text": "text"}[tt.name]; e.Field != want {
				t.Errorf("field %q, want %q", e.Field, want)
			}
		})
	}
	if n := srv.Calls(); n != 0 {
		t.Errorf("%d upstream calls for invalid requests", n)
	}
}

func TestParseError(t *testing.T) {
	tests := []struct{ body, code, msg string }{
		{`{"detail":"Unauthorized"}`, "", "Unauthorized"},
		{`{"detail":[{"loc":["body","voice"],"msg":"Input should be af_heart","type":"enum"}]}`, "enum", "body.voice: Input should be af_heart"},
		{`oops`, "", ""},
	}
	for _, tt := range tests {
		if code, msg := parseError([]byte(tt.body)); code != tt.code || msg != tt.msg {
			t.Errorf("parseError(%s) = %q, %q", tt.body, code, msg)
		}
	}
}

func TestDownloads(t *testing.T) {
	t.Run("data URI", func(t *testing.T) {
		audio, mt, err := download(t.Context(), New().cfg.Load(), "data:audio/wav;base64,UklGRg==")
		if err != nil || string(audio) != "RIFF" || mt != "audio/wav" {
			t.Errorf("%q %q %v", audio, mt, err)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		srv := fake.New(t, fakeupstream.Options{})
		_, _, err := download(t.Context(), New().cfg.Load(), srv.URL+fake.FilesPath+"gone.wav")
		if e := sdktest.AsError(t, err); e.Kind != sdk.KindUpstream || e.UpstreamStatus != 404 {
			t.Errorf("got %+v", e)
		}
	})
	t.Run("not http", func(t *testing.T) {
		_, _, err := download(t.Context(), New().cfg.Load(), "file:///etc/passwd")
		if e := sdktest.AsError(t, err); e.Kind != sdk.KindUpstream {
			t.Errorf("got %+v", e)
		}
	})
}

func TestModelsSetting(t *testing.T) {
	// fal-ai/orpheus-tts is built in now; a deployment that still lists
	// it keeps working, and its voices setting replaces the documented list.
	p := configured(t, map[string]string{"models": "fal-ai/orpheus-tts, fal-ai/minimax/speech-02-hd=mp3, fal-ai/kokoro/american-english=wav", "voices.fal-ai/orpheus-tts": "tara,leo"})
	d, _ := p.Describe(t.Context())
	if len(d.Models) != 6 || d.Models[4].ID != "fal-ai/minimax/speech-02-hd" || d.Models[5].ID != sdk.AnyModel || d.Models[4].Encodings[0] != (sdk.Encoding{Format: sdk.FormatMP3}) || d.DefaultModel != fake.KokoroUS {
		t.Errorf("models %+v", d.Models)
	}
	voices, _ := p.Voices(t.Context(), &sdk.VoicesRequest{Model: fake.Orpheus})
	if len(voices) != 2 || voices[1].ID != "leo" {
		t.Errorf("voices %+v", voices)
	}
	for _, bad := range []string{"kokoro", "fal-ai/x=ogg", "fal-ai/../x", "fal-ai/a b", "fal-ai/x?y", "fal-ai//x", "fal-ai/f5-tts=mp3", "fal-ai/x, fal-ai/x"} {
		if err := New().Configure(t.Context(), map[string]string{"models": bad}); err == nil {
			t.Errorf("models %q accepted", bad)
		}
	}
}

// TestCatalog: the built-in models keep their capabilities; a
// pass-through model is not listed, but the sdk.AnyModel entry, last,
// describes them all with what the plugin does for them: nothing but
// WAV or MP3 files.
func TestCatalog(t *testing.T) {
	d, err := New().Describe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	last := d.Models[len(d.Models)-1]
	d.Models = d.Models[:len(d.Models)-1]
	if last.ID != sdk.AnyModel || last.Capabilities != (sdk.Capabilities{}) || !slices.Equal(last.OutputFormats, []string{sdk.FormatWAV, sdk.FormatMP3}) ||
		last.SampleRates != nil || last.NativeSampleRate != 0 || last.MaxTextChars != 0 || last.MinSpeed != 0 || last.MaxSpeed != 0 || last.AudioTags != nil {
		t.Errorf("the pass-through model %+v", last)
	}
	if err := sdktest.ValidateDescription(&sdk.Description{ID: d.ID, DefaultModel: d.DefaultModel, Models: append(slices.Clone(d.Models), last)}, nil); err != nil {
		t.Error(err)
	}
	want := map[string]sdk.Model{
		fake.KokoroUS: {Capabilities: sdk.Capabilities{Speed: true}, MinSpeed: 0.1, MaxSpeed: 5},
		fake.KokoroGB: {Capabilities: sdk.Capabilities{Speed: true}, MinSpeed: 0.1, MaxSpeed: 5},
		fake.Orpheus:  {},
		fake.F5:       {},
	}
	if len(d.Models) != len(want) {
		t.Fatalf("models %+v", d.Models)
	}
	for _, m := range d.Models {
		w, ok := want[m.ID]
		if !ok || m.Capabilities != w.Capabilities || m.MinSpeed != w.MinSpeed || m.MaxSpeed != w.MaxSpeed ||
			len(m.Encodings) != 1 || m.Encodings[0] != (sdk.Encoding{Format: sdk.FormatWAV, SampleRate: 24000}) {
			t.Errorf("model %+v", m)
		}
	}
	voices, err := New().Voices(t.Context(), &sdk.VoicesRequest{Model: fake.Orpheus})
	if err != nil || len(voices) != 8 || voices[0].ID != "tara" {
		t.Errorf("orpheus voices %+v, %v", voices, err)
	}
	for _, model := range []string{fake.F5, fake.ElevenV3} {
		if _, err := New().Voices(t.Context(), &sdk.VoicesRequest{Model: model}); sdktest.AsError(t, err).Kind != sdk.KindUnsupported {
			t.Errorf("%s voices: %v", model, err)
		}
	}
}

// TestF5Input: F5-TTS's documented input, gen_text and the reference
// recording's URL, with a model_type the options may replace.
func TestF5Input(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, map[string]string{"base_url": srv.BaseURL()})
	req := &sdk.SynthesizeRequest{Model: fake.F5, Voice: "https://example.com/ref.wav", Text: "Hello there.", Credentials: sdk.Credentials{APIKey: fake.Key},
		Options: []byte(`{"model_type": "E2-TTS", "ref_text": "Some call me nature."}`)}
	resp, err := p.Synthesize(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sdktest.Decode(resp.MediaType, resp.Audio); err != nil || resp.MediaType != "audio/wav" {
		t.Errorf("%s: %v", resp.MediaType, err)
	}
	got, _ := srv.LastRequest()
	var body map[string]any
	_ = json.Unmarshal(got.Body, &body)
	if got.Path != "/"+fake.F5 || body["gen_text"] != "Hello there." || body["ref_audio_url"] != "https://example.com/ref.wav" ||
		body["model_type"] != "E2-TTS" || body["ref_text"] != "Some call me nature." || len(body) != 4 {
		t.Errorf("%s %s", got.Path, got.Body)
	}
	req.Options = nil
	if _, err := p.Synthesize(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	got, _ = srv.LastRequest()
	body = nil
	_ = json.Unmarshal(got.Body, &body)
	if body["model_type"] != "F5-TTS" {
		t.Errorf("default model_type: %s", got.Body)
	}
}

// TestPassThrough: a model id the plugin does not know goes to fal as it
// is, at {base_url}/{id}, with the generic input; its MP3 answer is
// downloaded like a built-in model's WAV.
func TestPassThrough(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, map[string]string{"base_url": srv.BaseURL()})
	req := &sdk.SynthesizeRequest{Model: fake.ElevenV3, Voice: "Aria", Text: "Hello there.", Credentials: sdk.Credentials{APIKey: fake.Key},
		Options: []byte(`{"stability": 0.3}`)}
	resp, err := p.Synthesize(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.MediaType != "audio/mpeg" {
		t.Errorf("media type %q", resp.MediaType)
	}
	if _, err := sdktest.Decode(resp.MediaType, resp.Audio); err != nil {
		t.Error(err)
	}
	got, _ := srv.LastRequest()
	var body map[string]any
	_ = json.Unmarshal(got.Body, &body)
	if got.Path != "/"+fake.ElevenV3 || got.Header.Get("Authorization") != "Key "+fake.Key ||
		body["text"] != "Hello there." || body["voice"] != "Aria" || body["stability"] != 0.3 || len(body) != 3 {
		t.Errorf("%s %v %s", got.Path, got.Header, got.Body)
	}
	if n := srv.CallsTo("/" + fake.ElevenV3); n != 1 {
		t.Errorf("%d calls", n)
	}
	d, _ := p.Describe(t.Context())
	for _, m := range d.Models {
		if m.ID == fake.ElevenV3 {
			t.Errorf("a pass-through model is described: %+v", m)
		}
	}

	// The gateway asks for one of the formats the pass-through model is
	// described with when it decodes the clip: either is accepted, and
	// the answer is the app's file as it is, its media type saying so.
	for _, f := range []string{sdk.FormatWAV, sdk.FormatMP3} {
		req.Format = f
		resp, err := p.Synthesize(t.Context(), req)
		if err != nil {
			t.Fatalf("format %s: %v", f, err)
		}
		if clip, err := sdktest.Decode(resp.MediaType, resp.Audio); err != nil || resp.MediaType != "audio/mpeg" || clip.Format != sdk.FormatMP3 {
			t.Errorf("format %s: %s, %v", f, resp.MediaType, err)
		}
	}
	req.Format = ""

	// An app fal does not have: its 404 is the caller's mistake.
	req.Model = "fal-ai/no-such-app"
	_, err = p.Synthesize(t.Context(), req)
	if e := sdktest.AsError(t, err); e.Kind != sdk.KindInvalidRequest || e.UpstreamStatus != 404 || !strings.Contains(e.Message, "not found") {
		t.Errorf("got %+v", e)
	}
	if got, _ := srv.LastRequest(); got.Path != "/fal-ai/no-such-app" {
		t.Errorf("path %s", got.Path)
	}

	// An app answering a container the gateway does not take.
	ogg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"audio": {"url": "data:audio/ogg;base64,T2dnUw==", "content_type": "audio/ogg"}}`))
	}))
	defer ogg.Close()
	req.Model = "someone/ogg-tts"
	_, err = configured(t, map[string]string{"base_url": ogg.URL}).Synthesize(t.Context(), req)
	if e := sdktest.AsError(t, err); e.Kind != sdk.KindUpstream || !strings.Contains(e.Message, "neither WAV nor MP3") {
		t.Errorf("got %+v", e)
	}
}

// TestMaliciousModelIDs: a model id that could leave the app's path or
// change the URL is refused as an invalid request before anything is sent.
func TestMaliciousModelIDs(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := configured(t, settings(srv))
	for _, id := range []string{
		"../admin", "fal-ai/../../admin", "fal-ai/..", "fal-ai/./x", "fal-ai/%2e%2e/x", "fal-ai/x?y=1", "fal-ai/x#frag",
		"fal-ai/a b", "fal-ai/x\n", "fal-ai/x\ty", "fal-ai//x", "/fal-ai/x", "fal-ai/x/", "fal-ai", "/", "fal-ai/x\\y",
		"http://evil.example/x", "fal-ai/x@evil.example", "fal-ai/ümlaut", "fal-ai/.hidden", "fal-ai/" + strings.Repeat("a", 300),
	} {
		_, err := p.Synthesize(t.Context(), &sdk.SynthesizeRequest{Model: id, Text: "Hi.", Credentials: sdk.Credentials{APIKey: fake.Key}})
		if e := sdktest.AsError(t, err); e.Kind != sdk.KindInvalidRequest || !strings.Contains(e.Message, "is not a fal model id") {
			t.Errorf("Synthesize(model %q): %+v", id, e)
		}
		if _, err := p.Voices(t.Context(), &sdk.VoicesRequest{Model: id}); sdktest.AsError(t, err).Kind != sdk.KindInvalidRequest {
			t.Errorf("Voices(model %q): %v", id, err)
		}
	}
	if n := srv.Calls(); n != 0 {
		t.Errorf("%d upstream calls for invalid model ids", n)
	}
}

// TestEncodingsPassThrough asks, through the plugin process, for the one
// encoding each listed model has: the clip must be the file fal made,
// byte for byte, with the sdk's media type; any other format, rate or a
// bitrate is refused without a call.
func TestEncodingsPassThrough(t *testing.T) {
	srv := fake.New(t, fakeupstream.Options{})
	p := sdktest.StartPlugin(t, pluginPath)
	if err := p.Configure(t.Context(), map[string]string{"base_url": srv.BaseURL()}); err != nil {
		t.Fatal(err)
	}
	desc, err := p.Describe(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	voices := map[string]string{fake.KokoroUS: "af_bella", fake.KokoroGB: "bf_emma", fake.Orpheus: "tara", fake.F5: "https://example.test/reference.wav"}
	for _, m := range desc.Models {
		if m.ID == sdk.AnyModel {
			continue
		}
		for _, e := range m.Encodings {
			t.Run(m.ID+"/"+e.String(), func(t *testing.T) {
				req := request(fake.Key)
				req.Model, req.Voice = m.ID, voices[m.ID]
				req.Format, req.SampleRate, req.Bitrate = e.Format, e.SampleRate, e.Bitrate
				resp, err := p.Synthesize(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				if clip, err := sdktest.Decode(resp.MediaType, resp.Audio); err != nil || clip.Format != e.Format || clip.SampleRate != e.SampleRate || resp.MediaType != sdk.MediaType(e) {
					t.Errorf("the clip is %q, %+v (%v); want %s", resp.MediaType, clip, err, e)
				}
				if !bytes.Equal(resp.Audio, srv.LastAnswer()) {
					t.Errorf("the clip (%d bytes) is not the file fal made (%d bytes)", len(resp.Audio), len(srv.LastAnswer()))
				}
			})
		}
	}
	calls := srv.Calls()
	for _, e := range []sdk.Encoding{{Format: sdk.FormatWAV, SampleRate: 16000}, {Format: sdk.FormatMP3}, {Format: sdk.FormatPCM, SampleRate: 24000}, {Format: sdk.FormatWAV, Bitrate: 64}} {
		req := request(fake.Key)
		req.Format, req.SampleRate, req.Bitrate = e.Format, e.SampleRate, e.Bitrate
		if _, err := p.Synthesize(t.Context(), req); sdktest.AsError(t, err).Kind != sdk.KindInvalidRequest {
			t.Errorf("%s: %v, want invalid_request", e, err)
		}
	}
	if srv.Calls() != calls {
		t.Errorf("%d upstream calls for unlisted encodings", srv.Calls()-calls)
	}
}
