package gateway_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// upload sends raw bytes with a content type.
func (tg *testGateway) upload(org, contentType string, body []byte) *response {
	tg.t.Helper()
	req, _ := http.NewRequest("POST", tg.base+"/v1/media", bytes.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer "+tg.keys[org])
	resp, err := tg.hc.Do(req)
	if err != nil {
		tg.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return &response{status: resp.StatusCode, header: resp.Header, body: data}
}

func multipartBody(t *testing.T, field, filename, partType string, data []byte) (string, []byte) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	h := make(map[string][]string)
	h["Content-Disposition"] = []string{`form-data; name="` + field + `"; filename="` + filename + `"`}
	h["Content-Type"] = []string{partType}
	p, err := w.CreatePart(h)
	if err != nil {
		t.Fatal(err)
	}
	p.Write(data)
	w.Close()
	return w.FormDataContentType(), buf.Bytes()
}

func TestMediaUploadAndCloning(t *testing.T) {
	tg := startGateway(t, strings.Replace(speechConfig, "storage:", "limits: {max_media_bytes: 300000}\nstorage:", 1))
	// Real audio: an eSpeak clip rendered through the gateway.
	clip := tg.do("POST", "/v1/audio/speech", "acme", speechBody("This is my voice sample for cloning.", "output", map[string]any{"format": "wav", "sampleRate": 16000}))
	if clip.status != 200 {
		t.Fatalf("clip: %d", clip.status)
	}
	wantDur, _ := pcmSeconds(t, "audio/wav", clip.body)
	sum := sha256.Sum256(clip.body)

	r := tg.upload("acme", "audio/wav", clip.body)
	if r.status != 201 {
		t.Fatalf("raw upload: %d %s", r.status, r.body)
	}
	var m apiMedia
	r.json(t, &m)
	if m.ID == "" || m.MediaType != "audio/wav" || m.Bytes != int64(len(clip.body)) || m.SHA256 != hex.EncodeToString(sum[:]) ||
		abs(float64(m.DurationMS)/1000-wantDur) > 0.01 {
		t.Fatalf("media = %+v (want %.3fs)", m, wantDur)
	}
	ct, body := multipartBody(t, "file", "sample.wav", "audio/wav", clip.body)
	r = tg.upload("acme", ct, body)
	var m2 apiMedia
	r.json(t, &m2)
	if r.status != 201 || m2.Filename != "sample.wav" {
		t.Fatalf("multipart upload: %d %s", r.status, r.body)
	}
	// The dashboard uploads through its session: a body this large is
	// read only once the session and its CSRF header are checked.
	u := newUIClient(tg)
	u.signIn(t, tg.keys["acme"])
	if r := u.do("POST", "/ui/api/v1/media", string(body), "Content-Type", ct); r.status != 403 || !strings.Contains(string(r.body), "csrf_failed") {
		t.Fatalf("dashboard upload without its CSRF header: %d %s", r.status, r.body)
	}
	if r := u.do("POST", "/ui/api/v1/media", string(body), "Content-Type", ct, "X-CSRF-Token", u.csrf); r.status != 201 || !strings.Contains(string(r.body), `"filename":"sample.wav"`) {
		t.Fatalf("dashboard upload: %d %s", r.status, r.body)
	}
	var got apiMedia
	tg.do("GET", "/v1/media/"+m.ID, "acme", nil).json(t, &got)
	if got.ID != m.ID || got.SHA256 != m.SHA256 {
		t.Fatalf("get media %+v", got)
	}
	tg.do("GET", "/v1/media/"+m.ID, "globex", nil).problem(t, 404, "media_not_found")
	tg.do("GET", "/v1/media/"+uuid.NewString(), "acme", nil).problem(t, 404, "media_not_found")

	bad := []struct {
		name, ct string
		body     []byte
		status   int
		code     string
	}{
		{"text as wav", "audio/wav", []byte("this is not audio at all, just text"), 415, "unsupported_media_type"},
		{"wav declared as mp3", "audio/mpeg", clip.body, 400, "validation_failed"},
		{"json", "application/json", []byte(`{"a":1}`), 415, "unsupported_media_type"},
		{"no content type", "", clip.body, 415, "unsupported_media_type"},
		{"ogg", "audio/ogg", []byte("OggS\x00\x02"), 415, "unsupported_media_type"},
		{"empty", "audio/wav", nil, 400, "validation_failed"},
		{"truncated wav", "audio/wav", clip.body[:30], 400, "validation_failed"},
		{"too large", "audio/wav", append(append([]byte(nil), clip.body...), make([]byte, 300000)...), 413, "payload_too_large"},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			tg.upload("acme", b.ct, b.body).problem(t, b.status, b.code)
		})
	}
	ct, body = multipartBody(t, "audio", "x.wav", "audio/wav", clip.body)
	tg.upload("acme", ct, body).problem(t, 400, "validation_failed")

	// Cloning: the test kit clones, eSpeak cannot.
	r = tg.do("POST", "/v1/voices", "acme", map[string]any{"title": "Me", "provider": "testkit", "model": "test", "mediaId": m.ID})
	if r.status != 201 {
		t.Fatalf("clone: %d %s", r.status, r.body)
	}
	v := r.voice(t)
	if v.VoiceID != "clone-Me" || v.MediaID != m.ID {
		t.Fatalf("cloned voice %+v", v)
	}
	if r := tg.do("POST", "/v1/audio/speech", "acme", map[string]any{"voiceId": v.ID, "text": "speaking with my cloned voice"}); r.status != 200 {
		t.Fatalf("speech with cloned voice: %d %s", r.status, r.body)
	}
	tg.do("POST", "/v1/voices", "acme", map[string]any{"title": "Me", "provider": "espeak", "model": "espeak-ng", "mediaId": m.ID}).problem(t, 501, "cloning_unsupported")
	tg.do("POST", "/v1/voices", "globex", map[string]any{"title": "Me", "provider": "testkit", "model": "test", "mediaId": m.ID}).problem(t, 404, "media_not_found")
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}
