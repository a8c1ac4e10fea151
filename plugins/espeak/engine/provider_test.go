package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/voxgate/voxgate/sdk"
	"github.com/voxgate/voxgate/sdk/sdktest"
)

// newProvider returns the provider over the process's libespeak-ng.
func newProvider(t testing.TB) *Provider {
	t.Helper()
	p, err := New()
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// synth renders req whole and fails the test on error. A request that
// names no format is rendered as raw PCM, which the tests measure sample
// by sample; TestDescribe and TestSynthesizeWAV check the default.
func synth(t testing.TB, p *Provider, req *sdk.SynthesizeRequest) *sdk.SynthesizeResponse {
	t.Helper()
	if req.Format == "" {
		r := *req
		r.Format = sdk.FormatPCM
		req = &r
	}
	resp, err := p.Synthesize(context.Background(), req)
	if err != nil {
		t.Fatalf("Synthesize(%q, voice %q): %v", req.Text, req.Voice, err)
	}
	return resp
}

// seconds is the duration of 16-bit mono PCM at rate.
func seconds(pcm []byte, rate int) float64 { return float64(len(pcm)/2) / float64(rate) }

// rms is the root mean square level of 16-bit PCM, 0 to 1.
func rms(pcm []byte) float64 {
	var sum float64
	n := len(pcm) / 2
	for i := range n {
		v := float64(int16(binary.LittleEndian.Uint16(pcm[2*i:]))) / 32768
		sum += v * v
	}
	return math.Sqrt(sum / float64(max(n, 1)))
}

func TestDescribe(t *testing.T) {
	p := newProvider(t)
	d, err := p.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != "espeak" || d.Name != "eSpeak NG" || d.DefaultModel != "espeak-ng" || len(d.Models) != 1 {
		t.Fatalf("description = %+v", d)
	}
	m := d.Models[0]
	want := sdk.Capabilities{Streaming: true, Timestamps: true, Speed: true, Cloning: false}
	// WAV first: the default, what a request that names no format gets.
	wantEncodings := []sdk.Encoding{{Format: "wav", SampleRate: 22050}, {Format: "pcm", SampleRate: 22050}}
	if m.ID != "espeak-ng" || m.Capabilities != want || !slices.Equal(m.Encodings, wantEncodings) || m.MaxTextChars != 5000 {
		t.Errorf("model = %+v", m)
	}
	if resp, err := p.Synthesize(context.Background(), &sdk.SynthesizeRequest{Model: "espeak-ng", Voice: "en", Text: "default"}); err != nil || resp.MediaType != "audio/wav" {
		t.Errorf("a request naming no format gets %v, want audio/wav", err)
	}
	// The rate must be the library's: a clip's media type says it too.
	resp := synth(t, p, &sdk.SynthesizeRequest{Model: "espeak-ng", Voice: "en", Text: "rate", Format: "pcm"})
	if resp.MediaType != "audio/pcm;rate="+strconv.Itoa(m.Encodings[1].SampleRate) {
		t.Errorf("native rate %d, clip media type %q", m.Encodings[1].SampleRate, resp.MediaType)
	}
	// Each listed encoding, asked for in full, is what comes back.
	for _, e := range m.Encodings {
		resp := synth(t, p, &sdk.SynthesizeRequest{Model: "espeak-ng", Voice: "en", Text: "each", Format: e.Format, SampleRate: e.SampleRate})
		if clip, err := sdktest.Decode(resp.MediaType, resp.Audio); err != nil || resp.MediaType != sdk.MediaType(e) || clip.Format != e.Format || clip.SampleRate != e.SampleRate {
			t.Errorf("%s: %q, %+v, %v", e, resp.MediaType, clip, err)
		}
	}
}

func TestVoices(t *testing.T) {
	p := newProvider(t)
	voices, err := p.Voices(context.Background(), &sdk.VoicesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	byID := make(map[string]sdk.Voice)
	for _, v := range voices {
		if _, dup := byID[v.ID]; dup {
			t.Errorf("voice %q listed twice", v.ID)
		}
		byID[v.ID] = v
		if v.Name == "" || v.Language == "" || !slices.Contains([]string{"male", "female", ""}, v.Gender) {
			t.Errorf("voice %+v: missing name or language, or odd gender", v)
		}
	}
	// eSpeak's language codes, as `espeak-ng --voices` lists them; the
	// file names this plugin listed before (en, fr), still accepted; and
	// the further languages voices serve (zh).
	for id, lang := range map[string]string{"en-gb": "en-gb", "en-us": "en-us", "de": "de", "fr-fr": "fr-fr", "pt-br": "pt-br", "cmn": "cmn",
		"en": "en-gb", "fr": "fr-fr", "zh": "cmn", "es-mx": "es-419", "yue": "yue", "yue-latn-jyutping": "yue"} {
		if v, ok := byID[id]; !ok || v.Language != lang {
			t.Errorf("voice %q = %+v, want language %q", id, v, lang)
		}
	}
	if _, err := p.Voices(context.Background(), &sdk.VoicesRequest{Model: "tts-1"}); sdk.AsError(err).Kind != sdk.KindInvalidRequest {
		t.Errorf("Voices(unknown model) error = %v, want invalid_request", err)
	}
}

// TestEveryVoiceSpeaks proves that every listed id is usable as
// SynthesizeRequest.Voice.
func TestEveryVoiceSpeaks(t *testing.T) {
	p := newProvider(t)
	voices, _ := p.Voices(context.Background(), &sdk.VoicesRequest{})
	for _, v := range voices {
		resp, err := p.Synthesize(context.Background(), &sdk.SynthesizeRequest{Voice: v.ID, Text: "hello", Format: "pcm"}) // some languages have no rules for digits
		if err != nil || rms(resp.Audio) < 0.01 {
			t.Errorf("voice %q (%s): err %v, audible %v", v.ID, v.Name, err, err == nil && rms(resp.Audio) >= 0.01)
		}
	}
}

func TestSynthesizePCM(t *testing.T) {
	p := newProvider(t)
	tests := []struct{ voice, text string }{
		{"en", "Hi."},
		{"en-us", "The quick brown fox jumps over the lazy dog."},
		{"de", "Grüße aus München, sagte sie, und lachte."},
		{"fr", "Le chat dort sur le canapé depuis ce matin."},
		{"en", strings.Repeat("This sentence is said again and again. ", 20)},
	}
	for _, tt := range tests {
		t.Run(tt.voice+"/"+strconv.Itoa(len(tt.text)), func(t *testing.T) {
			resp := synth(t, p, &sdk.SynthesizeRequest{Model: "espeak-ng", Voice: tt.voice, Text: tt.text, Format: "pcm"})
			if resp.MediaType != "audio/pcm;rate=22050" || len(resp.Audio)%2 != 0 {
				t.Fatalf("media type %q, %d bytes", resp.MediaType, len(resp.Audio))
			}
			// Normal speech runs at roughly 10 to 20 characters a second;
			// allow a wide margin around that, plus a little for a lone word.
			dur, chars := seconds(resp.Audio, 22050), float64(len([]rune(tt.text)))
			if dur < chars/40 || dur > chars/5+0.5 {
				t.Errorf("%.2f s of audio for %v characters", dur, chars)
			}
			if level := rms(resp.Audio); level < 0.02 {
				t.Errorf("RMS level %.4f: the clip is (nearly) silent", level)
			}
			if resp.Timestamps != nil {
				t.Errorf("timestamps returned without being asked for")
			}
		})
	}
}

func TestSynthesizeWAV(t *testing.T) {
	p := newProvider(t)
	text := "A proper wave file, please."
	pcm := synth(t, p, &sdk.SynthesizeRequest{Voice: "en", Text: text, Format: "pcm"}).Audio
	resp := synth(t, p, &sdk.SynthesizeRequest{Voice: "en", Text: text, Format: "wav", SampleRate: 22050})
	if resp.MediaType != "audio/wav" {
		t.Errorf("media type %q", resp.MediaType)
	}
	if def, err := p.Synthesize(context.Background(), &sdk.SynthesizeRequest{Voice: "en", Text: text}); err != nil || def.MediaType != "audio/wav" || !bytes.Equal(def.Audio, resp.Audio) {
		t.Errorf("no format asked for: %q, %d bytes; want the WAV file (%d bytes)", def.MediaType, len(def.Audio), len(resp.Audio))
	}
	checkWAVHeader(t, resp.Audio, uint32(len(resp.Audio)-44))
	if !bytes.Equal(resp.Audio[44:], pcm) {
		t.Errorf("WAV data of %d bytes, PCM clip of the same request %d", len(resp.Audio)-44, len(pcm))
	}
	info := soxInfo(t, resp.Audio)
	want := map[string]string{"r": "22050", "c": "1", "b": "16", "s": strconv.Itoa((len(resp.Audio) - 44) / 2), "e": "Signed Integer PCM"}
	if !reflect.DeepEqual(info, want) {
		t.Errorf("sox --i = %v, want %v", info, want)
	}
}

// checkWAVHeader checks the 44-byte header of a mono 16-bit 22050 Hz file.
func checkWAVHeader(t *testing.T, wav []byte, dataSize uint32) {
	t.Helper()
	if len(wav) < 44 {
		t.Fatalf("%d bytes: no WAV header", len(wav))
	}
	le := binary.LittleEndian
	riffSize := dataSize + 36
	if dataSize == 0xFFFFFFFF {
		riffSize = dataSize
	}
	got := []any{string(wav[0:4]), le.Uint32(wav[4:]), string(wav[8:16]), le.Uint32(wav[16:]), le.Uint16(wav[20:]),
		le.Uint16(wav[22:]), le.Uint32(wav[24:]), le.Uint32(wav[28:]), le.Uint16(wav[32:]), le.Uint16(wav[34:]),
		string(wav[36:40]), le.Uint32(wav[40:])}
	want := []any{"RIFF", riffSize, "WAVEfmt ", uint32(16), uint16(1), uint16(1), uint32(22050), uint32(44100), uint16(2), uint16(16), "data", dataSize}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("WAV header fields = %v, want %v", got, want)
	}
}

// soxInfo writes audio to a temporary .wav file and returns what `sox --i`
// reports about it: rate, channels, bits, samples and encoding.
func soxInfo(t *testing.T, audio []byte) map[string]string {
	t.Helper()
	if _, err := exec.LookPath("sox"); err != nil {
		t.Skip("sox not installed")
	}
	path := filepath.Join(t.TempDir(), "clip.wav")
	if err := os.WriteFile(path, audio, 0o600); err != nil {
		t.Fatal(err)
	}
	info := make(map[string]string)
	for _, flag := range []string{"r", "c", "b", "s", "e"} {
		out, err := exec.Command("sox", "--i", "-"+flag, path).Output()
		if err != nil {
			t.Fatalf("sox --i -%s: %v", flag, err)
		}
		info[flag] = strings.TrimSpace(string(out))
	}
	return info
}

func TestTimestamps(t *testing.T) {
	p := newProvider(t)
	tests := []struct {
		voice, text string
		words       []string
	}{
		{"en-us", "Hello there, my friend. How are you today?",
			[]string{"Hello", "there", "my", "friend", "How", "are", "you", "today"}},
		{"de", "Grüße aus München. Wie geht's?",
			[]string{"Grüße", "aus", "München", "Wie", "geht's"}},
		{"fr", "Bonjour, ça va? Très bien!",
			[]string{"Bonjour", "ça", "va", "Très", "bien"}},
		{"ru", "Привет, как дела?",
			[]string{"Привет", "как", "дела"}},
		// eSpeak reads the number as several words and the compound as one.
		{"en", "I have 1234 apples, a state-of-the-art idea.",
			[]string{"I", "have", "1234", "apples", "a", "state-of-the-art", "idea"}},
		// eSpeak gives "the", "of" and "a" no word events of their own here.
		{"en", "Hello from the plugin, out of the house for a lot of the time.",
			[]string{"Hello", "from", "the", "plugin", "out", "of", "the", "house", "for", "a", "lot", "of", "the", "time"}},
		// No spaces: one event per character, each its own word.
		{"cmn", "你好世界", []string{"你", "好", "世", "界"}},
		// Symbols eSpeak speaks stay words; punctuation and markup do not.
		{"en", "I ❤️ Berlin — <b>really</b>!", []string{"I", "❤️", "Berlin", "b", "really", "b"}},
		{"fr", "l'été, café, qu'il a vue.", []string{"l'été", "café", "qu'il", "a", "vue"}},
	}
	for _, tt := range tests {
		t.Run(tt.voice, func(t *testing.T) {
			resp := synth(t, p, &sdk.SynthesizeRequest{Voice: tt.voice, Text: tt.text, Timestamps: true})
			var words []string
			for _, w := range resp.Timestamps {
				words = append(words, w.Text)
			}
			if !slices.Equal(words, tt.words) {
				t.Fatalf("words = %q, want %q", words, tt.words)
			}
			checkTimestamps(t, resp.Timestamps, seconds(resp.Audio, 22050))
		})
	}
}

// checkTimestamps checks that words are in order, do not overlap, last a
// plausible time and lie inside a clip of dur seconds.
func checkTimestamps(t *testing.T, ts []sdk.WordTimestamp, dur float64) {
	t.Helper()
	prevEnd := 0.0
	for _, w := range ts {
		if w.Start < prevEnd || w.End <= w.Start || w.End > dur || w.End-w.Start > 2.5 {
			t.Errorf("word %q at %.3f-%.3f after %.3f in a %.3f s clip", w.Text, w.Start, w.End, prevEnd, dur)
		}
		prevEnd = w.End
	}
}

// TestTimestampsTrimPauses checks that a word before a full stop ends when
// its sound ends, not when the next sentence starts.
func TestTimestampsTrimPauses(t *testing.T) {
	p := newProvider(t)
	resp := synth(t, p, &sdk.SynthesizeRequest{Voice: "en", Text: "Stop. Go.", Timestamps: true})
	ts := resp.Timestamps
	if len(ts) != 2 {
		t.Fatalf("timestamps = %+v", ts)
	}
	if pause := ts[1].Start - ts[0].End; pause < 0.1 {
		t.Errorf("%.3f s between the sentences; the pause went into %q", pause, ts[0].Text)
	}
	// The audio after the first word's end, up to the second word, is silent.
	from, to := int(ts[0].End*22050), int(ts[1].Start*22050)
	if level := rms(resp.Audio[2*from : 2*to]); level > 0.001 {
		t.Errorf("RMS %.4f in the gap after %q: its end was cut off", level, ts[0].Text)
	}
}

func TestSpeed(t *testing.T) {
	p := newProvider(t)
	text := "Speaking faster makes the clip shorter, and slower makes it longer."
	clip := func(speed float64) *sdk.SynthesizeResponse {
		return synth(t, p, &sdk.SynthesizeRequest{Voice: "en", Text: text, Speed: speed})
	}
	dur := func(speed float64) (float64, []string) {
		resp := clip(speed)
		return seconds(resp.Audio, 22050), resp.Warnings
	}
	normal, _ := dur(0)
	if one, zero := clip(1).Audio, clip(0).Audio; !bytes.Equal(one, zero) {
		t.Errorf("speed 1 gives %d bytes, speed 0 (normal) %d", len(one), len(zero))
	}
	fast, warnings := dur(2)
	if fast > normal*0.7 || len(warnings) != 0 {
		t.Errorf("speed 2: %.3f s (normal %.3f s), warnings %q", fast, normal, warnings)
	}
	if slow, _ := dur(0.6); slow < normal*1.3 {
		t.Errorf("speed 0.6: %.3f s, normal %.3f s", slow, normal)
	}
	// Beyond eSpeak's 450 wpm the rate clamps, and the caller is told.
	fastest, capped := clip(4), clip(450.0/175)
	if w := fastest.Warnings; !bytes.Equal(fastest.Audio, capped.Audio) || len(w) != 1 || !strings.Contains(w[0], "2.57x") {
		t.Errorf("speed 4: %d bytes (2.57x: %d bytes), warnings %q", len(fastest.Audio), len(capped.Audio), w)
	}
}

func TestInvalidRequests(t *testing.T) {
	p := newProvider(t)
	ok := sdk.SynthesizeRequest{Model: "espeak-ng", Voice: "en", Text: "fine"}
	tests := []struct {
		name   string
		change func(*sdk.SynthesizeRequest)
	}{
		{"unknown voice", func(r *sdk.SynthesizeRequest) { r.Voice = "klingon" }},
		{"voice by file path", func(r *sdk.SynthesizeRequest) { r.Voice = "../../../../etc/passwd" }},
		{"odd variant", func(r *sdk.SynthesizeRequest) { r.Voice = "en+../x" }},
		{"unknown model", func(r *sdk.SynthesizeRequest) { r.Model = "tts-1" }},
		{"mp3", func(r *sdk.SynthesizeRequest) { r.Format = "mp3" }},
		{"other sample rate", func(r *sdk.SynthesizeRequest) { r.SampleRate = 16000 }},
		{"a bitrate", func(r *sdk.SynthesizeRequest) { r.Format, r.Bitrate = "wav", 64 }},
		{"opus", func(r *sdk.SynthesizeRequest) { r.Format = "opus" }},
		{"empty text", func(r *sdk.SynthesizeRequest) { r.Text = " \n " }},
		{"text too long", func(r *sdk.SynthesizeRequest) { r.Text = strings.Repeat("ä", 5001) }},
		{"negative speed", func(r *sdk.SynthesizeRequest) { r.Speed = -1 }},
		{"NaN speed", func(r *sdk.SynthesizeRequest) { r.Speed = math.NaN() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := ok
			tt.change(&req)
			if _, err := p.Synthesize(context.Background(), &req); sdk.AsError(err).Kind != sdk.KindInvalidRequest {
				t.Errorf("Synthesize error = %v, want invalid_request", err)
			}
			sent := 0
			err := p.Stream(context.Background(), &req, func(sdk.Chunk) error { sent++; return nil })
			if sdk.AsError(err).Kind != sdk.KindInvalidRequest || sent != 0 {
				t.Errorf("Stream error = %v after %d chunks, want invalid_request before any", err, sent)
			}
		})
	}
	// The request all of them were derived from is fine, including with a
	// voice variant and in upper case.
	for _, voice := range []string{"en", "EN-US", "en+f3", "en-gb", "fr-fr", "zh", ""} {
		req := ok
		req.Voice = voice
		synth(t, p, &req)
	}
}

// TestVoiceNames checks that every name of a voice selects that voice (the
// same bytes), and that a variant given after "+" or as
// providerOptions.variant is the same variant.
func TestVoiceNames(t *testing.T) {
	p := newProvider(t)
	text := "Names for one voice."
	render := func(voice string, options string) []byte {
		t.Helper()
		req := &sdk.SynthesizeRequest{Voice: voice, Text: text}
		if options != "" {
			req.Options = []byte(options)
		}
		return synth(t, p, req).Audio
	}
	same := [][]string{
		{"en-gb", "en", "EN-GB", ""},
		{"fr-fr", "fr"},
		{"cmn", "zh", "zh-cmn"},
		{"es-419", "es-mx"},
	}
	for _, names := range same {
		want := render(names[0], "")
		for _, n := range names[1:] {
			if got := render(n, ""); !bytes.Equal(got, want) {
				t.Errorf("voice %q: %d bytes, unlike %q (%d bytes)", n, len(got), names[0], len(want))
			}
		}
	}
	if bytes.Equal(render("en-gb", ""), render("en-us", "")) {
		t.Error("en-gb and en-us sound the same")
	}
	plain, plus, option := render("en-gb", ""), render("en-gb+f3", ""), render("en-gb", `{"variant":"f3","speed":"other providers' keys are ignored"}`)
	if bytes.Equal(plus, plain) || !bytes.Equal(option, plus) {
		t.Errorf("variant f3: after + %d bytes, as an option %d bytes, without %d bytes", len(plus), len(option), len(plain))
	}
	for _, bad := range []struct{ voice, options string }{
		{"en-gb+f3", `{"variant":"f3"}`},
		{"en-gb", `{"variant":"../../x"}`},
		{"en-gb", `{"variant":3}`},
		{"en-gb", `{"variant":""}`},
	} {
		req := &sdk.SynthesizeRequest{Voice: bad.voice, Text: text, Options: []byte(bad.options)}
		if _, err := p.Synthesize(context.Background(), req); sdk.AsError(err).Kind != sdk.KindInvalidRequest {
			t.Errorf("voice %q, options %s: error %v, want invalid_request", bad.voice, bad.options, err)
		}
	}
}

func TestClone(t *testing.T) {
	p := newProvider(t)
	_, err := p.Clone(context.Background(), &sdk.CloneRequest{Model: "espeak-ng", Name: "me"})
	if sdk.AsError(err).Kind != sdk.KindUnsupported {
		t.Errorf("Clone error = %v, want unsupported", err)
	}
}

// collect streams req and returns the chunks.
func collect(t *testing.T, p *Provider, req *sdk.SynthesizeRequest) []sdk.Chunk {
	t.Helper()
	var chunks []sdk.Chunk
	err := p.Stream(context.Background(), req, func(c sdk.Chunk) error {
		chunks = append(chunks, c)
		return nil
	})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	return chunks
}

func TestStream(t *testing.T) {
	p := newProvider(t)
	text := strings.Repeat("A long text is streamed in many small pieces. ", 6)
	whole := synth(t, p, &sdk.SynthesizeRequest{Voice: "en", Text: text, Format: "pcm"}).Audio

	tests := []struct {
		format, mediaType string
		header            bool
	}{
		{"", "audio/wav", true},
		{"wav", "audio/wav", true},
		{"pcm", "audio/pcm;rate=22050", false},
	}
	for _, tt := range tests {
		t.Run("format="+tt.format, func(t *testing.T) {
			chunks := collect(t, p, &sdk.SynthesizeRequest{Voice: "en", Text: text, Format: tt.format})
			// About 60 ms a chunk: a 10 s clip comes in well over 50.
			if len(chunks) < 50 {
				t.Fatalf("%d chunks for %.1f s of audio", len(chunks), seconds(whole, 22050))
			}
			var got []byte
			for i, c := range chunks {
				if (i == 0) != (c.MediaType != "") || (i == 0 && c.MediaType != tt.mediaType) {
					t.Errorf("chunk %d media type %q", i, c.MediaType)
				}
				if len(c.Data) == 0 || len(c.Data)%2 != 0 {
					t.Errorf("chunk %d holds %d bytes", i, len(c.Data))
				}
				got = append(got, c.Data...)
			}
			if tt.header {
				checkWAVHeader(t, got, 0xFFFFFFFF)
				got = got[44:]
			}
			if !bytes.Equal(got, whole) {
				t.Errorf("streamed %d bytes of audio, the whole clip has %d", len(got), len(whole))
			}
		})
	}
}

// TestStreamWAVReadable checks that decoders accept the streamed WAV's
// unknown-size header and read the audio to its end.
func TestStreamWAVReadable(t *testing.T) {
	p := newProvider(t)
	req := &sdk.SynthesizeRequest{Voice: "de", Text: "Grüße aus München.", Format: "wav"}
	var wav []byte
	for _, c := range collect(t, p, req) {
		wav = append(wav, c.Data...)
	}
	info := soxInfo(t, wav)
	samples := strconv.Itoa((len(wav) - 44) / 2)
	if info["r"] != "22050" || info["c"] != "1" || info["b"] != "16" {
		t.Errorf("sox --i = %v", info)
	}
	// sox --i trusts the header's size; decoding shows what it really reads.
	path := filepath.Join(t.TempDir(), "stream.wav")
	if err := os.WriteFile(path, wav, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("sox", path, "-t", "raw", "-").Output()
	if err != nil || !bytes.Equal(out, wav[44:]) {
		t.Errorf("sox decoded %d bytes (err %v), want the %s samples sent", len(out), err, samples)
	}
}

// TestStreamIsIncremental shows that chunks leave while eSpeak is still
// synthesizing: cancelling on the first chunk stops synthesis with most of
// the clip never rendered. A stream that rendered the clip first and then
// sent it would deliver everything.
func TestStreamIsIncremental(t *testing.T) {
	p := newProvider(t)
	text := strings.Repeat("Nobody will hear the end of this long sentence. ", 10)
	whole := synth(t, p, &sdk.SynthesizeRequest{Voice: "en", Text: text}).Audio

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var received, chunks int
	err := p.Stream(ctx, &sdk.SynthesizeRequest{Voice: "en", Text: text}, func(c sdk.Chunk) error {
		received += len(c.Data)
		chunks++
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Stream error = %v, want context.Canceled", err)
	}
	if chunks != 1 || received*20 > len(whole) {
		t.Errorf("received %d chunks, %d of %d bytes after cancelling on the first", chunks, received, len(whole))
	}
}

// TestStreamSendError checks that a failing send (the client went away)
// ends the stream with that error.
func TestStreamSendError(t *testing.T) {
	p := newProvider(t)
	gone := errors.New("client went away")
	calls := 0
	err := p.Stream(context.Background(), &sdk.SynthesizeRequest{Voice: "en", Text: strings.Repeat("More words. ", 30)}, func(sdk.Chunk) error {
		calls++
		if calls == 3 {
			return gone
		}
		return nil
	})
	if !errors.Is(err, gone) || calls != 3 {
		t.Errorf("Stream error = %v after %d sends, want %v after 3", err, calls, gone)
	}
}

// TestCancel checks that a cancelled context stops Synthesize, whether it
// is cancelled before the call, while the call waits for the engine, or
// during synthesis, and that the next call is unaffected.
func TestCancel(t *testing.T) {
	p := newProvider(t)
	req := &sdk.SynthesizeRequest{Voice: "en", Text: strings.Repeat("Cancel me if you can. ", 20)}
	want := synth(t, p, req).Audio

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Synthesize(cancelled, req); !errors.Is(err, context.Canceled) {
		t.Errorf("Synthesize(cancelled context) error = %v", err)
	}

	// Every rendering place is taken: the waiting call gives up.
	for range cap(p.engine.renders) {
		p.engine.renders <- struct{}{}
	}
	_, err := p.Synthesize(cancelled, req)
	for range cap(p.engine.renders) {
		<-p.engine.renders
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Synthesize(cancelled context) waiting for the engine: error = %v", err)
	}

	// Cancelled mid-synthesis through the stream's first chunk (see
	// TestStreamIsIncremental); afterwards the engine renders afresh.
	ctx, cancel := context.WithCancel(context.Background())
	_ = p.Stream(ctx, req, func(sdk.Chunk) error { cancel(); return nil })
	if got := synth(t, p, req).Audio; !bytes.Equal(got, want) {
		t.Errorf("after an aborted synthesis the next clip is %d bytes, want %d", len(got), len(want))
	}
}

// TestConcurrent renders different requests from many goroutines at once
// and checks each result is what the same request gives alone: the engine's
// global voice and rate never leak between calls.
func TestConcurrent(t *testing.T) {
	p := newProvider(t)
	reqs := []*sdk.SynthesizeRequest{
		{Voice: "en", Text: "First of all, English."},
		{Voice: "de", Text: "Zweitens, Deutsch.", Speed: 1.5, Format: "pcm"},
		{Voice: "fr", Text: "Troisièmement, le français.", Speed: 0.7, Format: "wav"},
		{Voice: "en-us", Text: "Fourth, American English, with timestamps.", Speed: 1.25, Timestamps: true},
	}
	want := make([]*sdk.SynthesizeResponse, len(reqs))
	for i, r := range reqs {
		var err error
		if want[i], err = p.Synthesize(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 16 {
		wg.Go(func() {
			for k := range 3 {
				i := (g + k) % len(reqs)
				got, err := p.Synthesize(context.Background(), reqs[i])
				switch {
				case err != nil:
					errs <- err
				case !bytes.Equal(got.Audio, want[i].Audio) || got.MediaType != want[i].MediaType || !slices.Equal(got.Timestamps, want[i].Timestamps):
					errs <- fmt.Errorf("goroutine %d: request %d rendered differently under concurrency", g, i)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestSameRequestSameBytes checks that a request renders to the same bytes
// and timestamps every time, whatever was rendered before it or at the
// same time: the first rendering, one after other voices, rates and texts,
// one after a stream that was abandoned midway, and many at once.
func TestSameRequestSameBytes(t *testing.T) {
	p := newProvider(t)
	req := &sdk.SynthesizeRequest{Voice: "en", Timestamps: true, Format: "pcm",
		Text: "Hello there, my friend. How are you today? This is a test of the system."}
	want := synth(t, p, req)
	others := []*sdk.SynthesizeRequest{
		{Voice: "de", Text: "Grüße aus München, sagte sie, und lachte laut."},
		{Voice: "en", Text: "This is a test of the system.", Speed: 1.7},
		{Voice: "en+f3", Text: strings.Repeat("Breathe in, and out. ", 10)},
		{Voice: "fr", Text: "Le chat dort sur le canapé depuis ce matin."},
	}
	check := func(when string, got *sdk.SynthesizeResponse) {
		t.Helper()
		if !bytes.Equal(got.Audio, want.Audio) || !slices.Equal(got.Timestamps, want.Timestamps) {
			t.Errorf("%s: %d bytes (first rendering %d), same audio %v, same timestamps %v",
				when, len(got.Audio), len(want.Audio), bytes.Equal(got.Audio, want.Audio), slices.Equal(got.Timestamps, want.Timestamps))
		}
	}
	check("again", synth(t, p, req))
	for _, o := range others {
		synth(t, p, o)
		check("after "+o.Voice+" "+strconv.Quote(o.Text[:10]), synth(t, p, req))
	}
	ctx, cancel := context.WithCancel(context.Background())
	_ = p.Stream(ctx, others[2], func(sdk.Chunk) error { cancel(); return nil })
	check("after an abandoned stream", synth(t, p, req))

	var streamed []byte
	for _, c := range collect(t, p, &sdk.SynthesizeRequest{Voice: req.Voice, Text: req.Text, Format: "pcm"}) {
		streamed = append(streamed, c.Data...)
	}
	if !bytes.Equal(streamed, want.Audio) {
		t.Errorf("the stream of the request has %d bytes, unlike its clip (%d)", len(streamed), len(want.Audio))
	}

	var wg sync.WaitGroup
	results := make([]*sdk.SynthesizeResponse, 8)
	errs := make([]error, len(results))
	for i := range results {
		wg.Go(func() {
			if i%2 == 1 {
				_, _ = p.Synthesize(context.Background(), others[i/2%len(others)])
			}
			results[i], errs[i] = p.Synthesize(context.Background(), req)
		})
	}
	wg.Wait()
	for i, got := range results {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		check(fmt.Sprintf("concurrent rendering %d", i), got)
	}
}

// BenchmarkSynthesize renders a ~200-character sentence and reports the
// real-time factor: seconds of audio produced per second of wall time.
func BenchmarkSynthesize(b *testing.B) {
	p := newProvider(b)
	req := &sdk.SynthesizeRequest{Voice: "en-us", Timestamps: true, Format: "pcm",
		Text: "The gateway renders this sentence again and again to measure how fast eSpeak speaks: " +
			"about two hundred characters, with commas, a number like 42, and a full stop at the end."}
	var audio float64
	for b.Loop() {
		resp, err := p.Synthesize(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		audio += seconds(resp.Audio, 22050)
	}
	b.ReportMetric(audio/b.Elapsed().Seconds(), "x-realtime")
}

// BenchmarkSynthesizeShort renders a two-word clip: almost all of it is
// the fixed cost of a request (a child forked from the template, its
// voice loaded, its exit).
func BenchmarkSynthesizeShort(b *testing.B) {
	p := newProvider(b)
	req := &sdk.SynthesizeRequest{Voice: "en-us", Text: "Hi there.", Format: "pcm"}
	for b.Loop() {
		if _, err := p.Synthesize(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSynthesizeParallel renders short clips from many goroutines:
// requests render side by side, one per CPU.
func BenchmarkSynthesizeParallel(b *testing.B) {
	p := newProvider(b)
	req := &sdk.SynthesizeRequest{Voice: "en-us", Text: "Several requests render side by side.", Format: "pcm"}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := p.Synthesize(context.Background(), req); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestConformance runs the SDK's conformance kit in-process, where the race
// detector sees the provider's code. plugins/espeak runs it over the real
// plugin process.
func TestConformance(t *testing.T) {
	sdktest.Run(t, newProvider(t), sdktest.Config{Voice: "en", InvalidVoice: "klingon"})
}

func TestConfigure(t *testing.T) {
	p := newProvider(t)
	ctx := context.Background()
	for _, ok := range []map[string]string{{}, nil, {"stream_stall_timeout": "2s"}, {"stream_stall_timeout": " 1h "}} {
		if err := p.Configure(ctx, ok); err != nil {
			t.Errorf("Configure(%v): %v", ok, err)
		}
	}
	if err := p.Configure(ctx, map[string]string{"stream_stall_timeout": "1500ms"}); err != nil || p.pace().stall != 1500*time.Millisecond {
		t.Errorf("stall = %v, err %v", p.pace().stall, err)
	}
	if err := p.Configure(ctx, nil); err != nil || p.pace().stall != DefaultStallTimeout {
		t.Errorf("without settings: stall = %v, err %v", p.pace().stall, err)
	}
	for _, bad := range []map[string]string{
		{"stream_stall_timeout": "soon"}, {"stream_stall_timeout": "0s"}, {"stream_stall_timeout": "-1s"},
		{"stream_stall_timeout": "2h"}, {"stream_stall_timout": "2s"},
	} {
		if err := p.Configure(ctx, bad); sdk.AsError(err).Kind != sdk.KindInvalidRequest {
			t.Errorf("Configure(%v) error = %v, want invalid_request", bad, err)
		}
	}
	// The pace follows the library's rate: 5 s ahead, 1 s pieces.
	if pc := p.pace(); pc.ahead != 5*2*22050 || pc.piece != 2*22050 {
		t.Errorf("pace = %+v", pc)
	}
}

// TestStreamDoesNotWaitOnItsClient stalls a stream's client and checks
// that the stream holds no rendering slot while it waits, that other
// requests keep being served meanwhile, and that the stream is ended, and
// logged, once its client has taken nothing for the stall time.
func TestStreamDoesNotWaitOnItsClient(t *testing.T) {
	p := newProvider(t)
	var logged bytes.Buffer
	var logMu sync.Mutex
	p.log = hclog.New(&hclog.LoggerOptions{Output: &lockedWriter{w: &logged, mu: &logMu}, JSONFormat: true})
	if err := p.Configure(context.Background(), map[string]string{"stream_stall_timeout": "1s"}); err != nil {
		t.Fatal(err)
	}
	long := &sdk.SynthesizeRequest{Voice: "en", Text: strings.Repeat("A client that never reads holds nobody back. ", 100)}
	release := make(chan struct{})
	defer close(release)
	type result struct {
		err     error
		elapsed time.Duration
	}
	stalled := make(chan result, len(p.engine.slots)+1)
	// More stalled streams than there are rendering slots.
	for range cap(p.engine.slots) + 1 {
		go func() {
			start := time.Now()
			err := p.Stream(context.Background(), long, func(sdk.Chunk) error { <-release; return nil })
			stalled <- result{err, time.Since(start)}
		}()
	}
	// The streams render ahead, then wait with no slot held; on a busy
	// machine the rendering ahead takes a while, so wait for it (well
	// inside the 1 s stall time) rather than sleep a fixed time.
	n := len(p.engine.slots)
	for deadline := time.Now().Add(900 * time.Millisecond); n != 0 && time.Now().Before(deadline); n = len(p.engine.slots) {
		time.Sleep(10 * time.Millisecond)
	}
	if n != 0 {
		t.Errorf("%d rendering slots held by streams whose clients take nothing", n)
	}
	for i := range 3 {
		// A generous bound: only waiting for a stalled stream breaks it.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := p.Synthesize(ctx, &sdk.SynthesizeRequest{Voice: "de", Text: "Andere kommen trotzdem dran."})
		cancel()
		if err != nil {
			t.Errorf("request %d while streams were stalled: %v", i, err)
		}
	}
	for range cap(p.engine.slots) + 1 {
		r := <-stalled
		if e := sdk.AsError(r.err); e.Kind != sdk.KindTimeout || !strings.Contains(e.Message, "took no audio for 1s") {
			t.Errorf("stalled stream ended with %v", r.err)
		}
		if r.elapsed > 10*time.Second {
			t.Errorf("stalled stream ended after %s", r.elapsed)
		}
	}
	logMu.Lock()
	defer logMu.Unlock()
	if n := strings.Count(logged.String(), `"@level":"warn"`); n != cap(p.engine.slots)+1 || !strings.Contains(logged.String(), "client fell behind") {
		t.Errorf("%d warnings logged:\n%s", n, logged.String())
	}
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// TestStreamInPieces streams with a buffer of a few eSpeak buffers, so
// that the child pauses and resumes many times, to a client that takes a
// chunk now and then: the audio and word timings are those of the whole
// clip, because the pieces are one synthesis that pauses.
func TestStreamInPieces(t *testing.T) {
	p := newProvider(t)
	req := &sdk.SynthesizeRequest{Voice: "en-us", Format: "pcm", Timestamps: true,
		Text: "Pieces of one synthesis. The child pauses between them, and the words keep their times. " + strings.Repeat("Again and again. ", 5)}
	want := synth(t, p, req)
	c, err := p.translate(req)
	if err != nil {
		t.Fatal(err)
	}
	chunk := 2 * int(bufferLength.Seconds()*22050)
	pc := pace{ahead: 3 * chunk, piece: chunk, stall: 5 * time.Second}
	var pcm []byte
	var events []event
	calls := 0
	err = p.engine.stream(context.Background(), req.Text, c.options, pc, func(b buffer) error {
		calls++
		if calls%4 == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		pcm = append(pcm, b.pcm...)
		events = append(events, b.events...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(pcm, want.Audio) {
		t.Fatalf("streamed in pieces: %d bytes, the clip has %d", len(pcm), len(want.Audio))
	}
	if got := wordTimestamps(req.Text, events, pcm, 22050); !slices.Equal(got, want.Timestamps) {
		t.Errorf("timestamps from the pieces:\n%v\nfrom the clip:\n%v", got, want.Timestamps)
	}
}
