package openai

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

type answer struct {
	status int
	header http.Header
	body   []byte
	chunks int // Transfer-Encoding chunked
}

func call(t *testing.T, s *Server, method, path, auth, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := answer{status: resp.StatusCode, header: resp.Header, body: b}
	for _, te := range resp.TransferEncoding {
		if te == "chunked" {
			a.chunks = 1
		}
	}
	return a
}

// errorOf decodes OpenAI's error body, failing if the shape is wrong.
func errorOf(t *testing.T, a answer) errorDetail {
	t.Helper()
	var raw map[string]map[string]any
	if err := json.Unmarshal(a.body, &raw); err != nil {
		t.Fatalf("error body %s: %v", a.body, err)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := raw["error"][k]; !ok {
			t.Errorf("error body %s lacks %q", a.body, k)
		}
	}
	var e apiError
	_ = json.Unmarshal(a.body, &e)
	return e.Error
}

func TestWireFormat(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	bearer := "Bearer " + Key
	ok := `{"model":"tts-1","input":"Hello world.","voice":"alloy","response_format":"pcm"}`
	// breaks: OpenAI's published document refuses the request too (the
	// fake's judge records it); the other refusals follow the written
	// reference only.
	tests := []struct {
		name, method, path, auth, body string
		status                         int
		code, param, msgHas            string
		breaks                         bool
	}{
		{"no key", "POST", SpeechPath, "", ok, 401, "", "", "didn't provide an API key", true},
		{"wrong key", "POST", SpeechPath, "Bearer sk-wrong-0123456789", ok, 401, "invalid_api_key", "", "sk-w***", false},
		{"not bearer", "POST", SpeechPath, "Basic " + Key, ok, 401, "", "", "didn't provide", true},
		{"unknown field", "POST", SpeechPath, bearer, `{"model":"tts-1","input":"x","voice":"alloy","temperature":1}`, 400, "", "", "Unrecognized request argument supplied: temperature", true},
		{"bad JSON", "POST", SpeechPath, bearer, `{"model":`, 400, "", "", "could not parse the JSON body", true},
		{"no model", "POST", SpeechPath, bearer, `{"input":"x","voice":"alloy"}`, 400, "", "model", "must provide a model", true},
		{"unknown model", "POST", SpeechPath, bearer, `{"model":"tts-9","input":"x","voice":"alloy"}`, 404, "model_not_found", "", "does not exist", false},
		{"no input", "POST", SpeechPath, bearer, `{"model":"tts-1","voice":"alloy"}`, 400, "missing_required_parameter", "input", "", true},
		{"input too long", "POST", SpeechPath, bearer, `{"model":"tts-1","voice":"alloy","input":"` + strings.Repeat("a", MaxInput+1) + `"}`, 400, "string_above_max_length", "input", "", true},
		{"no voice", "POST", SpeechPath, bearer, `{"model":"tts-1","input":"x"}`, 400, "missing_required_parameter", "voice", "", true},
		{"voice of another model", "POST", SpeechPath, bearer, `{"model":"tts-1","input":"x","voice":"ballad"}`, 400, "invalid_value", "voice", "Supported values", false},
		{"custom voice object", "POST", SpeechPath, bearer, `{"model":"gpt-4o-mini-tts","input":"x","voice":{"id":"voice_1"}}`, 400, "invalid_value", "voice", "", false},
		{"speed out of range", "POST", SpeechPath, bearer, `{"model":"tts-1","input":"x","voice":"alloy","speed":4.5}`, 400, "invalid_value", "speed", "", true},
		{"unknown format", "POST", SpeechPath, bearer, `{"model":"tts-1","input":"x","voice":"alloy","response_format":"ogg"}`, 400, "invalid_value", "response_format", "", true},
		{"sse stream format", "POST", SpeechPath, bearer, `{"model":"gpt-4o-mini-tts","input":"x","voice":"alloy","stream_format":"sse"}`, 400, "invalid_value", "stream_format", "", false},
		{"wrong method", "GET", SpeechPath, bearer, "", 405, "", "", "Invalid method", true},
		{"unknown path", "POST", "/v1/audio/speeches", bearer, ok, 404, "", "", "Invalid URL", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if v := s.TakeViolations(); tt.breaks != (len(v) > 0) {
					t.Errorf("the API document judged it %q, want a violation: %v", v, tt.breaks)
				}
			}()
			a := call(t, s, tt.method, tt.path, tt.auth, tt.body)
			if a.status != tt.status {
				t.Fatalf("status %d, want %d: %s", a.status, tt.status, a.body)
			}
			e := errorOf(t, a)
			if ptr(e.Code) != tt.code || ptr(e.Param) != tt.param || !strings.Contains(e.Message, tt.msgHas) {
				t.Errorf("error %+v (code %q, param %q); want code %q, param %q, message with %q", e, ptr(e.Code), ptr(e.Param), tt.code, tt.param, tt.msgHas)
			}
			if strings.Contains(e.Message, "0123456789") {
				t.Errorf("message %q shows the whole key", e.Message)
			}
		})
	}
}

func ptr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func TestAudio(t *testing.T) {
	s := New(t, fakeupstream.Options{ChunkSize: 1000})
	bearer := "Bearer " + Key
	text := "The quick brown fox."
	seconds := fakeupstream.Speak(text, 1).Seconds
	tests := []struct {
		body, contentType, mediaType string
		wantSeconds                  float64
	}{
		{`{"model":"tts-1","input":"` + text + `","voice":"alloy","response_format":"pcm"}`, "audio/pcm", "audio/pcm;rate=24000", seconds},
		{`{"model":"tts-1","input":"` + text + `","voice":"alloy","response_format":"wav"}`, "audio/wav", "audio/wav", seconds},
		{`{"model":"tts-1","input":"` + text + `","voice":"alloy"}`, "audio/mpeg", "audio/mpeg", 0},
		{`{"model":"tts-1","input":"` + text + `","voice":"alloy","response_format":"opus"}`, "audio/opus", "audio/ogg;codecs=opus", 0},
		{`{"model":"tts-1","input":"` + text + `","voice":"alloy","response_format":"aac"}`, "audio/aac", "audio/aac", 0},
		{`{"model":"gpt-4o-mini-tts-2025-12-15","input":"` + text + `","voice":"cedar","response_format":"flac"}`, "audio/flac", "audio/flac", seconds},
		{`{"model":"tts-1","input":"` + text + `","voice":"alloy","response_format":"pcm","speed":2}`, "audio/pcm", "audio/pcm;rate=24000", fakeupstream.Speak(text, 2).Seconds},
		// Documented: speed does not work with gpt-4o-mini-tts.
		{`{"model":"gpt-4o-mini-tts","input":"` + text + `","voice":"marin","response_format":"pcm","speed":2,"instructions":"Calmly."}`, "audio/pcm", "audio/pcm;rate=24000", seconds},
	}
	for _, tt := range tests {
		a := call(t, s, "POST", SpeechPath, bearer, tt.body)
		if a.status != 200 || a.header.Get("Content-Type") != tt.contentType {
			t.Fatalf("%s: status %d, type %q: %s", tt.body, a.status, a.header.Get("Content-Type"), a.body)
		}
		if a.chunks == 0 {
			t.Errorf("%s: not chunked", tt.body)
		}
		clip, err := sdktest.Decode(tt.mediaType, a.body)
		if err != nil {
			t.Fatalf("%s: %v", tt.body, err)
		}
		if clip.Format != "opus" && clip.SampleRate != SampleRate {
			t.Errorf("%s: %d Hz, want %d", tt.body, clip.SampleRate, SampleRate)
		}
		if !bytes.Equal(s.LastAnswer(), a.body) {
			t.Errorf("%s: LastAnswer holds %d bytes, the answer %d", tt.body, len(s.LastAnswer()), len(a.body))
		}
		if tt.wantSeconds > 0 && (clip.Seconds() < tt.wantSeconds-0.001 || clip.Seconds() > tt.wantSeconds+0.001) {
			t.Errorf("%s: %.3f s, want %.3f", tt.body, clip.Seconds(), tt.wantSeconds)
		}
	}
}

func TestFaultsAndFixedBodies(t *testing.T) {
	s := New(t, fakeupstream.Options{FixedSeconds: 2})
	bearer := "Bearer " + Key
	s.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "3"})
	a := call(t, s, "POST", SpeechPath, bearer, `{"model":"tts-1","input":"x","voice":"alloy","response_format":"pcm"}`)
	if a.status != 429 || a.header.Get("Retry-After") != "3" || ptr(errorOf(t, a).Code) != "rate_limit_exceeded" {
		t.Errorf("injected 429: %d %v %s", a.status, a.header, a.body)
	}
	for _, text := range []string{"x", strings.Repeat("long text ", 40)} {
		a = call(t, s, "POST", SpeechPath, bearer, `{"model":"tts-1","input":"`+text+`","voice":"alloy","response_format":"pcm"}`)
		if clip, err := sdktest.Decode("audio/pcm;rate=24000", a.body); err != nil || clip.Seconds() != 2 {
			t.Errorf("fixed body: %+v %v", clip, err)
		}
	}
	if s.CallsTo(SpeechPath) != 3 {
		t.Errorf("%d calls", s.CallsTo(SpeechPath))
	}
	if r, _ := s.LastRequest(); r.Header.Get("Authorization") != bearer {
		t.Errorf("recorded %v", r.Header)
	}
}

// TestPathPrefix: NewAt mounts the API under another root, as servers
// that copy OpenAI's API do; the default paths are then not served.
func TestPathPrefix(t *testing.T) {
	s := NewAt(t, fakeupstream.Options{}, "/kokoro/api/v1/")
	if s.BaseURL() != s.URL+"/kokoro/api/v1" || s.SpeechURLPath() != "/kokoro/api/v1/audio/speech" {
		t.Fatalf("BaseURL %s, speech at %s", s.BaseURL(), s.SpeechURLPath())
	}
	body := `{"model":"tts-1","input":"Hello.","voice":"alloy","response_format":"wav"}`
	if a := call(t, s, "POST", s.SpeechURLPath(), "Bearer "+Key, body); a.status != 200 {
		t.Errorf("prefixed speech: %d %s", a.status, a.body)
	}
	if a := call(t, s, "POST", SpeechPath, "Bearer "+Key, body); a.status != 404 {
		t.Errorf("the default path answered %d", a.status)
	}
	if s.CallsTo(s.SpeechURLPath()) != 1 {
		t.Errorf("%d calls to the prefixed path", s.CallsTo(s.SpeechURLPath()))
	}
}

// form posts a multipart form to the transcription endpoint.
func postForm(t *testing.T, s *Server, fields map[string][]string, file []byte, filename string) answer {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, vs := range fields {
		for _, v := range vs {
			_ = mw.WriteField(k, v)
		}
	}
	if filename != "" {
		fw, _ := mw.CreateFormFile("file", filename)
		_, _ = fw.Write(file)
	}
	_ = mw.Close()
	req, _ := http.NewRequest(http.MethodPost, s.URL+TranscriptionPath, &body)
	req.Header.Set("Authorization", "Bearer "+Key)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

func TestTranscription(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	studio, _ := fakeupstream.NewStudio()
	text := "Three short words."
	wav := studio.WAV(fakeupstream.Speak(text, 1), SampleRate).Bytes()
	word := map[string][]string{"model": {"whisper-1"}, "response_format": {"verbose_json"}, "timestamp_granularities[]": {"word"}, "prompt": {text}}
	a := postForm(t, s, word, wav, "speech.wav")
	if a.status != 200 {
		t.Fatalf("%d %s", a.status, a.body)
	}
	var v struct {
		Task, Language, Text string
		Duration             float64
		Words                []struct {
			Word       string
			Start, End float64
		}
		Segments []any
	}
	if err := json.Unmarshal(a.body, &v); err != nil {
		t.Fatal(err)
	}
	want := fakeupstream.Speak(text, 1).Words
	if v.Task != "transcribe" || v.Text != "Three short words" || len(v.Words) != 3 || v.Segments != nil {
		t.Fatalf("answer %s", a.body)
	}
	for i, w := range v.Words {
		if w.Start != math.Round(want[i].Start*100)/100 || w.End != math.Round(want[i].End*100)/100 {
			t.Errorf("word %d %+v, want %+v", i, w, want[i])
		}
	}
	for _, c := range []struct {
		name   string
		fields map[string][]string
		file   string
		status int
		param  string
		breaks bool // the document refuses it too
	}{
		{"no file", map[string][]string{"model": {"whisper-1"}}, "", 400, "file", true},
		{"no model", map[string][]string{}, "speech.wav", 400, "model", true},
		{"unknown model", map[string][]string{"model": {"whisper-9"}}, "speech.wav", 404, "", false},
		{"words without verbose_json", map[string][]string{"model": {"whisper-1"}, "timestamp_granularities[]": {"word"}}, "speech.wav", 400, "timestamp_granularities", false},
		{"bad granularity", map[string][]string{"model": {"whisper-1"}, "response_format": {"verbose_json"}, "timestamp_granularities[]": {"syllable"}}, "speech.wav", 400, "timestamp_granularities", true},
		{"gpt-4o with srt", map[string][]string{"model": {"gpt-4o-transcribe"}, "response_format": {"srt"}}, "speech.wav", 400, "response_format", false},
		{"unsupported file", map[string][]string{"model": {"whisper-1"}}, "speech.xyz", 400, "file", false},
	} {
		a := postForm(t, s, c.fields, wav, c.file)
		if v := s.TakeViolations(); c.breaks != (len(v) > 0) {
			t.Errorf("%s: the API document judged it %q, want a violation: %v", c.name, v, c.breaks)
		}
		if a.status != c.status {
			t.Errorf("%s: %d %s", c.name, a.status, a.body)
			continue
		}
		if e := errorOf(t, a); c.param != "" && (e.Param == nil || *e.Param != c.param) {
			t.Errorf("%s: param %v", c.name, e.Param)
		}
	}
	// Plain json is only the text.
	if a := postForm(t, s, map[string][]string{"model": {"whisper-1"}, "prompt": {text}}, wav, "speech.wav"); a.status != 200 || string(a.body) != "{\"text\":\"Three short words\"}\n" {
		t.Errorf("json: %d %s", a.status, a.body)
	}
}
