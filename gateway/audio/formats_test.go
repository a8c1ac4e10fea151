package audio

import (
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/voxgate/voxgate/internal/testenv"
)

// ffmpegDecode decodes a file with ffmpeg to 16-bit mono PCM at its own
// rate; input are ffmpeg's options before -i (a raw format needs them).
func ffmpegDecode(t *testing.T, path string, input ...string) []int16 {
	t.Helper()
	ffmpeg := testenv.NeedTool(t, "ffmpeg")
	args := append([]string{"-v", "error"}, input...)
	args = append(args, "-i", path, "-f", "s16le", "-acodec", "pcm_s16le", "-")
	out, err := exec.Command(ffmpeg, args...).Output()
	if err != nil {
		t.Fatalf("ffmpeg %v: %v", args, err)
	}
	s := make([]int16, len(out)/2)
	for i := range s {
		s[i] = int16(binary.LittleEndian.Uint16(out[2*i:]))
	}
	return s
}

// TestEncodeFormatsDecodeWithFFmpeg encodes speech in every new output
// format, has ffprobe read codec, rate, channels and duration back, and
// ffmpeg decode it: FLAC must give back the 16-bit samples exactly, G.711
// codes must read back in ffmpeg as they expand here, and Opus must keep
// a tone's frequency and level.
func TestEncodeFormatsDecodeWithFFmpeg(t *testing.T) {
	ffprobe := testenv.NeedTool(t, "ffprobe")
	speech := speechClip(t, 2.5)
	tests := []struct {
		out       Output
		mediaType string
		codec     string
		rate      int
		input     []string // ffmpeg's options for raw input
	}{
		{Output{Format: FormatFLAC}, "audio/flac", "flac", 22050, nil},
		{Output{Format: FormatFLAC, SampleRate: 48000}, "audio/flac", "flac", 48000, nil},
		{Output{Format: FormatFLAC, SampleRate: 8000}, "audio/flac", "flac", 8000, nil},
		{Output{Format: FormatOpus}, "audio/ogg;codecs=opus", "opus", 48000, nil},
		{Output{Format: FormatOpus, Bitrate: 16}, "audio/ogg;codecs=opus", "opus", 48000, nil},
		{Output{Format: FormatULaw}, "audio/PCMU;rate=8000", "pcm_mulaw", 8000, []string{"-f", "mulaw", "-ar", "8000", "-ac", "1"}},
		{Output{Format: FormatALaw}, "audio/PCMA;rate=8000", "pcm_alaw", 8000, []string{"-f", "alaw", "-ar", "8000", "-ac", "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.out.Format+"/"+strconv.Itoa(tt.rate)+"/"+strconv.Itoa(tt.out.Bitrate), func(t *testing.T) {
			data, mt, err := Encode(speech, tt.out)
			if err != nil {
				t.Fatal(err)
			}
			if mt != tt.mediaType {
				t.Errorf("media type %q, want %q", mt, tt.mediaType)
			}
			path, s := probeMono(t, ffprobe, data, tt.out.Format, tt.input, tt.codec, tt.rate)
			// ffprobe's Ogg Opus duration counts the pre-skip (312 samples at
			// 48 kHz) that decoders drop; the decoded length below is exact.
			slack := 0.0
			if tt.out.Format == FormatOpus {
				slack = 312.0 / 48000
			}
			if d := parseFloat(t, s.Duration); math.Abs(d-slack-speech.Seconds()) > 0.002 {
				t.Errorf("ffprobe duration %.4f s, clip %.4f s", d, speech.Seconds())
			}
			decoded := ffmpegDecode(t, path, tt.input...)
			want := int(math.Round(speech.Seconds() * float64(tt.rate)))
			if len(decoded) != want {
				t.Errorf("ffmpeg decodes %d samples, want %d", len(decoded), want)
			}
			switch tt.out.Format {
			case FormatFLAC:
				c, _ := Resample(speech, tt.rate)
				for i, x := range c.Samples {
					if i < len(decoded) && decoded[i] != s16(x) {
						t.Fatalf("sample %d decodes to %d, encoded %d: FLAC is lossless", i, decoded[i], s16(x))
					}
				}
			case FormatULaw, FormatALaw:
				// ffmpeg reads every code as this package expands it.
				expand := map[string]func(byte) int16{FormatULaw: uLawToLinear, FormatALaw: aLawToLinear}[tt.out.Format]
				for i, b := range data {
					if i < len(decoded) && expand(b) != decoded[i] {
						t.Fatalf("byte %d expands to %d here, %d in ffmpeg", i, expand(b), decoded[i])
					}
				}
			}
		})
	}
}

// TestEncodeOpusKeepsTone checks Opus's decoded audio against its source:
// a 440 Hz tone comes back at 440 Hz within a decibel of its level.
func TestEncodeOpusKeepsTone(t *testing.T) {
	src := sine(48000, 440, 0.3, 2)
	data, _, err := Encode(src, Output{Format: FormatOpus})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tone.opus")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	pcm := ffmpegDecode(t, path)
	f := make([]float32, len(pcm))
	for i, s := range pcm {
		f[i] = float32(s) / 32768
	}
	mid := middle(f, 0.1)
	if got := zeroCrossingFreq(mid, 48000); math.Abs(got-440) > 1 {
		t.Errorf("tone at %.2f Hz", got)
	}
	if got := toneAmplitude(mid, 48000, 440); math.Abs(db(got/0.3)) > 1 {
		t.Errorf("tone amplitude %.3f, source 0.3", got)
	}
}

// TestG711RoundTrip checks the companding laws: every code expands and
// compands back to itself (μ-law's two zeros aside), companding is
// monotonic in the sample, and every 16-bit sample comes back within half
// a step of its segment (a step is 1/16 of the segment's start).
//
// The coder follows G.711's decision levels, as the ITU's reference coder
// and the Sun implementation do; FFmpeg's encoder instead picks the
// nearest reconstruction level, so its bytes differ from these for about
// 1.4% of samples, those near a segment boundary.
func TestG711RoundTrip(t *testing.T) {
	for _, law := range []struct {
		name     string
		compand  func(int16) byte
		expand   func(byte) int16
		negZeroU bool
	}{{"ulaw", linearToULaw, uLawToLinear, true}, {"alaw", linearToALaw, aLawToLinear, false}} {
		for c := 0; c < 256; c++ {
			b := byte(c)
			if got := law.compand(law.expand(b)); got != b && !(law.negZeroU && law.expand(b) == 0) {
				t.Errorf("%s: code %#02x expands to %d, which compands to %#02x", law.name, b, law.expand(b), got)
			}
		}
		for s := -32768; s <= 32767; s++ {
			v := law.expand(law.compand(int16(s)))
			if err := math.Abs(float64(v) - float64(s)); err > math.Abs(float64(s))/16+32 {
				t.Fatalf("%s: %d comes back as %d", law.name, s, v)
			}
		}
		prev := law.expand(law.compand(-32768))
		for s := -32768; s <= 32767; s += 7 {
			v := law.expand(law.compand(int16(s)))
			if v < prev {
				t.Fatalf("%s: %d → %d after %d", law.name, s, v, prev)
			}
			prev = v
		}
	}
}

// ffprobeStreamArgs runs ffprobe with args and returns the first stream.
func ffprobeStreamArgs(t *testing.T, ffprobe string, args ...string) probeStream {
	t.Helper()
	out, err := exec.Command(ffprobe, args...).Output()
	if err != nil {
		t.Fatalf("ffprobe %v: %v", args, err)
	}
	return parseProbe(t, out)
}

// probeMono writes data to a file named for format, checks with ffprobe
// (given input's options first) that it is mono codec at rate, and
// returns the file's path, for further decoding, and what ffprobe read.
func probeMono(t *testing.T, ffprobe string, data []byte, format string, input []string, codec string, rate int) (string, probeStream) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "out."+format)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-v", "error", "-print_format", "json", "-show_streams"}, input...)
	s := ffprobeStreamArgs(t, ffprobe, append(args, path)...)
	if s.CodecName != codec || s.SampleRate != strconv.Itoa(rate) || s.Channels != 1 {
		t.Errorf("ffprobe: %+v, want %s at %d Hz, mono", s, codec, rate)
	}
	return path, s
}
