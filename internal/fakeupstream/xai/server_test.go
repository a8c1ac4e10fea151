package xai

import (
	"bytes"
	"encoding/json"
	"io"
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
	return answer{resp.StatusCode, resp.Header, b}
}

func TestWireFormat(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	bearer := "Bearer " + Key
	ok := `{"text":"Hello world.","voice_id":"Eve","language":"en","output_format":{"codec":"pcm","sample_rate":16000}}`
	tests := []struct {
		name, auth, body string
		status           int
		msgHas           string
	}{
		{"no key", "", ok, 401, "Missing bearer"},
		{"wrong key", "Bearer xai-wrong-123456", ok, 400, "Incorrect API key provided: xa***56"},
		{"unknown field", bearer, `{"text":"x","language":"en","speed":1.2}`, 400, "speed"},
		{"no language", bearer, `{"text":"x"}`, 400, "language is required"},
		{"bad language", bearer, `{"text":"x","language":"xx"}`, 400, "xx"},
		{"no text", bearer, `{"language":"en"}`, 400, "text is required"},
		{"long text", bearer, `{"language":"en","text":"` + strings.Repeat("a", MaxText+1) + `"}`, 400, "at most"},
		{"bad voice", bearer, `{"text":"x","language":"en","voice_id":"alloy"}`, 400, "alloy"},
		{"bad codec", bearer, `{"text":"x","language":"en","output_format":{"codec":"opus"}}`, 400, "opus"},
		{"bad rate", bearer, `{"text":"x","language":"en","output_format":{"codec":"pcm","sample_rate":11025}}`, 400, "11025"},
		{"bit rate on wav", bearer, `{"text":"x","language":"en","output_format":{"codec":"wav","bit_rate":64000}}`, 400, "bit_rate"},
		{"unknown format field", bearer, `{"text":"x","language":"en","output_format":{"codec":"wav","channels":2}}`, 400, "channels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := call(t, s, "POST", TTSPath, tt.auth, tt.body)
			var e struct{ Code, Error string }
			if a.status != tt.status || json.Unmarshal(a.body, &e) != nil || e.Code == "" || !strings.Contains(e.Error, tt.msgHas) {
				t.Errorf("%d %s; want %d with %q", a.status, a.body, tt.status, tt.msgHas)
			}
		})
	}
	for _, tt := range []struct {
		format, contentType, mediaType string
		rate                           int
	}{
		{`{"codec":"pcm","sample_rate":16000}`, "audio/pcm", "audio/pcm;rate=16000", 16000},
		{`{"codec":"wav","sample_rate":16000}`, "audio/wav", "audio/wav", 16000},
		{`{"codec":"mp3","sample_rate":16000}`, "audio/mpeg", "audio/mpeg", 16000},
		{`{"codec":"mp3","sample_rate":44100,"bit_rate":192000}`, "audio/mpeg", "audio/mpeg", 44100},
		{`{"codec":"mulaw","sample_rate":8000}`, "audio/basic", "audio/PCMU;rate=8000", 8000},
		{`{"codec":"alaw","sample_rate":8000}`, "audio/alaw", "audio/PCMA;rate=8000", 8000},
	} {
		a := call(t, s, "POST", TTSPath, bearer, `{"text":"Hello world.","language":"en","output_format":`+tt.format+`}`)
		if a.status != 200 || a.header.Get("Content-Type") != tt.contentType {
			t.Fatalf("%s: %d %s %s", tt.format, a.status, a.header.Get("Content-Type"), a.body)
		}
		if clip, err := sdktest.Decode(tt.mediaType, a.body); err != nil || clip.SampleRate != tt.rate {
			t.Errorf("%s: %+v %v", tt.format, clip, err)
		}
		if !bytes.Equal(s.LastAnswer(), a.body) {
			t.Errorf("%s: LastAnswer is not the answer", tt.format)
		}
	}
	// The documented default: MP3 at 24 kHz.
	if a := call(t, s, "POST", TTSPath, bearer, `{"text":"Hi.","language":"auto"}`); a.status != 200 || a.header.Get("Content-Type") != "audio/mpeg" {
		t.Errorf("default: %d %s", a.status, a.header.Get("Content-Type"))
	}
}

func TestVoices(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	a := call(t, s, "GET", VoicesPath, "Bearer "+Key, "")
	var list struct {
		Voices []voice `json:"voices"`
	}
	if err := json.Unmarshal(a.body, &list); err != nil || len(list.Voices) != 5 || list.Voices[0].VoiceID != VoiceEve {
		t.Fatalf("%s %v", a.body, err)
	}
	if a := call(t, s, "GET", VoicesPath+"/ARA", "Bearer "+Key, ""); a.status != 200 || !strings.Contains(string(a.body), `"ara"`) {
		t.Errorf("one voice: %d %s", a.status, a.body)
	}
	if a := call(t, s, "GET", VoicesPath+"/nobody", "Bearer "+Key, ""); a.status != 404 {
		t.Errorf("unknown voice: %d", a.status)
	}
}
