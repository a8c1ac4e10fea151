package alignment

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"io"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// pcmSamples reads 16-bit little-endian PCM.
func pcmSamples(b []byte) []int16 {
	s := make([]int16, len(b)/2)
	for i := range s {
		s[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return s
}

// checkJoins asserts there is no discontinuity at any join: the sample at
// each piece start is near silence (the joins are faded), and within 5 ms
// of it no step between samples is larger than the largest step the audio
// makes anywhere away from the joins.
func checkJoins(t *testing.T, s []int16, rate int, starts []float64) {
	t.Helper()
	if len(starts) < 2 {
		t.Fatalf("pieces %v: the text was not split", starts)
	}
	near := make([]bool, len(s))
	joins := make([]int, 0, len(starts)-1)
	for k, st := range starts[1:] {
		j := int(math.Round(st * float64(rate)))
		if j <= 0 || j >= len(s) {
			t.Fatalf("piece %d starts at sample %d of %d", k+1, j, len(s))
		}
		joins = append(joins, j)
		for i := max(j-rate/200, 0); i < min(j+rate/200, len(s)); i++ {
			near[i] = true
		}
	}
	natural := 0.0
	for i := 1; i < len(s); i++ {
		if !near[i] {
			natural = max(natural, math.Abs(float64(s[i])-float64(s[i-1])))
		}
	}
	for k, j := range joins {
		if v := math.Abs(float64(s[j])); v > 300 {
			t.Errorf("join %d: sample %d at the join", k+1, int(v))
		}
		for i := max(j-rate/200, 1); i < min(j+rate/200, len(s)); i++ {
			if step := math.Abs(float64(s[i]) - float64(s[i-1])); step > natural {
				t.Errorf("join %d: step %g at sample %d, more than the audio's own largest (%g)", k+1, step, i, natural)
				break
			}
		}
	}
}

// checkContinuous asserts one timestamp per word of text, in order,
// without a gap longer than maxGap anywhere (a piece whose words were
// not offset would jump back, or leave a hole).
func checkContinuous(t *testing.T, env harness.TimestampsEnvelope, text string, seconds, maxGap float64) {
	t.Helper()
	if n := len(strings.Fields(text)); len(env.Timestamps) != n {
		t.Fatalf("%d timestamps for %d words", len(env.Timestamps), n)
	}
	prev := 0.0
	for i, w := range env.Timestamps {
		if w.Start < prev || w.End < w.Start || w.Start-prev > maxGap {
			t.Fatalf("word %d %q [%.3f, %.3f] after %.3f: not continuous", i, w.Text, w.Start, w.End, prev)
		}
		prev = w.End
	}
	if seconds-prev > maxGap {
		t.Fatalf("the last word ends at %.3f of %.3f s", prev, seconds)
	}
}

// TestLongTextThroughESpeak renders 30,000 characters through eSpeak
// (5,000 per call): six pieces, joined without a click, with word
// timestamps continuous across the joins.
func TestLongTextThroughESpeak(t *testing.T) {
	// Not parallel: 30,000 characters through eSpeak and the aligner keep
	// both cores busy.
	tg := harness.Start(t, strings.Replace(strings.Replace(harness.SpeechConfig, "max_body_bytes: 65536", "max_body_bytes: 1048576", 1),
		"instances: 1", "instances: 2", 1))
	text := harness.LongText(30000)
	// At eSpeak's fastest and 8 kHz, so the answer stays about 14 MB:
	// its encoding, validation and decoding under the race detector
	// grow with it, and what is checked (the joins within 5 ms, the
	// words' times) does not depend on the rate.
	r := tg.Do("POST", "/v1/audio/speech/with-timestamps", "acme", harness.SpeechBody(text, "speed", 2.5, "output", map[string]any{"format": "pcm", "sampleRate": 8000}))
	if r.Status != 200 {
		t.Fatalf("%d %.300s", r.Status, r.Body)
	}
	var env harness.TimestampsEnvelope
	r.JSON(t, &env)
	pcm, err := base64.StdEncoding.DecodeString(env.Audio)
	if err != nil || env.MediaType != "audio/pcm;rate=8000" {
		t.Fatalf("audio %s: %v", env.MediaType, err)
	}
	s := pcmSamples(pcm)
	meta := env.ProviderMetadata.Voxgate
	if len(meta.Pieces) < 6 || meta.TimestampsSource != "native" {
		t.Fatalf("metadata %+v", meta)
	}
	checkJoins(t, s, 8000, meta.Pieces)
	checkContinuous(t, env, text, float64(len(s))/8000, 2)
	t.Logf("%d characters: %.0f s of audio in %d pieces", len(text), float64(len(s))/8000, len(meta.Pieces))
}

// briskVoice says each word of a text as 60 ms of a 440 Hz tone (the
// fakes' own, its phase running on across the silences) with 60 ms of
// silence between words and 50 ms at either end: at 24 kHz, as OpenAI
// answers. Its clip of LongText is a third as long as the fakes' default
// voice's (60 ms a character), and the long-text tests' cost is in the
// audio's length: rendering, resampling, transcribing, and tens of MB of
// base64 answers decoded and validated under the race detector. What
// they check depends on the text, not on how slowly it is said: the
// pieces are split by characters, the joins are where the pieces meet,
// and the fake's transcription still hears one burst a word (it bridges
// gaps under 40 ms and drops bursts under 30 ms).
var briskVoice = funcVoice(func(text string) ([]int16, int, []fakeupstream.Span, error) {
	const rate, word, gap, edge = 24000, 1440, 1440, 1200 // samples
	words := strings.Fields(text)
	s := make([]int16, 2*edge+len(words)*word+max(len(words)-1, 0)*gap)
	spans := make([]fakeupstream.Span, len(words))
	at := edge
	for i, w := range words {
		for k := at; k < at+word; k++ {
			s[k] = int16(0.3 * math.MaxInt16 * math.Sin(2*math.Pi*fakeupstream.ToneHz*float64(k)/rate))
		}
		spans[i] = fakeupstream.Span{Text: w, Start: float64(at) / rate, End: float64(at+word) / rate}
		at += word + gap
	}
	return s, rate, spans, nil
})

// TestLongTextThroughCloudFake renders 30,000 characters through the
// OpenAI fake, whose limit is 4,096: eight pieces rendered concurrently,
// joined, with speech-to-text timestamps continuous across the joins; the
// same text streams in order, its first audio leaving before the later
// pieces are rendered, and the stream is the clip.
func TestLongTextThroughCloudFake(t *testing.T) {
	// Not parallel: one request of 30,000 characters keeps both cores
	// busy for most of the client's minute under the race detector.
	oai := openai.New(t, fakeupstream.Options{ChunkSize: 64 << 10, Voice: briskVoice})
	// A provider whose every clip starts and ends at full swing (a cosine
	// hum, 20 ms a character): joined end to end without fades, every
	// join would click.
	hum := openai.New(t, fakeupstream.Options{Voice: funcVoice(func(text string) ([]int16, int, []fakeupstream.Span, error) {
		s := make([]int16, len([]rune(text))*480)
		for i := range s {
			s[i] = int16(20000 * math.Cos(2*math.Pi*150*float64(i)/24000))
		}
		return s, 24000, nil, nil
	})})
	tg := harness.Start(t, `
server: {listen: "127.0.0.1:0", max_body_bytes: 1048576}
storage: {path: "%DIR%/voxgate.db"}
plugins: {dir: "%BIN%/plugins"}
alignment: {method: stt, stt: {provider: openai}}
limits: {piece_concurrency: 3}
providers:
  openai: {plugin: voxgate-openai, base_url: "`+oai.BaseURL()+`", api_key: "`+openai.Key+`", managed: true}
  hum: {plugin: voxgate-openai, base_url: "`+hum.BaseURL()+`", api_key: "`+openai.Key+`", managed: true}
orgs:
  acme:
    providers:
      openai: {enabled: true}
      hum: {enabled: true}
`)
	text := harness.LongText(30000)
	body := map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": text, "output": map[string]any{"format": "pcm", "sampleRate": 8000}}
	r := tg.Do("POST", "/v1/audio/speech/with-timestamps", "acme", body)
	if r.Status != 200 {
		t.Fatalf("%d %.300s", r.Status, r.Body)
	}
	var env harness.TimestampsEnvelope
	r.JSON(t, &env)
	pcm, _ := base64.StdEncoding.DecodeString(env.Audio)
	s := pcmSamples(pcm)
	meta := env.ProviderMetadata.Voxgate
	if len(meta.Pieces) < 8 || meta.TimestampsSource != "stt" {
		t.Fatalf("metadata %+v, warnings %q", meta, env.Warnings)
	}
	for _, q := range oai.Requests() {
		if q.Path == openai.SpeechPath {
			var b struct{ Input string }
			_ = q.JSON(&b)
			if n := len([]rune(b.Input)); n > openai.MaxInput {
				t.Fatalf("a piece of %d characters reached the provider", n)
			}
		}
	}
	checkJoins(t, s, 8000, meta.Pieces)
	checkContinuous(t, env, text, float64(len(s))/8000, 2)

	// The hum's joins: faded, not clicking.
	r = tg.Do("POST", "/v1/audio/speech/with-timestamps", "acme", map[string]any{"model": "hum/tts-1", "voice": "alloy", "text": text[:9000], "output": map[string]any{"format": "pcm"}})
	env = harness.TimestampsEnvelope{}
	r.JSON(t, &env)
	pcm, _ = base64.StdEncoding.DecodeString(env.Audio)
	checkJoins(t, pcmSamples(pcm), 24000, env.ProviderMetadata.Voxgate.Pieces)
	// The stream: the fake holds every answer after its first chunk;
	// the first audio still arrives.
	oai.Reset()
	oai.HoldStreams()
	req, _ := http.NewRequest("POST", tg.Base+"/v1/audio/speech/stream", bytes.NewReader(harness.MustJSON(map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": text[:12000]})))
	req.Header.Set("Authorization", "Bearer "+tg.Keys["acme"])
	req.Header.Set("Content-Type", "application/json")
	resp, err := tg.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("stream: %d %s", resp.StatusCode, b)
	}
	first := make([]byte, 1024)
	done := make(chan error, 1)
	go func() { _, err := io.ReadFull(resp.Body, first); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no audio while the later pieces are held")
	}
	oai.ReleaseStreams()
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	streamed := append(first, rest...)
	clip := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "openai/tts-1", "voice": "alloy", "text": text[:12000], "output": map[string]any{"format": "pcm"}})
	if resp.Header.Get("Content-Type") != "audio/pcm;rate=24000" || len(streamed) != len(clip.Body) {
		t.Fatalf("stream %s of %d bytes, clip %d bytes", resp.Header.Get("Content-Type"), len(streamed), len(clip.Body))
	}
	a, b := pcmSamples(streamed), pcmSamples(clip.Body)
	for i := range a {
		if d := math.Abs(float64(a[i]) - float64(b[i])); d > 2 {
			t.Fatalf("stream and clip differ at sample %d (%d vs %d): pieces out of order?", i, a[i], b[i])
		}
	}
}
