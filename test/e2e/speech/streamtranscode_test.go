package speech

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/test/e2e/harness"
)

// transcodeConfig runs eSpeak (WAV and 22050 Hz PCM only, no MP3, no
// other rate) and the test plugin (PCM and WAV at 8, 16, 24 and 48 kHz,
// 100 characters a call), with OpenAI's and ElevenLabs' names moved to
// eSpeak as their SDKs' code would use them, and the response cache on.
const transcodeConfig = `
server:
  listen: 127.0.0.1:0
  max_body_bytes: 65536
storage:
  path: %DIR%/voxgate.db
plugins:
  dir: %BIN%/plugins
providers:
  espeak: {plugin: voxgate-espeak, managed: true}
  testkit:
    plugin: %BIN%/testplugins/voxgate-testplugin
    managed: true
    timeout: 5s
    max_text_chars: "100"
cache: {driver: disk}
orgs:
  acme:
    aliases:
      models: {tts-1: espeak/espeak-ng}
      voices:
        alloy: {voice: en-us}
        narrator: {model: espeak/espeak-ng, voice: en}
    providers:
      espeak: {enabled: true}
      testkit: {enabled: true}
`

// transcodeText is about three seconds of eSpeak speech.
const transcodeText = "Streams are converted as they arrive, one chunk at a time."

// espeakSeconds is how long eSpeak speaks text in voice en: the clip's
// raw PCM length.
func espeakSeconds(t *testing.T, tg *harness.Gateway, text string) float64 {
	t.Helper()
	r := tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "espeak/espeak-ng", "voice": "en", "text": text, "output": "pcm"})
	if r.Status != 200 || r.Header.Get("Content-Type") != "audio/pcm;rate=22050" {
		t.Fatalf("reference clip: %d %s", r.Status, r.Header.Get("Content-Type"))
	}
	return float64(len(r.Body)) / 2 / 22050
}

// TestStreamTranscodeElevenLabs: the ElevenLabs SDK's default stream call
// (output_format mp3_44100_128) and the telephony formats work on eSpeak,
// which streams neither MP3 nor G.711 nor 16 kHz: the gateway converts
// eSpeak's PCM stream as it comes. Converted streams carry the media type
// of their bytes, decode at the clip's length, and are byte for byte what
// the whole-clip path makes of the same audio; a format eSpeak streams
// itself still passes through untouched.
func TestStreamTranscodeElevenLabs(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, transcodeConfig)
	want := espeakSeconds(t, tg, transcodeText)
	body := map[string]any{"text": transcodeText}
	stream := func(format string) *harness.Response {
		t.Helper()
		path := "/elevenlabs/v1/text-to-speech/narrator/stream"
		if format != "" {
			path += "?output_format=" + format
		}
		r := tg.Do("POST", path, "acme", body)
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", format, r.Status, r.Body)
		}
		return r
	}
	clip := func(format string) []byte {
		t.Helper()
		r := tg.Do("POST", "/elevenlabs/v1/text-to-speech/narrator?output_format="+format, "acme", body)
		if r.Status != 200 {
			t.Fatalf("clip %s: %d %s", format, r.Status, r.Body)
		}
		return r.Body
	}

	// The SDK's default: MP3 at 44.1 kHz, 128 kbps, converted as eSpeak
	// speaks. A stream has no gapless tag, so decoders play the encoder's
	// delay and padding too (under 0.1 s at 44.1 kHz).
	r := stream("")
	if ct := r.Header.Get("Content-Type"); ct != "audio/mpeg" {
		t.Fatalf("default stream: Content-Type %q", ct)
	}
	p := harness.FFprobeBytes(t, r.Body, "mp3")
	if p.Codec != "mp3" || p.Rate != 44100 || p.Channels != 1 || p.Bitrate != 128000 {
		t.Errorf("default stream probes as %+v, want mp3 at 44100 Hz, 128 kbps, mono", p)
	}
	if p.Seconds < want || p.Seconds > want+0.1 {
		t.Errorf("default stream lasts %.3f s, the clip %.3f s", p.Seconds, want)
	}
	if again := stream("mp3_44100_128"); !bytes.Equal(harness.Unmarked(again.Body), harness.Unmarked(r.Body)) {
		t.Errorf("mp3_44100_128 named differs from the default (%d vs %d bytes)", len(again.Body), len(r.Body))
	}
	// Another bitrate is another stream, not the cached one.
	if low := stream("mp3_22050_32"); harness.FFprobeBytes(t, low.Body, "mp3").Bitrate != 32000 || bytes.Equal(low.Body, r.Body) {
		t.Errorf("mp3_22050_32 probes as %+v", harness.FFprobeBytes(t, low.Body, "mp3"))
	}

	// G.711 and PCM at a rate eSpeak does not make: the same bytes as the
	// clip converted whole, and the right rate and length.
	for _, tt := range []struct {
		format, mediaType string
		rate              int
		input             []string
	}{
		{"ulaw_8000", "audio/PCMU;rate=8000", 8000, []string{"-f", "mulaw", "-ar", "8000", "-ac", "1"}},
		{"alaw_8000", "audio/PCMA;rate=8000", 8000, []string{"-f", "alaw", "-ar", "8000", "-ac", "1"}},
		{"pcm_16000", "audio/pcm;rate=16000", 16000, []string{"-f", "s16le", "-ar", "16000", "-ac", "1"}},
		{"pcm_44100", "audio/pcm;rate=44100", 44100, []string{"-f", "s16le", "-ar", "44100", "-ac", "1"}},
	} {
		t.Run(tt.format, func(t *testing.T) {
			r := stream(tt.format)
			if ct := r.Header.Get("Content-Type"); ct != tt.mediaType {
				t.Fatalf("Content-Type %q, want %q", ct, tt.mediaType)
			}
			if c := clip(tt.format); !bytes.Equal(r.Body, c) {
				t.Errorf("the converted stream (%d bytes) differs from the converted clip (%d bytes)", len(r.Body), len(c))
			}
			p := harness.FFprobeBytes(t, r.Body, "raw", tt.input...)
			if p.Rate != tt.rate || p.Channels != 1 || math.Abs(p.Seconds-want) > 0.002 {
				t.Errorf("probes as %+v, want %d Hz and %.3f s", p, tt.rate, want)
			}
		})
	}

	// eSpeak's own 22050 Hz PCM is not converted: the bytes are the
	// provider's, as voxgate's own stream sends them (behind its WAV
	// header there).
	native := stream("pcm_22050")
	own := tg.Do("POST", "/v1/audio/speech/stream", "acme", map[string]any{"model": "espeak/espeak-ng", "voice": "en", "text": transcodeText})
	if native.Header.Get("Content-Type") != "audio/pcm;rate=22050" || own.Header.Get("Content-Type") != "audio/wav" || !bytes.Equal(native.Body, harness.Unmarked(own.Body)[44:]) {
		t.Errorf("pcm_22050 stream: %s, %d bytes; eSpeak's own stream %s, %d bytes", native.Header.Get("Content-Type"), len(native.Body), own.Header.Get("Content-Type"), len(own.Body))
	}
	if h := native.Header.Get("X-Voxgate-Transcoded"); h != "" {
		t.Errorf("eSpeak's own PCM passed through, yet X-Voxgate-Transcoded says %q", h)
	}
	// WAV at a rate eSpeak does not make is converted, not eSpeak's WAV at
	// its own rate: the client gets the rate it asked for, and is told.
	r = stream("wav_44100")
	if r.Header.Get("Content-Type") != "audio/wav" || r.Header.Get("X-Voxgate-Transcoded") != "pcm_22050->wav_44100" {
		t.Errorf("wav_44100: %s, transcoded %q", r.Header.Get("Content-Type"), r.Header.Get("X-Voxgate-Transcoded"))
	}
	if p := harness.FFprobeBytes(t, r.Body, "wav"); p.Rate != 44100 || math.Abs(p.Seconds-want) > 0.002 {
		t.Errorf("wav_44100 probes as %+v", p)
	}

	// What cannot be streamed is still a clear 400.
	for _, f := range []string{"flac_44100", "ulaw_16000"} {
		e := tg.Do("POST", "/elevenlabs/v1/text-to-speech/narrator/stream?output_format="+f, "acme", body).ElevenLabsError(t, 400, "validation_failed")
		if e.Detail.Param != "output_format" {
			t.Errorf("%s: %+v", f, e.Detail)
		}
	}
}

// TestStreamTranscodeOpenAISSE: the OpenAI SDK's stream_format "sse" with
// its default response_format (mp3) on eSpeak: the delta events' audio,
// put together, is an MP3 stream of the clip's length; pcm (24 kHz, which
// eSpeak does not make) and opus are converted too, aac and flac refused.
func TestStreamTranscodeOpenAISSE(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, transcodeConfig)
	want := espeakSeconds(t, tg, transcodeText)
	sse := func(format string) []byte {
		t.Helper()
		body := map[string]any{"model": "tts-1", "voice": "narrator", "input": transcodeText, "stream_format": "sse"}
		if format != "" {
			body["response_format"] = format
		}
		r := tg.Do("POST", "/v1/audio/speech", "acme", body)
		if r.Status != 200 || r.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("sse %s: %d %s %.300s", format, r.Status, r.Header.Get("Content-Type"), r.Body)
		}
		audio, done := harness.SSEEvents(t, r.Body)
		if done == nil || done["usage"].(map[string]any)["input_tokens"].(float64) != float64(len(transcodeText)) {
			t.Errorf("sse %s: done event %v", format, done)
		}
		return audio
	}

	p := harness.FFprobeBytes(t, sse(""), "mp3")
	if p.Codec != "mp3" || p.Rate != 22050 || p.Channels != 1 || p.Bitrate != 96000 || p.Seconds < want || p.Seconds > want+0.15 {
		t.Errorf("default mp3 deltas probe as %+v; the clip is %.3f s", p, want)
	}
	pcm := sse("pcm")
	if got := float64(len(pcm)) / 2 / 24000; math.Abs(got-want) > 0.001 {
		t.Errorf("pcm deltas: %.4f s at 24 kHz, the clip %.4f s", got, want)
	}
	if p := harness.FFprobeBytes(t, sse("opus"), "opus"); p.Codec != "opus" || p.Rate != 48000 || math.Abs(p.Seconds-want) > 0.02 {
		t.Errorf("opus deltas probe as %+v; the clip is %.3f s", p, want)
	}
	for _, f := range []string{"aac", "flac"} {
		tg.Do("POST", "/v1/audio/speech", "acme", map[string]any{"model": "tts-1", "voice": "alloy", "input": "x", "stream_format": "sse", "response_format": f}).
			OpenAIError(t, 400, "validation_failed", "response_format")
	}
}

// TestStreamTranscodeFailureIsIncomplete: a converted stream the provider
// breaks off after its first audio ends as incomplete, as any stream does
// (no terminating chunk, no SSE done event), and is logged as failed.
func TestStreamTranscodeFailureIsIncomplete(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, transcodeConfig)
	v := tg.Do("POST", "/v1/voices", "acme", map[string]any{"title": "breaks", "provider": "testkit", "model": "test", "voice_id": "alpha",
		"provider_options": map[string]any{"fail": map[string]any{"kind": "upstream", "message": "boom", "status": 500}, "after_chunks": 4}}).Voice(t)
	words := strings.Repeat("word ", 12)

	status, data, err := harness.ReadStreamPath(t, tg, "/elevenlabs/v1/text-to-speech/"+v.ID+"/stream?output_format=ulaw_8000", map[string]any{"text": words})
	if status != 200 || len(data) == 0 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("ulaw stream: %d, %d bytes, read error %v; want 200, audio, then an incomplete transfer", status, len(data), err)
	}
	if row := tg.LastLog("acme"); row.ErrorCode != "provider_error" || row.CreditsUsed != 0 {
		t.Errorf("log row: status %d, error %q", row.Status, row.ErrorCode)
	}

	status, data, err = harness.ReadStreamPath(t, tg, "/v1/audio/speech", map[string]any{"model": "tts-1", "voice": map[string]any{"id": v.ID}, "input": words, "stream_format": "sse"})
	if status != 200 || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("mp3 sse: %d, read error %v; want 200, then an incomplete transfer", status, err)
	}
	if audio, done := harness.SSEEvents(t, data); len(audio) == 0 || done != nil {
		t.Errorf("mp3 sse: %d bytes of audio, done event %v", len(audio), done)
	}

	// The same voice without the failure streams to its end.
	ok := tg.Do("POST", "/elevenlabs/v1/text-to-speech/alpha/stream?output_format=ulaw_8000", "acme", map[string]any{"text": words, "model_id": "testkit/test"})
	if ok.Status != 200 || ok.Header.Get("Content-Type") != "audio/PCMU;rate=8000" || len(ok.Body) < 8000 {
		t.Errorf("complete ulaw stream: %d %s, %d bytes", ok.Status, ok.Header.Get("Content-Type"), len(ok.Body))
	}
}

// TestStreamTranscodeLongText: a text longer than the model takes in one
// call streams its pieces as the model's PCM; a format the client asked
// for is then made from that PCM too, so the client gets what it asked
// for, not PCM: here WAV, which the test plugin streams itself for a
// short text.
func TestStreamTranscodeLongText(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, transcodeConfig)
	long := strings.Repeat("several words in a row, ", 12) // 288 characters: three pieces
	r := tg.Do("POST", "/elevenlabs/v1/text-to-speech/alpha/stream?output_format=wav_24000", "acme", map[string]any{"text": long, "model_id": "testkit/test"})
	if r.Status != 200 || r.Header.Get("Content-Type") != "audio/wav" {
		t.Fatalf("long wav stream: %d %s", r.Status, r.Header.Get("Content-Type"))
	}
	got, _ := harness.PCMSeconds(t, "audio/wav", r.Body)
	own := tg.Do("POST", "/v1/audio/speech/stream", "acme", map[string]any{"model": "testkit/test", "voice": "alpha", "text": long})
	want, _ := harness.PCMSeconds(t, own.Header.Get("Content-Type"), own.Body)
	if p := harness.FFprobeBytes(t, r.Body, "wav"); p.Rate != 24000 || math.Abs(got-want) > 0.001 {
		t.Errorf("long wav stream: %+v, %.4f s; the PCM pieces %.4f s", p, got, want)
	}
}
