package minimax

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"io"
	"math"
	"mime/multipart"
	"net/http"
	"strconv"
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
func call(t *testing.T, s *Server, method, path string, headers map[string]string, body []byte) answer {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, bytes.NewReader(body))
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

var jsonHeaders = map[string]string{"Authorization": "Bearer " + Key, "Content-Type": "application/json"}

// statusOf decodes base_resp.status_code of an answer.
func statusOf(t *testing.T, a answer) (int, string) {
	t.Helper()
	var b struct {
		BaseResp *baseResp `json:"base_resp"`
	}
	if err := json.Unmarshal(a.body, &b); err != nil || b.BaseResp == nil {
		t.Fatalf("no base_resp in %d %s", a.status, a.body)
	}
	return b.BaseResp.StatusCode, b.BaseResp.StatusMsg
}

const okBody = `{"model":"speech-2.8-hd","text":"Hello world.","stream":false,"voice_setting":{"voice_id":"` + VoiceNarrator + `"},"audio_setting":{"sample_rate":16000,"format":"pcm","channel":1},"output_format":"hex"}`

func TestWireFormat(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	with := func(old, new string) string { return strings.Replace(okBody, old, new, 1) }
	tests := []struct {
		name    string
		path    string
		headers map[string]string
		body    string
		code    int
		msgHas  string
	}{
		{"no key", T2APath, map[string]string{"Content-Type": "application/json"}, okBody, CodeUnauthorized, "Authorization"},
		{"wrong key", T2APath, map[string]string{"Authorization": "Bearer nope", "Content-Type": "application/json"}, okBody, CodeUnauthorized, "login fail"},
		{"wrong group", T2APath + "?GroupId=7", jsonHeaders, okBody, CodeUnauthorized, "token not match group"},
		{"not JSON", T2APath, map[string]string{"Authorization": "Bearer " + Key, "Content-Type": "text/plain"}, okBody, CodeInvalidParams, "Content-Type"},
		{"unknown field", T2APath, jsonHeaders, with(`"text"`, `"voice":"x","text"`), CodeInvalidParams, "unknown field"},
		{"unknown model", T2APath, jsonHeaders, with("speech-2.8-hd", "speech-3"), CodeInvalidParams, "model"},
		{"no voice", T2APath, jsonHeaders, with(`"voice_id":"`+VoiceNarrator+`"`, `"speed":1`), CodeInvalidParams, "voice_id"},
		{"unknown voice", T2APath, jsonHeaders, with(VoiceNarrator, "nobody_at_all"), CodeInvalidParams, "not exist"},
		{"speed", T2APath, jsonHeaders, with(`"voice_id"`, `"speed":3,"voice_id"`), CodeInvalidParams, "speed"},
		{"pitch is an integer", T2APath, jsonHeaders, with(`"voice_id"`, `"pitch":1.5,"voice_id"`), CodeInvalidParams, "pitch"},
		{"sample rate", T2APath, jsonHeaders, with("16000", "48000"), CodeInvalidParams, "sample_rate"},
		{"mp3 bitrate MP3 lacks at the rate", T2APath, jsonHeaders, with(`"pcm"`, `"mp3","bitrate":256000`), CodeInvalidParams, "this fake"},
		{"opus", T2APath, jsonHeaders, with(`"pcm"`, `"ogg"`), CodeInvalidParams, "format must be"},
		{"url output", T2APath, jsonHeaders, with(`"hex"`, `"url"`), CodeInvalidParams, "this fake"},
		{"text too long", T2APath, jsonHeaders, with("Hello world.", strings.Repeat("a", MaxText+1)), CodeInvalidParams, "length"},
		{"voice list without type", VoicesPath, jsonHeaders, `{}`, CodeInvalidParams, "voice_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := call(t, s, "POST", tt.path, tt.headers, []byte(tt.body))
			code, msg := statusOf(t, a)
			if a.status != 200 || code != tt.code || !strings.Contains(msg, tt.msgHas) {
				t.Errorf("%d %s; want HTTP 200 with status_code %d and %q", a.status, a.body, tt.code, tt.msgHas)
			}
		})
	}
}

func TestWholeAnswer(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	text := "Hello world."
	for _, tt := range []struct {
		setting, mediaType string
		speed              float64
	}{
		{`{"sample_rate":16000,"format":"pcm"}`, "audio/pcm;rate=16000", 1},
		{`{"sample_rate":24000,"format":"wav"}`, "audio/wav", 1},
		{`{"format":"mp3","bitrate":64000}`, "audio/mpeg", 1},
		{`{"format":"mp3","sample_rate":44100,"bitrate":256000}`, "audio/mpeg", 1},
		{`{"format":"flac","sample_rate":22050}`, "audio/flac", 1},
		{`{"format":"pcm"}`, "audio/pcm;rate=32000", 2},
	} {
		body := `{"model":"speech-02-turbo","text":"` + text + `","voice_setting":{"voice_id":"` + VoiceWise + `","speed":` + jsonNum(tt.speed) + `,"vol":1,"pitch":0,"emotion":"happy"},"audio_setting":` + tt.setting + `,"language_boost":"English"}`
		a := call(t, s, "POST", T2APath+"?GroupId="+GroupID, jsonHeaders, []byte(body))
		var ans struct {
			Data struct {
				Audio  string `json:"audio"`
				Status int    `json:"status"`
			} `json:"data"`
			ExtraInfo map[string]any `json:"extra_info"`
			TraceID   string         `json:"trace_id"`
			BaseResp  baseResp       `json:"base_resp"`
		}
		if err := json.Unmarshal(a.body, &ans); err != nil || ans.BaseResp.StatusCode != 0 || ans.Data.Status != 2 || ans.TraceID == "" {
			t.Fatalf("%s: %d %.300s", tt.setting, a.status, a.body)
		}
		audio, err := hex.DecodeString(ans.Data.Audio)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(audio, s.LastAnswer()) {
			t.Errorf("%s: LastAnswer is not the answer", tt.setting)
		}
		clip, err := sdktest.Decode(tt.mediaType, audio)
		if err != nil {
			t.Fatal(err)
		}
		if want := fakeupstream.Speak(text, tt.speed).Seconds; clip.Format != "mp3" && math.Abs(clip.Seconds()-want) > 0.001 {
			t.Errorf("%s: %.3f s, want %.3f", tt.setting, clip.Seconds(), want)
		}
		if int(ans.ExtraInfo["audio_size"].(float64)) != len(audio) {
			t.Errorf("extra_info %v", ans.ExtraInfo)
		}
	}
}

func jsonNum(f float64) string { b, _ := json.Marshal(f); return string(b) }

// events reads the data of each event of a stream answer.
func events(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

func TestStream(t *testing.T) {
	s := New(t, fakeupstream.Options{ChunkSize: 999})
	text := "Streamed in several events."
	for _, exclude := range []bool{false, true} {
		body := `{"model":"speech-2.8-turbo","text":"` + text + `","stream":true,"stream_options":{"exclude_aggregated_audio":` + jsonBool(exclude) + `},"voice_setting":{"voice_id":"` + VoiceNarrator + `"},"audio_setting":{"sample_rate":8000,"format":"pcm"}}`
		a := call(t, s, "POST", T2APath, jsonHeaders, []byte(body))
		if a.status != 200 || a.header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("%d %s", a.status, a.body)
		}
		evs := events(t, a.body)
		var pcm []byte
		for i, ev := range evs {
			data := ev["data"].(map[string]any)
			chunk, err := hex.DecodeString(data["audio"].(string))
			if err != nil {
				t.Fatal(err)
			}
			last := i == len(evs)-1
			if status := int(data["status"].(float64)); status != map[bool]int{false: 1, true: 2}[last] {
				t.Errorf("event %d has status %d", i, status)
			}
			if last {
				if exclude != (len(chunk) == 0) || (!exclude && !bytes.Equal(chunk, pcm)) || ev["extra_info"] == nil {
					t.Errorf("exclude %v: last event has %d bytes of audio (%d sent before)", exclude, len(chunk), len(pcm))
				}
				continue
			}
			if len(chunk)%2 != 0 {
				t.Errorf("event %d holds half a sample", i)
			}
			pcm = append(pcm, chunk...)
		}
		if len(evs) < 4 {
			t.Errorf("%d events", len(evs))
		}
		if clip, err := sdktest.Decode("audio/pcm;rate=8000", pcm); err != nil || math.Abs(clip.Seconds()-fakeupstream.Speak(text, 1).Seconds) > 0.001 {
			t.Errorf("audio %+v %v", clip, err)
		}
	}
	// Errors of a stream request come as an event.
	for _, body := range []string{
		`{"model":"speech-2.8-hd","text":"x","stream":true,"voice_setting":{"voice_id":"nobody_at_all"}}`,
		`{"model":"speech-2.8-hd","text":"x","stream":true,"voice_setting":{"voice_id":"` + VoiceWise + `"},"audio_setting":{"format":"wav"}}`,
		`{"model":"speech-2.8-hd","text":"x","stream":true,"voice_setting":{"voice_id":"` + VoiceWise + `"},"output_format":"hex"}`,
	} {
		a := call(t, s, "POST", T2APath, jsonHeaders, []byte(body))
		evs := events(t, a.body)
		if len(evs) != 1 || int(evs[0]["base_resp"].(map[string]any)["status_code"].(float64)) != CodeInvalidParams {
			t.Errorf("error event %s", a.body)
		}
	}
}

func jsonBool(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func TestFaults(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	tests := []struct {
		fault      fakeupstream.Fault
		stream     bool
		httpStatus int
		code       int
	}{
		{fakeupstream.Fault{Status: 401}, false, 200, CodeUnauthorized},
		{fakeupstream.Fault{Status: 402}, false, 200, CodeNoBalance},
		{fakeupstream.Fault{Status: 429, RetryAfter: "2"}, false, 200, CodeRateLimit},
		{fakeupstream.Fault{Status: 429}, true, 200, CodeRateLimit},
		{fakeupstream.Fault{Status: 503}, false, 503, CodeUnknown},
		{fakeupstream.Fault{Status: 503}, true, 503, CodeUnknown},
		{fakeupstream.Fault{Code: "1039"}, false, 200, 1039},
	}
	for _, tt := range tests {
		s.FailNext(1, tt.fault)
		body := okBody
		if tt.stream {
			body = strings.Replace(strings.Replace(okBody, `"stream":false`, `"stream":true`, 1), `,"output_format":"hex"`, "", 1)
		}
		a := call(t, s, "POST", T2APath, jsonHeaders, []byte(body))
		var code int
		if a.header.Get("Content-Type") == "text/event-stream" {
			evs := events(t, a.body)
			code = int(evs[0]["base_resp"].(map[string]any)["status_code"].(float64))
		} else {
			code, _ = statusOf(t, a)
		}
		if a.status != tt.httpStatus || code != tt.code || a.header.Get("Retry-After") != tt.fault.RetryAfter {
			t.Errorf("%+v (stream %v): %d %v %s", tt.fault, tt.stream, a.status, a.header, a.body)
		}
	}
}

func TestVoicesAndCloning(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	voices := func(typ string) map[string][]voice {
		a := call(t, s, "POST", VoicesPath, jsonHeaders, []byte(`{"voice_type":"`+typ+`"}`))
		var out map[string][]voice
		_ = json.Unmarshal(a.body, &out)
		return out
	}
	if v := voices("system"); len(v["system_voice"]) != 3 || v["voice_cloning"] != nil {
		t.Fatalf("system voices %+v", v)
	}
	upload := func(purpose string, data []byte) answer {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		_ = mw.WriteField("purpose", purpose)
		w, _ := mw.CreateFormFile("file", "me.wav")
		_, _ = w.Write(data)
		_ = mw.Close()
		return call(t, s, "POST", UploadPath, map[string]string{"Authorization": "Bearer " + Key, "Content-Type": mw.FormDataContentType()}, buf.Bytes())
	}
	if code, _ := statusOf(t, upload("avatar", []byte{1})); code != CodeInvalidParams {
		t.Errorf("bad purpose: %d", code)
	}
	a := upload("voice_clone", []byte{1, 2, 3})
	var up struct {
		File file `json:"file"`
	}
	if err := json.Unmarshal(a.body, &up); err != nil || up.File.ID == 0 || up.File.Bytes != 3 || up.File.Purpose != "voice_clone" {
		t.Fatalf("upload %s", a.body)
	}
	clone := func(body string) int {
		code, _ := statusOf(t, call(t, s, "POST", ClonePath, jsonHeaders, []byte(body)))
		return code
	}
	id := strconv.FormatInt(up.File.ID, 10)
	for _, tt := range []struct {
		body string
		code int
	}{
		{`{"file_id":1,"voice_id":"my_voice_001"}`, CodeInvalidParams},
		{`{"file_id":` + id + `,"voice_id":"short"}`, CodeInvalidParams},
		{`{"file_id":` + id + `,"voice_id":"1_starts_with_digit"}`, CodeInvalidParams},
		{`{"file_id":` + id + `,"voice_id":"ends_with_dash-"}`, CodeInvalidParams},
		{`{"file_id":` + id + `,"voice_id":"my_voice_001","text":"hi"}`, CodeInvalidParams},
		{`{"file_id":` + id + `,"voice_id":"my_voice_001","need_noise_reduction":true,"accuracy":0.7}`, CodeOK},
		{`{"file_id":` + id + `,"voice_id":"my_voice_001"}`, CodeVoiceDuplicate},
	} {
		if got := clone(tt.body); got != tt.code {
			t.Errorf("%s: status_code %d, want %d", tt.body, got, tt.code)
		}
	}
	if v := voices("all"); len(v["voice_cloning"]) != 1 || v["voice_cloning"][0].VoiceID != "my_voice_001" || len(v["system_voice"]) != 3 {
		t.Errorf("all voices %+v", v)
	}
	body := strings.Replace(okBody, VoiceNarrator, "my_voice_001", 1)
	if code, _ := statusOf(t, call(t, s, "POST", T2APath, jsonHeaders, []byte(body))); code != CodeOK {
		t.Errorf("the cloned voice does not speak: %d", code)
	}
}
