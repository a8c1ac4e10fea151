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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := call(t, "POST", s.URL+tt.path, tt.auth, tt.body)
			if status != tt.status || !strings.Contains(string(body), tt.has) {
				t.Errorf("%d %s; want %d with %q", status, body, tt.status, tt.has)
			}
		})
	}
	for model, body := range map[string]string{KokoroUS: `{"prompt":"Hello there.","voice":"am_adam","speed":1.5}`, KokoroGB: `{"prompt":"Hello.","voice":"bf_emma"}`, Orpheus: `{"text":"Hello.","voice":"tara","temperature":0.7}`} {
		status, raw := call(t, "POST", s.URL+"/"+model, key, body)
		var out struct {
			Audio struct {
				URL         string `json:"url"`
				ContentType string `json:"content_type"`
				FileSize    int    `json:"file_size"`
			} `json:"audio"`
		}
		if status != 200 || json.Unmarshal(raw, &out) != nil || out.Audio.ContentType != "audio/wav" {
			t.Fatalf("%s: %d %s", model, status, raw)
		}
		calls := s.Calls()
		status, audio := call(t, "GET", out.Audio.URL, "", "")
		if status != 200 || len(audio) != out.Audio.FileSize {
			t.Fatalf("%s file: %d, %d bytes of %d", model, status, len(audio), out.Audio.FileSize)
		}
		if _, err := sdktest.Decode("audio/wav", audio); err != nil {
			t.Errorf("%s: %v", model, err)
		}
		if s.Calls() != calls {
			t.Errorf("the download counted as an API call")
		}
	}
	if status, _ := call(t, "GET", s.URL+FilesPath+"missing.wav", "", ""); status != 404 {
		t.Errorf("missing file: %d", status)
	}
}
