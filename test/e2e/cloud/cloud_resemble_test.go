package cloud

import (
	"testing"

	"github.com/google/uuid"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/resemble"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestCloudProviderResemble runs the provider suite over the resemble
// plugin against its fake. Resemble has two hosts: the suite points
// base_url (the API host: voices) at the fake, and synthesis_url (the
// synthesis host) goes in the provider's settings, at the same fake.
func TestCloudProviderResemble(t *testing.T) {
	t.Parallel()
	f := resemble.New(t, fakeupstream.Options{})
	runCloudSuite(t, cloudCase{
		ID: "resemble", Fake: f, Key: resemble.Key,
		Model: "chatterbox", Voice: resemble.VoiceLucy,
		Streams: true, Timestamps: true,
		Settings: []string{"synthesis_url: " + f.SynthesisURL()},
		// Resemble answers WAV; its pcm is the WAV's samples, the plugin
		// cutting off the header.
		Derived: []string{"pcm_8000", "pcm_16000", "pcm_22050", "pcm_24000", "pcm_32000", "pcm_44100", "pcm_48000"},
	})
}

// TestResembleCloneFromSeveralUploads: Resemble builds a rapid voice from
// three or more recordings with their transcripts; POST /v1/voices takes
// several uploads (mediaIds) and options for the clone call alone
// (clone_options), which are not saved with the voice.
func TestResembleCloneFromSeveralUploads(t *testing.T) {
	t.Parallel()
	f := resemble.New(t, fakeupstream.Options{})
	tg := startCloudCase(t, cloudCase{ID: "resemble", Fake: f, Key: resemble.Key, Settings: []string{"synthesis_url: " + f.SynthesisURL()}})
	var ids []string
	for i := range 3 {
		r := tg.Upload("acme", "audio/wav", harness.ToneWAV(16000, 2+0.1*float64(i)))
		var m harness.Media
		r.JSON(t, &m)
		if r.Status != 201 {
			t.Fatalf("upload: %d %s", r.Status, r.Body)
		}
		ids = append(ids, m.ID)
	}
	body := map[string]any{"title": "Rapid", "provider": "resemble", "model": "chatterbox", "mediaIds": ids,
		"clone_options": map[string]any{"transcripts": []string{"one", "two", "three"}},
		"consent":       map[string]any{"attested_by": "Test Speaker", "relation": "self", "statement": "I agree to this clone."}}
	r := tg.Do("POST", "/v1/voices", "acme", body)
	if r.Status != 201 {
		t.Fatalf("clone from three uploads: %d %s", r.Status, r.Body)
	}
	v := r.Voice(t)
	if v.VoiceID == "" || v.MediaID != ids[0] || len(v.ProviderOptions) != 0 {
		t.Errorf("voice %+v: want a provider voice id, the first sample's media id and no saved clone options", v)
	}
	// One sample is refused by the provider, before anything is created.
	body["mediaIds"] = ids[:1]
	tg.Do("POST", "/v1/voices", "acme", body).Problem(t, 422, "provider_rejected_request")
	// Too many samples, or a bad id, are the caller's mistakes.
	body["mediaIds"] = []string{ids[0], ids[1], ids[2], uuid.NewString(), uuid.NewString(), uuid.NewString()}
	harness.AssertPaths(t, tg.Do("POST", "/v1/voices", "acme", body).Problem(t, 400, "validation_failed"), "mediaIds")
	body["mediaIds"] = []string{"nope"}
	harness.AssertPaths(t, tg.Do("POST", "/v1/voices", "acme", body).Problem(t, 400, "validation_failed"), "mediaIds.0")
}
