package gateway_test

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/google/uuid"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/resemble"
)

// TestCloudProviderResemble runs the provider suite over the resemble
// plugin against its fake. Resemble has two hosts: the suite points
// base_url (the API host: voices) at the fake, and synthesis_url (the
// synthesis host) goes in the provider's settings, at the same fake.
func TestCloudProviderResemble(t *testing.T) {
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
	f := resemble.New(t, fakeupstream.Options{})
	tg := startCloudCase(t, cloudCase{ID: "resemble", Fake: f, Key: resemble.Key, Settings: []string{"synthesis_url: " + f.SynthesisURL()}})
	var ids []string
	for i := range 3 {
		r := tg.upload("acme", "audio/wav", toneWAV(16000, 2+0.1*float64(i)))
		var m apiMedia
		r.json(t, &m)
		if r.status != 201 {
			t.Fatalf("upload: %d %s", r.status, r.body)
		}
		ids = append(ids, m.ID)
	}
	body := map[string]any{"title": "Rapid", "provider": "resemble", "model": "chatterbox", "mediaIds": ids,
		"clone_options": map[string]any{"transcripts": []string{"one", "two", "three"}}}
	r := tg.do("POST", "/v1/voices", "acme", body)
	if r.status != 201 {
		t.Fatalf("clone from three uploads: %d %s", r.status, r.body)
	}
	v := r.voice(t)
	if v.VoiceID == "" || v.MediaID != ids[0] || len(v.ProviderOptions) != 0 {
		t.Errorf("voice %+v: want a provider voice id, the first sample's media id and no saved clone options", v)
	}
	// One sample is refused by the provider, before anything is created.
	body["mediaIds"] = ids[:1]
	tg.do("POST", "/v1/voices", "acme", body).problem(t, 422, "provider_rejected_request")
	// Too many samples, or a bad id, are the caller's mistakes.
	body["mediaIds"] = []string{ids[0], ids[1], ids[2], uuid.NewString(), uuid.NewString(), uuid.NewString()}
	assertPaths(t, tg.do("POST", "/v1/voices", "acme", body).problem(t, 400, "validation_failed"), "mediaIds")
	body["mediaIds"] = []string{"nope"}
	assertPaths(t, tg.do("POST", "/v1/voices", "acme", body).problem(t, 400, "validation_failed"), "mediaIds.0")
}

// toneWAV is seconds of a 330 Hz tone as a 16-bit mono WAV file.
func toneWAV(rate int, seconds float64) []byte {
	n := int(float64(rate) * seconds)
	b := make([]byte, 44+2*n)
	copy(b, "RIFF")
	binary.LittleEndian.PutUint32(b[4:], uint32(36+2*n))
	copy(b[8:], "WAVEfmt ")
	binary.LittleEndian.PutUint32(b[16:], 16)
	binary.LittleEndian.PutUint16(b[20:], 1)
	binary.LittleEndian.PutUint16(b[22:], 1)
	binary.LittleEndian.PutUint32(b[24:], uint32(rate))
	binary.LittleEndian.PutUint32(b[28:], uint32(2*rate))
	binary.LittleEndian.PutUint16(b[32:], 2)
	binary.LittleEndian.PutUint16(b[34:], 16)
	copy(b[36:], "data")
	binary.LittleEndian.PutUint32(b[40:], uint32(2*n))
	for i := range n {
		binary.LittleEndian.PutUint16(b[44+2*i:], uint16(int16(8000*math.Sin(2*math.Pi*330*float64(i)/float64(rate)))))
	}
	return b
}
