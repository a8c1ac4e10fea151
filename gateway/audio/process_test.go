package audio

import (
	"bytes"
	"errors"
	"math"
	"testing"
	"time"
)

// TestProcess runs real eSpeak WAV output through Process with the
// parameter combinations a speech request can carry.
func TestProcess(t *testing.T) {
	wav := espeakWAV(t, speechTexts[2])
	src, err := Decode(wav, "audio/wav")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		p         Params
		mediaType string
		rate      int
		level     *float64 // expected RMS, dBFS
		tol       float64
	}{
		{"volume only keeps the format", Params{VolumeDbfs: ptr(-18.0)}, "audio/wav", 22050, ptr(-18.0), 0.5},
		{"pcm 16k", Params{Output: &OutputParams{Format: FormatPCM, SampleRate: ptr(16000)}}, "audio/pcm;rate=16000", 16000, nil, 0},
		{"pcm 48k leveled", Params{VolumeDbfs: ptr(-30.0), Output: &OutputParams{Format: FormatPCM, SampleRate: ptr(48000)}},
			"audio/pcm;rate=48000", 48000, ptr(-30.0), 0.5},
		{"wav 44.1k leveled", Params{VolumeDbfs: ptr(-12.0), Output: &OutputParams{Format: FormatWAV, SampleRate: ptr(44100)}},
			"audio/wav", 44100, ptr(-12.0), 0.5},
		// MP3 coding shifts the RMS a little; 1 dB covers it.
		{"mp3 24k 64 kbps leveled", Params{VolumeDbfs: ptr(-20.0), Output: &OutputParams{Format: FormatMP3, SampleRate: ptr(24000), Bitrate: ptr(64)}},
			"audio/mpeg", 24000, ptr(-20.0), 1},
		{"mp3 default", Params{Output: &OutputParams{Format: FormatMP3}}, "audio/mpeg", 22050, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, mt, err := Process(wav, "audio/wav", tt.p, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if mt != tt.mediaType {
				t.Errorf("media type %q, want %q", mt, tt.mediaType)
			}
			c, err := Decode(out, mt)
			if err != nil {
				t.Fatal(err)
			}
			if c.Rate != tt.rate {
				t.Errorf("rate %d, want %d", c.Rate, tt.rate)
			}
			if d := math.Abs(c.Seconds() - src.Seconds()); d > 0.001 {
				t.Errorf("duration %.4f s, source %.4f s", c.Seconds(), src.Seconds())
			}
			if tt.level != nil {
				if got := RMSDbfs(c); math.Abs(got-*tt.level) > tt.tol {
					t.Errorf("RMS %.2f dBFS, want %g ± %g", got, *tt.level, tt.tol)
				}
			}
			if p := PeakDbfs(c); p >= 0 {
				t.Errorf("peak %.2f dBFS at full scale", p)
			}
		})
	}
}

func TestProcessPassThrough(t *testing.T) {
	pcm := []byte{1, 2, 3, 4}
	out, mt, err := Process(pcm, "audio/pcm;rate=24000", Params{}, Limits{})
	if err != nil || &out[0] != &pcm[0] || mt != "audio/pcm;rate=24000" {
		t.Errorf("no params: got %v %q %v, want the input untouched", out, mt, err)
	}

	mp3Data, _, err := Encode(sine(24000, 440, 0.3, 1), Output{Format: FormatMP3, Bitrate: 48})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		out  *OutputParams
		same bool
	}{
		{"same format", &OutputParams{Format: FormatMP3}, true},
		{"same rate", &OutputParams{Format: FormatMP3, SampleRate: ptr(24000)}, true},
		{"other rate", &OutputParams{Format: FormatMP3, SampleRate: ptr(16000)}, false},
		{"bitrate given", &OutputParams{Format: FormatMP3, Bitrate: ptr(48)}, false},
		{"to wav", &OutputParams{Format: FormatWAV}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, mt, err := Process(mp3Data, "audio/mp3", Params{Output: tt.out}, Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if got := bytes.Equal(out, mp3Data); got != tt.same {
				t.Errorf("passed through = %v, want %v (media type %q)", got, tt.same, mt)
			}
		})
	}
}

func TestProcessErrors(t *testing.T) {
	wav := espeakWAV(t, speechTexts[0])
	for _, tt := range []struct {
		name      string
		data      []byte
		mediaType string
		p         Params
		want      error
	}{
		{"bad volume", wav, "audio/wav", Params{VolumeDbfs: ptr(5.0)}, ErrInvalidParams},
		{"ogg output", wav, "audio/wav", Params{Output: &OutputParams{Format: "ogg"}}, ErrInvalidParams},
		{"unknown input", []byte("OggS"), "audio/ogg", Params{VolumeDbfs: ptr(-20.0)}, ErrUnsupportedMediaType},
		{"corrupt input", []byte("RIFF...."), "audio/wav", Params{VolumeDbfs: ptr(-20.0)}, ErrCorrupt},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := Process(tt.data, tt.mediaType, tt.p, Limits{}); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

// TestEncodeInPlaceMatchesEncode checks that encoding a leveled clip in
// its own memory gives the bytes the ordinary encoder gives.
func TestEncodeInPlaceMatchesEncode(t *testing.T) {
	c := speechClip(t, 1.5)
	Normalize(c, -16)
	for _, format := range []string{FormatWAV, FormatPCM} {
		want, wantType, err := Encode(c, Output{Format: format})
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]float32, inPlaceSlack+len(c.Samples))
		copy(buf[inPlaceSlack:], c.Samples)
		got, gotType, err := encodeS16InPlace(buf, Output{Format: format, SampleRate: c.Rate})
		if err != nil {
			t.Fatal(err)
		}
		if gotType != wantType || !bytes.Equal(got, want) {
			t.Errorf("%s: in place %d bytes %q, encoder %d bytes %q (equal: %v)", format, len(got), gotType, len(want), wantType, bytes.Equal(got, want))
		}
	}
}

// TestProcessLimits checks that an answer over the limits is refused with
// ErrOutputTooLarge, by duration and by size, and that one within them
// is not.
func TestProcessLimits(t *testing.T) {
	pcm := make([]byte, 2*16000*10) // 10 s at 16 kHz
	slow := Params{Stretch: 0.5, Output: &OutputParams{Format: FormatWAV, SampleRate: ptr(48000)}}
	for _, tt := range []struct {
		name string
		p    Params
		lim  Limits
		fail bool
	}{
		{"within both", slow, Limits{MaxDuration: 20 * time.Second, MaxBytes: 2 << 20}, false},
		{"too long", slow, Limits{MaxDuration: 19 * time.Second}, true},
		{"too large as WAV", slow, Limits{MaxBytes: 1 << 20}, true},
		{"mp3 is smaller", Params{Stretch: 0.5, Output: &OutputParams{Format: FormatMP3}}, Limits{MaxBytes: 1 << 20}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := Process(pcm, "audio/pcm;rate=16000", tt.p, tt.lim)
			if got := errors.Is(err, ErrOutputTooLarge); got != tt.fail {
				t.Errorf("err = %v, want output too large: %v", err, tt.fail)
			}
		})
	}
}
