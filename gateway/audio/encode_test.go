package audio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hajimehoshi/go-mp3"
)

// TestEncodeWAVReadsWithStandardTools encodes WAV at several rates and has
// sox and ffprobe read the header back.
func TestEncodeWAVReadsWithStandardTools(t *testing.T) {
	sox, soxErr := exec.LookPath("sox")
	ffprobe, ffErr := exec.LookPath("ffprobe")
	if soxErr != nil && ffErr != nil {
		t.Skip("neither sox nor ffprobe installed")
	}
	src := noise(22050, 0.5, 1.5, 3)
	for _, rate := range []int{8000, 16000, 22050, 44100, 48000, 96000} {
		t.Run(strconv.Itoa(rate), func(t *testing.T) {
			data, mt, err := Encode(src, Output{Format: FormatWAV, SampleRate: rate})
			if err != nil {
				t.Fatal(err)
			}
			if mt != "audio/wav" {
				t.Errorf("media type %q", mt)
			}
			wantSamples := int(math.Round(1.5 * float64(rate)))
			if len(data) != 44+2*wantSamples {
				t.Errorf("file is %d bytes, want 44 + %d", len(data), 2*wantSamples)
			}
			path := filepath.Join(t.TempDir(), "out.wav")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if soxErr == nil {
				for flag, want := range map[string]string{
					"-r": strconv.Itoa(rate), "-c": "1", "-b": "16", "-s": strconv.Itoa(wantSamples),
					"-e": "Signed Integer PCM",
				} {
					out, err := exec.Command(sox, "--i", flag, path).CombinedOutput()
					if err != nil {
						t.Fatalf("sox --i %s: %v: %s", flag, err, out)
					}
					if got := strings.TrimSpace(string(out)); got != want {
						t.Errorf("sox --i %s = %q, want %q", flag, got, want)
					}
				}
			}
			if ffErr == nil {
				s := ffprobeStream(t, ffprobe, path)
				if s.CodecName != "pcm_s16le" || s.SampleRate != strconv.Itoa(rate) || s.Channels != 1 ||
					math.Abs(parseFloat(t, s.Duration)-1.5) > 0.001 {
					t.Errorf("ffprobe: %+v", s)
				}
			}
		})
	}
}

type probeStream struct {
	CodecName  string `json:"codec_name"`
	SampleRate string `json:"sample_rate"`
	Channels   int    `json:"channels"`
	Duration   string `json:"duration"`
	BitRate    string `json:"bit_rate"`
}

// ffprobeStream runs ffprobe on a file and returns its first stream.
func ffprobeStream(t *testing.T, ffprobe, path string) probeStream {
	t.Helper()
	out, err := exec.Command(ffprobe, "-v", "error", "-print_format", "json", "-show_streams", path).Output()
	if err != nil {
		t.Fatalf("ffprobe: %v", err)
	}
	return parseProbe(t, out)
}

// parseProbe reads the one stream of ffprobe's JSON output.
func parseProbe(t *testing.T, out []byte) probeStream {
	t.Helper()
	var r struct{ Streams []probeStream }
	if err := json.Unmarshal(out, &r); err != nil || len(r.Streams) != 1 {
		t.Fatalf("ffprobe output %s: %v", out, err)
	}
	return r.Streams[0]
}

func parseFloat(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
	return f
}

// TestEncodeWAVRoundTripIsLossless checks that 16-bit PCM survives decode
// and encode bit for bit, including both extremes.
func TestEncodeWAVRoundTripIsLossless(t *testing.T) {
	pcm := make([]byte, 0, 2*65536)
	for v := -32768; v <= 32767; v++ {
		pcm = append(pcm, byte(v), byte(v>>8))
	}
	c, err := Decode(pcm, "audio/pcm;rate=16000")
	if err != nil {
		t.Fatal(err)
	}
	out, mt, err := Encode(c, Output{Format: FormatPCM})
	if err != nil {
		t.Fatal(err)
	}
	if mt != "audio/pcm;rate=16000" || !bytes.Equal(out, pcm) {
		t.Errorf("round trip changed the samples (media type %q)", mt)
	}
	wav, _, err := Encode(c, Output{Format: FormatWAV})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(wav[44:], pcm) {
		t.Error("WAV data differs from the PCM")
	}
}

// decodeMP3Raw decodes with go-mp3 directly, without our gapless trimming,
// as any go-mp3 user would.
func decodeMP3Raw(t *testing.T, data []byte) (rate, samples int) {
	t.Helper()
	d, err := mp3.NewDecoder(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("go-mp3: %v", err)
	}
	pcm, err := io.ReadAll(d)
	if err != nil {
		t.Fatalf("go-mp3 read: %v", err)
	}
	return d.SampleRate(), len(pcm) / 4
}

// TestEncodeMP3RoundTrip encodes real eSpeak speech to MP3 at every
// MPEG-1/2 rate and checks that go-mp3 decodes it at the requested rate,
// that Decode's gapless trimming restores the source's length (well within
// 50 ms) and alignment, and that FFmpeg, reading the Info/LAME tag on its
// own, agrees on format and length.
func TestEncodeMP3RoundTrip(t *testing.T) {
	src := espeakClip(t, speechTexts[1])
	tests := []struct{ rate, kbps int }{
		{16000, 0}, {22050, 0}, {24000, 0}, {32000, 0}, {44100, 0}, {48000, 0},
		{44100, 128}, {48000, 320}, {16000, 160},
		// Low bitrates, where LAME writes no tag and withInfoFrame adds one.
		{24000, 32}, {16000, 8}, {48000, 32}, {22050, 24},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d/%d", tt.rate, tt.kbps), func(t *testing.T) {
			want, err := Resample(src, tt.rate)
			if err != nil {
				t.Fatal(err)
			}
			data, mt, err := Encode(src, Output{Format: FormatMP3, SampleRate: tt.rate, Bitrate: tt.kbps})
			if err != nil {
				t.Fatal(err)
			}
			if mt != "audio/mpeg" {
				t.Errorf("media type %q", mt)
			}
			kbps := cmp(tt.kbps, DefaultMP3Bitrate)
			if got := mp3Kbps(t, data); got != kbps {
				t.Errorf("stream at %d kbps, want %d", got, kbps)
			}
			rate, raw := decodeMP3Raw(t, data)
			if rate != tt.rate {
				t.Errorf("go-mp3 reads %d Hz, want %d", rate, tt.rate)
			}
			if extra := raw - len(want.Samples); extra < 0 || extra > 3*1152+mpegDecoderDelay {
				t.Errorf("go-mp3 decodes %d samples for %d: delay and padding out of bounds", raw, len(want.Samples))
			}
			got, err := Decode(data, mt)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Samples) != len(want.Samples) {
				t.Errorf("decoded %d samples (%.4f s), source %d (%.4f s)",
					len(got.Samples), got.Seconds(), len(want.Samples), want.Seconds())
			}
			if math.Abs(got.Seconds()-want.Seconds()) > 0.050 {
				t.Errorf("decoded length off by more than 50 ms")
			}
			if lag := bestLag(want.Samples, got.Samples, 200); lag != 0 {
				t.Errorf("decoded audio is shifted by %d samples", lag)
			}
			checkFaithful(t, want.Samples, got.Samples)
			checkWithFFmpeg(t, data, tt.rate, len(want.Samples))
		})
	}
}

// checkFaithful compares a decoded clip with its source: the same
// waveform (correlation) at the same level (RMS within 1 dB). go-mp3,
// the decoder before libmpg123, failed both at 22.05 kHz (twice the
// energy, correlation 0.45).
func checkFaithful(t *testing.T, src, got []float32) {
	t.Helper()
	n := min(len(src), len(got))
	var xy, xx, yy float64
	for i := range n {
		x, y := float64(src[i]), float64(got[i])
		xy, xx, yy = xy+x*y, xx+x*x, yy+y*y
	}
	if xx == 0 || yy == 0 {
		t.Fatalf("silent audio: source energy %g, decoded %g", xx, yy)
	}
	if c := xy / math.Sqrt(xx*yy); c < 0.9 {
		t.Errorf("decoded waveform correlates %.3f with the source, want at least 0.9", c)
	}
	if db := 10 * math.Log10(yy/xx); math.Abs(db) > 1 {
		t.Errorf("decoded level %+.2f dB from the source's, want within 1 dB", db)
	}
}

// checkWithFFmpeg has ffprobe read the MP3's format and ffmpeg decode it,
// applying the tag's gapless trimming itself, and compares the sample
// count with the source's.
func checkWithFFmpeg(t *testing.T, data []byte, rate, samples int) {
	t.Helper()
	ffprobe, err1 := exec.LookPath("ffprobe")
	ffmpeg, err2 := exec.LookPath("ffmpeg")
	if err1 != nil || err2 != nil {
		t.Log("ffprobe/ffmpeg not installed; skipping the FFmpeg cross-check")
		return
	}
	path := writeTemp(t, data, "out.mp3")
	s := ffprobeStream(t, ffprobe, path)
	if s.CodecName != "mp3" || s.SampleRate != strconv.Itoa(rate) || s.Channels != 1 {
		t.Errorf("ffprobe: %+v, want mp3, %d Hz, mono", s, rate)
	}
	pcm, err := exec.Command(ffmpeg, "-v", "error", "-i", path, "-f", "s16le", "-acodec", "pcm_s16le", "-").Output()
	if err != nil {
		t.Fatalf("ffmpeg: %v", err)
	}
	if got := len(pcm) / 2; got != samples {
		t.Errorf("ffmpeg decodes %d samples, source has %d", got, samples)
	}
}

// TestEncodeMP3LowRates covers the MPEG-2.5 rates, which Decode reads
// (libmpg123) as FFmpeg does.
func TestEncodeMP3LowRates(t *testing.T) {
	src := espeakClip(t, speechTexts[0])
	for _, tt := range []struct{ rate, kbps, want int }{
		{8000, 0, 64}, {11025, 0, 64}, {12000, 0, 64}, {8000, 8, 8}, {12000, 32, 32},
	} {
		t.Run(fmt.Sprintf("%d/%d", tt.rate, tt.kbps), func(t *testing.T) {
			want, err := Resample(src, tt.rate)
			if err != nil {
				t.Fatal(err)
			}
			data, _, err := Encode(src, Output{Format: FormatMP3, SampleRate: tt.rate, Bitrate: tt.kbps})
			if err != nil {
				t.Fatal(err)
			}
			if got := mp3Kbps(t, data); got != tt.want {
				t.Errorf("bitrate %d kbps, want %d", got, tt.want)
			}
			checkWithFFmpeg(t, data, tt.rate, len(want.Samples))
			got, err := Decode(data, "audio/mpeg")
			if err != nil {
				t.Fatalf("Decode of MPEG-2.5: %v", err)
			}
			if got.Rate != tt.rate || len(got.Samples) != len(want.Samples) {
				t.Errorf("decoded %d samples at %d Hz, source %d at %d Hz", len(got.Samples), got.Rate, len(want.Samples), tt.rate)
			}
			if tt.kbps == 0 { // 8 kbit/s is too coarse to hold the waveform
				checkFaithful(t, want.Samples, got.Samples)
			}
		})
	}
}

// mp3Kbps reads the bitrate of the stream's first audio frame, after the
// Info tag frame every stream Encode writes must start with.
func mp3Kbps(t *testing.T, data []byte) int {
	t.Helper()
	s, err := probeMP3(data)
	if err != nil {
		t.Fatal(err)
	}
	if !s.tag || s.delay < 0 {
		t.Fatalf("stream does not start with an Info/LAME tag (tag %v, delay %d)", s.tag, s.delay)
	}
	h, ok := parseMP3Header(data[s.first.size:])
	if !ok {
		t.Fatal("no audio frame after the tag frame")
	}
	return h.kbps
}

func cmp(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func writeTemp(t *testing.T, data []byte, name string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// bestLag returns the shift of b against a, within ±maxLag samples, with
// the highest cross-correlation. Not instrumented by the race detector
// (go:norace): 401 dot products of the whole clip, on slices only this
// goroutine holds, were most of TestEncodeMP3RoundTrip's time under
// -race; the encoder and decoder it checks are instrumented as before.
//
//go:norace
func bestLag(a, b []float32, maxLag int) int {
	best, bestLag := math.Inf(-1), 0
	for lag := -maxLag; lag <= maxLag; lag++ {
		var sum float64
		for i := range a {
			if j := i + lag; j >= 0 && j < len(b) {
				sum += float64(a[i]) * float64(b[j])
			}
		}
		if sum > best {
			best, bestLag = sum, lag
		}
	}
	return bestLag
}

// TestEncodeConcurrently runs MP3 encoding and resampling (the two C
// libraries) from several goroutines and checks each result equals the one
// computed alone: the bindings keep no shared state.
func TestEncodeConcurrently(t *testing.T) {
	src := noise(22050, 0.3, 2, 9)
	wantMP3, _, err := Encode(src, Output{Format: FormatMP3, SampleRate: 24000})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			for range 3 {
				got, _, err := Encode(src, Output{Format: FormatMP3, SampleRate: 24000})
				if err != nil {
					errs <- err
					return
				}
				if !bytes.Equal(got, wantMP3) {
					errs <- errors.New("concurrent MP3 encoding differs from the serial result")
					return
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

func TestEncodeRejectsBadOutput(t *testing.T) {
	c := sine(22050, 440, 0.5, 0.1)
	for _, out := range []Output{
		{Format: "ogg"},
		{Format: FormatWAV, Bitrate: 96},
		{Format: FormatMP3, SampleRate: 96000},
		{Format: FormatMP3, SampleRate: 44100, Bitrate: 8},
		{Format: FormatPCM, SampleRate: -5},
	} {
		if _, _, err := Encode(c, out); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("%+v: err = %v, want ErrInvalidParams", out, err)
		}
	}
}

func TestOutputResolve(t *testing.T) {
	tests := []struct {
		out  Output
		src  int
		want Output
	}{
		{Output{Format: FormatWAV}, 22050, Output{Format: FormatWAV, SampleRate: 22050}},
		{Output{Format: FormatPCM, SampleRate: 16000}, 22050, Output{Format: FormatPCM, SampleRate: 16000}},
		{Output{Format: FormatMP3}, 22050, Output{Format: FormatMP3, SampleRate: 22050, Bitrate: 96}},
		{Output{Format: FormatMP3}, 96000, Output{Format: FormatMP3, SampleRate: 48000, Bitrate: 96}},
		{Output{Format: FormatMP3}, 20000, Output{Format: FormatMP3, SampleRate: 22050, Bitrate: 96}},
		{Output{Format: FormatMP3}, 8000, Output{Format: FormatMP3, SampleRate: 8000, Bitrate: 64}},
		{Output{Format: FormatMP3, Bitrate: 320}, 22050, Output{Format: FormatMP3, SampleRate: 32000, Bitrate: 320}},
		{Output{Format: FormatMP3, Bitrate: 8}, 44100, Output{Format: FormatMP3, SampleRate: 24000, Bitrate: 8}},
	}
	for _, tt := range tests {
		got, err := tt.out.Resolve(tt.src)
		if err != nil || got != tt.want {
			t.Errorf("%+v.Resolve(%d) = %+v, %v; want %+v", tt.out, tt.src, got, err, tt.want)
		}
	}
	if r := MP3SampleRates(); !slices.IsSorted(r) || len(r) != 9 {
		t.Errorf("MP3SampleRates() = %v", r)
	}
}
