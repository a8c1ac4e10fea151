package audio

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

// TestResampleKeepsFrequency resamples a 1 kHz sine between common TTS
// rates and checks the tone's frequency (zero crossings), level (Goertzel,
// passband flatness) and the length of the result.
func TestResampleKeepsFrequency(t *testing.T) {
	tests := []struct{ from, to int }{
		{44100, 16000},
		{22050, 48000},
		{48000, 44100},
		{24000, 8000},
		{16000, 22050},
		{8000, 48000},
	}
	for _, tt := range tests {
		t.Run(fmtRates(tt.from, tt.to), func(t *testing.T) {
			in := sine(tt.from, 1000, 0.5, 1)
			out, err := Resample(in, tt.to)
			if err != nil {
				t.Fatal(err)
			}
			if out.Rate != tt.to || len(out.Samples) != tt.to {
				t.Fatalf("got %d samples at %d Hz, want %d", len(out.Samples), out.Rate, tt.to)
			}
			steady := middle(out.Samples, 0.05)
			if f := zeroCrossingFreq(steady, out.Rate); math.Abs(f-1000) > 0.5 {
				t.Errorf("zero crossings say %.3f Hz, want 1000", f)
			}
			if got := db(toneAmplitude(steady, out.Rate, 1000)); math.Abs(got-db(0.5)) > 0.05 {
				t.Errorf("tone at %.3f dBFS, want %.3f", got, db(0.5))
			}
			// Upsampling must not create images of the tone.
			if tt.to > tt.from {
				image := float64(tt.from) - 1000
				if rel := db(toneAmplitude(steady, out.Rate, image) / 0.5); rel > -60 {
					t.Errorf("image at %g Hz: %.1f dB relative", image, rel)
				}
			}
		})
	}
}

// TestResampleRejectsAliases downsamples 7.5 kHz + 10 kHz tones from
// 44.1 kHz to 16 kHz. 10 kHz is above the new 8 kHz Nyquist frequency and
// would fold to 6 kHz; a band-limited resampler removes it first.
func TestResampleRejectsAliases(t *testing.T) {
	const amp = 0.4
	in := sine(44100, 7500, amp, 1)
	addSine(in, 10000, amp)
	out, err := Resample(in, 16000)
	if err != nil {
		t.Fatal(err)
	}
	steady := middle(out.Samples, 0.05)
	alias := db(toneAmplitude(steady, out.Rate, 6000) / amp)
	if alias > -60 {
		t.Errorf("10 kHz tone aliased to 6 kHz at %.1f dB relative, want < -60", alias)
	}
	t.Logf("alias at 6 kHz: %.1f dB; 7.5 kHz (in the transition band) kept at %.1f dB",
		alias, db(toneAmplitude(steady, out.Rate, 7500)/amp))

	// A naive decimator (nearest sample) on the same input shows the alias,
	// so the measurement would catch one.
	naive := &Clip{Rate: 16000, Samples: make([]float32, 16000)}
	for i := range naive.Samples {
		naive.Samples[i] = in.Samples[min(int(float64(i)*44100/16000+0.5), len(in.Samples)-1)]
	}
	if db(toneAmplitude(middle(naive.Samples, 0.05), 16000, 6000)/amp) < -20 {
		t.Error("nearest-sample decimation shows no alias: the check is blind")
	}
}

func TestResampleEdgeCases(t *testing.T) {
	c := sine(16000, 440, 0.5, 0.1)
	same, err := Resample(c, 16000)
	if err != nil || same != c {
		t.Errorf("same rate: got %p, %v; want the clip itself", same, err)
	}
	empty, err := Resample(&Clip{Rate: 22050}, 48000)
	if err != nil || empty.Rate != 48000 || len(empty.Samples) != 0 {
		t.Errorf("empty clip: %+v, %v", empty, err)
	}
	one, err := Resample(&Clip{Rate: 8000, Samples: []float32{0.5}}, 48000)
	if err != nil || len(one.Samples) != 6 {
		t.Errorf("one sample to 6: %+v, %v", one, err)
	}
	for _, rate := range []int{0, -1, maxRate + 1} {
		if _, err := Resample(c, rate); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("rate %d: err = %v", rate, err)
		}
	}
}

func fmtRates(from, to int) string { return fmt.Sprintf("%d->%d", from, to) }
