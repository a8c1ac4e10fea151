package audio

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/testenv"
)

// streamChunks are the sizes, in bytes, a test stream is cut into, in
// turn: odd sizes split samples between writes, 882 is 20 ms at 22050 Hz
// (the size of a provider's chunk), 1 and 3 are tiny pieces the
// resampler cannot yet turn into a sample.
var streamChunks = []int{882, 1, 3, 4410, 881, 2, 7, 16001, 882}

// streamEncode feeds pcm (at rate) through a StreamEncoder to out in
// streamChunks pieces and returns the whole stream, how many of its
// bytes came before Flush, and the media type.
func streamEncode(t testing.TB, rate int, out Output, pcm []byte) (data []byte, early int, mediaType string) {
	t.Helper()
	e, err := NewStreamEncoder(rate, out)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for i := 0; len(pcm) > 0; i++ {
		n := min(len(pcm), streamChunks[i%len(streamChunks)])
		b, err := e.Write(pcm[:n])
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, b...)
		pcm = pcm[n:]
	}
	early = len(data)
	b, err := e.Flush()
	if err != nil {
		t.Fatal(err)
	}
	return append(data, b...), early, e.MediaType()
}

// pcmOf returns c as 16-bit little-endian PCM, the provider's stream.
func pcmOf(t testing.TB, c *Clip) []byte {
	t.Helper()
	b, _, err := Encode(c, Output{Format: FormatPCM})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestStreamEncoderDecodes streams real speech, in pieces of every size,
// into each format and has ffprobe and ffmpeg read it back: the codec,
// rate and length are right, PCM and G.711 are byte for byte what the
// whole-clip encoder makes of the same clip (the streaming resampler
// gives the one-shot one's samples), and the stream came out as it went
// in: what Flush still had to give is a fraction of a second.
func TestStreamEncoderDecodes(t *testing.T) {
	ffprobe := testenv.NeedTool(t, "ffprobe")
	speech := speechClip(t, 3)
	tests := []struct {
		in        int // the provider's rate
		out       Output
		mediaType string
		codec     string
		rate      int
		input     []string // ffmpeg's options for raw input
		exact     bool     // byte for byte Encode's output
		slack     float64  // seconds a decoder may play beyond the clip
		perSecond int      // bytes a second, to tell what Flush held back
	}{
		{22050, Output{Format: FormatPCM, SampleRate: 16000}, "audio/pcm;rate=16000", "pcm_s16le", 16000, []string{"-f", "s16le", "-ar", "16000", "-ac", "1"}, true, 0, 32000},
		{22050, Output{Format: FormatPCM, SampleRate: 24000}, "audio/pcm;rate=24000", "pcm_s16le", 24000, []string{"-f", "s16le", "-ar", "24000", "-ac", "1"}, true, 0, 48000},
		{24000, Output{Format: FormatPCM, SampleRate: 44100}, "audio/pcm;rate=44100", "pcm_s16le", 44100, []string{"-f", "s16le", "-ar", "44100", "-ac", "1"}, true, 0, 88200},
		{22050, Output{Format: FormatWAV}, "audio/wav", "pcm_s16le", 22050, nil, false, 0, 44100},
		{22050, Output{Format: FormatWAV, SampleRate: 16000}, "audio/wav", "pcm_s16le", 16000, nil, false, 0, 32000},
		{22050, Output{Format: FormatULaw}, "audio/PCMU;rate=8000", "pcm_mulaw", 8000, []string{"-f", "mulaw", "-ar", "8000", "-ac", "1"}, true, 0, 8000},
		{22050, Output{Format: FormatALaw}, "audio/PCMA;rate=8000", "pcm_alaw", 8000, []string{"-f", "alaw", "-ar", "8000", "-ac", "1"}, true, 0, 8000},
		{8000, Output{Format: FormatULaw}, "audio/PCMU;rate=8000", "pcm_mulaw", 8000, []string{"-f", "mulaw", "-ar", "8000", "-ac", "1"}, true, 0, 8000},
		{22050, Output{Format: FormatMP3}, "audio/mpeg", "mp3", 22050, nil, false, 0.15, 96 * 125},
		{22050, Output{Format: FormatMP3, SampleRate: 44100, Bitrate: 128}, "audio/mpeg", "mp3", 44100, nil, false, 0.1, 128 * 125},
		{24000, Output{Format: FormatMP3, SampleRate: 16000, Bitrate: 32}, "audio/mpeg", "mp3", 16000, nil, false, 0.2, 32 * 125},
		{22050, Output{Format: FormatOpus}, "audio/ogg;codecs=opus", "opus", 48000, nil, false, 0, 32 * 125},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("%d/%s/%d/%d", tt.in, tt.out.Format, tt.out.SampleRate, tt.out.Bitrate)
		t.Run(name, func(t *testing.T) {
			src, err := Resample(speech, tt.in)
			if err != nil {
				t.Fatal(err)
			}
			pcm := pcmOf(t, src)
			clip, err := Decode(pcm, MediaType{Format: FormatPCM, Rate: tt.in}.String())
			if err != nil {
				t.Fatal(err)
			}
			data, early, mt := streamEncode(t, tt.in, tt.out, pcm)
			if mt != tt.mediaType {
				t.Errorf("media type %q, want %q", mt, tt.mediaType)
			}
			if held := float64(len(data)-early) / float64(tt.perSecond); held > 0.3 {
				t.Errorf("Flush held %d of %d bytes (%.2f s of audio): the encoder does not stream", len(data)-early, len(data), held)
			}
			if tt.exact {
				want, wmt, err := Encode(clip, tt.out)
				if err != nil {
					t.Fatal(err)
				}
				if wmt != mt || !bytes.Equal(data, want) {
					t.Errorf("stream differs from the whole clip's encoding: %d bytes (%s), clip %d bytes (%s)", len(data), mt, len(want), wmt)
				}
			}
			path, _ := probeMono(t, ffprobe, data, tt.out.Format, tt.input, tt.codec, tt.rate)
			decoded := ffmpegDecode(t, path, tt.input...)
			got, want := float64(len(decoded))/float64(tt.rate), clip.Seconds()
			if got < want-0.001 || got > want+tt.slack+0.001 {
				t.Errorf("ffmpeg decodes %.4f s, the clip is %.4f s (+%.3f s allowed)", got, want, tt.slack)
			}
		})
	}
}

// TestStreamEncoderMP3 checks the streamed MP3 against its source: a
// tone comes back at its frequency and level through the package's own
// decoder, LAME's frames do not depend on how the input was cut, and
// every frame is whole MPEG audio from the first byte (no tag frame, no
// placeholder).
func TestStreamEncoderMP3(t *testing.T) {
	tone := sine(22050, 440, 0.3, 2)
	pcm := pcmOf(t, tone)
	out := Output{Format: FormatMP3, SampleRate: 44100, Bitrate: 128}
	data, _, _ := streamEncode(t, 22050, out, pcm)

	e, err := NewStreamEncoder(22050, out)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	whole, err := e.Write(pcm)
	if err != nil {
		t.Fatal(err)
	}
	whole = bytes.Clone(whole)
	tail, err := e.Flush()
	if err != nil {
		t.Fatal(err)
	}
	if whole = append(whole, tail...); !bytes.Equal(whole, data) {
		t.Errorf("the stream in pieces (%d bytes) differs from the stream in one write (%d bytes)", len(data), len(whole))
	}
	info, err := probeMP3(data)
	if err != nil || info.tag || info.first.rate != 44100 || info.first.kbps != 128 || !info.first.mono {
		t.Fatalf("first frame %+v (tag %v): %v", info.first, info.tag, err)
	}
	frames := 0
	for p := 0; p < len(data); frames++ {
		h, ok := parseMP3Header(data[p:])
		if !ok {
			t.Fatalf("no frame at byte %d of %d", p, len(data))
		}
		p += h.size
	}
	c, err := Decode(data, "audio/mpeg")
	if err != nil {
		t.Fatal(err)
	}
	if c.Rate != 44100 || math.Abs(c.Seconds()-float64(frames*1152)/44100) > 0.001 {
		t.Errorf("decodes to %.3f s at %d Hz, %d frames", c.Seconds(), c.Rate, frames)
	}
	mid := middle(c.Samples, 0.1)
	if f := zeroCrossingFreq(mid, c.Rate); math.Abs(f-440) > 1 {
		t.Errorf("tone at %.2f Hz", f)
	}
	if a := toneAmplitude(mid, c.Rate, 440); math.Abs(db(a/0.3)) > 0.5 {
		t.Errorf("tone amplitude %.3f, source 0.3", a)
	}
}

// TestStreamEncoderErrors checks what cannot be streamed or encoded.
func TestStreamEncoderErrors(t *testing.T) {
	for _, tt := range []struct {
		in  int
		out Output
	}{
		{22050, Output{Format: FormatFLAC}},
		{22050, Output{Format: "aac"}},
		{22050, Output{Format: FormatULaw, SampleRate: 16000}},
		{22050, Output{Format: FormatMP3, SampleRate: 44100, Bitrate: 8}},
		{22050, Output{Format: FormatMP3, SampleRate: 12345}},
		{22050, Output{Format: FormatOpus, Bitrate: 1000}},
		{0, Output{Format: FormatPCM, SampleRate: 16000}},
	} {
		if e, err := NewStreamEncoder(tt.in, tt.out); !errors.Is(err, ErrInvalidParams) {
			if e != nil {
				e.Close()
			}
			t.Errorf("%d Hz to %+v: err %v, want ErrInvalidParams", tt.in, tt.out, err)
		}
	}
	e, err := NewStreamEncoder(22050, Output{Format: FormatMP3})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Write(make([]byte, 100)); err == nil {
		t.Error("Write after Flush succeeded")
	}
	e.Close()
	e.Close() // twice is fine
}

// TestStreamEncoderAllocs checks the steady state of a stream: once the
// buffers have grown, a 20 ms chunk is encoded without allocating.
func TestStreamEncoderAllocs(t *testing.T) {
	pcm := pcmOf(t, speechClip(t, 2))
	for _, out := range []Output{
		{Format: FormatULaw},
		{Format: FormatPCM, SampleRate: 16000},
		{Format: FormatMP3, SampleRate: 44100, Bitrate: 128},
		{Format: FormatOpus},
	} {
		e, err := NewStreamEncoder(22050, out)
		if err != nil {
			t.Fatal(err)
		}
		pos := 0
		next := func() {
			if pos+882 > len(pcm) {
				pos = 0
			}
			if _, err := e.Write(pcm[pos : pos+882]); err != nil {
				t.Fatal(err)
			}
			pos += 882
		}
		for range 100 {
			next()
		}
		if n := testing.AllocsPerRun(200, next); n != 0 {
			t.Errorf("%s: %.2f allocations per 20 ms chunk", out.Format, n)
		}
		e.Close()
	}
}

// TestMeterG711 checks that a G.711 stream's playing time is its byte
// count at 8 kHz.
func TestMeterG711(t *testing.T) {
	m := NewMeter("audio/PCMU;rate=8000")
	m.Write(make([]byte, 4000))
	m.Write(make([]byte, 8000))
	if got := m.Length(); got != 1500*time.Millisecond {
		t.Errorf("μ-law: %v", got)
	}
	if got := Length(make([]byte, 800), "audio/PCMA;rate=8000"); got != 100*time.Millisecond {
		t.Errorf("A-law: %v", got)
	}
}

// BenchmarkStreamEncoder encodes a provider's stream of eSpeak speech
// at 22050 Hz one 20 ms chunk (882 bytes) per operation, as the gateway
// does for a stream converted to another format: ns/op is the CPU time
// per chunk.
func BenchmarkStreamEncoder(b *testing.B) {
	pcm := pcmOf(b, speechClip(b, 10))
	const chunkBytes = 882
	for _, tt := range []struct {
		name string
		out  Output
	}{
		{"ulaw_8000", Output{Format: FormatULaw}},
		{"pcm_16000", Output{Format: FormatPCM, SampleRate: 16000}},
		{"mp3_22050_96", Output{Format: FormatMP3}},
		{"mp3_44100_128", Output{Format: FormatMP3, SampleRate: 44100, Bitrate: 128}},
		{"opus_48000_32", Output{Format: FormatOpus}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			e, err := NewStreamEncoder(22050, tt.out)
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			b.ReportAllocs()
			pos := 0
			for b.Loop() {
				if pos+chunkBytes > len(pcm) {
					pos = 0
				}
				if _, err := e.Write(pcm[pos : pos+chunkBytes]); err != nil {
					b.Fatal(err)
				}
				pos += chunkBytes
			}
			reportRealtime(b, 0.02)
		})
	}
}
