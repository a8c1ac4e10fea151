package deepgram

import (
	"bytes"
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

var authed = map[string]string{"Authorization": "Token " + Key, "Content-Type": "application/json"}

const okBody = `{"text": "Hello world."}`

func TestWireFormat(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	speak := SpeakPath + "?model=aura-2-thalia-en&encoding=linear16&sample_rate=24000"
	tests := []struct {
		name    string
		target  string
		headers map[string]string
		body    string
		status  int
		code    string
		msgHas  string
		breaks  bool // the published API document refuses it too
	}{
		{"ok", speak, authed, okBody, 200, "", "", false},
		{"no key", speak, map[string]string{"Content-Type": "application/json"}, okBody, 401, "INVALID_AUTH", "Invalid credentials", true},
		{"key as Bearer", speak, map[string]string{"Authorization": "Bearer " + Key, "Content-Type": "application/json"}, okBody, 401, "INVALID_AUTH", "", false},
		{"wrong key", speak, map[string]string{"Authorization": "Token nope", "Content-Type": "application/json"}, okBody, 401, "INVALID_AUTH", "", false},
		{"model in the body", speak, authed, `{"text": "Hi.", "model": "aura-2-zeus-en"}`, 400, "PAYLOAD_ERROR", "takes only text", true},
		{"empty text", speak, authed, `{"text": " "}`, 400, "PAYLOAD_ERROR", "must not be empty", false},
		{"too long", speak, authed, `{"text": "` + strings.Repeat("a", MaxChars+1) + `"}`, 400, "PAYLOAD_ERROR", "limit is 2000", false},
		{"unknown model", SpeakPath + "?model=aura-2-nobody-en", authed, okBody, 400, "INVALID_QUERY_PARAMETER", "No such model", false},
		{"unknown parameter", speak + "&voice=thalia", authed, okBody, 400, "INVALID_QUERY_PARAMETER", `"voice"`, true},
		{"bad rate", speak + "0", authed, okBody, 400, "INVALID_QUERY_PARAMETER", "sample_rate", false},
		{"mp3 rate fixed", SpeakPath + "?model=aura-2-thalia-en&encoding=mp3&sample_rate=24000", authed, okBody, 400, "INVALID_QUERY_PARAMETER", "fixed at 22050", false},
		{"mp3 bit rate", SpeakPath + "?model=aura-2-thalia-en&encoding=mp3&bit_rate=64000", authed, okBody, 400, "INVALID_QUERY_PARAMETER", "bit_rate", false},
		{"mp3 container", SpeakPath + "?model=aura-2-thalia-en&encoding=mp3&container=wav", authed, okBody, 400, "INVALID_QUERY_PARAMETER", "container", false},
		{"ogg for linear16", speak + "&container=ogg", authed, okBody, 400, "INVALID_QUERY_PARAMETER", "container", false},
		{"mulaw at 16 kHz valid, not rendered", SpeakPath + "?model=aura-2-thalia-en&encoding=mulaw&sample_rate=16000", authed, okBody, 400, "INVALID_QUERY_PARAMETER", "this fake", false},
		{"opus rate fixed", SpeakPath + "?model=aura-2-thalia-en&encoding=opus&sample_rate=24000", authed, okBody, 400, "INVALID_QUERY_PARAMETER", "fixed at 48000", false},
		{"aac bit rate", SpeakPath + "?model=aura-2-thalia-en&encoding=aac&bit_rate=256000", authed, okBody, 400, "INVALID_QUERY_PARAMETER", "bit_rate", false},
		{"speed on Aura-1", SpeakPath + "?model=aura-asteria-en&encoding=linear16&speed=1.2", authed, okBody, 400, "INVALID_QUERY_PARAMETER", "Aura-2", false},
		{"speed range", speak + "&speed=2", authed, okBody, 400, "INVALID_QUERY_PARAMETER", "0.7 to 1.5", false},
		{"json only", speak, map[string]string{"Authorization": "Token " + Key, "Content-Type": "text/plain"}, okBody, 400, "PAYLOAD_ERROR", "application/json", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if v := s.TakeViolations(); tt.breaks != (len(v) > 0) {
					t.Errorf("the API document judged it %q, want a violation: %v", v, tt.breaks)
				}
			}()
			a := call(t, s, http.MethodPost, tt.target, tt.headers, tt.body)
			if a.status != tt.status {
				t.Fatalf("%d %s; want %d", a.status, a.body, tt.status)
			}
			if tt.status == 200 {
				return
			}
			var e struct {
				ErrCode   string `json:"err_code"`
				ErrMsg    string `json:"err_msg"`
				RequestID string `json:"request_id"`
			}
			_ = json.Unmarshal(a.body, &e)
			if e.ErrCode != tt.code || !strings.Contains(e.ErrMsg, tt.msgHas) || e.RequestID == "" {
				t.Errorf("%s; want %s with %q", a.body, tt.code, tt.msgHas)
			}
		})
	}
}

func TestSpeakFormats(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	text := "Hello world."
	for _, tt := range []struct {
		query, contentType, mediaType string
		speed                         float64
	}{
		{"model=aura-2-thalia-en&encoding=linear16&container=none&sample_rate=16000", "audio/l16;rate=16000", "audio/pcm;rate=16000", 1},
		{"model=aura-2-zeus-en&encoding=linear16&sample_rate=48000&speed=1.5", "audio/wav", "audio/wav", 1.5},
		{"model=aura-asteria-en&encoding=mp3&bit_rate=32000", "audio/mpeg", "audio/mpeg", 1},
		{"", "audio/mpeg", "audio/mpeg", 1}, // the documented defaults: aura-asteria-en, mp3
		{"model=aura-2-thalia-en&encoding=opus&bit_rate=64000", "audio/ogg", "audio/ogg;codecs=opus", 1},
		{"model=aura-2-thalia-en&encoding=flac&sample_rate=16000", "audio/flac", "audio/flac", 1},
		{"model=aura-2-thalia-en&encoding=aac", "audio/aac", "audio/aac", 0},
		{"model=aura-2-thalia-en&encoding=mulaw&container=none&sample_rate=8000", "audio/mulaw", "audio/PCMU;rate=8000", 1},
		{"model=aura-2-thalia-en&encoding=alaw&sample_rate=8000", "audio/wav", "", 1},
	} {
		a := call(t, s, http.MethodPost, SpeakPath+"?"+tt.query, authed, `{"text": "`+text+`"}`)
		if a.status != 200 || a.header.Get("Content-Type") != tt.contentType || a.header.Get("dg-char-count") != "12" || a.header.Get("dg-request-id") == "" {
			t.Fatalf("%s: %d %v %s", tt.query, a.status, a.header, a.body)
		}
		if !bytes.Equal(s.LastAnswer(), a.body) {
			t.Errorf("%s: LastAnswer is not the answer", tt.query)
		}
		if tt.mediaType == "" { // G.711 in WAV: the kit reads PCM WAV only
			if string(a.body[:4]) != "RIFF" || a.body[20] != 6 {
				t.Errorf("%s: not an A-law WAV file", tt.query)
			}
			continue
		}
		clip, err := sdktest.Decode(tt.mediaType, a.body)
		if err != nil {
			t.Fatalf("%s: %v", tt.query, err)
		}
		if tt.mediaType == "audio/aac" && clip.SampleRate != 22050 {
			t.Errorf("%s: AAC at %d Hz, want Deepgram's 22050", tt.query, clip.SampleRate)
		}
		if want := fakeupstream.Speak(text, tt.speed).Seconds; tt.speed > 0 && tt.mediaType != "audio/mpeg" && math.Abs(clip.Seconds()-want) > 0.001 {
			t.Errorf("%s: %.3f s, want %.3f", tt.query, clip.Seconds(), want)
		}
	}
}

func TestModels(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	a := call(t, s, http.MethodGet, ModelsPath, map[string]string{"Authorization": "Token " + Key}, "")
	var list struct {
		STT []map[string]any `json:"stt"`
		TTS []Voice          `json:"tts"`
	}
	if err := json.Unmarshal(a.body, &list); err != nil || a.status != 200 || len(list.STT) != 1 || len(list.TTS) != len(Voices()) {
		t.Fatalf("%d %s", a.status, a.body)
	}
	if v := list.TTS[0]; v.Name != "thalia" || v.CanonicalName != "aura-2-thalia-en" || v.Architecture != "aura-2" || v.Metadata.Tags[0] != "feminine" {
		t.Errorf("first voice %+v", v)
	}
	// Every listed voice speaks.
	for _, v := range list.TTS {
		if a := call(t, s, http.MethodPost, SpeakPath+"?model="+v.CanonicalName+"&encoding=linear16", authed, okBody); a.status != 200 {
			t.Errorf("%s: %d %s", v.CanonicalName, a.status, a.body)
		}
	}
}

func TestFaultsAndHolds(t *testing.T) {
	s := New(t, fakeupstream.Options{ChunkSize: 1000})
	speak := SpeakPath + "?model=aura-2-thalia-en&encoding=linear16&container=none"
	s.FailNext(1, fakeupstream.Fault{Status: 429, RetryAfter: "3"})
	a := call(t, s, http.MethodPost, speak, authed, okBody)
	if a.status != 429 || a.header.Get("Retry-After") != "3" || !strings.Contains(string(a.body), "TOO_MANY_REQUESTS") {
		t.Errorf("429: %d %v %s", a.status, a.header, a.body)
	}
	s.HoldStreams()
	req, _ := http.NewRequest(http.MethodPost, s.URL+speak, strings.NewReader(okBody))
	for k, v := range authed {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, 1000)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatalf("the first chunk of a held stream: %v", err)
	}
	s.ReleaseStreams()
	rest, err := io.ReadAll(resp.Body)
	if err != nil || len(rest) == 0 {
		t.Errorf("after release: %d bytes, %v", len(rest), err)
	}
}
