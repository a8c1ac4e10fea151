package mistral

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
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

func call(t *testing.T, s *Server, method, path, auth string, body []byte) answer {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
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

const bearer = "Bearer " + Key

const okBody = `{"model":"voxtral-mini-tts-3-0","input":"Hello world.","voice_id":"` + VoiceSheila + `","response_format":"pcm"}`

func TestWireFormat(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	with := func(old, new string) string { return strings.Replace(okBody, old, new, 1) }
	tests := []struct {
		name, auth, body string
		status           int
		has              string
		breaks           bool // the published API document refuses it too
	}{
		{"no key", "", okBody, 401, `"message":"Unauthorized"`, true},
		{"wrong key", "Bearer nope", okBody, 401, "Unauthorized", false},
		{"unknown field", bearer, with(`"input"`, `"speed":1.2,"input"`), 422, `"loc":["body","speed"],"msg":"Extra inputs are not permitted"`, true},
		{"no input", bearer, `{"voice_id":"` + VoiceSheila + `"}`, 422, `"loc":["body","input"]`, true},
		{"empty input", bearer, with("Hello world.", " "), 422, "at least 1 character", false},
		{"unknown model", bearer, with("voxtral-mini-tts-3-0", "voxtral-9"), 400, "invalid_model", false},
		{"no voice", bearer, `{"input":"Hi."}`, 400, "Either ref_audio or voice must be provided.", false},
		{"unknown voice", bearer, with(VoiceSheila, "nobody"), 404, `"code":"1902"`, false},
		{"bad format", bearer, with(`"pcm"`, `"aac"`), 422, "response_format", true},
		{"ref audio not base64", bearer, `{"input":"Hi.","ref_audio":"!!"}`, 400, "base64", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if v := s.TakeViolations(); tt.breaks != (len(v) > 0) {
					t.Errorf("the API document judged it %q, want a violation: %v", v, tt.breaks)
				}
			}()
			a := call(t, s, "POST", SpeechPath, tt.auth, []byte(tt.body))
			if a.status != tt.status || !strings.Contains(string(a.body), tt.has) {
				t.Errorf("%d %s; want %d with %q", a.status, a.body, tt.status, tt.has)
			}
			if tt.status != 401 && tt.status != 422 && !strings.Contains(string(a.body), `"object":"error"`) {
				t.Errorf("not Mistral's error envelope: %s", a.body)
			}
		})
	}
	// A reference clip stands in for a voice; the model may be left out.
	ref := base64.StdEncoding.EncodeToString([]byte("RIFF"))
	if a := call(t, s, "POST", SpeechPath, bearer, []byte(`{"input":"Hi.","ref_audio":"`+ref+`"}`)); a.status != 200 {
		t.Errorf("ref_audio: %d %s", a.status, a.body)
	}
}

// int16Of turns float32 LE samples back into 16-bit ones.
func int16Of(f32 []byte) []byte {
	out := make([]byte, len(f32)/2)
	for i := 0; i+3 < len(f32); i += 4 {
		v := math.Float32frombits(binary.LittleEndian.Uint32(f32[i:]))
		binary.LittleEndian.PutUint16(out[i/2:], uint16(int16(v*32768)))
	}
	return out
}

func TestSpeech(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	text := "Hello world."
	for _, tt := range []struct{ format, mediaType string }{
		{"pcm", "audio/pcm;rate=24000"}, {"wav", "audio/wav"}, {"mp3", "audio/mpeg"}, {"flac", "audio/flac"}, {"opus", "audio/ogg;codecs=opus"},
	} {
		body := strings.Replace(okBody, `"pcm"`, `"`+tt.format+`"`, 1)
		a := call(t, s, "POST", SpeechPath, bearer, []byte(body))
		var ans struct {
			AudioData string `json:"audio_data"`
		}
		if err := json.Unmarshal(a.body, &ans); err != nil || a.status != 200 {
			t.Fatalf("%s: %d %.200s", tt.format, a.status, a.body)
		}
		audio, err := base64.StdEncoding.DecodeString(ans.AudioData)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(s.LastAnswer(), audio) {
			t.Errorf("%s: LastAnswer is not the answer's audio", tt.format)
		}
		if tt.format == "pcm" {
			if len(audio)%4 != 0 {
				t.Fatalf("%d bytes of float32", len(audio))
			}
			audio = int16Of(audio)
		}
		clip, err := sdktest.Decode(tt.mediaType, audio)
		if err != nil {
			t.Fatal(err)
		}
		want := fakeupstream.Speak(text, 1).Seconds
		exact := clip.Format != "mp3" && clip.Format != "opus" // lossy coders pad
		if (exact && math.Abs(clip.Seconds()-want) > 0.001) || (clip.Format != "opus" && clip.SampleRate != SampleRate) {
			t.Errorf("%s: %+v, want %.3f s", tt.format, clip, want)
		}
	}
}

func TestStream(t *testing.T) {
	s := New(t, fakeupstream.Options{ChunkSize: 1002})
	text := "Streamed in several deltas."
	body := strings.Replace(strings.Replace(okBody, "Hello world.", text, 1), `"input"`, `"stream":true,"input"`, 1)
	a := call(t, s, "POST", SpeechPath, bearer, []byte(body))
	if a.status != 200 || a.header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", a.status, a.body)
	}
	var f32 []byte
	var types []string
	sc := bufio.NewScanner(bytes.NewReader(a.body))
	sc.Buffer(nil, 1<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			event = name
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type      string         `json:"type"`
			AudioData string         `json:"audio_data"`
			Usage     map[string]any `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil || ev.Type != event {
			t.Fatalf("event %q: %s", event, data)
		}
		types = append(types, ev.Type)
		chunk, err := base64.StdEncoding.DecodeString(ev.AudioData)
		if err != nil || len(chunk)%4 != 0 {
			t.Fatalf("delta of %d bytes: %v", len(chunk), err)
		}
		f32 = append(f32, chunk...)
	}
	if len(types) < 4 || types[len(types)-1] != "speech.audio.done" || types[0] != "speech.audio.delta" {
		t.Errorf("events %v", types)
	}
	clip, err := sdktest.Decode("audio/pcm;rate=24000", int16Of(f32))
	if err != nil || math.Abs(clip.Seconds()-fakeupstream.Speak(text, 1).Seconds) > 0.001 {
		t.Errorf("audio %+v %v", clip, err)
	}
}

func TestVoices(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	type page struct {
		Items      []voice `json:"items"`
		Total      int     `json:"total"`
		Page       int     `json:"page"`
		PageSize   int     `json:"page_size"`
		TotalPages int     `json:"total_pages"`
	}
	list := func(query string) page {
		t.Helper()
		a := call(t, s, "GET", VoicesPath+query, bearer, nil)
		var p page
		if err := json.Unmarshal(a.body, &p); err != nil || a.status != 200 {
			t.Fatalf("GET %s: %d %s", query, a.status, a.body)
		}
		return p
	}
	if p := list("?limit=2&offset=2"); p.Total != 3 || len(p.Items) != 1 || p.Page != 2 || p.TotalPages != 2 {
		t.Errorf("page %+v", p)
	}
	if a := call(t, s, "GET", VoicesPath+"?type=mine", bearer, nil); a.status != 422 {
		t.Errorf("bad type: %d", a.status)
	}
	if v := s.TakeViolations(); len(v) != 1 {
		t.Errorf("the document judged a bad type %q", v)
	}
	sample := base64.StdEncoding.EncodeToString([]byte("RIFFxxxxWAVE"))
	for _, tt := range []struct {
		body   string
		status int
	}{
		{`{"sample_audio":"` + sample + `"}`, 422},
		{`{"name":"Me"}`, 422},
		{`{"name":"Me","sample_audio":"!!"}`, 400},
		{`{"name":"Me","sample_audio":"` + sample + `","accent":"x"}`, 422},
		{`{"name":"Me","sample_audio":"` + sample + `","slug":"` + VoiceSheila + `"}`, 409},
		{`{"name":"Me","sample_audio":"` + sample + `","sample_filename":"me.wav","languages":["en_us"],"retention_notice":7}`, 200},
	} {
		a := call(t, s, "POST", VoicesPath, bearer, []byte(tt.body))
		if a.status != tt.status {
			t.Fatalf("%s: %d %s", tt.body, a.status, a.body)
		}
		// The 422s break the document too (a missing or an unknown
		// field); the 400 and the 409 are the fake's own checks.
		if v := s.TakeViolations(); (len(v) > 0) != (tt.status == 422) {
			t.Errorf("%s: the document judged it %q", tt.body, v)
		}
		if tt.status != 200 {
			continue
		}
		var v voice
		if err := json.Unmarshal(a.body, &v); err != nil || v.ID == "" || v.Name != "Me" || v.UserID == nil || v.RetentionNotice != 7 {
			t.Fatalf("created %s", a.body)
		}
		if p := list("?type=custom"); len(p.Items) != 1 || p.Items[0].ID != v.ID {
			t.Errorf("custom voices %+v", p)
		}
		if p := list("?type=preset"); p.Total != 3 {
			t.Errorf("preset voices %+v", p)
		}
		body := strings.Replace(okBody, VoiceSheila, v.ID, 1)
		if a := call(t, s, "POST", SpeechPath, bearer, []byte(body)); a.status != 200 {
			t.Errorf("the new voice does not speak: %d %s", a.status, a.body)
		}
	}
}

func TestFaults(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	s.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "1"})
	s.FailNext(1, fakeupstream.Fault{Status: 403})
	a := call(t, s, "POST", SpeechPath, bearer, []byte(okBody))
	if a.status != 429 || a.header.Get("Retry-After") != "1" || !strings.Contains(string(a.body), `"type":"rate_limited"`) {
		t.Errorf("%d %v %s", a.status, a.header, a.body)
	}
	a = call(t, s, "POST", SpeechPath, bearer, []byte(okBody))
	if a.status != 403 || !strings.Contains(string(a.body), "moderation") {
		t.Errorf("%d %s", a.status, a.body)
	}
}
