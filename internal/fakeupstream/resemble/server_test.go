package resemble

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
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
}

// call sends a request with the given headers ("" values are left out).
func call(t *testing.T, url, method string, headers map[string]string, body []byte) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
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
	return map[string]string{"Authorization": "Bearer " + Key, "Content-Type": "application/json"}
}

const okBody = `{"voice_uuid":"fb2d2858","data":"Hello world.","precision":"PCM_16","sample_rate":"16000"}`

type envelope struct {
	Success bool                `json:"success"`
	Message string              `json:"message"`
	Errors  map[string][]string `json:"errors"`
}

func errorOf(t *testing.T, a answer) envelope {
	t.Helper()
	var e envelope
	if err := json.Unmarshal(a.body, &e); err != nil || e.Success || e.Message == "" {
		t.Fatalf("%d %s is not Resemble's error envelope", a.status, a.body)
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
	}{
		{"no token", nil, map[string]string{"Content-Type": "application/json"}, okBody, 401, "Missing API token"},
		{"wrong token", nil, map[string]string{"Authorization": "Bearer nope", "Content-Type": "application/json"}, okBody, 401, "Invalid API token"},
		{"unknown field", nil, auth(), with(`"data"`, `"speed":2,"data"`), 400, "speed: is not a permitted parameter"},
		{"title on stream", []string{StreamPath}, auth(), with(`"data"`, `"title":"x","data"`), 400, "title"},
		{"no voice", nil, auth(), with(`"voice_uuid":"fb2d2858",`, ""), 400, "voice_uuid: can't be blank"},
		{"unknown voice", nil, auth(), with("fb2d2858", "00000000"), 404, "not found"},
		{"blank text", nil, auth(), with("Hello world.", " "), 400, "data: can't be blank"},
		{"synthesize text limit", []string{SynthesizePath}, auth(), with("Hello world.", strings.Repeat("a", MaxSynthesizeText+1)), 400, "3000"},
		{"stream text limit", []string{StreamPath}, auth(), with("Hello world.", strings.Repeat("a", MaxStreamText+1)), 400, "2000"},
		{"rate as a number", nil, auth(), with(`"16000"`, `16000`), 400, "Invalid JSON"},
		{"rate", nil, auth(), with(`"16000"`, `"24000"`), 400, "sample_rate must be"},
		{"default precision not rendered", nil, auth(), with(`"precision":"PCM_16",`, ""), 400, "PCM_32 is valid but this fake"},
		{"precision", nil, auth(), with("PCM_16", "PCM_8"), 400, "precision must be"},
		{"model", nil, auth(), with(`"data"`, `"model":"eagle","data"`), 400, "Unknown model"},
		{"output format", []string{SynthesizePath}, auth(), with(`"data"`, `"output_format":"ogg","data"`), 400, "wav or mp3"},
		{"not JSON", nil, auth(), "{", 400, "Invalid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			paths := tt.paths
			if paths == nil {
				paths = []string{SynthesizePath, StreamPath}
			}
			for _, p := range paths {
				a := call(t, s.URL+p, "POST", tt.headers, []byte(tt.body))
				e := errorOf(t, a)
				text := e.Message
				for f, msgs := range e.Errors {
					text += " " + f + ": " + strings.Join(msgs, ", ")
				}
				if a.status != tt.status || !strings.Contains(text, tt.msgHas) {
					t.Errorf("%s: %d %s; want %d with %q", p, a.status, a.body, tt.status, tt.msgHas)
				}
			}
		})
	}
	// The older token forms work too.
	for _, h := range []string{"Token token=" + Key, Key} {
		if a := call(t, s.URL+SynthesizePath, "POST", map[string]string{"Authorization": h, "Content-Type": "application/json"}, []byte(okBody)); a.status != 200 {
			t.Errorf("%q: %d", h, a.status)
		}
	}
}

type synthesized struct {
	Success         bool   `json:"success"`
	AudioContent    string `json:"audio_content"`
	AudioTimestamps struct {
		GraphChars []string    `json:"graph_chars"`
		GraphTimes [][]float64 `json:"graph_times"`
	} `json:"audio_timestamps"`
	Duration     float64 `json:"duration"`
	OutputFormat string  `json:"output_format"`
	SampleRate   int     `json:"sample_rate"`
}

func TestSynthesize(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	text := "Hello there, world."
	u := fakeupstream.Speak(text, 1)
	for _, tt := range []struct {
		extra, mediaType string
		rate             int
	}{
		{`"precision":"PCM_16","sample_rate":"44100"`, "audio/wav", 44100},
		{`"precision":"PCM_16","output_format":"wav","model":"chatterbox-turbo","use_hd":true`, "audio/wav", DefaultRate},
		{`"output_format":"mp3","sample_rate":"48000","title":"t","project_uuid":"p1"`, "audio/mpeg", 48000},
		{`"output_format":"mp3","sample_rate":"16000"`, "audio/mpeg", 16000},
	} {
		body := `{"voice_uuid":"5bb13f03","data":"` + text + `",` + tt.extra + `}`
		a := call(t, s.URL+SynthesizePath, "POST", auth(), []byte(body))
		var out synthesized
		if err := json.Unmarshal(a.body, &out); err != nil || a.status != 200 || !out.Success {
			t.Fatalf("%s: %d %s", tt.extra, a.status, a.body)
		}
		audio, err := base64.StdEncoding.DecodeString(out.AudioContent)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(audio, s.LastAnswer()) {
			t.Errorf("%s: LastAnswer is not the answer", tt.extra)
		}
		clip, err := sdktest.Decode(tt.mediaType, audio)
		if err != nil {
			t.Fatalf("%s: %v", tt.extra, err)
		}
		if clip.Format == "wav" && (clip.SampleRate != tt.rate || math.Abs(clip.Seconds()-u.Seconds) > 0.001) {
			t.Errorf("%s: %+v", tt.extra, clip)
		}
		ts := out.AudioTimestamps
		if len(ts.GraphChars) != len(text) || ts.GraphChars[5] != " " || ts.GraphTimes[6][0] != u.Chars[6].Start || ts.GraphTimes[6][1] != u.Chars[6].End {
			t.Errorf("%s: timestamps %+v", tt.extra, ts)
		}
		if out.SampleRate != tt.rate || math.Abs(out.Duration-u.Seconds) > 1e-9 {
			t.Errorf("%s: %s", tt.extra, a.body)
		}
	}
}

func TestStream(t *testing.T) {
	s := New(t, fakeupstream.Options{ChunkSize: 1000})
	body := `{"voice_uuid":"fb2d2858","data":"A stream in chunks.","precision":"PCM_16","sample_rate":"22050","apply_custom_pronunciations":false}`
	a := call(t, s.URL+StreamPath, "POST", auth(), []byte(body))
	if a.status != 200 || a.header.Get("Content-Type") != "audio/wav" {
		t.Fatalf("%d %s", a.status, a.body)
	}
	if binary.LittleEndian.Uint32(a.body[40:44]) != 0xFFFFFFFF {
		t.Error("a streamed WAV's data size must say unknown")
	}
	clip, err := sdktest.Decode("audio/wav", a.body)
	if err != nil || clip.SampleRate != 22050 || math.Abs(clip.Seconds()-fakeupstream.Speak("A stream in chunks.", 1).Seconds) > 0.001 {
		t.Errorf("%+v %v", clip, err)
	}
}

// wavSeconds renders a silent 16 kHz WAV recording of the given length.
func wavSeconds(secs float64) []byte {
	n := int(secs * 16000 * 2)
	return append(fakeupstream.WAVHeader(16000, n), make([]byte, n)...)
}

func recording(t *testing.T, s *Server, uuid string, fields map[string]string, file []byte) answer {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for k, v := range fields {
		_ = mw.WriteField(k, v)
	}
	if file != nil {
		fw, _ := mw.CreateFormFile("file", "rec.wav")
		_, _ = fw.Write(file)
	}
	_ = mw.Close()
	return call(t, s.URL+VoicePath(uuid, "/recordings"), "POST", map[string]string{"Authorization": "Bearer " + Key, "Content-Type": mw.FormDataContentType()}, b.Bytes())
}

func TestCloneFlow(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	a := call(t, s.URL+VoicesPath, "POST", auth(), []byte(`{"name":"Narrator","voice_type":"rapid","language":"en-GB"}`))
	var created struct {
		Item struct {
			UUID   string `json:"uuid"`
			Status string `json:"status"`
		} `json:"item"`
	}
	if err := json.Unmarshal(a.body, &created); err != nil || created.Item.UUID == "" || created.Item.Status != "initializing" {
		t.Fatalf("%d %s", a.status, a.body)
	}
	uuid := created.Item.UUID
	synth := strings.Replace(okBody, VoiceLucy, uuid, 1)
	if a := call(t, s.URL+SynthesizePath, "POST", auth(), []byte(synth)); a.status != 400 || !strings.Contains(errorOf(t, a).Message, "not ready") {
		t.Errorf("synthesis before the build: %d %s", a.status, a.body)
	}
	fields := map[string]string{"name": "r1", "text": "Hello there.", "emotion": "neutral", "is_active": "true"}
	for _, bad := range []struct {
		fields map[string]string
		file   []byte
	}{
		{map[string]string{"name": "r1", "emotion": "neutral", "is_active": "true"}, wavSeconds(2)},
		{fields, nil},
		{fields, []byte("not audio")},
		{fields, wavSeconds(0.5)},
		{map[string]string{"name": "r1", "text": "x", "emotion": "neutral", "is_active": "yes"}, wavSeconds(2)},
	} {
		if a := recording(t, s, uuid, bad.fields, bad.file); a.status != 400 {
			t.Errorf("%v: %d %s", bad.fields, a.status, a.body)
		}
	}
	for i := range MinRapidRecordings {
		if i == MinRapidRecordings-1 {
			// Too few recordings: no build.
			if a := call(t, s.URL+VoicePath(uuid, "/build"), "POST", auth(), nil); a.status != 400 || !strings.Contains(errorOf(t, a).Message, "at least 3") {
				t.Errorf("early build: %d %s", a.status, a.body)
			}
		}
		if a := recording(t, s, uuid, fields, wavSeconds(2)); a.status != 200 {
			t.Fatalf("recording %d: %d %s", i, a.status, a.body)
		}
	}
	if a := call(t, s.URL+VoicePath(uuid, "/build"), "POST", auth(), []byte(`{"fill":false}`)); a.status != 200 {
		t.Fatalf("build: %d %s", a.status, a.body)
	}
	if a := call(t, s.URL+SynthesizePath, "POST", auth(), []byte(synth)); a.status != 200 {
		t.Errorf("synthesis after the build: %d %s", a.status, a.body)
	}
	if a := call(t, s.URL+VoicePath(uuid, ""), "GET", auth(), nil); a.status != 200 || !strings.Contains(string(a.body), `"status":"finished"`) {
		t.Errorf("get: %d %s", a.status, a.body)
	}
	if a := call(t, s.URL+VoicePath(uuid, ""), "DELETE", auth(), nil); a.status != 200 || len(s.VoiceIDs()) != 3 {
		t.Errorf("delete: %d %s", a.status, a.body)
	}
	if a := call(t, s.URL+VoicesPath, "POST", auth(), []byte(`{"voice_type":"rapid"}`)); a.status != 400 {
		t.Errorf("nameless voice: %d", a.status)
	}
	if a := recording(t, s, "nobody", fields, wavSeconds(2)); a.status != 404 {
		t.Errorf("recording for an unknown voice: %d", a.status)
	}
}

func TestVoicePagesAndFaults(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	s.SetPageSize(2)
	var ids []string
	for page := 1; page <= 3; page++ {
		a := call(t, s.URL+VoicesPath+"?page="+string(rune('0'+page))+"&page_size=50", "GET", auth(), nil)
		var p struct {
			NumPages int `json:"num_pages"`
			Items    []struct {
				UUID            string `json:"uuid"`
				DefaultLanguage string `json:"default_language"`
			} `json:"items"`
		}
		if err := json.Unmarshal(a.body, &p); err != nil || p.NumPages != 2 {
			t.Fatalf("%d %s", a.status, a.body)
		}
		for _, v := range p.Items {
			ids = append(ids, v.UUID)
		}
	}
	if strings.Join(ids, ",") != VoiceLucy+","+VoiceAaron+","+VoiceMarie {
		t.Errorf("ids %v", ids)
	}
	if a := call(t, s.URL+VoicesPath, "GET", auth(), nil); a.status != 400 {
		t.Errorf("no page: %d", a.status)
	}
	s.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "2"})
	a := call(t, s.URL+StreamPath, "POST", auth(), []byte(okBody))
	if e := errorOf(t, a); a.status != 429 || a.header.Get("Retry-After") != "2" || !strings.Contains(e.Message, "Rate limit") {
		t.Errorf("%d %s", a.status, a.body)
	}
	if a := call(t, s.URL+"/nothing", "GET", auth(), nil); a.status != 404 {
		t.Errorf("unknown path: %d", a.status)
	}
}
