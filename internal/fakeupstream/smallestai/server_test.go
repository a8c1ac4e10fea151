package smallestai

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
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

func call(t *testing.T, s *Server, method, path string, header map[string]string, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
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

func auth(extra ...string) map[string]string {
	h := map[string]string{"Authorization": "Bearer " + Key, "Accept": "audio/wav"}
	for i := 0; i+1 < len(extra); i += 2 {
		h[extra[i]] = extra[i+1]
	}
	return h
}

func TestWireFormat(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	ok := `{"text":"Hello world.","voice_id":"magnus","model":"lightning_v3.1","sample_rate":24000,"output_format":"pcm"}`
	tests := []struct {
		name, body string
		header     map[string]string
		status     int
		errType    string
		msgHas     string
		breaks     bool // the published API document refuses it too
	}{
		{"no key", ok, map[string]string{"Accept": "audio/wav"}, 401, "Unauthorized", "missing or invalid", true},
		{"wrong key", ok, map[string]string{"Authorization": "Bearer sk_wrong"}, 401, "Unauthorized", "", true},
		{"unknown field", `{"text":"x","voice_id":"magnus","temperature":1}`, auth(), 400, "InvalidRequest", "temperature", true},
		{"no text", `{"voice_id":"magnus"}`, auth(), 400, "InvalidRequest", "'text'", true},
		{"no voice", `{"text":"x"}`, auth(), 400, "InvalidRequest", "'voice_id'", true},
		{"unknown voice", `{"text":"x","voice_id":"nobody"}`, auth(), 400, "InvalidRequest", "nobody", false},
		{"bad model", `{"text":"x","voice_id":"magnus","model":"lightning-large"}`, auth(), 400, "InvalidRequest", "lightning-large", true},
		{"bad rate", `{"text":"x","voice_id":"magnus","sample_rate":22050}`, auth(), 400, "InvalidRequest", "22050", false},
		{"bad speed", `{"text":"x","voice_id":"magnus","speed":3}`, auth(), 400, "InvalidRequest", "speed", true},
		{"bad format", `{"text":"x","voice_id":"magnus","output_format":"opus"}`, auth(), 400, "InvalidRequest", "opus", true},
		{"bad language", `{"text":"x","voice_id":"magnus","language":"xx"}`, auth(), 400, "InvalidRequest", "xx", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if v := s.TakeViolations(); tt.breaks != (len(v) > 0) {
					t.Errorf("the API document judged it %q, want a violation: %v", v, tt.breaks)
				}
			}()
			a := call(t, s, "POST", TTSPath, tt.header, tt.body)
			if a.status != tt.status {
				t.Fatalf("status %d, want %d: %s", a.status, tt.status, a.body)
			}
			var e struct{ Error, Message string }
			if err := json.Unmarshal(a.body, &e); err != nil {
				t.Fatalf("error body %s: %v", a.body, err)
			}
			if e.Error != tt.errType || !strings.Contains(e.Message, tt.msgHas) {
				t.Errorf("error %+v, want %s containing %q", e, tt.errType, tt.msgHas)
			}
		})
	}
	t.Run("clips", func(t *testing.T) {
		for format, mt := range map[string]string{"pcm": "audio/pcm;rate=24000", "wav": "audio/wav", "mp3": "audio/mpeg"} {
			a := call(t, s, "POST", TTSPath, auth(), strings.Replace(ok, `"pcm"`, `"`+format+`"`, 1))
			if a.status != 200 || a.header.Get("Content-Type") != mt {
				t.Fatalf("%s: %d %s", format, a.status, a.header.Get("Content-Type"))
			}
			clip, err := sdktest.Decode(mt, a.body)
			if err != nil {
				t.Errorf("%s: %v", format, err)
			}
			if clip.SampleRate != 24000 || !bytes.Equal(a.body, s.LastAnswer()) {
				t.Errorf("%s: %d Hz; LastAnswer is the answer: %v", format, clip.SampleRate, bytes.Equal(a.body, s.LastAnswer()))
			}
		}
	})
	t.Run("default rate", func(t *testing.T) {
		a := call(t, s, "POST", TTSPath, auth(), `{"text":"Hi there.","voice_id":"emily"}`)
		if a.status != 200 || a.header.Get("Content-Type") != "audio/pcm;rate=44100" {
			t.Errorf("%d %s", a.status, a.header.Get("Content-Type"))
		}
	})
	t.Run("no Accept, no audio", func(t *testing.T) {
		a := call(t, s, "POST", TTSPath, map[string]string{"Authorization": "Bearer " + Key}, ok)
		if a.status != 200 || len(a.body) != 0 {
			t.Errorf("%d with %d bytes", a.status, len(a.body))
		}
		if v := s.TakeViolations(); len(v) != 1 {
			t.Errorf("the document (Accept is required) judged %q", v)
		}
	})
	t.Run("fault", func(t *testing.T) {
		s.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "2"})
		a := call(t, s, "POST", TTSPath, auth(), ok)
		if a.status != 429 || a.header.Get("Retry-After") != "2" || !bytes.Contains(a.body, []byte("TooManyRequests")) {
			t.Errorf("%d %v %s", a.status, a.header, a.body)
		}
	})
}

func TestLive(t *testing.T) {
	s := New(t, fakeupstream.Options{ChunkSize: 1000})
	for _, format := range []string{"pcm", "mp3"} {
		a := call(t, s, "POST", LivePath, auth(), `{"text":"Hello streaming world.","voice_id":"magnus","sample_rate":16000,"output_format":"`+format+`"}`)
		if a.status != 200 || a.header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("%d %s", a.status, a.body)
		}
		var audio []byte
		events, done := 0, false
		sc := bufio.NewScanner(bytes.NewReader(a.body))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var ev struct {
				Audio  string `json:"audio"`
				Done   bool   `json:"done"`
				Status string `json:"status"`
			}
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				t.Fatal(err)
			}
			if done {
				t.Fatal("an event after the last one")
			}
			if ev.Done {
				done = ev.Status == "200"
				continue
			}
			if ev.Status != "206" {
				t.Errorf("chunk status %q", ev.Status)
			}
			b, err := base64.StdEncoding.DecodeString(ev.Audio)
			if err != nil {
				t.Fatal(err)
			}
			audio = append(audio, b...)
			events++
		}
		if !done || events < 2 {
			t.Fatalf("%s: %d events, done %v", format, events, done)
		}
		mt := map[string]string{"pcm": "audio/pcm;rate=16000", "mp3": "audio/mpeg"}[format]
		if _, err := sdktest.Decode(mt, audio); err != nil {
			t.Errorf("%s: %v", format, err)
		}
	}
}

func TestVoicesAndCloning(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	a := call(t, s, "GET", VoicesPath, auth(), "")
	var list struct {
		Voices []struct {
			VoiceID string `json:"voiceId"`
		} `json:"voices"`
	}
	if err := json.Unmarshal(a.body, &list); err != nil || len(list.Voices) != 3 || list.Voices[0].VoiceID != VoiceMagnus {
		t.Fatalf("voices %s: %v", a.body, err)
	}

	form := func(fields map[string]string, ctype string, data []byte) (string, string) {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		for k, v := range fields {
			_ = mw.WriteField(k, v)
		}
		if data != nil {
			h := make(map[string][]string)
			h["Content-Disposition"] = []string{`form-data; name="file"; filename="a.wav"`}
			h["Content-Type"] = []string{ctype}
			p, _ := mw.CreatePart(h)
			_, _ = p.Write(data)
		}
		_ = mw.Close()
		return b.String(), mw.FormDataContentType()
	}
	clone := func(fields map[string]string, ctype string, data []byte) answer {
		body, ct := form(fields, ctype, data)
		return call(t, s, "POST", ClonePath, auth("Content-Type", ct), body)
	}
	for name, a := range map[string]answer{
		"no file":   clone(map[string]string{"displayName": "x"}, "", nil),
		"bad type":  clone(map[string]string{"displayName": "x"}, "text/plain", []byte("x")),
		"no name":   clone(nil, "audio/wav", []byte("RIFF")),
		"v2":        clone(map[string]string{"displayName": "x", "model": "lightning-v2"}, "audio/wav", []byte("RIFF")),
		"bad field": clone(map[string]string{"displayName": "x", "mode": "fast"}, "audio/wav", []byte("RIFF")),
	} {
		if a.status != 400 || !bytes.Contains(a.body, []byte(`"error"`)) {
			t.Errorf("%s: %d %s", name, a.status, a.body)
		}
	}
	// The document refuses all but the clip's content type, which it
	// does not describe: a missing file or name, model lightning-v2, an
	// unknown field.
	if v := s.TakeViolations(); len(v) != 4 {
		t.Errorf("the document judged the bad clones %q", v)
	}
	a = clone(map[string]string{"displayName": "Mine", "language": "en", "model": "lightning-v3.1-pro"}, "audio/wav", []byte("RIFF...."))
	var made struct {
		Data struct {
			VoiceID string `json:"voiceId"`
			Status  string `json:"status"`
		} `json:"data"`
	}
	if err := json.Unmarshal(a.body, &made); err != nil || a.status != 200 || !strings.HasPrefix(made.Data.VoiceID, "voice_") || made.Data.Status != "completed" {
		t.Fatalf("clone: %d %s", a.status, a.body)
	}
	a = call(t, s, "GET", ClonePath, auth(), "")
	if !bytes.Contains(a.body, []byte(made.Data.VoiceID)) {
		t.Errorf("clone list %s", a.body)
	}
	a = call(t, s, "POST", TTSPath, auth(), `{"text":"Hi.","voice_id":"`+made.Data.VoiceID+`"}`)
	if a.status != 200 {
		t.Errorf("speech with the clone: %d %s", a.status, a.body)
	}
}
