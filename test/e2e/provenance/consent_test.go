package provenance

import (
	"strings"
	"testing"

	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestConsentForClonedVoices clones a voice (the test kit clones) from an
// uploaded eSpeak clip: refused without a consent attestation, or with
// one missing a field; stored and returned with one; carried into the
// signed record of a clip made with the voice. An organization that made
// consent optional clones without one.
func TestConsentForClonedVoices(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, strings.Replace(config, "storage:", "limits: {max_media_bytes: 300000}\nstorage:", 1))
	upload := func(org string) string {
		clip := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody("This is my voice sample for cloning.", "output", map[string]any{"format": "wav", "sampleRate": 16000}))
		r := tg.Upload(org, "audio/wav", clip.Body)
		var m harness.Media
		r.JSON(t, &m)
		if r.Status != 201 || m.ID == "" {
			t.Fatalf("upload: %d %s", r.Status, r.Body)
		}
		return m.ID
	}
	media := upload("acme")
	clone := func(org string, extra ...any) *harness.Response {
		body := map[string]any{"title": "Me", "provider": "testkit", "model": "test", "mediaId": media}
		for i := 0; i+1 < len(extra); i += 2 {
			body[extra[i].(string)] = extra[i+1]
		}
		return tg.Do("POST", "/v1/voices", org, body)
	}
	p := clone("acme").Problem(t, 400, "validation_failed")
	harness.AssertPaths(t, p, "consent")
	p = clone("acme", "consent", map[string]any{"attested_by": "Ana", "statement": "yes"}).Problem(t, 400, "validation_failed")
	harness.AssertPaths(t, p, "consent.relation")

	consent := map[string]any{"attested_by": "Ana Díaz", "relation": "self", "statement": "I agree that my voice is cloned for our support line.", "time": "2026-11-01T10:00:00Z"}
	r := clone("acme", "consent", consent)
	if r.Status != 201 {
		t.Fatalf("clone: %d %s", r.Status, r.Body)
	}
	var created struct {
		Data struct {
			ID      string         `json:"id"`
			Consent map[string]any `json:"consent"`
		} `json:"data"`
	}
	r.JSON(t, &created)
	var got struct {
		Data struct {
			Consent map[string]any `json:"consent"`
		} `json:"data"`
	}
	tg.Do("GET", "/v1/voices/"+created.Data.ID, "acme", nil).JSON(t, &got)
	for k, v := range consent {
		if created.Data.Consent[k] != v || got.Data.Consent[k] != v {
			t.Errorf("consent %s: created %v, read back %v, want %v", k, created.Data.Consent[k], got.Data.Consent[k], v)
		}
	}

	s := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"voiceId": created.Data.ID, "text": "Spoken with a cloned voice."})
	if s.Status != 200 {
		t.Fatalf("speech: %d %s", s.Status, s.Body)
	}
	rec := recordOf(t, tg, "acme", s.Header.Get("X-Request-Id"))
	c, _ := rec.Record["consent"].(map[string]any)
	if rec.Record["voice_ref"] != created.Data.ID || c["attested_by"] != "Ana Díaz" || c["relation"] != "self" || c["time"] != "2026-11-01T10:00:00Z" {
		t.Errorf("record voice_ref %v, consent %v", rec.Record["voice_ref"], rec.Record["consent"])
	}
	// A clip with a provider voice carries no consent.
	plain := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody("No clone here."))
	if rec := recordOf(t, tg, "acme", plain.Header.Get("X-Request-Id")); rec.Record["consent"] != nil {
		t.Errorf("consent on a provider voice's record: %v", rec.Record["consent"])
	}

	// Consent optional: a clone without one is made, and has none.
	media = upload("initech")
	r = clone("initech")
	if r.Status != 201 || strings.Contains(string(r.Body), `"consent"`) {
		t.Fatalf("optional consent: %d %s", r.Status, r.Body)
	}
}
