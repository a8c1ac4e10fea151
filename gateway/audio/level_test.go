package audio

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

func TestRMSAndPeakDbfs(t *testing.T) {
	tests := []struct {
		name      string
		clip      *Clip
		rms, peak float64
	}{
		{"full-scale sine reads -3.01", sine(48000, 1000, 1, 1), -3.0103, 0},
		{"half-scale sine", sine(48000, 1000, 0.5, 1), -3.0103 - 6.0206, -6.0206},
		{"full-scale square reads 0", &Clip{Rate: 8000, Samples: []float32{1, -1, 1, -1}}, 0, 0},
		{"silence", &Clip{Rate: 8000, Samples: make([]float32, 100)}, math.Inf(-1), math.Inf(-1)},
		{"empty", &Clip{Rate: 8000}, math.Inf(-1), math.Inf(-1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RMSDbfs(tt.clip); !(math.Abs(got-tt.rms) < 0.01 || got == tt.rms) {
				t.Errorf("RMSDbfs = %.4f, want %.4f", got, tt.rms)
			}
			if got := PeakDbfs(tt.clip); !(math.Abs(got-tt.peak) < 0.01 || got == tt.peak) {
				t.Errorf("PeakDbfs = %.4f, want %.4f", got, tt.peak)
			}
		})
	}
}

// TestNormalizeHitsTarget levels real speech and synthetic signals to
// several targets, encodes the result as 16-bit WAV as the gateway would,
// decodes it back, and checks the measured RMS and the peak ceiling.
func TestNormalizeHitsTarget(t *testing.T) {
	type source struct {
		name string
		clip func(t *testing.T) *Clip
	}
	var sources []source
	for i, text := range speechTexts {
		sources = append(sources, source{fmt.Sprintf("espeak%d", i), func(t *testing.T) *Clip { return espeakClip(t, text) }})
	}
	sources = append(sources,
		source{"noise", func(*testing.T) *Clip { return noise(24000, 0.3, 2, 1) }},
		source{"quiet noise", func(*testing.T) *Clip { return noise(16000, 0.001, 2, 2) }},
		source{"sine", func(*testing.T) *Clip { return sine(44100, 440, 0.05, 2) }},
		source{"sine 120 Hz", func(*testing.T) *Clip { return sine(22050, 120, 0.9, 2) }},
	)
	for _, src := range sources {
		for _, target := range []float64{-10, -20, -30, -45} {
			t.Run(fmt.Sprintf("%s/%g", src.name, target), func(t *testing.T) {
				c := src.clip(t)
				rep := Normalize(c, target)
				wav, _, err := Encode(c, Output{Format: FormatWAV})
				if err != nil {
					t.Fatal(err)
				}
				back, err := Decode(wav, "audio/wav")
				if err != nil {
					t.Fatal(err)
				}
				got := RMSDbfs(back)
				if math.Abs(got-target) > 0.5 {
					t.Errorf("RMS after leveling = %.2f dBFS, want %g ± 0.5 (report %+v)", got, target, rep)
				}
				if peak := PeakDbfs(back); peak > CeilingDbfs+0.01 {
					t.Errorf("peak %.3f dBFS above the %g dBFS ceiling", peak, CeilingDbfs)
				}
				t.Logf("in %.2f dBFS, gain %.2f dB, limited %v, out %.2f dBFS, peak %.2f dBFS",
					rep.InputDbfs, rep.GainDb, rep.Limited, got, PeakDbfs(back))
			})
		}
	}
}

// TestNormalizeLoudClipNeverFullScale boosts a real eSpeak clip by 20 dB
// (so it is far beyond full scale) and asks for -3 dBFS RMS, more than a
// -1 dBFS peak ceiling allows for speech: no sample may reach full scale,
// in float or in the encoded 16-bit WAV.
func TestNormalizeLoudClipNeverFullScale(t *testing.T) {
	for i, text := range speechTexts {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			c := espeakClip(t, text)
			scale(c.Samples, 10) // +20 dB
			if PeakDbfs(c) < 6 {
				t.Fatalf("boosted clip peaks at only %.1f dBFS", PeakDbfs(c))
			}
			rep := Normalize(c, -3)
			ceiling := float32(fromDb(CeilingDbfs))
			for k, x := range c.Samples {
				if x > ceiling || x < -ceiling {
					t.Fatalf("sample %d = %v beyond the ceiling %v", k, x, ceiling)
				}
			}
			wav, _, err := Encode(c, Output{Format: FormatWAV})
			if err != nil {
				t.Fatal(err)
			}
			for k := wavHeaderLen; k < len(wav); k += 2 {
				if s := int16(uint16(wav[k]) | uint16(wav[k+1])<<8); s == 32767 || s == -32768 {
					t.Fatalf("encoded sample %d at full scale", (k-wavHeaderLen)/2)
				}
			}
			// The loop still gets as loud as the make-up bound allows.
			if rep.OutputDbfs < -12 {
				t.Errorf("output only %.2f dBFS RMS", rep.OutputDbfs)
			}
			t.Logf("%+v", rep)
		})
	}
}

// TestLimiterIsNotAClipper drives the limiter with a steady sine 2 dB over
// the ceiling: a look-ahead limiter turns it down smoothly, leaving a clean
// sine at the ceiling, while a hard clipper would flatten its tops and
// create odd harmonics (the third near -30 dB at this overdrive).
func TestLimiterIsNotAClipper(t *testing.T) {
	const rate, f = 48000, 440.0
	ceiling := fromDb(CeilingDbfs)
	c := sine(rate, f, 1, 2)
	l := newLimiter(rate, ceiling)
	l.run(c.Samples, fromDb(1), false, c.Samples) // peak +1 dBFS before limiting
	steady := middle(c.Samples, 0.1)
	fund := toneAmplitude(steady, rate, f)
	if got := db(fund); math.Abs(got-CeilingDbfs) > 0.2 {
		t.Errorf("fundamental at %.2f dBFS, want about the ceiling %g", got, CeilingDbfs)
	}
	for h := 2; h <= 5; h++ {
		if rel := db(toneAmplitude(steady, rate, f*float64(h)) / fund); rel > -60 {
			t.Errorf("harmonic %d at %.1f dB relative: distortion from limiting", h, rel)
		}
	}
	// The same overdrive through a hard clipper, to show the check bites.
	clipped := sine(rate, f, fromDb(1), 2)
	for i, x := range clipped.Samples {
		clipped.Samples[i] = float32(max(min(float64(x), ceiling), -ceiling))
	}
	steady = middle(clipped.Samples, 0.1)
	if rel := db(toneAmplitude(steady, rate, 3*f) / toneAmplitude(steady, rate, f)); rel < -50 {
		t.Errorf("hard clipping shows a third harmonic of only %.1f dB; the check would not catch it", rel)
	}
}

// TestNormalizeLimitsBurstCleanly levels a quiet tone with a loud burst in
// the middle to a target that needs the burst limited: the target is met
// by the limiter alone (no soft-knee stage), and the burst stays a clean
// sine at the ceiling.
func TestNormalizeLimitsBurstCleanly(t *testing.T) {
	const rate, f = 48000, 440.0
	c := sine(rate, f, 0.02, 2)
	burst := c.Samples[rate/2 : 3*rate/2]
	scale(burst, 8) // 18 dB louder for the middle second
	rep := Normalize(c, -6)
	if rep.Saturated || !rep.Limited || math.Abs(rep.OutputDbfs+6) > 0.5 {
		t.Fatalf("leveling report %+v, want limited, not saturated, at -6 dBFS", rep)
	}
	steady := middle(burst, 0.2)
	fund := toneAmplitude(steady, rate, f)
	if got := db(fund); math.Abs(got-CeilingDbfs) > 0.2 {
		t.Errorf("burst fundamental at %.2f dBFS, want about the ceiling %g", got, CeilingDbfs)
	}
	for h := 2; h <= 5; h++ {
		if rel := db(toneAmplitude(steady, rate, f*float64(h)) / fund); rel > -60 {
			t.Errorf("harmonic %d of the burst at %.1f dB relative", h, rel)
		}
	}
}

// TestLimiterHoldsCeilingOnBursts throws isolated full-scale spikes and
// bursts at the limiter at several sample rates and targets.
func TestLimiterHoldsCeilingOnBursts(t *testing.T) {
	for _, rate := range []int{8000, 22050, 48000} {
		for _, target := range []float64{-30, -12, 0} {
			c := noise(rate, 0.02, 1, uint64(rate))
			for k := 0; k < len(c.Samples); k += rate / 7 {
				c.Samples[k] = 1 // single-sample spikes
				for j := k + 10; j < min(k+200, len(c.Samples)); j++ {
					c.Samples[j] *= 30 // a burst right after
				}
			}
			Normalize(c, target)
			if p := PeakDbfs(c); p > CeilingDbfs+1e-6 {
				t.Errorf("rate %d target %g: peak %.4f dBFS", rate, target, p)
			}
		}
	}
}

func TestNormalizeLeavesSilenceAlone(t *testing.T) {
	tests := []struct {
		name string
		clip *Clip
	}{
		{"digital silence", &Clip{Rate: 16000, Samples: make([]float32, 16000)}},
		{"empty", &Clip{Rate: 16000}},
		{"noise floor at -80 dBFS", noise(16000, fromDb(-80)*math.Sqrt(3), 1, 7)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := slices.Clone(tt.clip.Samples)
			rep := Normalize(tt.clip, -20)
			if !rep.Gated {
				t.Errorf("not gated: %+v", rep)
			}
			if !slices.Equal(before, tt.clip.Samples) {
				t.Error("samples changed")
			}
		})
	}
}

func TestProcessKeepsSilenceSilent(t *testing.T) {
	silent, _, err := Encode(&Clip{Rate: 22050, Samples: make([]float32, 22050)}, Output{Format: FormatWAV})
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []*OutputParams{nil, {Format: FormatPCM, SampleRate: ptr(16000)}} {
		b, mt, err := Process(silent, "audio/wav", Params{VolumeDbfs: ptr(-20.0), Output: out}, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := Decode(b, mt)
		if err != nil {
			t.Fatal(err)
		}
		if p := PeakDbfs(c); !math.IsInf(p, -1) {
			t.Errorf("%s: silence came back with a peak of %.1f dBFS", mt, p)
		}
	}
}
