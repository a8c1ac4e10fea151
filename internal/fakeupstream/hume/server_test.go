package hume

import (
	"bufio"
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

func call(t *testing.T, s *Server, method, target string, headers map[string]string, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+target, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
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

var authed = map[string]string{"X-Hume-Api-Key": Key, "Content-Type": "application/json"}

const okBody = `{"utterances": [{"text": "Hello world.", "voice": {"name": "Ava Song", "provider": "HUME_AI"}}], "format": {"type": "pcm"}, "version": "2"}`

func TestWireFormat(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	with := func(old, new string) string { return strings.Replace(okBody, old, new, 1) }
	tests := []struct {
		name    string
		headers map[string]string
		body    string
		status  int
		has     string
	}{
		{"ok", authed, okBody, 200, ""},
		{"by id", authed, with(`"name": "Ava Song"`, `"id": "`+VoiceAva+`"`), 200, ""},
		{"own voice", authed, with(`"name": "Ava Song", "provider": "HUME_AI"`, `"name": "David Hume"`), 200, ""},
		{"no key", map[string]string{"Content-Type": "application/json"}, okBody, 401, "oauth.v2.FailedToResolveAPIKey"},
		{"wrong key", map[string]string{"X-Hume-Api-Key": "nope", "Content-Type": "application/json"}, okBody, 401, "oauth.v2.InvalidApiKey"},
		{"library voice without its provider", authed, with(`, "provider": "HUME_AI"`, ""), 400, "No voice found"},
		{"unknown voice", authed, with("Ava Song", "Nobody"), 400, "voice_not_found"},
		{"voice of Octave 1 on 2", authed, with("Ava Song", "Vince Douglas"), 400, "not compatible"},
		{"version 2 without a voice", authed, with(`, "voice": {"name": "Ava Song", "provider": "HUME_AI"}`, ""), 400, "voice_required"},
		{"unknown field", authed, with(`"version"`, `"sample_rate": 24000, "version"`), 422, "extra_forbidden"},
		{"unknown utterance field", authed, with(`"text"`, `"pitch": 2, "text"`), 422, "extra_forbidden"},
		{"bad format", authed, with(`"pcm"`, `"flac"`), 422, "union_tag_invalid"},
		{"bad version", authed, with(`"2"`, `"3"`), 422, "version"},
		{"speed range", authed, with(`"text"`, `"speed": 4, "text"`), 422, "speed"},
		{"timestamps on Octave 1", authed, with(`"version": "2"`, `"version": "1", "include_timestamp_types": ["word"]`), 400, "only supported for Octave 2"},
		{"too long", authed, with("Hello world.", strings.Repeat("a", MaxChars+1)), 422, "string_too_long"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := call(t, s, http.MethodPost, FilePath, tt.headers, tt.body)
			if a.status != tt.status || !strings.Contains(string(a.body), tt.has) {
				t.Errorf("%d %.300s; want %d with %q", a.status, a.body, tt.status, tt.has)
			}
		})
	}
}

func TestFileFormats(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	text := "Hello world."
	for _, tt := range []struct{ format, contentType, mediaType string }{
		{"pcm", "audio/pcm", "audio/pcm;rate=48000"},
		{"wav", "audio/wav", "audio/wav"},
		{"mp3", "audio/mpeg", "audio/mpeg"},
	} {
		for _, path := range []string{FilePath, StreamFilePath} {
			body := strings.Replace(okBody, `"pcm"`, `"`+tt.format+`"`, 1)
			body = strings.Replace(body, `"text"`, `"speed": 1.5, "trailing_silence": 0.5, "text"`, 1)
			a := call(t, s, http.MethodPost, path, authed, body)
			if a.status != 200 || a.header.Get("Content-Type") != tt.contentType {
				t.Fatalf("%s %s: %d %s", path, tt.format, a.status, a.body)
			}
			clip, err := sdktest.Decode(tt.mediaType, a.body)
			if err != nil {
				t.Fatal(err)
			}
			if want := fakeupstream.Speak(text, 1.5).Seconds + 0.5; tt.format != "mp3" && math.Abs(clip.Seconds()-want) > 0.001 {
				t.Errorf("%s %s: %.3f s, want %.3f", path, tt.format, clip.Seconds(), want)
			}
		}
	}
}

func TestJSONWithTimestamps(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	body := `{"utterances": [{"text": "First words here.", "voice": {"id": "` + VoiceAva + `", "provider": "HUME_AI"}}, {"text": "Then more.", "speed": 2}], "format": {"type": "wav"}, "version": "2", "include_timestamp_types": ["word"], "split_utterances": false}`
	a := call(t, s, http.MethodPost, JSONPath, authed, body)
	var out struct {
		Generations []struct {
			Audio    string `json:"audio"`
			Duration float64
			Encoding struct {
				Format     string `json:"format"`
				SampleRate int    `json:"sample_rate"`
			}
			FileSize int `json:"file_size"`
			Snippets [][]struct {
				Text       string
				Timestamps []timestamp
			}
		}
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(a.body, &out); err != nil || a.status != 200 || out.RequestID == "" {
		t.Fatalf("%d %.300s", a.status, a.body)
	}
	g := out.Generations[0]
	audio, _ := base64.StdEncoding.DecodeString(g.Audio)
	clip, err := sdktest.Decode("audio/wav", audio)
	first, second := fakeupstream.Speak("First words here.", 1), fakeupstream.Speak("Then more.", 2)
	if err != nil || math.Abs(clip.Seconds()-(first.Seconds+second.Seconds)) > 0.001 || g.FileSize != len(audio) || g.Encoding.SampleRate != 48000 || g.Encoding.Format != "wav" {
		t.Fatalf("generation %+v, clip %+v %v", g.Encoding, clip, err)
	}
	if len(g.Snippets) != 2 || g.Snippets[1][0].Text != "Then more." {
		t.Fatalf("snippets %+v", g.Snippets)
	}
	ts := g.Snippets[1][0].Timestamps
	want := int(math.Round((first.Seconds + second.Words[1].Start) * 1000))
	if len(ts) != 2 || ts[1].Text != "more." || ts[1].Time.Begin != want || ts[1].Type != "word" {
		t.Errorf("timestamps of the second utterance %+v; want more. at %d ms", ts, want)
	}
}

func TestStreamJSON(t *testing.T) {
	s := New(t, fakeupstream.Options{ChunkSize: 3000})
	body := strings.Replace(okBody, `"version"`, `"include_timestamp_types": ["word"], "version"`, 1)
	a := call(t, s, http.MethodPost, StreamJSONPath, authed, body)
	var pcm []byte
	var words []string
	sc := bufio.NewScanner(bytes.NewReader(a.body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m struct {
			Type        string
			Audio       string
			IsLastChunk bool `json:"is_last_chunk"`
			Timestamp   *timestamp
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		switch m.Type {
		case "audio":
			b, _ := base64.StdEncoding.DecodeString(m.Audio)
			pcm = append(pcm, b...)
		case "timestamp":
			words = append(words, m.Timestamp.Text)
		}
	}
	if clip, err := sdktest.Decode("audio/pcm;rate=48000", pcm); err != nil || strings.Join(words, " ") != "Hello world." {
		t.Errorf("clip %+v %v, words %v", clip, err, words)
	}
}

func TestVoicesAndFaults(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	h := map[string]string{"X-Hume-Api-Key": Key}
	a := call(t, s, http.MethodGet, VoicesPath+"?provider=HUME_AI&page_size=2&page_number=1", h, "")
	var page struct {
		PageNumber int     `json:"page_number"`
		TotalPages int     `json:"total_pages"`
		Voices     []Voice `json:"voices_page"`
	}
	if err := json.Unmarshal(a.body, &page); err != nil || page.TotalPages != 2 || page.PageNumber != 1 || len(page.Voices) != 1 || page.Voices[0].ID != VoiceNarr {
		t.Errorf("page %d %s", a.status, a.body)
	}
	if a := call(t, s, http.MethodGet, VoicesPath, h, ""); a.status != 422 {
		t.Errorf("without provider: %d %s", a.status, a.body)
	}
	s.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "2"})
	a = call(t, s, http.MethodPost, FilePath, authed, okBody)
	if a.status != 429 || a.header.Get("Retry-After") != "2" || !strings.Contains(string(a.body), "policies.ratelimit.QuotaViolation") {
		t.Errorf("429: %d %s", a.status, a.body)
	}
}
