package alignment

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/cartesia"
	"github.com/voxgate/voxgate/internal/fakeupstream/elevenlabs"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// boundaryErrors returns |error| of every word start and end, in seconds.
func boundaryErrors(t *testing.T, truth []fakeupstream.Span, got []struct {
	Text  string  `json:"text"`
	Start float64 `json:"start"`
	End   float64 `json:"end"`
}) []float64 {
	t.Helper()
	if len(got) != len(truth) {
		t.Fatalf("%d timestamps for %d words: %+v", len(got), len(truth), got)
	}
	var errs []float64
	prev := 0.0
	for i, w := range got {
		if w.Text != truth[i].Text {
			t.Fatalf("word %d is %q, want %q", i, w.Text, truth[i].Text)
		}
		if w.Start < prev || w.End < w.Start {
			t.Fatalf("word %d [%g, %g] out of order (previous end %g)", i, w.Start, w.End, prev)
		}
		prev = w.End
		errs = append(errs, math.Abs(w.Start-truth[i].Start), math.Abs(w.End-truth[i].End))
	}
	return errs
}

func quantile(errs []float64, q float64) float64 {
	e := slices.Clone(errs)
	slices.Sort(e)
	return e[min(int(q*float64(len(e))), len(e)-1)]
}

// alignmentTexts are what the cloud fakes say in the alignment tests.
var alignmentTexts = []string{
	"Every morning the old lighthouse keeper climbed the spiral stairs and polished the great lens before the sun rose over the harbour.",
	"Please remember to bring three things tomorrow: your passport, a pen, and the signed contract.",
	"She asked whether the train was late again, and he said that it had been late every day this week.",
}

// TestAlignedTimestampsFromCloudProviders: the OpenAI fake (no timestamps
// of its own) and the ElevenLabs and Cartesia fakes (with providers'
// timestamps: aligned, so their known alignments are the truth) speak
// real speech in voices and speeds unlike the gateway's references; the
// gateway's aligned timestamps must land within the bounds
// (median <= 40 ms, p95 <= 120 ms), say where they came from, and warn.
func TestAlignedTimestampsFromCloudProviders(t *testing.T) {
	t.Parallel()
	ov, ev, cv := harness.NewESpeakVoice(t, "en-us+f2", 1.2), harness.NewESpeakVoice(t, "en-gb-x-rp", 0.9), harness.NewESpeakVoice(t, "en-us+m3", 1.4)
	oai := openai.New(t, fakeupstream.Options{Voice: ov})
	el := elevenlabs.New(t, fakeupstream.Options{Voice: ev})
	ca := cartesia.New(t, fakeupstream.Options{Voice: cv})
	tg := harness.Start(t, `
server: {listen: "127.0.0.1:0"}
storage: {path: "%DIR%/voxgate.db"}
plugins: {dir: "%BIN%/plugins"}
providers:
  espeak: {plugin: voxgate-espeak, instances: 2}
  openai: {plugin: voxgate-openai, base_url: "`+oai.BaseURL()+`", api_key: "`+openai.Key+`", managed: true}
  elevenlabs: {plugin: voxgate-elevenlabs, base_url: "`+el.BaseURL()+`", api_key: "`+elevenlabs.Key+`", managed: true, timestamps: aligned}
  cartesia: {plugin: voxgate-cartesia, base_url: "`+ca.BaseURL()+`", api_key: "`+cartesia.Key+`", managed: true, timestamps: aligned}
orgs:
  acme:
    providers:
      openai: {enabled: true}
      elevenlabs: {enabled: true}
      cartesia: {enabled: true}
`)
	cases := []struct {
		name  string
		body  func(text string) map[string]any
		voice *harness.ESpeakVoice
	}{
		{"openai", func(text string) map[string]any {
			return map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": text}
		}, ov},
		{"elevenlabs", func(text string) map[string]any {
			return map[string]any{"model": "elevenlabs/eleven_multilingual_v2", "voice": elevenlabs.VoiceRachel, "text": text}
		}, ev},
		{"cartesia", func(text string) map[string]any {
			return map[string]any{"model": "cartesia/sonic-2", "voice": cartesia.VoiceKatie, "text": text}
		}, cv},
	}
	var all []float64
	for _, c := range cases {
		var errs []float64
		for _, text := range alignmentTexts {
			r := tg.Do("POST", "/v1/audio/speech/with-timestamps", "acme", c.body(text))
			if r.Status != 200 {
				t.Fatalf("%s: %d %.300s", c.name, r.Status, r.Body)
			}
			var env harness.TimestampsEnvelope
			r.JSON(t, &env)
			meta := env.ProviderMetadata.Voxgate
			if meta.TimestampsSource != "aligned" || meta.AlignmentMatch <= 0 || meta.AlignmentMatch > 0.93 {
				t.Errorf("%s: metadata %+v", c.name, meta)
			}
			if len(env.Warnings) != 1 || !strings.Contains(env.Warnings[0], "aligned by the gateway") {
				t.Errorf("%s: warnings %q", c.name, env.Warnings)
			}
			errs = append(errs, boundaryErrors(t, c.voice.Truth(text), env.Timestamps)...)
		}
		t.Logf("%s: %d boundaries: median %.0f ms, p90 %.0f ms, p95 %.0f ms, max %.0f ms", c.name, len(errs),
			1000*quantile(errs, 0.5), 1000*quantile(errs, 0.9), 1000*quantile(errs, 0.95), 1000*quantile(errs, 1))
		if quantile(errs, 0.5) > 0.040 || quantile(errs, 0.95) > 0.120 {
			t.Errorf("%s: median %.0f ms, p95 %.0f ms; want <= 40 and <= 120", c.name, 1000*quantile(errs, 0.5), 1000*quantile(errs, 0.95))
		}
		all = append(all, errs...)
	}
	t.Logf("all: %d boundaries: median %.0f ms, p95 %.0f ms", len(all), 1000*quantile(all, 0.5), 1000*quantile(all, 0.95))

	// A conversation whose turns need alignment: one OpenAI voice and
	// one ElevenLabs voice, each turn timed on the conversation's
	// timeline.
	r := tg.Do("POST", "/v1/audio/conversation/with-timestamps", "acme", map[string]any{
		"gapMs": 400, "captions": "vtt",
		"turns": []any{
			map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": alignmentTexts[1]},
			map[string]any{"model": "elevenlabs/eleven_multilingual_v2", "voice": elevenlabs.VoiceRachel, "text": alignmentTexts[2]},
		}})
	if r.Status != 200 {
		t.Fatalf("conversation: %d %.300s", r.Status, r.Body)
	}
	var conv struct {
		Timestamps []struct {
			Text       string
			Start, End float64
			TurnIndex  int
		}
		Warnings         []string
		Captions         string
		ProviderMetadata struct {
			Voxgate struct {
				TimestampsSource string `json:"timestamps_source"`
				Turns            []struct {
					TimestampsSource string  `json:"timestamps_source"`
					Start            float64 `json:"start"`
				}
			}
		}
	}
	r.JSON(t, &conv)
	if conv.ProviderMetadata.Voxgate.TimestampsSource != "aligned" || len(conv.ProviderMetadata.Voxgate.Turns) != 2 {
		t.Fatalf("conversation metadata %+v", conv.ProviderMetadata)
	}
	turnStart := conv.ProviderMetadata.Voxgate.Turns[1].Start
	var second []float64
	for i, w := range conv.Timestamps {
		if w.TurnIndex == 1 {
			second = append(second, w.Start-turnStart)
		}
		if i > 0 && w.Start < conv.Timestamps[i-1].End {
			t.Fatalf("conversation words out of order at %d", i)
		}
	}
	truth := ev.Truth(alignmentTexts[2])
	if len(second) != len(truth) {
		t.Fatalf("second turn: %d words, want %d", len(second), len(truth))
	}
	for i, s := range second {
		if math.Abs(s-truth[i].Start) > 0.2 {
			t.Errorf("second turn word %d starts at %.3f, truth %.3f", i, s, truth[i].Start)
		}
	}
	if !strings.HasPrefix(conv.Captions, "WEBVTT\n\n1\n") || !strings.Contains(conv.Captions, "a pen, and the signed contract.") || strings.Contains(conv.Captions, "contract. She") {
		t.Errorf("conversation captions %q", conv.Captions)
	}
}

// funcVoice is a fake's voice made of a function.
type funcVoice func(text string) ([]int16, int, []fakeupstream.Span, error)

func (f funcVoice) Speak(text string, _ float64) ([]int16, int, []fakeupstream.Span, error) {
	return f(text)
}

// TestTimestampsWhereNoneCanBeMade covers what the aligner must not guess
// and when alignment has nothing to work with:
//   - a clip that does not say the text (the OpenAI fake's tone; German
//     speech for an English text; silence) gets no timestamps and a
//     warning saying why, while German speech of a German text aligns
//     (the reference follows the text's language);
//   - the clip endpoint never aligns (no reference is rendered for it);
//   - without a reference provider, models without timestamps answer 501
//     as before, and the catalog says so.
func TestTimestampsWhereNoneCanBeMade(t *testing.T) {
	t.Parallel()
	de := harness.NewESpeakVoice(t, "de", 1)
	german := "Der schnelle braune Fuchs springt über den faulen Hund und läuft dann schnell in den dunklen Wald hinein."
	elsewhere := funcVoice(func(string) ([]int16, int, []fakeupstream.Span, error) {
		return de.Speak(german, 1) // whatever it is asked, it says this
	})
	silent := funcVoice(func(string) ([]int16, int, []fakeupstream.Span, error) {
		return make([]int16, 48000), 24000, nil, nil
	})
	var fakes [4]*openai.Server
	for i, v := range []fakeupstream.Voice{nil, elsewhere, silent, de} {
		fakes[i] = openai.New(t, fakeupstream.Options{Voice: v})
	}
	tg := harness.Start(t, fmt.Sprintf(`
server: {listen: "127.0.0.1:0"}
storage: {path: "%%DIR%%/voxgate.db"}
plugins: {dir: "%%BIN%%/plugins"}
providers:
  espeak: {plugin: voxgate-espeak}
  tone: {plugin: voxgate-openai, base_url: "%[1]s", api_key: "%[2]s", managed: true}
  elsewhere: {plugin: voxgate-openai, base_url: "%[3]s", api_key: "%[2]s", managed: true}
  silent: {plugin: voxgate-openai, base_url: "%[4]s", api_key: "%[2]s", managed: true}
  deutsch: {plugin: voxgate-openai, base_url: "%[5]s", api_key: "%[2]s", managed: true}
orgs:
  acme:
    providers:
      tone: {enabled: true}
      elsewhere: {enabled: true}
      silent: {enabled: true}
      deutsch: {enabled: true}
`, fakes[0].BaseURL(), openai.Key, fakes[1].BaseURL(), fakes[2].BaseURL(), fakes[3].BaseURL()))
	for _, c := range []struct{ model, text, warning string }{
		{"tone/tts-1", alignmentTexts[0], "does not follow the text"},
		{"elsewhere/tts-1", alignmentTexts[0], "does not follow the text"},
		{"silent/tts-1", alignmentTexts[0], "holds no speech"},
		{"deutsch/tts-1", german, ""},
	} {
		r := tg.Do("POST", "/v1/audio/speech/with-timestamps", "acme", map[string]any{"model": c.model, "voice": "alloy", "text": c.text})
		var env harness.TimestampsEnvelope
		r.JSON(t, &env)
		if c.warning == "" {
			if r.Status != 200 || len(env.Timestamps) != len(strings.Fields(c.text)) || env.ProviderMetadata.Voxgate.TimestampsSource != "aligned" ||
				!strings.HasPrefix(env.ProviderMetadata.Voxgate.AlignmentRef, "de") {
				t.Errorf("%s: %d, %d words, warnings %q", c.model, r.Status, len(env.Timestamps), env.Warnings)
			}
			continue
		}
		if r.Status != 200 || len(env.Timestamps) != 0 || env.ProviderMetadata.Voxgate.TimestampsSource != "" ||
			len(env.Warnings) != 1 || !strings.Contains(env.Warnings[0], c.warning) {
			t.Errorf("%s: %d, %d words, source %q, warnings %q", c.model, r.Status, len(env.Timestamps), env.ProviderMetadata.Voxgate.TimestampsSource, env.Warnings)
		}
	}

	// The clip endpoint never aligns.
	before := referenceCalls(t, tg)
	if before == 0 {
		t.Fatal("no reference was rendered for the with-timestamps requests")
	}
	if r := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "tone/tts-1", "voice": "alloy", "text": alignmentTexts[0]}); r.Status != 200 {
		t.Fatalf("clip: %d", r.Status)
	}
	if after := referenceCalls(t, tg); after != before {
		t.Errorf("the clip endpoint rendered %g references", after-before)
	}

	// No reference provider: 501, and the catalog says none.
	bare := harness.Start(t, `
server: {listen: "127.0.0.1:0"}
storage: {path: "%DIR%/voxgate.db"}
plugins: {dir: "%BIN%/plugins"}
providers:
  openai: {plugin: voxgate-openai, base_url: "`+fakes[0].BaseURL()+`", api_key: "`+openai.Key+`", managed: true}
orgs:
  acme:
    providers:
      openai: {enabled: true}
`)
	p := bare.Do("POST", "/v1/audio/speech/with-timestamps", "acme", map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "Hello."}).Problem(t, 503, "timestamps_unavailable")
	if !strings.Contains(p.Detail, "alignment.reference") {
		t.Errorf("detail %q", p.Detail)
	}
	// timestamps: auto takes the audio alone and says why; off asks for
	// none. Either way the envelope's timestamps are empty, not absent.
	for _, mode := range []string{"auto", "off"} {
		r := bare.Do("POST", "/v1/audio/speech/with-timestamps", "acme", map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "Hello.", "timestamps": mode})
		var env harness.TimestampsEnvelope
		r.JSON(t, &env)
		if r.Status != 200 || env.Audio == "" || env.Timestamps == nil || len(env.Timestamps) != 0 || env.ProviderMetadata.Voxgate.TimestampsSource != "none" {
			t.Errorf("timestamps %s: %d, %d words, source %q", mode, r.Status, len(env.Timestamps), env.ProviderMetadata.Voxgate.TimestampsSource)
		}
		if warned := len(env.Warnings) == 1 && strings.Contains(env.Warnings[0], "alignment.reference"); warned != (mode == "auto") {
			t.Errorf("timestamps %s: warnings %q", mode, env.Warnings)
		}
	}
	var cat struct {
		Data []struct {
			Models []struct {
				ID               string `json:"id"`
				TimestampsSource string `json:"timestamps_source"`
			}
		}
	}
	bare.Do("GET", "/v1/providers", "acme", nil).JSON(t, &cat)
	if src := cat.Data[0].Models[0].TimestampsSource; src != "none" {
		t.Errorf("catalog timestamps_source %q, want none", src)
	}
}

// TestReferenceFollowsTheVoiceLanguage: a French voice of the Cartesia
// fake (its voice list says "fr") reading a text whose words name no
// language is aligned against a French reference.
func TestReferenceFollowsTheVoiceLanguage(t *testing.T) {
	t.Parallel()
	ca := cartesia.New(t, fakeupstream.Options{Voice: harness.NewESpeakVoice(t, "fr", 1)})
	tg := harness.Start(t, `
server: {listen: "127.0.0.1:0"}
storage: {path: "%DIR%/voxgate.db"}
plugins: {dir: "%BIN%/plugins"}
providers:
  espeak: {plugin: voxgate-espeak}
  cartesia: {plugin: voxgate-cartesia, base_url: "`+ca.BaseURL()+`", api_key: "`+cartesia.Key+`", managed: true, timestamps: aligned}
orgs:
  acme:
    providers:
      cartesia: {enabled: true}
`)
	text := "Bonjour Marcel, merci beaucoup pour votre accueil chaleureux hier soir."
	r := tg.Do("POST", "/v1/audio/speech/with-timestamps", "acme", map[string]any{"model": "cartesia/sonic-2", "voice": cartesia.VoiceMarcel, "text": text})
	var env harness.TimestampsEnvelope
	r.JSON(t, &env)
	if meta := env.ProviderMetadata.Voxgate; r.Status != 200 || !strings.HasPrefix(meta.AlignmentRef, "fr") || len(env.Timestamps) != len(strings.Fields(text)) {
		t.Errorf("%d, metadata %+v, %d words, warnings %q", r.Status, meta, len(env.Timestamps), env.Warnings)
	}
}

// referenceCalls counts the reference renderings the gateway made, from
// its metrics.
func referenceCalls(t *testing.T, tg *harness.Gateway) float64 {
	t.Helper()
	total := 0.0
	for _, line := range strings.Split(string(tg.MetricsBody()), "\n") {
		if strings.HasPrefix(line, "voxgate_provider_calls_total{") && strings.Contains(line, `op="reference"`) {
			var v float64
			fmt.Sscanf(line[strings.LastIndexByte(line, ' ')+1:], "%g", &v)
			total += v
		}
	}
	return total
}

// TestSTTTimestamps: with alignment by speech-to-text, the OpenAI fake's
// transcription of its own speech times every word exactly (the fake
// finds the bursts of its tone), mapped onto the request's words.
func TestSTTTimestamps(t *testing.T) {
	t.Parallel()
	oai := openai.New(t, fakeupstream.Options{})
	tg := harness.Start(t, `
server: {listen: "127.0.0.1:0"}
storage: {path: "%DIR%/voxgate.db"}
plugins: {dir: "%BIN%/plugins"}
alignment:
  method: stt
  stt: {provider: openai}
providers:
  openai: {plugin: voxgate-openai, base_url: "`+oai.BaseURL()+`", api_key: "`+openai.Key+`", managed: true}
orgs:
  acme:
    providers:
      openai: {enabled: true}
`)
	text := "Well-known words, spoken twice: twice!"
	r := tg.Do("POST", "/v1/audio/speech/with-timestamps", "acme", map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": text, "captions": "srt"})
	if r.Status != 200 {
		t.Fatalf("%d %.300s", r.Status, r.Body)
	}
	var env harness.TimestampsEnvelope
	r.JSON(t, &env)
	want := fakeupstream.Speak(text, 1).Words
	if env.ProviderMetadata.Voxgate.TimestampsSource != "stt" || len(env.Timestamps) != len(want) {
		t.Fatalf("source %q, %d words: %+v", env.ProviderMetadata.Voxgate.TimestampsSource, len(env.Timestamps), env.Timestamps)
	}
	for i, w := range env.Timestamps {
		// The fake's burst times are rounded to 10 ms, like whisper's.
		if math.Abs(w.Start-want[i].Start) > 0.011 || math.Abs(w.End-want[i].End) > 0.011 || w.Text != strings.Trim(want[i].Text, ",:!") {
			t.Errorf("word %d %+v, want %+v", i, w, want[i])
		}
	}
	if len(env.Warnings) != 1 || !strings.Contains(env.Warnings[0], "speech-to-text transcription (openai/whisper-1)") {
		t.Errorf("warnings %q", env.Warnings)
	}
	if !strings.Contains(env.Captions, "Well-known words, spoken twice: twice!") {
		t.Errorf("captions %q", env.Captions)
	}
	req, _ := oai.LastRequest()
	form, err := fakeupstream.ParseMultipart(req)
	if err != nil || form.Value["prompt"][0] != text {
		t.Errorf("transcription request: %v %v", form, err)
	}
}
