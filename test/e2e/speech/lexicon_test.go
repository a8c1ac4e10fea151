package speech

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestPhonemeRulesOnESpeak checks phoneme rules by ear, without ears: on
// eSpeak, which renders deterministically, a phoneme rule's audio is
// byte for byte the audio of the same phonemes given to eSpeak directly in
// its own notation ([[...]]), and differs from the default pronunciation;
// word timestamps still report the words as written; a rule in a stored
// dictionary speaks the same as an inline one.
func TestPhonemeRulesOnESpeak(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.SpeechConfig)
	espeak := sdktest.StartPlugin(t, filepath.Join(harness.BinDir(t), "plugins", "voxgate-espeak"))
	direct := func(text string) []byte {
		t.Helper()
		resp, err := espeak.Synthesize(context.Background(), &sdk.SynthesizeRequest{Model: "espeak-ng", Voice: "en", Text: text,
			Format: sdk.FormatPCM, Markup: sdk.MarkupESpeak})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Audio
	}
	const text = "Mister Nguyen is here."
	speak := func(extra ...any) []byte {
		t.Helper()
		r := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody(text, append([]any{"output", map[string]any{"format": "pcm"}}, extra...)...))
		if r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
		return r.Body
	}
	rule := func(alphabet, phoneme string) any {
		return map[string]any{"rules": []any{map[string]any{"word": "nguyen", "kind": "phoneme", "alphabet": alphabet, "phoneme": phoneme}}}
	}
	plain := speak()
	for _, c := range []struct{ alphabet, phoneme, espeak string }{
		{"ipa", "ŋwˈɪn", "Nw'In"},
		{"cmu", "N W IH1 N", "nw'In"},
		{"ipa", "ˈwɪn", "'wIn"},
	} {
		got := speak("pronunciations", rule(c.alphabet, c.phoneme))
		want := direct("Mister [[" + c.espeak + "]] is here.")
		if !bytes.Equal(got, want) {
			t.Errorf("%s %q: the rule's audio (%d bytes) is not eSpeak's for [[%s]] (%d bytes)", c.alphabet, c.phoneme, len(got), c.espeak, len(want))
		}
		if bytes.Equal(got, plain) {
			t.Errorf("%s %q: the rule's audio is the default pronunciation's", c.alphabet, c.phoneme)
		}
	}

	// Timestamps name the words as written.
	r := tg.Do("POST", "/v1/audio/speech/with-timestamps", "acme", harness.SpeechBody(text, "pronunciations", rule("ipa", "ŋwˈɪn")))
	var env harness.TimestampsEnvelope
	r.JSON(t, &env)
	var words []string
	for _, ts := range env.Timestamps {
		words = append(words, ts.Text)
	}
	if strings.Join(words, " ") != "Mister Nguyen is here" || len(env.Warnings) != 0 {
		t.Errorf("timestamps %q warnings %q, want the words as written and no warning", words, env.Warnings)
	}

	// The same rule from the organization's default dictionary.
	if c := tg.Do("POST", "/v1/pronunciation-dictionaries/default/rules", "acme", map[string]any{"word": "Nguyen", "kind": "phoneme", "alphabet": "ipa", "phoneme": "ŋwˈɪn"}); c.Status != 201 {
		t.Fatalf("stored rule: %d %s", c.Status, c.Body)
	}
	if got := speak(); !bytes.Equal(got, direct("Mister [[Nw'In]] is here.")) {
		t.Error("a stored phoneme rule speaks otherwise than the inline one")
	}
}

// TestPhonemeRuleApproximated: a model that takes no phonemes speaks a
// phoneme rule's stand-in text, and the answer says which words it could
// only approximate.
func TestPhonemeRuleApproximated(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.SpeechConfig)
	r := tg.Do("POST", "/v1/audio/speech/with-timestamps", "acme", map[string]any{"model": "testkit/test", "voice": "alpha", "text": "call Nguyen now",
		"pronunciations": map[string]any{"rules": []any{map[string]any{"word": "Nguyen", "kind": "phoneme", "alphabet": "ipa", "phoneme": "ŋwɪn", "replacement": "win"}}}})
	var env harness.TimestampsEnvelope
	r.JSON(t, &env)
	if len(env.Warnings) != 1 || !strings.Contains(env.Warnings[0], `"Nguyen"`) {
		t.Errorf("warnings %q, want one naming Nguyen", env.Warnings)
	}
	var words []string
	for _, ts := range env.Timestamps {
		words = append(words, ts.Text)
	}
	if strings.Join(words, " ") != "call Nguyen now" {
		t.Errorf("timestamps %q", words)
	}
}

// TestPLSImportExport: a PLS document posted with its media type becomes a
// dictionary whose rules speak; the dictionary exports as PLS that imports
// back to the same rules; a DTD (entity expansion) or an invalid rule is
// refused with nothing stored.
func TestPLSImportExport(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.SpeechConfig)
	const pls = `<?xml version="1.0" encoding="UTF-8"?>
<lexicon version="1.0" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon" alphabet="ipa" xml:lang="en-US">
  <lexeme><grapheme>Nguyen</grapheme><phoneme>ŋwˈɪn</phoneme></lexeme>
  <lexeme><grapheme>tomato</grapheme><phoneme alphabet="x-cmu">T AH0 M AA1 T OW2</phoneme></lexeme>
  <lexeme><grapheme>AWS</grapheme><alias>A W S</alias></lexeme>
</lexicon>`
	ct := []string{"Content-Type", "application/pls+xml"}
	r := tg.Do("POST", "/v1/pronunciation-dictionaries?name=Imported", "acme", pls, ct...)
	if r.Status != 201 {
		t.Fatalf("import: %d %s", r.Status, r.Body)
	}
	var d struct {
		ID        string `json:"id"`
		RuleCount int    `json:"rule_count"`
	}
	r.JSON(t, &d)
	if d.RuleCount != 3 {
		t.Errorf("imported %d rules, want 3", d.RuleCount)
	}
	rules := tg.Do("GET", "/v1/pronunciation-dictionaries/"+d.ID+"/rules", "acme", nil)
	for _, want := range []string{`"kind":"phoneme"`, `"alphabet":"cmu"`, `"phoneme":"T AH0 M AA1 T OW2"`, `"kind":"alias"`} {
		if !strings.Contains(string(rules.Body), want) {
			t.Errorf("rules lack %s: %s", want, rules.Body)
		}
	}
	exp := tg.Do("GET", "/v1/pronunciation-dictionaries/"+d.ID, "acme", nil, "Accept", "application/pls+xml")
	if exp.Status != 200 || !strings.HasPrefix(exp.Header.Get("Content-Type"), "application/pls+xml") {
		t.Fatalf("export: %d %q %s", exp.Status, exp.Header.Get("Content-Type"), exp.Body)
	}
	again := tg.Do("POST", "/v1/pronunciation-dictionaries?name=Again", "acme", string(exp.Body), ct...)
	if again.Status != 201 {
		t.Fatalf("re-import of the export: %d %s", again.Status, again.Body)
	}
	var d2 struct {
		ID string `json:"id"`
	}
	again.JSON(t, &d2)
	rules2 := tg.Do("GET", "/v1/pronunciation-dictionaries/"+d2.ID+"/rules", "acme", nil)
	if strip(rules2.Body, d2.ID) != strip(rules.Body, d.ID) {
		t.Errorf("export and import changed the rules:\n%s\n%s", rules.Body, rules2.Body)
	}
	// JSON stays the default answer.
	if j := tg.Do("GET", "/v1/pronunciation-dictionaries/"+d.ID, "acme", nil); !strings.HasPrefix(j.Header.Get("Content-Type"), "application/json") {
		t.Errorf("without Accept: %q", j.Header.Get("Content-Type"))
	}
	// The imported rules speak: the dictionary listed by id.
	r = tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody("Mister Nguyen", "output", map[string]any{"format": "pcm"},
		"pronunciations", map[string]any{"dictionaryIds": []string{d.ID}}))
	inline := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody("Mister Nguyen", "output", map[string]any{"format": "pcm"},
		"pronunciations", map[string]any{"rules": []any{map[string]any{"word": "Nguyen", "kind": "phoneme", "alphabet": "ipa", "phoneme": "ŋwˈɪn"}}}))
	if r.Status != 200 || !bytes.Equal(r.Body, inline.Body) {
		t.Errorf("the imported rule speaks otherwise than the same inline rule (%d)", r.Status)
	}

	before := tg.Do("GET", "/v1/pronunciation-dictionaries", "acme", nil)
	for name, doc := range map[string]string{
		"entity expansion": `<?xml version="1.0"?><!DOCTYPE lexicon [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;">]>` +
			`<lexicon version="1.0" xmlns="http://www.w3.org/2005/01/pronunciation-lexicon" alphabet="ipa"><lexeme><grapheme>&b;</grapheme><alias>x</alias></lexeme></lexicon>`,
		"external entity": `<?xml version="1.0"?><!DOCTYPE lexicon SYSTEM "file:///etc/passwd"><lexicon version="1.0" alphabet="ipa"/>`,
		"invalid phoneme": strings.Replace(pls, "ŋwˈɪn", "ng-win!", 1),
		"same word twice": strings.Replace(pls, "<grapheme>AWS</grapheme>", "<grapheme>nguyen</grapheme>", 1),
	} {
		p := tg.Do("POST", "/v1/pronunciation-dictionaries?name="+strings.ReplaceAll(name, " ", "-"), "acme", doc, ct...).Problem(t, 400, "validation_failed")
		if len(p.Validation) == 0 {
			t.Errorf("%s: no validation entry: %+v", name, p)
		}
	}
	big := tg.Do("POST", "/v1/pronunciation-dictionaries?name=big", "acme", strings.Repeat(" ", 1<<20+1), ct...)
	if big.Status != 413 {
		t.Errorf("an oversized document: %d %s", big.Status, big.Body)
	}
	if after := tg.Do("GET", "/v1/pronunciation-dictionaries", "acme", nil); string(after.Body) != string(before.Body) {
		t.Errorf("refused imports left dictionaries behind:\n%s\n%s", before.Body, after.Body)
	}
}

// strip removes what differs between two dictionaries' rule lists that
// hold the same rules: ids and times.
func strip(body []byte, dictID string) string {
	var page struct {
		Data []map[string]any `json:"data"`
	}
	_ = json.Unmarshal(body, &page)
	var out []string
	for _, r := range page.Data {
		delete(r, "id")
		delete(r, "dictionary_id")
		delete(r, "created_at")
		delete(r, "updated_at")
		b, _ := json.Marshal(r)
		out = append(out, string(b))
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}
