package loudness

import (
	"context"
	"encoding/base64"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/config"
	"github.com/voxgate/voxgate/internal/testenv"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// ext is the file extension and FFmpeg input options of an answer's media
// type.
func ext(t *testing.T, mediaType string) (string, []string) {
	t.Helper()
	switch {
	case mediaType == "audio/wav":
		return "wav", nil
	case mediaType == "audio/mpeg":
		return "mp3", nil
	case mediaType == "audio/ogg" || strings.HasPrefix(mediaType, "audio/ogg"):
		return "opus", nil
	case mediaType == "audio/flac":
		return "flac", nil
	case strings.HasPrefix(mediaType, "audio/PCMU"):
		return "ul", []string{"-f", "mulaw", "-ar", "8000"}
	case strings.HasPrefix(mediaType, "audio/PCMA"):
		return "al", []string{"-f", "alaw", "-ar", "8000"}
	case strings.HasPrefix(mediaType, "audio/pcm;rate="):
		return "pcm", []string{"-f", "s16le", "-ar", strings.TrimPrefix(mediaType, "audio/pcm;rate=")}
	}
	t.Fatalf("no FFmpeg input for %q", mediaType)
	return "", nil
}

// judge has FFmpeg measure an answer and checks it against the target.
func judge(t *testing.T, what string, data []byte, mediaType string, integrated, truePeak float64) {
	t.Helper()
	e, in := ext(t, mediaType)
	got := testenv.FFmpegLoudness(t, data, e, in...)
	if math.Abs(got.Integrated-integrated) > 0.5 || got.TruePeak > truePeak+0.1 {
		t.Errorf("%s (%s): FFmpeg measures I=%.1f LUFS, true peak %.1f dBTP; want %g ±0.5 LUFS, at most %.1f dBTP",
			what, mediaType, got.Integrated, got.TruePeak, integrated, truePeak+0.1)
	}
}

func loudness(integrated, truePeak float64) map[string]any {
	return map[string]any{"integrated": integrated, "truePeak": truePeak}
}

// TestClipLoudness levels eSpeak clips of four languages at three speeds
// to several targets in every output format, and a with-timestamps answer.
func TestClipLoudness(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.ESpeakConfig)
	texts := map[string]string{
		"en": "Every voice at the loudness listeners expect, whichever provider speaks.",
		"de": "Zwölf Boxkämpfer jagen Viktor quer über den großen Sylter Deich.",
		"fr": "Portez ce vieux whisky au juge blond qui fume.",
		"es": "El veloz murciélago hindú comía feliz cardillo y kiwi.",
	}
	cases := []struct {
		voice    string
		speed    float64
		format   string
		lufs, tp float64
	}{
		{"en", 1, "wav", -16, -1},
		{"en", 1.6, "mp3", -16, -1},
		{"en", 0.8, "opus", -23, -1},
		{"de", 1, "flac", -23, -1},
		{"de", 1.6, "ulaw", -18, -2},
		{"de", 0.8, "mp3", -14, -1},
		{"fr", 1, "alaw", -16, -1},
		{"fr", 1.6, "opus", -16, -1.5},
		{"fr", 0.8, "pcm", -30, -6},
		{"es", 1, "mp3", -23, -3},
		{"es", 1.6, "wav", -14, -1},
		{"es", 0.8, "opus", -18, -1},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s-x%g-%s", c.voice, c.speed, c.format), func(t *testing.T) {
			body := harness.SpeechBody(texts[c.voice], "voice", c.voice, "speed", c.speed, "loudness", loudness(c.lufs, c.tp),
				"output", map[string]any{"format": c.format})
			r := tg.Do("POST", "/v1/audio/speech", "acme", body)
			if r.Status != 200 {
				t.Fatalf("%d %s", r.Status, r.Body)
			}
			judge(t, "clip", r.Body, r.Header.Get("Content-Type"), c.lufs, c.tp)
		})
	}
	r := tg.Do("POST", "/v1/audio/speech/with-timestamps", "acme", harness.SpeechBody(texts["en"], "loudness", loudness(-16, -1),
		"output", map[string]any{"format": "mp3"}))
	if r.Status != 200 {
		t.Fatalf("with-timestamps: %d %s", r.Status, r.Body)
	}
	var env harness.TimestampsEnvelope
	r.JSON(t, &env)
	b, err := base64.StdEncoding.DecodeString(env.Audio)
	if err != nil || len(env.Timestamps) == 0 {
		t.Fatalf("with-timestamps: %v, %d timestamps", err, len(env.Timestamps))
	}
	judge(t, "with-timestamps", b, env.MediaType, -16, -1)

	// Out of reach: -5 LUFS under -20 dBTP. The ceiling holds, the clip is
	// quieter than asked, and the answer says so.
	r = tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody(texts["en"], "loudness", loudness(-5, -20), "output", map[string]any{"format": "wav"}))
	if r.Status != 200 {
		t.Fatalf("out of reach: %d %s", r.Status, r.Body)
	}
	got := testenv.FFmpegLoudness(t, r.Body, "wav")
	if got.TruePeak > -19.9 || got.Integrated > -5.5 {
		t.Errorf("out of reach: FFmpeg measures I=%.1f LUFS, peak %.1f dBTP; want the peak at most -19.9 and the clip quieter than asked", got.Integrated, got.TruePeak)
	}
	if w := strings.Join(r.Header.Values("X-Voxgate-Warning"), "; "); !strings.Contains(w, "could not reach -5 LUFS") {
		t.Errorf("out of reach: warnings %q", w)
	}
}

// TestShortClipLoudness: a word shorter than the 400 ms gating block is
// measured ungated; FFmpeg, which gates, judges it played four times.
func TestShortClipLoudness(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.ESpeakConfig)
	r := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody("Yes", "speed", 2, "loudness", loudness(-18, -1),
		"output", map[string]any{"format": "wav"}))
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	got := testenv.FFmpegLoudness(t, r.Body, "wav", "-stream_loop", "3")
	if math.Abs(got.Integrated+18) > 0.5 || got.TruePeak > -0.9 {
		t.Errorf("short clip played four times: FFmpeg measures I=%.1f LUFS, peak %.1f dBTP; want -18 ±0.5, at most -0.9", got.Integrated, got.TruePeak)
	}
}

// TestConversationLoudness: a conversation of two eSpeak voices lands at
// the target as a whole and in every turn's own segment.
func TestConversationLoudness(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.ESpeakConfig)
	for _, format := range []string{"wav", "mp3", "opus"} {
		conv := map[string]any{"model": "espeak/espeak-ng", "loudness": loudness(-16, -1),
			"output": map[string]any{"format": format},
			"turns": []any{
				map[string]any{"voice": "en", "text": "Welcome to the show. Today we talk about loudness and why it matters."},
				map[string]any{"voice": "de", "text": "Danke schön. Lautheit ist wichtiger als der Spitzenpegel, sagt man."},
				map[string]any{"voice": "fr", "text": "Et en français, la voix reste au même niveau que les autres."},
			}}
		r := tg.Do("POST", "/v1/audio/conversation", "acme", conv)
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", format, r.Status, r.Body)
		}
		judge(t, format+" conversation", r.Body, r.Header.Get("Content-Type"), -16, -1)
		conv["split"] = true
		r = tg.Do("POST", "/v1/audio/conversation", "acme", conv)
		if r.Status != 200 {
			t.Fatalf("%s split: %d %s", format, r.Status, r.Body)
		}
		var env harness.ConversationEnvelope
		r.JSON(t, &env)
		if len(env.AudioSegments) != 3 {
			t.Fatalf("%s: %d segments", format, len(env.AudioSegments))
		}
		for _, s := range env.AudioSegments {
			b, err := base64.StdEncoding.DecodeString(s.Audio)
			if err != nil {
				t.Fatal(err)
			}
			judge(t, fmt.Sprintf("%s turn %d", format, s.TurnIndex), b, s.MediaType, -16, -1)
		}
	}
}

// TestCloudLoudness levels the OpenAI and ElevenLabs plugins' audio
// (from their fakes) alone and mixed in one conversation.
func TestCloudLoudness(t *testing.T) {
	t.Parallel()
	c := harness.StartCloud(t)
	voice := c.ElevenLabs.VoiceIDs()[0]
	for _, tc := range []struct {
		body   map[string]any
		format string
	}{
		{map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "Loudness from the cloud."}, "mp3"},
		{map[string]any{"model": "openai/gpt-4o-mini-tts", "voice": "alloy", "text": "Loudness from the cloud."}, "wav"},
		{map[string]any{"model": "elevenlabs/eleven_multilingual_v2", "voice": voice, "text": "Loudness from the cloud."}, "opus"},
		{map[string]any{"model": "elevenlabs/eleven_multilingual_v2", "voice": voice, "text": "Loudness from the cloud."}, "flac"},
	} {
		tc.body["loudness"] = loudness(-16, -1)
		tc.body["output"] = map[string]any{"format": tc.format}
		r := c.Do("POST", "/v1/audio/speech", "acme", tc.body)
		if r.Status != 200 {
			t.Fatalf("%v: %d %s", tc.body["model"], r.Status, r.Body)
		}
		judge(t, fmt.Sprint(tc.body["model"]), r.Body, r.Header.Get("Content-Type"), -16, -1)
	}
	conv := map[string]any{"loudness": loudness(-23, -1), "output": map[string]any{"format": "mp3"},
		"turns": []any{
			map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": "Welcome to the panel."},
			map[string]any{"model": "elevenlabs/eleven_multilingual_v2", "voice": voice, "text": "Thank you for having me."},
			map[string]any{"model": "espeak/espeak-ng", "voice": "en", "text": "And a word from the offline voice."},
		}}
	r := c.Do("POST", "/v1/audio/conversation", "acme", conv)
	if r.Status != 200 {
		t.Fatalf("mixed conversation: %d %s", r.Status, r.Body)
	}
	judge(t, "mixed conversation", r.Body, r.Header.Get("Content-Type"), -23, -1)
}

// TestOrgDefaultLoudness: an organization's default target applies to a
// request that asks for neither volumeDbfs nor loudness; the other
// organization's clips are untouched.
func TestOrgDefaultLoudness(t *testing.T) {
	t.Parallel()
	cfg := strings.Replace(harness.ESpeakConfig, "  acme:\n    providers: {espeak: {enabled: true}}\n",
		"  acme:\n    providers: {espeak: {enabled: true}}\n    loudness: {integrated: -26, true_peak: -2}\n", 1)
	if cfg == harness.ESpeakConfig {
		t.Fatal("the config's acme block moved")
	}
	tg := harness.Start(t, cfg)
	text := "The organization chose its loudness once, for every clip."
	r := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody(text, "output", map[string]any{"format": "wav"}))
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	judge(t, "acme's default", r.Body, r.Header.Get("Content-Type"), -26, -2)
	// The request's own target wins over the default.
	r = tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody(text, "loudness", loudness(-16, -1), "output", map[string]any{"format": "wav"}))
	judge(t, "acme's request", r.Body, r.Header.Get("Content-Type"), -16, -1)
	// globex has no default: eSpeak's own level passes through.
	r = tg.Do("POST", "/v1/audio/speech", "globex", harness.SpeechBody(text, "output", map[string]any{"format": "wav"}))
	e, in := ext(t, r.Header.Get("Content-Type"))
	if got := testenv.FFmpegLoudness(t, r.Body, e, in...); math.Abs(got.Integrated+26) < 0.5 {
		t.Errorf("globex's clip is at acme's default (%.1f LUFS)", got.Integrated)
	}
	// A bad default is refused at start, naming the key.
	bad := strings.NewReplacer("integrated: -26", "integrated: -3", "%DIR%", t.TempDir(), "%BIN%", harness.BinDir(t)).Replace(cfg)
	if _, err := config.Parse([]byte(bad), func(string) (string, bool) { return "", false }); err == nil || !strings.Contains(err.Error(), "orgs.acme.loudness.integrated") {
		t.Errorf("integrated -3 in gateway.yaml: %v", err)
	}
}

// TestLoudnessValidation: loudness with volumeDbfs, out of range, without
// integrated, bad on a stream too.
func TestLoudnessValidation(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.ESpeakConfig)
	text := "Validation."
	p := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody(text, "volumeDbfs", -20, "loudness", loudness(-16, -1))).Problem(t, 400, "validation_failed")
	harness.AssertPaths(t, p, "loudness")
	p = tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody(text, "loudness", loudness(-2, 1))).Problem(t, 400, "validation_failed")
	harness.AssertPaths(t, p, "loudness.integrated", "loudness.truePeak")
	p = tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody(text, "loudness", map[string]any{"truePeak": -1})).Problem(t, 400, "validation_failed")
	harness.AssertPaths(t, p, "loudness.integrated")
	p = tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody(text, "loudness", map[string]any{"integrated": -16, "peak": -1})).Problem(t, 400, "validation_failed")
	harness.AssertPaths(t, p, "loudness.peak")
	conv := map[string]any{"model": "espeak/espeak-ng", "volumeDbfs": -20, "loudness": loudness(-16, -1),
		"turns": []any{map[string]any{"voice": "en", "text": "One."}}}
	p = tg.Do("POST", "/v1/audio/conversation", "acme", conv).Problem(t, 400, "validation_failed")
	harness.AssertPaths(t, p, "loudness")
	p = tg.Do("POST", "/v1/audio/speech/stream", "acme", harness.SpeechBody(text, "loudness", loudness(-16, 3))).Problem(t, 400, "validation_failed")
	harness.AssertPaths(t, p, "loudness.truePeak")
}

// TestStreamLoudness: a stream of a voice the gateway has leveled clips
// of takes the gain from the learned estimate, corrected as it goes by
// what it has sent, and lands within ±1 LU at -16 LUFS (a fixed gain
// landed 1 to 2 LU low there); a voice never measured is leveled from
// its first seconds. The true peak, judged by FFmpeg, stays under the
// ceiling (the limiter holds oversampled peaks). eSpeak streams WAV by
// default, and so does its leveled stream.
func TestStreamLoudness(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.ESpeakConfig)
	text := "A stream cannot be measured before it is sent, so the gateway learns every voice's loudness from its earlier clips. " +
		"This sentence is long enough to be several seconds of speech, so that the stream is measured over many gating blocks."
	stream := func(voice string, lufs float64) {
		t.Helper()
		r := tg.Do("POST", "/v1/audio/speech/stream", "acme", harness.SpeechBody(text, "voice", voice, "loudness", loudness(lufs, -1)))
		if r.Status != 200 {
			t.Fatalf("stream %s: %d %s", voice, r.Status, r.Body)
		}
		if ct := r.Header.Get("Content-Type"); ct != "audio/wav" {
			t.Errorf("stream %s: Content-Type %q, want eSpeak's default audio/wav", voice, ct)
		}
		e, in := ext(t, r.Header.Get("Content-Type"))
		got := testenv.FFmpegLoudness(t, r.Body, e, in...)
		t.Logf("stream of %s at %g LUFS: FFmpeg measures I=%.2f LUFS, true peak %.2f dBTP", voice, lufs, got.Integrated, got.TruePeak)
		if math.Abs(got.Integrated-lufs) > 1 || got.TruePeak > -1+0.1 {
			t.Errorf("stream of %s: FFmpeg measures I=%.1f LUFS, true peak %.1f dBTP; want %g ±1 LUFS, at most -0.9 dBTP", voice, got.Integrated, got.TruePeak, lufs)
		}
	}
	// Learned: clips of "en" at -16 first.
	for _, s := range []string{"Learning the voice from a clip.", "And from another clip of the same voice, a little longer."} {
		if r := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody(s, "loudness", loudness(-16, -1))); r.Status != 200 {
			t.Fatalf("clip: %d %s", r.Status, r.Body)
		}
	}
	stream("en", -16)
	stream("en", -14)
	stream("en", -20)
	// Never measured: leveled from its first seconds.
	stream("de", -23)
}

// TestStreamLoudnessFormats: an organization's default target applies to
// streams, which are leveled and then encoded as asked: MP3, Opus and
// raw PCM streams of the ElevenLabs dialect (whose body has no loudness
// field) and voxgate's own stream (eSpeak's WAV) land within ±1 LU, true
// peak under the ceiling as FFmpeg decodes them; {"off": true} opts a
// request out.
func TestStreamLoudnessFormats(t *testing.T) {
	t.Parallel()
	cfg := strings.Replace(harness.ESpeakConfig, "  acme:\n    providers: {espeak: {enabled: true}}\n",
		"  acme:\n    providers: {espeak: {enabled: true}}\n    loudness: {integrated: -16, true_peak: -1}\n"+
			"    aliases:\n      voices:\n        narrator: {model: espeak/espeak-ng, voice: en}\n", 1)
	if cfg == harness.ESpeakConfig {
		t.Fatal("the config's acme block moved")
	}
	tg := harness.Start(t, cfg)
	text := "The organization levels every answer, streams included, so a listener never reaches for the volume between two voices. " +
		"Each stream is encoded after it is leveled, in the format its client asked for."
	// The voice is learned from a clip at the default first.
	if r := tg.Do("POST", "/v1/audio/speech", "acme", harness.SpeechBody("Learning the voice from a clip, at the organization's default.")); r.Status != 200 {
		t.Fatalf("clip: %d %s", r.Status, r.Body)
	}
	check := func(what string, r *harness.Response, wantType string) {
		t.Helper()
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", what, r.Status, r.Body)
		}
		ct := r.Header.Get("Content-Type")
		if !strings.HasPrefix(ct, wantType) {
			t.Errorf("%s: Content-Type %q, want %s", what, ct, wantType)
		}
		e, in := ext(t, ct)
		got := testenv.FFmpegLoudness(t, r.Body, e, in...)
		t.Logf("%s: FFmpeg measures I=%.2f LUFS, true peak %.2f dBTP", what, got.Integrated, got.TruePeak)
		if math.Abs(got.Integrated+16) > 1 || got.TruePeak > -1+0.1 {
			t.Errorf("%s: FFmpeg measures I=%.1f LUFS, true peak %.1f dBTP; want -16 ±1 LUFS, at most -0.9 dBTP", what, got.Integrated, got.TruePeak)
		}
	}
	xi := func(format string) *harness.Response {
		return tg.Do("POST", "/elevenlabs/v1/text-to-speech/narrator/stream?output_format="+format, "", map[string]any{"text": text},
			"xi-api-key", tg.Keys["acme"])
	}
	check("mp3 stream", xi("mp3_44100_128"), "audio/mpeg")
	check("opus stream", xi("opus_48000_64"), "audio/ogg")
	check("pcm stream", xi("pcm_24000"), "audio/pcm;rate=24000")
	check("voxgate stream", tg.Do("POST", "/v1/audio/speech/stream", "acme", harness.SpeechBody(text)), "audio/wav")
	// Opted out: eSpeak's own level, some 4 LU under the default.
	r := tg.Do("POST", "/v1/audio/speech/stream", "acme", harness.SpeechBody(text, "loudness", map[string]any{"off": true}))
	if r.Status != 200 {
		t.Fatalf("opted out: %d %s", r.Status, r.Body)
	}
	e, in := ext(t, r.Header.Get("Content-Type"))
	if got := testenv.FFmpegLoudness(t, r.Body, e, in...); math.Abs(got.Integrated+16) < 1 {
		t.Errorf("a stream that opted out is at the default (%.1f LUFS)", got.Integrated)
	}
	tg.Do("POST", "/v1/audio/speech/stream", "acme", harness.SpeechBody(text, "loudness", map[string]any{"off": true, "integrated": -16})).Problem(t, 400, "validation_failed")
}

// TestAdminOrgLoudness: an organization made through the admin API gets
// a default target there, its clips land at it, a PATCH changes it and
// null removes it; a bad target names the field.
func TestAdminOrgLoudness(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, harness.ESpeakConfig)
	admin, _, err := tg.Core.CreateAdminKey(context.Background(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	tg.Keys["admin"] = admin
	p := tg.Do("POST", "/v1/admin/orgs", "admin", map[string]any{"id": "team-l", "name": "L",
		"loudness": map[string]any{"integrated": -2}}).Problem(t, 400, "validation_failed")
	harness.AssertPaths(t, p, "loudness.integrated")
	r := tg.Do("POST", "/v1/admin/orgs", "admin", map[string]any{"id": "team-l", "name": "L",
		"providers": map[string]any{"espeak": map[string]any{"enabled": true}}, "loudness": map[string]any{"integrated": -26}})
	if r.Status != 201 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var created struct {
		Data struct {
			Loudness *struct{ Integrated, TruePeak float64 } `json:"loudness"`
		} `json:"data"`
	}
	r.JSON(t, &created)
	if l := created.Data.Loudness; l == nil || l.Integrated != -26 || l.TruePeak != -1 {
		t.Fatalf("created with loudness %+v, want -26 LUFS, -1 dBTP", l)
	}
	var k struct {
		Data struct {
			Key string `json:"key"`
		} `json:"data"`
	}
	r = tg.Do("POST", "/v1/admin/keys", "admin", map[string]any{"org": "team-l", "name": "ci"})
	if r.Status != 201 {
		t.Fatalf("key: %d %s", r.Status, r.Body)
	}
	r.JSON(t, &k)
	tg.Keys["team-l"] = k.Data.Key
	text := "An organization of the admin API chose its loudness there."
	clip := func() *harness.Response {
		t.Helper()
		r := tg.Do("POST", "/v1/audio/speech", "team-l", harness.SpeechBody(text, "output", map[string]any{"format": "wav"}))
		if r.Status != 200 {
			t.Fatalf("clip: %d %s", r.Status, r.Body)
		}
		return r
	}
	r = clip()
	judge(t, "team-l's default", r.Body, r.Header.Get("Content-Type"), -26, -1)
	if r := tg.Do("PATCH", "/v1/admin/orgs/team-l", "admin", map[string]any{"loudness": map[string]any{"integrated": -16, "truePeak": -2}}); r.Status != 200 {
		t.Fatalf("patch: %d %s", r.Status, r.Body)
	}
	r = clip()
	judge(t, "team-l's changed default", r.Body, r.Header.Get("Content-Type"), -16, -2)
	if r := tg.Do("PATCH", "/v1/admin/orgs/team-l", "admin", map[string]any{"loudness": nil}); r.Status != 200 {
		t.Fatalf("patch null: %d %s", r.Status, r.Body)
	}
	r = clip()
	e, in := ext(t, r.Header.Get("Content-Type"))
	if got := testenv.FFmpegLoudness(t, r.Body, e, in...); math.Abs(got.Integrated+16) < 0.5 {
		t.Errorf("after loudness null the clip is still at -16 LUFS")
	}
}
