package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"mime/multipart"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/voxgate/voxgate/test/e2e/harness"
)

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
	t.Parallel()
	tg := harness.Start(t, strings.Replace(harness.SpeechConfig, "storage:", "limits: {max_media_bytes: 300000}\nstorage:", 1))
	// Real audio: an eSpeak clip rendered through the gateway.
	clip := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody("This is my voice sample for cloning.", "output", map[string]any{"format": "wav", "sampleRate": 16000}))
	if clip.Status != 200 {
		t.Fatalf("clip: %d", clip.Status)
	}
	wantDur, _ := harness.PCMSeconds(t, "audio/wav", clip.Body)
	sum := sha256.Sum256(clip.Body)

	r := tg.Upload("acme", "audio/wav", clip.Body)
	if r.Status != 201 {
		t.Fatalf("raw upload: %d %s", r.Status, r.Body)
	}
	var m harness.Media
	r.JSON(t, &m)
	if m.ID == "" || m.MediaType != "audio/wav" || m.Bytes != int64(len(clip.Body)) || m.SHA256 != hex.EncodeToString(sum[:]) ||
		abs(float64(m.DurationMS)/1000-wantDur) > 0.01 {
		t.Fatalf("media = %+v (want %.3fs)", m, wantDur)
	}
	ct, body := multipartBody(t, "file", "sample.wav", "audio/wav", clip.Body)
	r = tg.Upload("acme", ct, body)
	var m2 harness.Media
	r.JSON(t, &m2)
	if r.Status != 201 || m2.Filename != "sample.wav" {
		t.Fatalf("multipart upload: %d %s", r.Status, r.Body)
	}
	// The dashboard uploads through its session: a body this large is
	// read only once the session and its CSRF header are checked.
	u := harness.NewUIClient(tg)
	u.SignIn(t, tg.Keys["acme"])
	if r := u.Do("POST", "/ui/api/v1/media", string(body), "Content-Type", ct); r.Status != 403 || !strings.Contains(string(r.Body), "csrf_failed") {
		t.Fatalf("dashboard upload without its CSRF header: %d %s", r.Status, r.Body)
	}
	if r := u.Do("POST", "/ui/api/v1/media", string(body), "Content-Type", ct, "X-CSRF-Token", u.CSRF); r.Status != 201 || !strings.Contains(string(r.Body), `"filename":"sample.wav"`) {
		t.Fatalf("dashboard upload: %d %s", r.Status, r.Body)
	}
	var got harness.Media
	tg.Do("GET", "/v1/media/"+m.ID, "acme", nil).JSON(t, &got)
	if got.ID != m.ID || got.SHA256 != m.SHA256 {
		t.Fatalf("get media %+v", got)
	}
	tg.Do("GET", "/v1/media/"+m.ID, "globex", nil).Problem(t, 404, "media_not_found")
	tg.Do("GET", "/v1/media/"+uuid.NewString(), "acme", nil).Problem(t, 404, "media_not_found")

	bad := []struct {
		name, ct string
		body     []byte
		status   int
		code     string
	}{
		{"text as wav", "audio/wav", []byte("this is not audio at all, just text"), 415, "unsupported_media_type"},
		{"wav declared as mp3", "audio/mpeg", clip.Body, 400, "validation_failed"},
		{"json", "application/json", []byte(`{"a":1}`), 415, "unsupported_media_type"},
		{"no content type", "", clip.Body, 415, "unsupported_media_type"},
		{"ogg", "audio/ogg", []byte("OggS\x00\x02"), 415, "unsupported_media_type"},
		{"empty", "audio/wav", nil, 400, "validation_failed"},
		{"truncated wav", "audio/wav", clip.Body[:30], 400, "validation_failed"},
		{"too large", "audio/wav", append(append([]byte(nil), clip.Body...), make([]byte, 300000)...), 413, "payload_too_large"},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			tg.Upload("acme", b.ct, b.body).Problem(t, b.status, b.code)
		})
	}
	ct, body = multipartBody(t, "audio", "x.wav", "audio/wav", clip.Body)
	tg.Upload("acme", ct, body).Problem(t, 400, "validation_failed")

	// Cloning: the test kit clones, eSpeak cannot.
	r = tg.Do("POST", "/v1/voices", "acme", map[string]any{"title": "Me", "provider": "testkit", "model": "test", "mediaId": m.ID, "consent": map[string]any{"attested_by": "Test Speaker", "relation": "self", "statement": "I agree to this clone."}})
	if r.Status != 201 {
		t.Fatalf("clone: %d %s", r.Status, r.Body)
	}
	v := r.Voice(t)
	if v.VoiceID != "clone-Me" || v.MediaID != m.ID {
		t.Fatalf("cloned voice %+v", v)
	}
	if r := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"voiceId": v.ID, "text": "speaking with my cloned voice"}); r.Status != 200 {
		t.Fatalf("speech with cloned voice: %d %s", r.Status, r.Body)
	}
	tg.Do("POST", "/v1/voices", "acme", map[string]any{"title": "Me", "provider": "espeak", "model": "espeak-ng", "mediaId": m.ID, "consent": map[string]any{"attested_by": "Test Speaker", "relation": "self", "statement": "I agree to this clone."}}).Problem(t, 501, "cloning_unsupported")
	tg.Do("POST", "/v1/voices", "globex", map[string]any{"title": "Me", "provider": "testkit", "model": "test", "mediaId": m.ID, "consent": map[string]any{"attested_by": "Test Speaker", "relation": "self", "statement": "I agree to this clone."}}).Problem(t, 404, "media_not_found")
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}
