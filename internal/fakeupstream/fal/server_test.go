package fal

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

func call(t *testing.T, method, url, auth, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
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
	return resp.StatusCode, b
}

func TestWireFormat(t *testing.T) {
	s := New(t, fakeupstream.Options{})
	key := "Key " + Key
	tests := []struct {
		name, path, auth, body string
		status                 int
		has                    string
	}{
		{"no key", "/" + KokoroUS, "", `{"prompt":"Hi."}`, 401, `"detail"`},
		{"bearer is not fal's scheme", "/" + KokoroUS, "Bearer " + Key, `{"prompt":"Hi."}`, 401, `"detail"`},
		{"unknown model", "/fal-ai/nothing", key, `{"text":"Hi."}`, 404, "not found"},
		{"text field of another model", "/" + KokoroUS, key, `{"text":"Hi."}`, 422, "extra_forbidden"},
		{"empty prompt", "/" + KokoroUS, key, `{"voice":"af_heart"}`, 422, "prompt"},
		{"bad voice", "/" + KokoroUS, key, `{"prompt":"Hi.","voice":"bf_emma"}`, 422, `"enum"`},
		{"bad speed", "/" + KokoroUS, key, `{"prompt":"Hi.","speed":9}`, 422, "speed"},
		{"orpheus needs text", "/" + Orpheus, key, `{"voice":"tara"}`, 422, "missing"},
		{"f5 takes no voice", "/" + F5, key, `{"gen_text":"Hi.","ref_audio_url":"https://x.example/a.wav","model_type":"F5-TTS","voice":"tara"}`, 422, "extra_forbidden"},
		{"f5 needs reference audio", "/" + F5, key, `{"gen_text":"Hi.","model_type":"F5-TTS"}`, 422, "ref_audio_url"},
		{"f5 reference is a URL", "/" + F5, key, `{"gen_text":"Hi.","ref_audio_url":"tara","model_type":"F5-TTS"}`, 422, "url_parsing"},
		{"f5 model type", "/" + F5, key, `{"gen_text":"Hi.","ref_audio_url":"https://x.example/a.wav","model_type":"F6"}`, 422, `"enum"`},
		{"eleven voice", "/" + ElevenV3, key, `{"text":"Hi.","voice":"nobody"}`, 422, `"enum"`},
		{"app path prefix is not the app", "/fal-ai/elevenlabs/tts", key, `{"text":"Hi."}`, 404, "not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := call(t, "POST", s.URL+tt.path, tt.auth, tt.body)
			if status != tt.status || !strings.Contains(string(body), tt.has) {
				t.Errorf("%d %s; want %d with %q", status, body, tt.status, tt.has)
			}
		})
	}
	for _, tt := range []struct{ model, body, key, mediaType string }{
		{KokoroUS, `{"prompt":"Hello there.","voice":"am_adam","speed":1.5}`, "audio", "audio/wav"},
		{KokoroGB, `{"prompt":"Hello.","voice":"bf_emma"}`, "audio", "audio/wav"},
		{Orpheus, `{"text":"Hello.","voice":"tara","temperature":0.7}`, "audio", "audio/wav"},
		{F5, `{"gen_text":"Hello.","ref_audio_url":"https://x.example/ref.wav","model_type":"E2-TTS","remove_silence":false}`, "audio_url", "audio/wav"},
		{ElevenV3, `{"text":"Hello.","voice":"Rachel","stability":0.5,"apply_text_normalization":"on"}`, "audio", "audio/mpeg"},
	} {
		status, raw := call(t, "POST", s.URL+"/"+tt.model, key, tt.body)
		type file struct {
			URL         string `json:"url"`
			ContentType string `json:"content_type"`
			FileSize    int    `json:"file_size"`
		}
		var out map[string]file
		if status != 200 || json.Unmarshal(raw, &out) != nil || out[tt.key].ContentType != tt.mediaType {
			t.Fatalf("%s: %d %s", tt.model, status, raw)
		}
		f := out[tt.key]
		calls := s.Calls()
		req, _ := http.NewRequest("GET", f.URL, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		audio, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || len(audio) != f.FileSize || resp.Header.Get("Content-Type") != tt.mediaType {
			t.Fatalf("%s file: %d %s, %d bytes of %d", tt.model, resp.StatusCode, resp.Header.Get("Content-Type"), len(audio), f.FileSize)
		}
		if _, err := sdktest.Decode(tt.mediaType, audio); err != nil {
			t.Errorf("%s: %v", tt.model, err)
		}
		if s.Calls() != calls {
			t.Errorf("the download counted as an API call")
		}
	}
	if status, _ := call(t, "GET", s.URL+FilesPath+"missing.wav", "", ""); status != 404 {
		t.Errorf("missing file: %d", status)
	}
}
