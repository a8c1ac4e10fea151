package harness

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
)

// ReadStreamPath posts body as acme to a streaming endpoint and reads the
// whole answer, returning the error that ended the read, if any.
func ReadStreamPath(t *testing.T, tg *Gateway, path string, body map[string]any) (int, []byte, error) {
	t.Helper()
	req, _ := http.NewRequest("POST", tg.Base+path, bytes.NewReader(MustJSON(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+tg.Keys["acme"])
	resp, err := tg.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}

// SpeechBody is a /v1/audio/speech body for eSpeak's English voice;
// extra holds further fields as name, value pairs.
func SpeechBody(text string, extra ...any) map[string]any {
	b := map[string]any{"model": "espeak/espeak-ng", "voice": "en", "text": text}
	for i := 0; i+1 < len(extra); i += 2 {
		b[extra[i].(string)] = extra[i+1]
	}
	return b
}

// MustJSON marshals v, which cannot fail for the maps and structs tests
// build.
func MustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
