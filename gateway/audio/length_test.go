package audio

import (
	"math"
	"testing"
	"time"
)

func TestLength(t *testing.T) {
	clip := &Clip{Rate: 22050, Samples: make([]float32, 22050*3/2)} // 1.5 s
	for i := range clip.Samples {
		clip.Samples[i] = float32(math.Sin(float64(i) / 10))
	}
	want := 1500 * time.Millisecond
	cases := []struct {
		name   string
		out    Output
		within time.Duration
	}{
		{"wav", Output{Format: FormatWAV, SampleRate: 22050}, time.Millisecond},
		{"pcm", Output{Format: FormatPCM, SampleRate: 22050}, time.Millisecond},
		{"mp3", Output{Format: FormatMP3, SampleRate: 22050, Bitrate: 64}, 80 * time.Millisecond}, // encoder delay and padding frames
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data, mt, err := Encode(clip, c.out)
			if err != nil {
				t.Fatal(err)
			}
			if got := Length(data, mt); got < want-c.within || got > want+c.within {
				t.Errorf("Length = %v, want %v ± %v", got, want, c.within)
			}
			// The same through a meter fed in small pieces, as a stream.
			m := NewMeter(mt)
			for p := data; len(p) > 0; {
				n := min(len(p), 333)
				m.Write(p[:n])
				p = p[n:]
			}
			if got := m.Length(); got < want-c.within || got > want+c.within {
				t.Errorf("Meter = %v, want %v ± %v", got, want, c.within)
			}
		})
	}
	if got := Length([]byte("whatever"), "audio/ogg"); got != 0 {
		t.Errorf("unknown format: %v", got)
	}
	if got := Length(make([]byte, 48000), "audio/pcm;rate=24000;channels=2"); got != 500*time.Millisecond {
		t.Errorf("stereo pcm: %v", got)
	}
}
