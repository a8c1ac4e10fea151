package murf

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"math"
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
}

// call sends a request with the given headers ("" values are left out).
func call(t *testing.T, url, method string, headers map[string]string, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}
}

func auth() map[string]string {
	return map[string]string{"api-key": Key, "Content-Type": "application/json"}
}

const okBody = `{"voiceId":"en-US-natalie","text":"Hello world.","format":"PCM","sampleRate":24000,"channelType":"MONO"}`

type envelope struct {
	ErrorMessage string `json:"error_message"`
	ErrorCode    int    `json:"error_code"`
}

func errorOf(t *testing.T, a answer) envelope {
	t.Helper()
	var e envelope
	if err := json.Unmarshal(a.body, &e); err != nil || e.ErrorMessage == "" || e.ErrorCode != a.status {
		t.Fatalf("%d %s is not Murf's error envelope", a.status, a.body)
	}
	return e
}

func TestWireFormat(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	with := func(old, new string) string { return strings.Replace(okBody, old, new, 1) }
	tests := []struct {
		name    string
		paths   []string
		headers map[string]string
		body    string
		status  int
		msgHas  string
		breaks  bool // the published API document refuses it too
	}{
		{"no key", nil, map[string]string{"Content-Type": "application/json"}, okBody, 400, "Missing 'api-key'", false},
		{"wrong key", nil, map[string]string{"api-key": "ap2_nope", "Content-Type": "application/json"}, okBody, 403, "Invalid 'api-key'", false},
		{"unknown field", nil, auth(), with(`"text"`, `"speed":2,"text"`), 400, `Unrecognized field "speed"`, true},
		{"no voice", nil, auth(), with(`"voiceId":"en-US-natalie",`, ""), 400, "voiceId is required", true},
		{"unknown voice", nil, auth(), with("en-US-natalie", "en-US-nobody"), 400, "Invalid voice_id", false},
		{"empty text", nil, auth(), with("Hello world.", "  "), 400, "text is required", false},
		{"text too long", nil, auth(), with("Hello world.", strings.Repeat("a", MaxText+1)), 400, "3000", false},
		{"format", nil, auth(), with("PCM", "AAC"), 400, "Invalid format", false},
		{"ulaw not rendered", nil, auth(), with("PCM", "ULAW"), 400, "this fake", false},
		{"rate of the wrong endpoint", []string{GeneratePath}, auth(), with("24000", "16000"), 400, "sampleRate", false},
		{"rate", nil, auth(), with("24000", "22050"), 400, "sampleRate", false},
		{"stereo", nil, auth(), with("MONO", "STEREO"), 400, "this fake", false},
		{"speaking rate", nil, auth(), with(`"text"`, `"rate":60,"text"`), 400, "rate must be", false},
		{"pitch", nil, auth(), with(`"text"`, `"pitch":-51,"text"`), 400, "pitch must be", false},
		{"variation on falcon", []string{StreamPath}, auth(), with(`"text"`, `"variation":2,"text"`), 400, "Gen2", false},
		{"pronunciation", nil, auth(), with(`"text"`, `"pronunciationDictionary":{"live":{"type":"X","pronunciation":"l"}},"text"`), 400, "IPA or SAY_AS", true},
		{"generate-only field on stream", []string{StreamPath}, auth(), with(`"text"`, `"encodeAsBase64":true,"text"`), 400, "Unrecognized field", true},
		{"model on generate", []string{GeneratePath}, auth(), with(`"text"`, `"model":"FALCON","text"`), 400, "Unrecognized field", true},
		{"model version", []string{GeneratePath}, auth(), with(`"text"`, `"modelVersion":"GEN1","text"`), 400, "modelVersion", true},
		{"stream model", []string{StreamPath}, auth(), with(`"text"`, `"model":"EAGLE","text"`), 400, "Invalid model", false},
		{"not JSON", nil, auth(), "{", 400, "Invalid request body", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if v := s.TakeViolations(); tt.breaks != (len(v) > 0) {
					t.Errorf("the API document judged it %q, want a violation: %v", v, tt.breaks)
				}
			}()
			paths := tt.paths
			if paths == nil {
				paths = []string{GeneratePath, StreamPath}
			}
			for _, p := range paths {
				a := call(t, s.URL+p, "POST", tt.headers, tt.body)
				if e := errorOf(t, a); a.status != tt.status || !strings.Contains(e.ErrorMessage, tt.msgHas) {
					t.Errorf("%s: %d %s; want %d with %q", p, a.status, a.body, tt.status, tt.msgHas)
				}
			}
		})
	}
}

type generated struct {
	AudioFile            string  `json:"audioFile"`
	EncodedAudio         *string `json:"encodedAudio"`
	AudioLengthInSeconds float64 `json:"audioLengthInSeconds"`
	WordDurations        []struct {
		Word    string `json:"word"`
		StartMs int    `json:"startMs"`
		EndMs   int    `json:"endMs"`
	} `json:"wordDurations"`
	ConsumedCharacterCount int `json:"consumedCharacterCount"`
}

func TestGenerate(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	text := "Hello there, world."
	for _, tt := range []struct {
		body, mediaType string
		speed           float64
	}{
		{`"format":"PCM","sampleRate":8000`, "audio/pcm;rate=8000", 1},
		{`"format":"wav","sampleRate":48000,"rate":50,"modelVersion":"GEN2","variation":3`, "audio/wav", 1.5},
		{`"format":"MP3","channelType":"MONO"`, "audio/mpeg", 1},
		{`"format":"MP3","sampleRate":24000`, "audio/mpeg", 1},
		{`"format":"FLAC","sampleRate":24000`, "audio/flac", 1},
		{`"rate":-25`, "audio/wav", 0.75}, // WAV at 44.1 kHz by default
	} {
		body := `{"voiceId":"en-US-ken","text":"` + text + `","encodeAsBase64":true,` + tt.body + `}`
		a := call(t, s.URL+GeneratePath, "POST", auth(), body)
		if a.status != 200 {
			t.Fatalf("%s: %d %s", tt.body, a.status, a.body)
		}
		var out generated
		if err := json.Unmarshal(a.body, &out); err != nil || out.EncodedAudio == nil || out.AudioFile != "" {
			t.Fatalf("%s: %s", tt.body, a.body)
		}
		audio, err := base64.StdEncoding.DecodeString(*out.EncodedAudio)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(audio, s.LastAnswer()) {
			t.Errorf("%s: LastAnswer is not the answer", tt.body)
		}
		clip, err := sdktest.Decode(tt.mediaType, audio)
		if err != nil {
			t.Fatalf("%s: %v", tt.body, err)
		}
		u := fakeupstream.Speak(text, tt.speed)
		if (clip.Format == "pcm" || clip.Format == "wav") && math.Abs(clip.Seconds()-u.Seconds) > 0.001 {
			t.Errorf("%s: %.3f s, want %.3f", tt.body, clip.Seconds(), u.Seconds)
		}
		if tt.body == `"rate":-25` && clip.SampleRate != 44100 {
			t.Errorf("default rate %d", clip.SampleRate)
		}
		if len(out.WordDurations) != 3 || out.WordDurations[1].Word != "there," || out.WordDurations[2].StartMs != int(math.Round(u.Words[2].Start*1000)) {
			t.Errorf("%s: word durations %+v", tt.body, out.WordDurations)
		}
		if out.ConsumedCharacterCount != len(text) || math.Abs(out.AudioLengthInSeconds-u.Seconds) > 1e-9 {
			t.Errorf("%s: %s", tt.body, a.body)
		}
	}
}

func TestAudioFile(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	// Without encodeAsBase64 the answer is a URL.
	a := call(t, s.URL+GeneratePath, "POST", auth(), okBody)
	var out generated
	if err := json.Unmarshal(a.body, &out); err != nil || out.EncodedAudio != nil || !strings.HasPrefix(out.AudioFile, s.URL+FilesPath) {
		t.Fatalf("%d %s", a.status, a.body)
	}
	f := call(t, out.AudioFile, "GET", nil, "")
	if _, err := sdktest.Decode("audio/pcm;rate=24000", f.body); err != nil || f.status != 200 {
		t.Errorf("%d: %v", f.status, err)
	}
	// SetAudioFileOnly ignores encodeAsBase64.
	s.SetAudioFileOnly(true)
	a = call(t, s.URL+GeneratePath, "POST", auth(), strings.Replace(okBody, `"text"`, `"encodeAsBase64":true,"text"`, 1))
	if err := json.Unmarshal(a.body, &out); err != nil || out.EncodedAudio != nil || out.AudioFile == "" {
		t.Errorf("%s", a.body)
	}
	if f := call(t, s.URL+FilesPath+"nothing.wav", "GET", nil, ""); f.status != 404 {
		t.Errorf("unknown file: %d", f.status)
	}
}

func TestStream(t *testing.T) {
	s := New(t, fakeupstream.Options{ChunkSize: 1000})
	text := "A stream arrives in chunks."
	for _, tt := range []struct {
		body, contentType, mediaType string
	}{
		{`"model":"FALCON","format":"PCM","sampleRate":16000`, "application/octet-stream", "audio/pcm;rate=16000"},
		{`"model":"GEN2","format":"WAV"`, "audio/wav", "audio/wav"},
		{`"format":"MP3","sampleRate":24000`, "audio/mpeg", "audio/mpeg"},
		{`"format":"FLAC","sampleRate":48000`, "audio/flac", "audio/flac"},
	} {
		body := `{"voiceId":"en-UK-hazel","text":"` + text + `",` + tt.body + `}`
		a := call(t, s.URL+StreamPath, "POST", auth(), body)
		if a.status != 200 || a.header.Get("Content-Type") != tt.contentType {
			t.Fatalf("%s: %d %v %s", tt.body, a.status, a.header, a.body)
		}
		if !bytes.Equal(a.body, s.LastAnswer()) {
			t.Errorf("%s: LastAnswer is not the answer", tt.body)
		}
		clip, err := sdktest.Decode(tt.mediaType, a.body)
		if err != nil {
			t.Fatalf("%s: %v", tt.body, err)
		}
		if (clip.Format == "pcm" || clip.Format == "wav") && math.Abs(clip.Seconds()-fakeupstream.Speak(text, 1).Seconds) > 0.001 {
			t.Errorf("%s: %.3f s", tt.body, clip.Seconds())
		}
		if tt.mediaType == "audio/wav" && clip.SampleRate != 44100 {
			t.Errorf("GEN2's default stream rate %d", clip.SampleRate)
		}
	}
	// FALCON defaults to 24 kHz.
	a := call(t, s.URL+StreamPath, "POST", auth(), `{"voiceId":"en-US-ken","text":"Hi.","format":"WAV"}`)
	if clip, err := sdktest.Decode("audio/wav", a.body); err != nil || clip.SampleRate != 24000 {
		t.Errorf("%+v %v", clip, err)
	}
}

func TestFaultsAndVoices(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	s.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "2"})
	a := call(t, s.URL+StreamPath, "POST", auth(), okBody)
	if e := errorOf(t, a); a.status != 429 || e.ErrorCode != 429 || a.header.Get("Retry-After") != "2" {
		t.Errorf("%d %s", a.status, a.body)
	}
	s.FailNext(1, fakeupstream.Fault{Status: 402})
	a = call(t, s.URL+GeneratePath, "POST", auth(), okBody)
	if e := errorOf(t, a); a.status != 402 || !strings.Contains(e.ErrorMessage, "limit") {
		t.Errorf("%d %s", a.status, a.body)
	}
	a = call(t, s.URL+VoicesPath+"?model=FALCON", "GET", auth(), "")
	var voices []struct {
		VoiceID string `json:"voiceId"`
		Gender  string `json:"gender"`
		Locale  string `json:"locale"`
	}
	if err := json.Unmarshal(a.body, &voices); err != nil || len(voices) != 4 || voices[0].VoiceID != VoiceNatalie || voices[0].Gender != "Female" {
		t.Errorf("%d %s", a.status, a.body)
	}
	if a := call(t, s.URL+VoicesPath+"?model=X", "GET", auth(), ""); a.status != 400 {
		t.Errorf("bad model: %d", a.status)
	}
	if a := call(t, s.URL+"/v1/nothing", "GET", auth(), ""); a.status != 404 || errorOf(t, a).ErrorCode != 404 {
		t.Errorf("unknown path: %d %s", a.status, a.body)
	}
	if v := s.TakeViolations(); len(v) != 1 {
		t.Errorf("an unknown path: the document judged %q", v)
	}
	if s.CallsTo(GeneratePath) != 1 || s.CallsTo(StreamPath) != 1 {
		t.Errorf("calls %d %d", s.CallsTo(GeneratePath), s.CallsTo(StreamPath))
	}
}
