package speech

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/cartesia"
	"github.com/voxgate/voxgate/internal/fakeupstream/elevenlabs"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestAudioTags: tags a model performs reach it untouched; others are
// removed before synthesis with one warning each, in the public client's
// words; no tag is ever a timestamped word.
func TestAudioTags(t *testing.T) {
	t.Parallel()
	el := elevenlabs.New(t, fakeupstream.Options{})
	ca := cartesia.New(t, fakeupstream.Options{})
	tg := harness.Start(t, `
server: {listen: "127.0.0.1:0"}
storage: {path: "%DIR%/voxgate.db"}
plugins: {dir: "%BIN%/plugins"}
providers:
  espeak: {plugin: voxgate-espeak, managed: true}
  elevenlabs: {plugin: voxgate-elevenlabs, base_url: "`+el.BaseURL()+`", api_key: "`+elevenlabs.Key+`", managed: true}
  cartesia: {plugin: voxgate-cartesia, base_url: "`+ca.BaseURL()+`", api_key: "`+cartesia.Key+`", managed: true}
orgs:
  acme:
    providers:
      espeak: {enabled: true}
      elevenlabs: {enabled: true}
      cartesia: {enabled: true}
`)
	words := func(env harness.TimestampsEnvelope) string {
		var w []string
		for _, t := range env.Timestamps {
			w = append(w, t.Text)
		}
		return strings.Join(w, " ")
	}

	// eSpeak reads tags out: they are removed.
	text := "[laughs] That was funny, [whispers] really funny."
	r := tg.Do("POST", "/v1/audio/speech/with-timestamps", "acme", harness.SpeechBody(text))
	var env harness.TimestampsEnvelope
	r.JSON(t, &env)
	want := []string{
		"Audio tag [laughs] is not supported by espeak/espeak-ng and was removed.",
		"Audio tag [whispers] is not supported by espeak/espeak-ng and was removed.",
	}
	if r.Status != 200 || strings.Join(env.Warnings, "|") != strings.Join(want, "|") || words(env) != "That was funny really funny" {
		t.Errorf("espeak: %d, warnings %q, words %q", r.Status, env.Warnings, words(env))
	}
	// The clip is the clip of the text without its tags (to within a
	// few samples: eSpeak's output varies by a sample or two between
	// runs); a tag read out would add half a second.
	plain := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody("That was funny, really funny."))
	tagged := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody(text))
	if d := len(plain.Body) - len(tagged.Body); d < -200 || d > 200 {
		t.Errorf("the tags changed the audio: %d vs %d bytes", len(plain.Body), len(tagged.Body))
	}
	if w := tagged.Header.Values("X-Voxgate-Warning"); strings.Join(w, "|") != strings.Join(want, "|") {
		t.Errorf("clip warnings %q", w)
	}
	// And a stream says so in its headers.
	req, _ := http.NewRequest("POST", tg.Base+"/v1/audio/speech/stream", bytes.NewReader(harness.MustJSON(harness.SpeechBody(text))))
	req.Header.Set("Authorization", "Bearer "+tg.Keys["acme"])
	req.Header.Set("Content-Type", "application/json")
	resp, err := tg.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if w := resp.Header.Values("X-Voxgate-Warning"); resp.StatusCode != 200 || len(w) != 2 {
		t.Errorf("stream: %d, warnings %q", resp.StatusCode, w)
	}

	// Eleven v3 performs every tag: the text reaches ElevenLabs as
	// written, no warning, and the tags are not words.
	r = tg.Do("POST", "/v1/audio/speech/with-timestamps", "acme", map[string]any{"model": "elevenlabs/eleven_v3", "voice": elevenlabs.VoiceRachel, "text": text})
	env = harness.TimestampsEnvelope{}
	r.JSON(t, &env)
	if r.Status != 200 || len(env.Warnings) != 0 || words(env) != "That was funny, really funny." {
		t.Errorf("eleven_v3: %d, warnings %q, words %q", r.Status, env.Warnings, words(env))
	}
	if last, _ := el.LastRequest(); !strings.Contains(string(last.Body), `"[laughs] That was funny, [whispers] really funny."`) {
		t.Errorf("ElevenLabs received %s", last.Body)
	}
	// A text that is only a tag the model performs is a laugh, with no
	// words to time.
	r = tg.Do("POST", "/v1/audio/speech/with-timestamps", "acme", map[string]any{"model": "elevenlabs/eleven_v3", "voice": elevenlabs.VoiceRachel, "text": "[laughs]"})
	env = harness.TimestampsEnvelope{}
	r.JSON(t, &env)
	if r.Status != 200 || len(env.Timestamps) != 0 || len(env.Warnings) != 0 {
		t.Errorf("a lone performed tag: %d, %+v, %q", r.Status, env.Timestamps, env.Warnings)
	}
	// Multilingual v2 performs none.
	r = tg.Do("POST", "/v1/audio/speech/with-timestamps", "acme", map[string]any{"model": "elevenlabs/eleven_multilingual_v2", "voice": elevenlabs.VoiceRachel, "text": text})
	env = harness.TimestampsEnvelope{}
	r.JSON(t, &env)
	if len(env.Warnings) != 2 || !strings.Contains(env.Warnings[0], "elevenlabs/eleven_multilingual_v2") {
		t.Errorf("multilingual v2 warnings %q", env.Warnings)
	}

	// Sonic 3 performs [laughter] only.
	r = tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "cartesia/sonic-3", "voice": cartesia.VoiceKatie, "text": "Ha [laughter] and [sighs] so."})
	if w := r.Header.Values("X-Voxgate-Warning"); r.Status != 200 || len(w) != 1 || w[0] != "Audio tag [sighs] is not supported by cartesia/sonic-3 and was removed." {
		t.Errorf("sonic-3: %d, warnings %q", r.Status, w)
	}
	if last, _ := ca.LastRequest(); !strings.Contains(string(last.Body), `"Ha [laughter] and so."`) {
		t.Errorf("Cartesia received %s", last.Body)
	}

	// The catalog says which tags each model performs.
	var cat struct {
		Data []struct {
			ID     string
			Models []struct {
				ID        string   `json:"id"`
				AudioTags []string `json:"audio_tags"`
			}
		}
	}
	tg.Do("GET", "/v1/providers", "acme", nil).JSON(t, &cat)
	tags := map[string]string{}
	for _, p := range cat.Data {
		for _, m := range p.Models {
			tags[p.ID+"/"+m.ID] = strings.Join(m.AudioTags, ",")
		}
	}
	if tags["elevenlabs/eleven_v3"] != "*" || tags["cartesia/sonic-3"] != "laughter" || tags["espeak/espeak-ng"] != "" {
		t.Errorf("catalog audio tags %v", tags)
	}
}
