package audio

import (
	"math"
	"testing"
	"time"
)

// longSignal is 20 s of a 300 Hz tone in half-second bursts with a
// sharp 3 kHz click every second: a crest factor like speech's, so that
// a loud target needs the limiter.
func longSignal(rate int) []float32 {
	s := make([]float32, 20*rate)
	for i := range s {
		t := float64(i) / float64(rate)
		if math.Mod(t, 1) < 0.5 {
			s[i] = float32(0.05 * math.Sin(2*math.Pi*300*t))
		}
		if math.Mod(t, 1) < 0.002 {
			s[i] += float32(0.6 * math.Sin(2*math.Pi*3000*t))
		}
	}
	return s
}

// replayOf feeds s in pieces of n samples, as a job's chunk files are.
func replayOf(s []float32, n int) func(func([]float32) error) error {
	return func(f func([]float32) error) error {
		for i := 0; i < len(s); i += n {
			if err := f(s[i:min(i+n, len(s))]); err != nil {
				return err
			}
		}
		return nil
	}
}

func TestLevelLong(t *testing.T) {
	const rate = 24000
	sig := longSignal(rate)
	for _, tc := range []struct {
		name    string
		target  LoudnessTarget
		format  string
		limited bool
	}{
		{"quiet, no limiting", LoudnessTarget{Integrated: -30, TruePeak: -1}, FormatWAV, false},
		{"loud, limited", LoudnessTarget{Integrated: -16, TruePeak: -1}, FormatMP3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := LevelLong(rate, tc.target, EncoderHeadroomDb(tc.format), replayOf(sig, 7001))
			if err != nil {
				t.Fatal(err)
			}
			if plan.Limited != tc.limited || plan.Gated || plan.Missed {
				t.Fatalf("plan %+v", plan)
			}
			if !tc.limited && plan.Passes != 1 {
				t.Errorf("%d passes without limiting, want 1", plan.Passes)
			}
			// The last pass, as the caller runs it, measured by an
			// independent whole-clip measurement.
			lev := NewFixedLeveler(rate, plan.GainDb, plan.CeilingDbtp)
			var out []float32
			_ = replayOf(sig, 7001)(func(s []float32) error { out = lev.Write(s, out); return nil })
			out = lev.Flush(out)
			if len(out) != len(sig) {
				t.Fatalf("%d samples out of %d", len(out), len(sig))
			}
			lufs, tp, err := MeasureLoudness(&Clip{Rate: rate, Samples: out})
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(lufs-tc.target.Integrated) > 0.5 {
				t.Errorf("leveled to %.2f LUFS, want %g (plan %+v)", lufs, tc.target.Integrated, plan)
			}
			if tp > tc.target.TruePeak-EncoderHeadroomDb(tc.format) {
				t.Errorf("true peak %.2f dBTP over %g less the encoder's headroom", tp, tc.target.TruePeak)
			}
		})
	}
}

func TestLevelLongSilence(t *testing.T) {
	plan, err := LevelLong(24000, LoudnessTarget{Integrated: -16, TruePeak: -1}, 0, replayOf(make([]float32, 48000), 4096))
	if err != nil || !plan.Gated || plan.Passes != 1 {
		t.Fatalf("silence: %+v %v", plan, err)
	}
}

// TestLoudnessLongReplan plans the audio again under a ceiling lowered for
// an encoder's measured overshoot: the gain is searched again so the
// leveled audio keeps its loudness (a trim after the limiter would have
// lost the whole step), its peaks stay under the new ceiling, and the
// audio is not measured again.
func TestLoudnessLongReplan(t *testing.T) {
	const rate = 24000
	sig := longSignal(rate)
	target := LoudnessTarget{Integrated: -16, TruePeak: -1}
	first, err := LevelLong(rate, target, EncoderHeadroomDb(FormatOpus), replayOf(sig, 7001))
	if err != nil || !first.Limited {
		t.Fatalf("first plan %+v %v", first, err)
	}
	for _, headroom := range []float64{2.5, 4} {
		plan, err := first.Replan(rate, target, headroom, replayOf(sig, 7001))
		if err != nil {
			t.Fatal(err)
		}
		if want := target.TruePeak - headroom - truePeakSafetyDb; plan.CeilingDbtp != want {
			t.Errorf("headroom %g: ceiling %g, want %g", headroom, plan.CeilingDbtp, want)
		}
		if plan.InputLufs != first.InputLufs || plan.InputPeakDbtp != first.InputPeakDbtp || plan.Passes > longSearchPasses {
			t.Errorf("headroom %g: replanned %+v from %+v", headroom, plan, first)
		}
		if plan.GainDb <= first.GainDb {
			t.Errorf("headroom %g: gain %.2f dB, not over the first plan's %.2f under a lower ceiling", headroom, plan.GainDb, first.GainDb)
		}
		lev := NewFixedLeveler(rate, plan.GainDb, plan.CeilingDbtp)
		out := lev.Flush(lev.Write(sig, nil))
		lufs, tp, err := MeasureLoudness(&Clip{Rate: rate, Samples: out})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(lufs-target.Integrated) > 0.5 || tp > plan.CeilingDbtp+truePeakSafetyDb {
			t.Errorf("headroom %g: leveled to %.2f LUFS, %.2f dBTP; want %g LUFS under %.2f", headroom, lufs, tp, target.Integrated, plan.CeilingDbtp)
		}
	}
}

// TestLongPeaksBoundedExactly holds FixedLeveler and LoudnessMeter, which
// interpolate only the samples whose peak's bound matters, to the plain
// computation that interpolates every sample (truePeak.at): eSpeak speech
// and white noise at several rates, gains from none to heavy limiting,
// fed in pieces of several sizes; every output sample and the measured
// peak agree bit for bit.
func TestLongPeaksBoundedExactly(t *testing.T) {
	speech := speechClip(t, 1)
	clips := []*Clip{speech, noise(16000, 0.5, 0.5, 7)}
	for _, rate := range []int{8000, 24000, 48000} {
		r, err := Resample(speech, rate)
		if err != nil {
			t.Fatal(err)
		}
		clips = append(clips, r)
	}
	for _, c := range clips {
		tp := newTruePeak(c.Rate)
		peaks := make([]float32, len(c.Samples))
		for k := range c.Samples {
			peaks[k] = tp.at(c.Samples, k)
		}
		for _, piece := range []int{5, 4096, len(c.Samples)} {
			// Each piece is interpolated alone (LoudnessMeter.Add).
			var top float32
			_ = replayOf(c.Samples, piece)(func(s []float32) error {
				for k := range s {
					top = max(top, tp.at(s, k))
				}
				return nil
			})
			m, err := NewLoudnessMeter(c.Rate)
			if err != nil {
				t.Fatal(err)
			}
			_ = replayOf(c.Samples, piece)(m.Add)
			if got, want := m.TruePeakDbtp(), dbfs(float64(top)); got != want {
				t.Errorf("%d Hz, pieces of %d: meter's peak %v dBTP, want %v", c.Rate, piece, got, want)
			}
			m.Close()
		}
		for _, gainDb := range []float64{-6, 6, 20} {
			const ceilDb = -1.1
			ref := newStreamLimiter(c.Rate, fromDb(ceilDb))
			want := ref.flush(fromDb(gainDb), ref.writePeaks(c.Samples, peaks, fromDb(gainDb), nil))
			for _, piece := range []int{5, 4096, len(c.Samples)} {
				l := NewFixedLeveler(c.Rate, gainDb, ceilDb)
				var got []float32
				_ = replayOf(c.Samples, piece)(func(s []float32) error { got = l.Write(s, got); return nil })
				got = l.Flush(got)
				if len(got) != len(want) {
					t.Fatalf("%d Hz, %+g dB, pieces of %d: %d samples, want %d", c.Rate, gainDb, piece, len(got), len(want))
				}
				for k := range got {
					if math.Float32bits(got[k]) != math.Float32bits(want[k]) {
						t.Errorf("%d Hz, %+g dB, pieces of %d: sample %d is %v, want %v", c.Rate, gainDb, piece, k, got[k], want[k])
						break
					}
				}
			}
		}
	}
}

// TestStreamPeaksBoundedExactly holds StreamLeveler, which interpolates
// only the samples whose peak's bound at their gain reaches the ceiling,
// to the same leveler interpolating every sample (everyPeak): a
// second of speech at two rates, with the gain known (6 dB over what
// the target needs: long stretches limited and long ones not) and
// learned from the look-ahead, fed in 20 ms and odd-sized pieces; every
// output sample agrees bit for bit.
func TestStreamPeaksBoundedExactly(t *testing.T) {
	speech := speechClip(t, 1)
	for _, rate := range []int{16000, 48000} {
		c, err := Resample(speech, rate)
		if err != nil {
			t.Fatal(err)
		}
		in, _, err := MeasureLoudness(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, estimate := range []float64{in + 6, math.NaN()} {
			for _, piece := range []int{rate / 50, 333} {
				run := func(every bool) []float32 {
					l, err := NewStreamLeveler(rate, LoudnessTarget{Integrated: -14, TruePeak: -1}, estimate, 500*time.Millisecond, 0)
					if err != nil {
						t.Fatal(err)
					}
					defer l.Close()
					l.everyPeak = every
					var out []float32
					_ = replayOf(c.Samples, piece)(func(s []float32) error { out, err = l.Write(s, out); return err })
					if err != nil {
						t.Fatal(err)
					}
					return l.Flush(out)
				}
				want, got := run(true), run(false)
				if len(got) != len(want) {
					t.Fatalf("%d Hz, estimate %.1f, pieces of %d: %d samples, want %d", rate, estimate, piece, len(got), len(want))
				}
				for k := range got {
					if math.Float32bits(got[k]) != math.Float32bits(want[k]) {
						t.Errorf("%d Hz, estimate %.1f, pieces of %d: sample %d is %v, want %v", rate, estimate, piece, k, got[k], want[k])
						break
					}
				}
			}
		}
	}
}
