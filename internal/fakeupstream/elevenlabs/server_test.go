package elevenlabs

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

type answer struct {
	status  int
	header  http.Header
	body    []byte
	chunked bool
}

func call(t *testing.T, s *Server, method, path, key, contentType string, body []byte) answer {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("xi-api-key", key)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
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
	return answer{status: resp.StatusCode, header: resp.Header, body: b, chunked: len(resp.TransferEncoding) > 0}
}

func tts(t *testing.T, s *Server, path, key, body string) answer {
	t.Helper()
	return call(t, s, "POST", path, key, "application/json", []byte(body))
}

// detailOf returns the status/code and message of an error body in either
// documented shape.
func detailOf(t *testing.T, a answer) (string, string) {
	t.Helper()
	var b struct {
		Detail json.RawMessage `json:"detail"`
	}
	if err := json.Unmarshal(a.body, &b); err != nil || len(b.Detail) == 0 {
		t.Fatalf("error body %s has no detail", a.body)
	}
	var obj struct{ Status, Message string }
	if json.Unmarshal(b.Detail, &obj) == nil {
		return obj.Status, obj.Message
	}
	var list []struct {
		Loc  []string
		Msg  string
		Type string
	}
	if err := json.Unmarshal(b.Detail, &list); err != nil || len(list) == 0 {
		t.Fatalf("detail %s is neither an object nor a list", b.Detail)
	}
	return list[0].Type, strings.Join(list[0].Loc, ".") + ": " + list[0].Msg
}

func TestWireFormat(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	path := TTSPath(VoiceRachel)
	ok := `{"text":"Hello.","model_id":"eleven_multilingual_v2"}`
	// breaks: the published document itself refuses the request (the
	// fake's judge records it); the other refusals are the fake's own,
	// from the written reference.
	tests := []struct {
		name, path, key, body string
		status                int
		code, msgHas          string
		breaks                bool
	}{
		{"no key", path, "", ok, 401, "needs_authorization", "xi-api-key", false},
		{"wrong key", path, "nope", ok, 401, "invalid_api_key", "", false},
		{"unknown field", path, Key, `{"text":"Hi","speed":2}`, 422, "value_error.extra", "body.speed", true},
		{"unknown voice setting", path, Key, `{"text":"Hi","voice_settings":{"pitch":1}}`, 422, "value_error.extra", "body.pitch", true},
		{"missing text", path, Key, `{"model_id":"eleven_multilingual_v2"}`, 422, "value_error.missing", "body.text", true},
		{"unknown model", path, Key, `{"text":"Hi","model_id":"eleven_v9"}`, 400, "model_not_found", "", false},
		{"text over the model limit", path, Key, `{"text":"` + strings.Repeat("a", 5001) + `","model_id":"eleven_v3"}`, 400, "max_character_limit_exceeded", "5000", false},
		{"unknown voice", TTSPath("nobody"), Key, ok, 404, "voice_not_found", "nobody", false},
		{"speed out of range", path, Key, `{"text":"Hi","voice_settings":{"speed":1.5}}`, 422, "value_error.number", "voice_settings.speed", false},
		{"bad output format", path + "?output_format=wav_11025", Key, ok, 422, "type_error.enum", "query.output_format", true},
		{"ulaw at a rate the enum lacks", path + "?output_format=ulaw_16000", Key, ok, 422, "type_error.enum", "query.output_format", true},
		{"wav on /stream", path + "/stream?output_format=wav_24000", Key, ok, 422, "type_error.enum", "query.output_format", true},
		{"bad latency level", path + "?optimize_streaming_latency=9", Key, ok, 422, "value_error.number", "", false},
		{"bad normalization", path, Key, `{"text":"Hi","apply_text_normalization":"maybe"}`, 422, "type_error.enum", "", true},
		{"seed above 2^32-1", path, Key, `{"text":"Hi","seed":4294967296}`, 422, "value_error.number", "body.seed", false},
		{"seed -1", path, Key, `{"text":"Hi","seed":-1}`, 422, "value_error.number", "body.seed", false},
		{"four locators", path, Key, `{"text":"Hi","pronunciation_dictionary_locators":[{"pronunciation_dictionary_id":"a"},{"pronunciation_dictionary_id":"b"},{"pronunciation_dictionary_id":"c"},{"pronunciation_dictionary_id":"d"}]}`, 422, "value_error.list.max_items", "pronunciation_dictionary_locators", false},
		{"four previous request ids", path, Key, `{"text":"Hi","previous_request_ids":["a","b","c","d"]}`, 422, "value_error.list.max_items", "previous_request_ids", false},
		{"language_code on multilingual v2", path, Key, `{"text":"Hi","model_id":"eleven_multilingual_v2","language_code":"fr"}`, 422, "value_error", "language_code", false},
		{"unknown route", "/v1/text-to-speak", Key, ok, 404, "", "Not Found", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if v := s.TakeViolations(); tt.breaks != (len(v) > 0) {
					t.Errorf("the API document judged it %q, want a violation: %v", v, tt.breaks)
				}
			}()
			a := tts(t, s, tt.path, tt.key, tt.body)
			if a.status != tt.status {
				t.Fatalf("status %d, want %d: %s", a.status, tt.status, a.body)
			}
			code, msg := "", ""
			if tt.name == "unknown route" {
				var b struct{ Detail string }
				_ = json.Unmarshal(a.body, &b)
				msg = b.Detail
			} else {
				code, msg = detailOf(t, a)
			}
			if code != tt.code || !strings.Contains(msg, tt.msgHas) {
				t.Errorf("got %q %q; want %q and a message with %q", code, msg, tt.code, tt.msgHas)
			}
		})
	}
	if a := call(t, s, "POST", path, Key, "text/plain", []byte(ok)); a.status != 422 {
		t.Errorf("a text/plain body: status %d", a.status)
	}
	if v := s.TakeViolations(); len(v) != 1 {
		t.Errorf("a text/plain body broke the document %d times: %q", len(v), v)
	}
}

func TestAudio(t *testing.T) {
	s := New(t, fakeupstream.Options{ChunkSize: 1000})
	text := "Hello there, world."
	for _, tt := range []struct {
		suffix, format, contentType, mediaType string
		speed                                  string
	}{
		{"", "", "audio/mpeg", "audio/mpeg", ""},
		{"", "?output_format=pcm_16000", "audio/pcm", "audio/pcm;rate=16000", ""},
		{"/stream", "?output_format=pcm_44100", "audio/pcm", "audio/pcm;rate=44100", ""},
		{"/stream", "?output_format=mp3_22050_32", "audio/mpeg", "audio/mpeg", ""},
		{"", "?output_format=mp3_44100_192", "audio/mpeg", "audio/mpeg", ""},
		{"", "?output_format=wav_8000", "audio/wav", "audio/wav", ""},
		{"/stream", "?output_format=opus_48000_96", "audio/ogg", "audio/ogg;codecs=opus", ""},
		{"/stream", "?output_format=ulaw_8000", "audio/basic", "audio/PCMU;rate=8000", ""},
		{"", "?output_format=alaw_8000", "audio/x-alaw-basic", "audio/PCMA;rate=8000", ""},
		{"", "?output_format=pcm_24000", "audio/pcm", "audio/pcm;rate=24000", `,"voice_settings":{"speed":1.2,"stability":0.5}`},
	} {
		a := tts(t, s, TTSPath(VoiceAdam)+tt.suffix+tt.format, Key, `{"text":"`+text+`"`+tt.speed+`}`)
		if a.status != 200 || a.header.Get("Content-Type") != tt.contentType || !a.chunked {
			t.Fatalf("%s%s: %d %v %s", tt.suffix, tt.format, a.status, a.header, a.body)
		}
		if !bytes.Equal(s.LastAnswer(), a.body) {
			t.Errorf("%s%s: LastAnswer holds %d bytes, the answer %d", tt.suffix, tt.format, len(s.LastAnswer()), len(a.body))
		}
		clip, err := sdktest.Decode(tt.mediaType, a.body)
		if err != nil {
			t.Fatalf("%s%s: %v", tt.suffix, tt.format, err)
		}
		if clip.Format == "pcm" {
			speed := 1.0
			if tt.speed != "" {
				speed = 1.2
			}
			if want := fakeupstream.Speak(text, speed).Seconds; clip.Seconds() < want-0.001 || clip.Seconds() > want+0.001 {
				t.Errorf("%s%s: %.3f s, want %.3f", tt.suffix, tt.format, clip.Seconds(), want)
			}
		}
	}
}

func TestWithTimestamps(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	text := "Two words."
	a := tts(t, s, TTSPath(VoiceRachel)+"/with-timestamps?output_format=pcm_22050", Key, `{"text":"`+text+`"}`)
	if a.status != 200 || a.header.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s", a.status, a.body)
	}
	var b struct {
		AudioBase64 string `json:"audio_base64"`
		Alignment   struct {
			Characters []string  `json:"characters"`
			Starts     []float64 `json:"character_start_times_seconds"`
			Ends       []float64 `json:"character_end_times_seconds"`
		} `json:"alignment"`
		Normalized *json.RawMessage `json:"normalized_alignment"`
	}
	if err := json.Unmarshal(a.body, &b); err != nil {
		t.Fatal(err)
	}
	audio, err := base64.StdEncoding.DecodeString(b.AudioBase64)
	if err != nil {
		t.Fatal(err)
	}
	clip, err := sdktest.Decode("audio/pcm;rate=22050", audio)
	if err != nil {
		t.Fatal(err)
	}
	al := b.Alignment
	if strings.Join(al.Characters, "") != text || len(al.Starts) != len(text) || len(al.Ends) != len(text) || b.Normalized == nil {
		t.Fatalf("alignment %+v", al)
	}
	for i := range al.Starts {
		if al.Starts[i] > al.Ends[i] || (i > 0 && al.Starts[i] < al.Ends[i-1]-0.0011) || al.Ends[i] > clip.Seconds() {
			t.Errorf("character %d %q: %.3f-%.3f in a %.3f s clip", i, al.Characters[i], al.Starts[i], al.Ends[i], clip.Seconds())
		}
	}
}

func form(t *testing.T, fields map[string]string, files map[string][]byte) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		_ = mw.WriteField(k, v)
	}
	for name, data := range files {
		w, _ := mw.CreateFormFile("files", name)
		_, _ = w.Write(data)
	}
	_ = mw.Close()
	return mw.FormDataContentType(), buf.Bytes()
}

func TestVoicesAndCloning(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	a := call(t, s, "GET", VoicesPath, Key, "", nil)
	var list struct {
		Voices []voice `json:"voices"`
	}
	if err := json.Unmarshal(a.body, &list); err != nil || len(list.Voices) != 3 || list.Voices[0].Labels["gender"] != "female" {
		t.Fatalf("voices %d %s", a.status, a.body)
	}
	tests := []struct {
		name   string
		fields map[string]string
		files  map[string][]byte
		status int
		code   string
		breaks bool // the document refuses it too
	}{
		{"no files", map[string]string{"name": "Me"}, nil, 422, "value_error.missing", true},
		{"no name", nil, map[string][]byte{"a.wav": {1}}, 422, "value_error.missing", true},
		{"unknown field", map[string]string{"name": "Me", "gender": "x"}, map[string][]byte{"a.wav": {1}}, 422, "value_error.extra", true},
		{"bad labels", map[string]string{"name": "Me", "labels": "accent=irish"}, map[string][]byte{"a.wav": {1}}, 422, "value_error.json", false},
		{"empty sample", map[string]string{"name": "Me"}, map[string][]byte{"a.wav": {}}, 400, "invalid_sample", false},
		{"ok", map[string]string{"name": "Me", "description": "d", "labels": `{"accent":"irish"}`, "remove_background_noise": "true"}, map[string][]byte{"a.wav": {1}, "b.mp3": {2}}, 200, "", false},
	}
	for _, tt := range tests {
		ct, body := form(t, tt.fields, tt.files)
		a := call(t, s, "POST", ClonePath, Key, ct, body)
		if v := s.TakeViolations(); tt.breaks != (len(v) > 0) {
			t.Errorf("%s: the API document judged it %q, want a violation: %v", tt.name, v, tt.breaks)
		}
		if a.status != tt.status {
			t.Fatalf("%s: status %d: %s", tt.name, a.status, a.body)
		}
		if tt.status != 200 {
			if code, _ := detailOf(t, a); code != tt.code {
				t.Errorf("%s: code %q, want %q", tt.name, code, tt.code)
			}
			continue
		}
		var out struct {
			VoiceID string `json:"voice_id"`
		}
		_ = json.Unmarshal(a.body, &out)
		if out.VoiceID == "" {
			t.Fatalf("no voice_id in %s", a.body)
		}
		if a := tts(t, s, TTSPath(out.VoiceID), Key, `{"text":"Hi"}`); a.status != 200 {
			t.Errorf("the cloned voice does not speak: %d %s", a.status, a.body)
		}
	}
	if n := len(s.VoiceIDs()); n != 4 {
		t.Errorf("%d voices after one clone", n)
	}
}

// TestMultiStreamInputRefusesASixthContext: the documented cap of five
// contexts per multi-context socket is enforced, as ElevenLabs enforces it.
func TestMultiStreamInputRefusesASixthContext(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	u := "ws" + strings.TrimPrefix(s.URL, "http") + MultiStreamInputPath(VoiceRachel) + "?model_id=eleven_flash_v2_5&output_format=pcm_24000"
	conn, _, err := websocket.DefaultDialer.Dial(u, http.Header{"xi-api-key": {Key}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for i := range MaxContextsPerSocket + 1 {
		if err := conn.WriteJSON(map[string]any{"text": " ", "context_id": fmt.Sprint("c", i)}); err != nil {
			t.Fatal(err)
		}
	}
	var m struct{ Error, Message string }
	if err := conn.ReadJSON(&m); err != nil || m.Error != "max_active_conversations" {
		t.Fatalf("after six contexts: %+v, %v", m, err)
	}
	if _, _, refused := s.MultiContexts(); refused != 1 {
		t.Errorf("%d refused", refused)
	}
}
