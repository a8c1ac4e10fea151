package fishaudio

import (
	"bufio"
	"bytes"
	"encoding/base64"
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

func headers(model string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + Key, "Content-Type": "application/json", "model": model}
}

const okBody = `{"text":"Hello world.","reference_id":"` + VoiceNarrator + `","format":"pcm","sample_rate":24000}`

func TestWireFormat(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	with := func(old, new string) string { return strings.Replace(okBody, old, new, 1) }
	tests := []struct {
		name    string
		headers map[string]string
		body    string
		status  int
		msgHas  string
		breaks  bool // the published API document refuses it too
	}{
		{"no key", map[string]string{"Content-Type": "application/json"}, okBody, 401, `"message":"Invalid Token"`, true},
		{"wrong key", map[string]string{"Authorization": "Bearer nope", "Content-Type": "application/json"}, okBody, 401, `"status":401`, false},
		{"form body", map[string]string{"Authorization": "Bearer " + Key, "Content-Type": "application/x-www-form-urlencoded"}, okBody, 415, "application/json", true},
		{"msgpack", map[string]string{"Authorization": "Bearer " + Key, "Content-Type": "application/msgpack"}, okBody, 400, "this fake", false},
		{"unknown field", headers("s1"), with(`"text"`, `"voice":"x","text"`), 422, `"loc":["voice"]`, true},
		{"no text", headers("s1"), `{"format":"mp3"}`, 422, `"loc":["text"]`, true},
		{"empty text", headers("s1"), with("Hello world.", " "), 400, "empty", false},
		{"speed range", headers("s1"), with(`"format"`, `"prosody":{"speed":2.5},"format"`), 422, `"loc":["prosody","speed"]`, false},
		{"chunk length", headers("s1"), with(`"format"`, `"chunk_length":50,"format"`), 422, "chunk_length", true},
		{"latency", headers("s1"), with(`"format"`, `"latency":"fast","format"`), 422, "latency", true},
		{"pcm rate", headers("s1"), with("24000", "22050"), 422, "sample_rate", false},
		{"mp3 rate", headers("s1"), with(`"pcm","sample_rate":24000`, `"mp3","sample_rate":24000`), 422, "sample_rate", false},
		{"mp3 bitrate on pcm", headers("s1"), with(`"format"`, `"mp3_bitrate":128,"format"`), 422, "mp3_bitrate", false},
		{"opus rate", headers("s1"), with(`"pcm","sample_rate":24000`, `"opus","sample_rate":24000`), 422, "sample_rate", false},
		{"opus bitrate", headers("s1"), with(`"pcm","sample_rate":24000`, `"opus","opus_bitrate":128000`), 422, "opus_bitrate", true},
		{"opus bitrate on mp3", headers("s1"), with(`"pcm","sample_rate":24000`, `"mp3","opus_bitrate":32000`), 422, "opus_bitrate", false},
		{"inline references", headers("s1"), with(`"format"`, `"references":[{"audio":"","text":"x"}],"format"`), 422, "msgpack", false},
		{"unknown voice", headers("s1"), with(VoiceNarrator, "00000000000000000000000000000000"), 400, "not found", false},
		{"several voices on s1", headers("s1"), with(`"`+VoiceNarrator+`"`, `["`+VoiceNarrator+`","`+VoiceAnchor+`"]`), 422, "S2 family", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if v := s.TakeViolations(); tt.breaks != (len(v) > 0) {
					t.Errorf("the API document judged it %q, want a violation: %v", v, tt.breaks)
				}
			}()
			a := call(t, s, "POST", TTSPath, tt.headers, []byte(tt.body))
			if a.status != tt.status || !strings.Contains(string(a.body), tt.msgHas) {
				t.Errorf("%d %s; want %d with %q", a.status, a.body, tt.status, tt.msgHas)
			}
			if a.header.Get("Content-Type") != "application/json" {
				t.Errorf("error Content-Type %q", a.header.Get("Content-Type"))
			}
		})
	}
	// Several voices are fine on the S2 family; an unknown model header
	// falls back to s2.1-pro as documented.
	for _, model := range []string{"s2-pro", "no-such-model", ""} {
		a := call(t, s, "POST", TTSPath, headers(model), []byte(strings.Replace(okBody, `"`+VoiceNarrator+`"`, `["`+VoiceNarrator+`","`+VoiceAnchor+`"]`, 1)))
		// The document's model header is an enum, though its prose says
		// an unknown model falls back.
		if v := s.TakeViolations(); (len(v) > 0) != (model == "no-such-model") {
			t.Errorf("model %q: the document judged %q", model, v)
		}
		if a.status != 200 {
			t.Errorf("model %q: %d %s", model, a.status, a.body)
		}
	}
}

func TestTTS(t *testing.T) {
	s := New(t, fakeupstream.Options{ChunkSize: 1000})
	text := "Hello world."
	for _, tt := range []struct {
		format, extra, contentType, mediaType string
		speed                                 float64
	}{
		{`"pcm","sample_rate":16000`, ``, "audio/pcm", "audio/pcm;rate=16000", 1},
		{`"wav"`, `,"prosody":{"speed":2,"volume":-2}`, "audio/wav", "audio/wav", 2},
		{`"mp3","mp3_bitrate":64`, ``, "audio/mpeg", "audio/mpeg", 1},
		{`"mp3","sample_rate":32000,"mp3_bitrate":192`, ``, "audio/mpeg", "audio/mpeg", 1},
		{`"opus"`, ``, "audio/ogg", "audio/ogg;codecs=opus", 1},
		{`"opus","opus_bitrate":-1000`, ``, "audio/ogg", "audio/ogg;codecs=opus", 1},
		{`"opus","sample_rate":48000,"opus_bitrate":64000`, ``, "audio/ogg", "audio/ogg;codecs=opus", 1},
	} {
		body := `{"text":"` + text + `","reference_id":"` + VoiceAnchor + `","format":` + tt.format + tt.extra + `,"latency":"balanced","temperature":0.9}`
		a := call(t, s, "POST", TTSPath, headers("s2.1-pro"), []byte(body))
		if a.status != 200 || a.header.Get("Content-Type") != tt.contentType {
			t.Fatalf("%s: %d %s", tt.format, a.status, a.body)
		}
		if !bytes.Equal(a.body, s.LastAnswer()) {
			t.Errorf("%s: LastAnswer is not the answer", tt.format)
		}
		clip, err := sdktest.Decode(tt.mediaType, a.body)
		if err != nil {
			t.Fatal(err)
		}
		if want := fakeupstream.Speak(text, tt.speed).Seconds; (clip.Format == "pcm" || clip.Format == "wav") && math.Abs(clip.Seconds()-want) > 0.001 {
			t.Errorf("%s: %.3f s, want %.3f", tt.format, clip.Seconds(), want)
		}
		if clip.Format == "wav" && clip.SampleRate != 44100 {
			t.Errorf("wav defaults to %d Hz, want 44100", clip.SampleRate)
		}
	}
}

// event is the data of one /v1/tts/stream/with-timestamp event.
type event struct {
	AudioBase64 string     `json:"audio_base64"`
	Content     string     `json:"content"`
	Alignment   *alignment `json:"alignment"`
	ChunkSeq    int        `json:"chunk_seq"`
	Offset      float64    `json:"chunk_audio_offset_sec"`
}

func TestTimestamps(t *testing.T) {
	s := New(t, fakeupstream.Options{ChunkSize: 2000})
	text := "The first chunk ends about here, doesn't it? Then a second chunk follows, " +
		"and a third one closes the long text so that the offsets of every chunk matter to the timeline " +
		"of the whole clip, which is what a caller lines captions up against."
	body, _ := json.Marshal(map[string]any{"text": text, "reference_id": VoiceNarrator, "format": "pcm", "sample_rate": 16000, "chunk_length": 100})
	a := call(t, s, "POST", TimestampsPath, headers("s2-pro"), body)
	if a.status != 200 || a.header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", a.status, a.body)
	}
	var (
		pcm    []byte
		events []event
		latest = map[int]event{}
	)
	sc := bufio.NewScanner(bytes.NewReader(a.body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev event
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatal(err)
		}
		b, err := base64.StdEncoding.DecodeString(ev.AudioBase64)
		if err != nil || len(b)%2 != 0 {
			t.Fatalf("event audio %q: %v", ev.AudioBase64, err)
		}
		pcm = append(pcm, b...)
		events = append(events, ev)
		if ev.Alignment != nil {
			latest[ev.ChunkSeq] = ev
		}
	}
	u := fakeupstream.Speak(text, 1)
	if clip, err := sdktest.Decode("audio/pcm;rate=16000", pcm); err != nil || math.Abs(clip.Seconds()-u.Seconds) > 0.001 {
		t.Errorf("audio %+v %v, want %.3f s", clip, err, u.Seconds)
	}
	if len(latest) < 3 {
		t.Fatalf("%d text chunks, want at least 3 for chunk_length 100", len(latest))
	}
	if events[0].Alignment != nil {
		t.Error("the first event has an alignment before any word was heard")
	}
	var words []string
	var starts []float64
	for seq := range len(latest) {
		ev := latest[seq]
		if ev.Content == "" || (seq > 0 && ev.Offset == 0) {
			t.Errorf("chunk %d: %+v", seq, ev)
		}
		for _, g := range ev.Alignment.Segments {
			words, starts = append(words, g.Text), append(starts, g.Start+ev.Offset)
		}
	}
	if len(words) != len(u.Words) || words[6] != "doesn't" || words[5] != "here" {
		t.Fatalf("words %q", words)
	}
	for i, w := range u.Words {
		if math.Abs(starts[i]-w.Start) > 1e-9 {
			t.Errorf("word %d starts at %.4f, want %.4f", i, starts[i], w.Start)
		}
	}
}

func TestModelsAndCloning(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	h := map[string]string{"Authorization": "Bearer " + Key}
	var page struct {
		Total   int     `json:"total"`
		Items   []model `json:"items"`
		HasMore bool    `json:"has_more"`
	}
	list := func(query string) {
		t.Helper()
		a := call(t, s, "GET", ModelPath+query, h, nil)
		page.Items = nil
		if err := json.Unmarshal(a.body, &page); err != nil || a.status != 200 {
			t.Fatalf("GET %s: %d %s", query, a.status, a.body)
		}
	}
	list("?page_size=2")
	if page.Total != 3 || len(page.Items) != 2 || !page.HasMore || page.Items[0].ID != VoiceNarrator {
		t.Fatalf("page 1: %+v", page)
	}
	list("?page_size=2&page_number=2")
	if len(page.Items) != 1 || page.HasMore {
		t.Fatalf("page 2: %+v", page)
	}
	list("?language=zh&tag=female")
	if len(page.Items) != 1 || page.Items[0].ID != VoiceMandarin {
		t.Fatalf("filtered: %+v", page)
	}
	if a := call(t, s, "GET", ModelPath+"?page_size=101", h, nil); a.status != 422 {
		t.Errorf("page_size 101: %d", a.status)
	}
	if v := s.TakeViolations(); len(v) != 1 {
		t.Errorf("page_size 101: the document judged %q", v)
	}
	create := func(fields map[string][]string, files int) answer {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		for k, vs := range fields {
			for _, v := range vs {
				_ = mw.WriteField(k, v)
			}
		}
		for range files {
			w, _ := mw.CreateFormFile("voices", "me.wav")
			_, _ = w.Write([]byte{1, 2})
		}
		_ = mw.Close()
		return call(t, s, "POST", ModelPath, map[string]string{"Authorization": "Bearer " + Key, "Content-Type": mw.FormDataContentType()}, buf.Bytes())
	}
	ok := map[string][]string{"type": {"tts"}, "train_mode": {"fast"}, "title": {"Me"}, "visibility": {"private"}}
	withField := func(k string, v ...string) map[string][]string {
		m := map[string][]string{}
		for kk, vv := range ok {
			m[kk] = vv
		}
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	for _, tt := range []struct {
		name   string
		fields map[string][]string
		files  int
		status int
	}{
		{"no voices", ok, 0, 422},
		{"no title", withField("title"), 1, 422},
		{"full training", withField("train_mode", "full"), 1, 422},
		{"public without a cover", withField("visibility"), 1, 400},
		{"unknown field", withField("language", "en"), 1, 422},
		{"more texts than voices", withField("texts", "a", "b"), 1, 422},
		{"ok", withField("texts", "one", "two"), 2, 201},
	} {
		a := create(tt.fields, tt.files)
		// Every 422 but the texts' count breaks the document too.
		if v := s.TakeViolations(); (len(v) > 0) != (tt.status == 422 && tt.name != "more texts than voices") {
			t.Errorf("%s: the document judged %q", tt.name, v)
		}
		if a.status != tt.status {
			t.Fatalf("%s: %d %s", tt.name, a.status, a.body)
		}
		if tt.status != 201 {
			continue
		}
		var m model
		if err := json.Unmarshal(a.body, &m); err != nil || m.ID == "" || m.State != "trained" || m.Visibility != "private" || m.Title != "Me" {
			t.Fatalf("created %s", a.body)
		}
		list("?self=true")
		if len(page.Items) != 1 || page.Items[0].ID != m.ID {
			t.Errorf("own models %+v", page)
		}
		list("")
		if page.Total != 3 {
			t.Errorf("a private model is in the public list: %+v", page)
		}
		body := strings.Replace(okBody, VoiceNarrator, m.ID, 1)
		if a := call(t, s, "POST", TTSPath, headers("s1"), []byte(body)); a.status != 200 {
			t.Errorf("the new voice does not speak: %d %s", a.status, a.body)
		}
	}
}

func TestInjectedFaults(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	s.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "2"})
	a := call(t, s, "POST", TTSPath, headers("s1"), []byte(okBody))
	var e struct {
		Status  int    `json:"status"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(a.body, &e); err != nil || a.status != 429 || e.Status != 429 || e.Message == "" || a.header.Get("Retry-After") != "2" {
		t.Errorf("%d %v %s", a.status, a.header, a.body)
	}
	if a := call(t, s, "POST", TTSPath, headers("s1"), []byte(okBody)); a.status != 200 {
		t.Errorf("after the fault: %d", a.status)
	}
}
