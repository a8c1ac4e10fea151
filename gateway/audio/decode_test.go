package audio

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestParseMediaType(t *testing.T) {
	tests := []struct {
		in      string
		want    MediaType
		canon   string
		wantErr bool
	}{
		{in: "audio/wav", want: MediaType{Format: FormatWAV}, canon: "audio/wav"},
		{in: "audio/x-wav", want: MediaType{Format: FormatWAV}, canon: "audio/wav"},
		{in: "Audio/WAVE", want: MediaType{Format: FormatWAV}, canon: "audio/wav"},
		{in: "audio/mpeg", want: MediaType{Format: FormatMP3}, canon: "audio/mpeg"},
		{in: "audio/mp3", want: MediaType{Format: FormatMP3}, canon: "audio/mpeg"},
		{in: "audio/pcm;rate=22050", want: MediaType{Format: FormatPCM, Rate: 22050, Channels: 1}, canon: "audio/pcm;rate=22050"},
		{in: "audio/pcm; rate=16000", want: MediaType{Format: FormatPCM, Rate: 16000, Channels: 1}, canon: "audio/pcm;rate=16000"},
		{in: "audio/L16;rate=8000;channels=2", want: MediaType{Format: FormatPCM, Rate: 8000, Channels: 2, BigEndian: true}, canon: "audio/L16;rate=8000;channels=2"},
		{in: "audio/PCMU;rate=8000", want: MediaType{Format: FormatULaw, Rate: 8000, Channels: 1}, canon: "audio/PCMU;rate=8000"},
		{in: "audio/basic", want: MediaType{Format: FormatULaw, Rate: 8000, Channels: 1}, canon: "audio/PCMU;rate=8000"},
		{in: "audio/x-alaw;rate=16000", want: MediaType{Format: FormatALaw, Rate: 16000, Channels: 1}, canon: "audio/PCMA;rate=16000"},
		{in: "audio/PCMA;rate=x", wantErr: true},
		{in: "audio/pcm", wantErr: true},
		{in: "audio/pcm;rate=0", wantErr: true},
		{in: "audio/pcm;rate=abc", wantErr: true},
		{in: "audio/pcm;rate=8000;channels=0", wantErr: true},
		{in: "audio/ogg", wantErr: true},
		{in: "", wantErr: true},
		{in: "not a media type;;", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseMediaType(tt.in)
			if tt.wantErr {
				if !errors.Is(err, ErrUnsupportedMediaType) {
					t.Fatalf("err = %v, want ErrUnsupportedMediaType", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if got.String() != tt.canon {
				t.Errorf("String() = %q, want %q", got.String(), tt.canon)
			}
		})
	}
}

// TestDecodeWAVFormats has sox write a 440 Hz tone (left) and 880 Hz tone
// (right) in each WAV sample format and checks the mono mixdown: each tone
// at half its amplitude, the right length and rate. sox writes
// WAVE_FORMAT_EXTENSIBLE for the 24- and 32-bit and multichannel files.
func TestDecodeWAVFormats(t *testing.T) {
	sox, err := exec.LookPath("sox")
	if err != nil {
		t.Skip("sox not installed")
	}
	tests := []struct {
		name string
		args []string // output format options
		tol  float64  // dB
	}{
		{"16-bit stereo", []string{"-b", "16", "-e", "signed-integer"}, 0.01},
		{"24-bit stereo", []string{"-b", "24", "-e", "signed-integer"}, 0.01},
		{"32-bit int stereo", []string{"-b", "32", "-e", "signed-integer"}, 0.01},
		{"32-bit float stereo", []string{"-b", "32", "-e", "floating-point"}, 0.01},
		{"64-bit float stereo", []string{"-b", "64", "-e", "floating-point"}, 0.01},
		{"8-bit unsigned stereo", []string{"-b", "8", "-e", "unsigned-integer"}, 0.1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tone.wav")
			args := append([]string{"-n", "-r", "24000", "-c", "2"}, tt.args...)
			args = append(args, path, "synth", "1", "sine", "440", "sine", "880", "vol", "0.5")
			if out, err := exec.Command(sox, args...).CombinedOutput(); err != nil {
				t.Fatalf("sox: %v: %s", err, out)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			c, err := Decode(data, "audio/wav")
			if err != nil {
				t.Fatal(err)
			}
			if c.Rate != 24000 || len(c.Samples) != 24000 {
				t.Fatalf("decoded %d samples at %d Hz, want 24000 at 24000", len(c.Samples), c.Rate)
			}
			for _, f := range []float64{440, 880} {
				if got := db(toneAmplitude(c.Samples, c.Rate, f)); math.Abs(got-db(0.25)) > tt.tol {
					t.Errorf("%g Hz at %.3f dBFS, want %.3f (each channel at 0.5, mixed down)", f, got, db(0.25))
				}
			}
		})
	}
}

// wavBytes builds a RIFF/WAVE file by hand, for the header cases sox does
// not write.
func wavBytes(dataSize uint32, samples []int16, extra ...[]byte) []byte {
	b := []byte("RIFF\xff\xff\xff\xffWAVE")
	fmtChunk := make([]byte, 24)
	copy(fmtChunk, "fmt ")
	binary.LittleEndian.PutUint32(fmtChunk[4:], 16)
	binary.LittleEndian.PutUint16(fmtChunk[8:], 1)
	binary.LittleEndian.PutUint16(fmtChunk[10:], 1)
	binary.LittleEndian.PutUint32(fmtChunk[12:], 16000)
	binary.LittleEndian.PutUint32(fmtChunk[16:], 32000)
	binary.LittleEndian.PutUint16(fmtChunk[20:], 2)
	binary.LittleEndian.PutUint16(fmtChunk[22:], 16)
	b = append(b, fmtChunk...)
	for _, e := range extra {
		b = append(b, e...)
	}
	b = append(b, "data"...)
	b = binary.LittleEndian.AppendUint32(b, dataSize)
	for _, s := range samples {
		b = binary.LittleEndian.AppendUint16(b, uint16(s))
	}
	return b
}

func TestDecodeWAVHeaders(t *testing.T) {
	samples := []int16{0, 16384, -16384, 32767, -32768}
	want := []float32{0, 0.5, -0.5, 32767.0 / 32768, -1}
	list := []byte("LIST\x05\x00\x00\x00abcde\x00") // odd-sized chunk, padded
	tests := []struct {
		name string
		data []byte
	}{
		{"exact sizes", wavBytes(10, samples)},
		{"streamed, size 0xFFFFFFFF", wavBytes(0xFFFFFFFF, samples)},
		{"streamed, size 0", wavBytes(0, samples)},
		{"odd chunk before data", wavBytes(10, samples, list)},
		{"trailing half sample", append(wavBytes(0xFFFFFFFF, samples), 0x7f)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Decode(tt.data, "audio/wav")
			if err != nil {
				t.Fatal(err)
			}
			if c.Rate != 16000 || len(c.Samples) != len(want) {
				t.Fatalf("got %d samples at %d Hz", len(c.Samples), c.Rate)
			}
			for i := range want {
				if c.Samples[i] != want[i] {
					t.Errorf("sample %d = %v, want %v", i, c.Samples[i], want[i])
				}
			}
		})
	}
}

func TestDecodePCM(t *testing.T) {
	le := []byte{0x00, 0x40, 0x00, 0xC0, 0xFF} // 0.5, -0.5, then a stray byte
	c, err := Decode(le, "audio/pcm;rate=24000")
	if err != nil {
		t.Fatal(err)
	}
	if c.Rate != 24000 || len(c.Samples) != 2 || c.Samples[0] != 0.5 || c.Samples[1] != -0.5 {
		t.Errorf("audio/pcm: got %+v", c)
	}
	be := []byte{0x40, 0x00, 0xC0, 0x00} // stereo frame: 0.5 left, -0.5 right
	c, err = Decode(be, "audio/L16;rate=8000;channels=2")
	if err != nil {
		t.Fatal(err)
	}
	if c.Rate != 8000 || len(c.Samples) != 1 || c.Samples[0] != 0 {
		t.Errorf("audio/L16 stereo: got %+v", c)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, mediaType string
		data            []byte
		want            error
	}{
		{"ogg", "audio/ogg", []byte("OggS"), ErrUnsupportedMediaType},
		{"pcm without rate", "audio/pcm", []byte{0, 0}, ErrUnsupportedMediaType},
		{"not RIFF", "audio/wav", []byte("hello world, not a wav"), ErrCorrupt},
		{"no data chunk", "audio/wav", wavBytes(0, nil)[:36], ErrCorrupt},
		{"ADPCM WAV", "audio/wav", func() []byte {
			b := wavBytes(4, []int16{1, 2})
			b[20] = 2 // format tag 2: MS ADPCM
			return b
		}(), ErrUnsupportedMediaType},
		{"garbage mp3", "audio/mpeg", []byte("definitely not mpeg audio at all"), ErrCorrupt},
		{"empty mp3", "audio/mpeg", nil, ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(tt.data, tt.mediaType)
			if !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}
