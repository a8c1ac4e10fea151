package cloud

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/cartesia"
	"github.com/voxgate/voxgate/internal/fakeupstream/elevenlabs"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestCloudPhonemeRules: through the gateway, an ElevenLabs model that
// applies phoneme rules gets the organization's phoneme rules as a PLS
// lexicon the fake accepts, uploaded once for the key and named by its
// locator on every request, and again once the dictionary changes; a
// model that skips phoneme rules gets the stand-in and the answer a
// warning.
func TestCloudPhonemeRules(t *testing.T) {
	t.Parallel()
	c := harness.StartCloud(t)
	voice := c.ElevenLabs.VoiceIDs()[0]
	r := c.Do("POST", "/v1/pronunciation-dictionaries/default/rules", "acme", map[string]any{"word": "Nguyen", "kind": "phoneme", "alphabet": "cmu", "phoneme": "W IH1 N", "replacement": "win"})
	if r.Status != 201 {
		t.Fatalf("rule: %d %s", r.Status, r.Body)
	}
	var rule struct {
		ID string `json:"id"`
	}
	r.JSON(t, &rule)
	speak := func(model, text string) harness.TimestampsEnvelope {
		t.Helper()
		r := c.Do("POST", "/v1/audio/speech/with-timestamps", "acme", map[string]any{"model": "elevenlabs/" + model, "voice": voice, "text": text})
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", model, r.Status, r.Body)
		}
		var env harness.TimestampsEnvelope
		r.JSON(t, &env)
		return env
	}
	for _, text := range []string{"Mister Nguyen.", "Nguyen again.", "And Nguyen once more."} {
		if env := speak("eleven_flash_v2", text); len(env.Warnings) != 0 {
			t.Errorf("warnings %q", env.Warnings)
		}
	}
	if n := c.ElevenLabs.Uploads(harness.AcmeElevenKey); n != 1 {
		t.Errorf("%d uploads for three requests, want 1", n)
	}
	locs := c.ElevenLabs.Locators()
	if len(locs) < 3 || len(locs[len(locs)-1]) != 1 || locs[len(locs)-1][0].ID != locs[len(locs)-3][0].ID {
		t.Fatalf("locators %+v", locs)
	}
	doc := c.ElevenLabs.Lexicon(locs[len(locs)-1][0].ID)
	if _, err := elevenlabs.CheckPLS(doc); err != nil || !strings.Contains(string(doc), "wˈɪn") {
		t.Errorf("uploaded lexicon (%v):\n%s", err, doc)
	}
	last, _ := c.ElevenLabs.LastRequest()
	if !strings.Contains(string(last.Body), `"text":"And Nguyen once more."`) {
		t.Errorf("the word did not reach ElevenLabs as written: %s", last.Body)
	}

	// A text without the word names no lexicon.
	speak("eleven_flash_v2", "Nobody here.")
	if locs := c.ElevenLabs.Locators(); locs[len(locs)-1] != nil {
		t.Errorf("a text without a ruled word named lexicons %+v", locs[len(locs)-1])
	}

	// A changed rule is a new lexicon version, uploaded once more.
	if r := c.Do("PATCH", "/v1/pronunciation-dictionaries/default/rules/"+rule.ID, "acme", map[string]any{"phoneme": "N W IH1 N"}); r.Status != 200 {
		t.Fatalf("change: %d %s", r.Status, r.Body)
	}
	speak("eleven_flash_v2", "Mister Nguyen.")
	if n := c.ElevenLabs.Uploads(harness.AcmeElevenKey); n != 2 {
		t.Errorf("%d uploads after a change, want 2", n)
	}

	// Multilingual v2 skips phoneme rules: the stand-in, with a warning.
	env := speak("eleven_multilingual_v2", "Mister Nguyen.")
	if len(env.Warnings) != 1 || !strings.Contains(env.Warnings[0], `"Nguyen"`) {
		t.Errorf("warnings %q, want one naming Nguyen", env.Warnings)
	}
	last, _ = c.ElevenLabs.LastRequest()
	if !strings.Contains(string(last.Body), `"text":"Mister win."`) || strings.Contains(string(last.Body), "pronunciation_dictionary_locators") {
		t.Errorf("multilingual v2 got %s", last.Body)
	}
}

// TestCartesiaPhonemeRules: through the gateway, a Sonic model gets a
// phoneme rule as Cartesia's inline custom pronunciation, which its fake
// holds to the documented <<p|h|o|n>> form (it refuses anything else),
// and the rest of the text as written.
func TestCartesiaPhonemeRules(t *testing.T) {
	t.Parallel()
	ca := cartesia.New(t, fakeupstream.Options{})
	tg := harness.Start(t, `
server:
  listen: 127.0.0.1:0
storage:
  path: %DIR%/voxgate.db
plugins:
  dir: %BIN%/plugins
providers:
  cartesia:
    plugin: voxgate-cartesia
    base_url: `+ca.BaseURL()+`
    api_key: `+cartesia.Key+`
    managed: true
orgs:
  acme:
    providers:
      cartesia: {enabled: true}
`)
	tg.Secrets = append(tg.Secrets, cartesia.Key)
	if r := tg.Do("POST", "/v1/pronunciation-dictionaries/default/rules", "acme", map[string]any{"word": "Nguyen", "kind": "phoneme", "alphabet": "cmu", "phoneme": "W IH1 N"}); r.Status != 201 {
		t.Fatalf("rule: %d %s", r.Status, r.Body)
	}
	r := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "cartesia/sonic-2", "voice": cartesia.VoiceKatie, "text": "Mister Nguyen <<is>> here."})
	if r.Status != 200 {
		t.Fatalf("speech: %d %s", r.Status, r.Body)
	}
	last, _ := ca.LastRequest()
	var body struct {
		Transcript string `json:"transcript"`
	}
	if err := json.Unmarshal(last.Body, &body); err != nil {
		t.Fatal(err)
	}
	// The caller's own "<<" is broken up, so only the rule's group is a
	// pronunciation.
	if !strings.Contains(body.Transcript, "Mister <<w|ˈ|ɪ|n>> ") || strings.Count(body.Transcript, "<<") != 1 {
		t.Errorf("Cartesia got transcript %q", body.Transcript)
	}
}
