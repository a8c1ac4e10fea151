package audio

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"testing"
)

// TestStretchKeepsPitch stretches steady sines and checks what a listener
// would notice: the tone's frequency (zero crossings), its level, the
// length of the result, and clicks at frame joins (the largest step
// between neighbouring samples). 8 kHz runs the full-rate search only; the
// other rates the coarse search first.
func TestStretchKeepsPitch(t *testing.T) {
	const amp = 0.5
	for _, rate := range []int{8000, 22050, 24000, 48000} {
		for _, freq := range []float64{220, 440, 1000} {
			for _, speed := range []float64{0.25, 0.5, 0.8, 1.25, 2, 3, 4} {
				t.Run(fmt.Sprintf("%dHz/%gHz/x%g", rate, freq, speed), func(t *testing.T) {
					in := sine(rate, freq, amp, 2)
					out, err := Stretch(in, speed)
					if err != nil {
						t.Fatal(err)
					}
					if want := int(math.Round(float64(len(in.Samples)) / speed)); len(out.Samples) != want || out.Rate != rate {
						t.Fatalf("got %d samples at %d Hz, want %d at %d", len(out.Samples), out.Rate, want, rate)
					}
					steady := middle(out.Samples, 0.1)
					if f := zeroCrossingFreq(steady, rate); math.Abs(f/freq-1) > 0.01 {
						t.Errorf("zero crossings say %.2f Hz, want %g", f, freq)
					}
					// The whole clip, head and tail included, keeps the level.
					if got, want := RMSDbfs(out), RMSDbfs(in); math.Abs(got-want) > 1 {
						t.Errorf("RMS %.2f dBFS, want %.2f", got, want)
					}
					if got, want := maxStep(out.Samples), maxStep(in.Samples); got > 1.5*want {
						t.Errorf("largest step between samples %.4f, input's %.4f: a click", got, want)
					}
				})
			}
		}
	}
}

// TestStretchChecksCanFail applies the checks of TestStretchKeepsPitch to
// two naive ways of changing speed, so a broken Stretch could not pass
// them: playing the samples faster (resampling) shifts the pitch, and
// cutting out every other 10 ms without cross-fading clicks.
func TestStretchChecksCanFail(t *testing.T) {
	const rate, freq = 24000, 440.0
	in := sine(rate, freq, 0.5, 2)

	fast, err := Resample(in, rate*2/3) // 1.5x as fast at the old rate
	if err != nil {
		t.Fatal(err)
	}
	if f := zeroCrossingFreq(middle(fast.Samples, 0.1), rate); math.Abs(f/freq-1) <= 0.01 {
		t.Errorf("resampling to 1.5x reads %.2f Hz: the pitch check is blind", f)
	}

	chunk := rate / 100
	var cut []float32
	for i := 0; i+chunk <= len(in.Samples); i += 2 * chunk {
		cut = append(cut, in.Samples[i:i+chunk]...)
	}
	if got, want := maxStep(cut), maxStep(in.Samples); got <= 1.5*want {
		t.Errorf("splicing without cross-fade has steps of %.4f (input %.4f): the click check is blind", got, want)
	}
}

// TestStretchKeepsHeadAndTail stretches a clip that is a 440 Hz tone for
// its first and last 200 ms and silence between. The output must start
// with the input's first millisecond and end with its last, keep the
// tone's level over its first and last 20 ms, stay silent in the gap, and
// put the second tone's onset at its input time divided by speed (so
// timestamps scale by 1/speed).
func TestStretchKeepsHeadAndTail(t *testing.T) {
	const rate, burst = 24000, 0.2
	in := &Clip{Rate: rate, Samples: make([]float32, 2*rate)}
	n := len(in.Samples)
	b := int(burst * rate)
	for i := range in.Samples {
		if i < b || i >= n-b {
			in.Samples[i] = float32(0.5 * math.Sin(2*math.Pi*440*float64(i)/rate))
		}
	}
	ms, ms20 := rate/1000, rate/50
	toneDb := RMSDbfs(&Clip{Rate: rate, Samples: in.Samples[:b]})
	for _, speed := range []float64{0.25, 0.5, 0.8, 1.25, 1.5, 2, 3, 4} {
		t.Run(fmt.Sprintf("x%g", speed), func(t *testing.T) {
			c, err := Stretch(in, speed)
			if err != nil {
				t.Fatal(err)
			}
			out := c.Samples
			m := len(out)
			if d := maxAbsDiff(out[:ms], in.Samples[:ms]); d > 0.02 {
				t.Errorf("first millisecond differs from the input's by up to %.4f", d)
			}
			if d := maxAbsDiff(out[m-ms:], in.Samples[n-ms:]); d > 0.02 {
				t.Errorf("last millisecond differs from the input's by up to %.4f", d)
			}
			for _, part := range []struct {
				name string
				s    []float32
			}{{"head", out[:ms20]}, {"tail", out[m-ms20:]}} {
				if got := RMSDbfs(&Clip{Rate: rate, Samples: part.s}); math.Abs(got-toneDb) > 1 {
					t.Errorf("%s 20 ms at %.2f dBFS, tone at %.2f", part.name, got, toneDb)
				}
			}
			// A frame is 25 ms of output and of input, and moves by up to
			// 12 ms of input, so the tone reaches at most 24.5 ms of input
			// plus 12.5 ms of output past its end.
			margin := int((0.025/speed + 0.013) * rate)
			gap := out[int(burst/speed*rate)+margin : m-int(burst/speed*rate)-margin]
			if p := peakAbs(gap); p != 0 {
				t.Errorf("silence between the tones peaks at %g", p)
			}
			onset := slices.IndexFunc(out[m/2:], func(v float32) bool { return math.Abs(float64(v)) > 0.05 }) + m/2
			first := slices.IndexFunc(in.Samples[n-b:], func(v float32) bool { return math.Abs(float64(v)) > 0.05 }) + n - b
			// An event is off by at most the frame's move plus, because time
			// runs at normal speed within a frame, 12.5 ms·|speed-1| of input.
			if got, want := float64(onset)/rate, float64(first)/rate/speed; math.Abs(got-want)*speed > 0.013+0.0125*math.Abs(speed-1) {
				t.Errorf("second tone starts at %.4f s, want %.4f s (input %.4f s / speed)", got, want, float64(first)/rate)
			}
		})
	}
}

// TestStretchSpeech stretches real eSpeak NG speech: the length is exact,
// the loudness stays within 1.5 dB, the voice keeps its pitch (median
// fundamental frequency over voiced frames, within 3%), and the speech
// lands where timestamps divided by speed say: in each quarter of the
// clip, the output's loudness envelope lines up with the input's, time
// scaled, to within the bound Stretch documents.
func TestStretchSpeech(t *testing.T) {
	in := espeakClip(t, speechTexts[2])
	inF0 := medianF0(in)
	for _, speed := range []float64{0.75, 1.5, 2} {
		t.Run(fmt.Sprintf("x%g", speed), func(t *testing.T) {
			out, err := Stretch(in, speed)
			if err != nil {
				t.Fatal(err)
			}
			if want := int(math.Round(float64(len(in.Samples)) / speed)); len(out.Samples) != want {
				t.Fatalf("%d samples, want %d", len(out.Samples), want)
			}
			if got, want := out.Seconds(), in.Seconds()/speed; math.Abs(got-want) > 1/float64(in.Rate) {
				t.Errorf("duration %.5f s, want %.5f", got, want)
			}
			if got, want := RMSDbfs(out), RMSDbfs(in); math.Abs(got-want) > 1.5 {
				t.Errorf("RMS %.2f dBFS, input %.2f", got, want)
			}
			f0 := medianF0(out)
			if math.Abs(f0/inF0-1) > 0.03 {
				t.Errorf("median F0 %.1f Hz, input %.1f Hz", f0, inF0)
			}
			// An event moves by up to 12 ms of input plus, because time runs
			// at normal speed within a frame, 12.5 ms·|speed-1|; the
			// envelope's frames add 5 ms.
			tol := (0.012+0.0125*math.Abs(speed-1))/speed + 0.005
			lags := envelopeLags(in, out, speed, 4)
			for q, lag := range lags {
				if math.Abs(lag) > tol+1e-9 {
					t.Errorf("quarter %d of the output is %+.0f ms off the input's time / speed", q, lag*1000)
				}
			}
			t.Logf("RMS %.2f -> %.2f dBFS, F0 %.1f -> %.1f Hz, envelope lags per quarter %.3f s",
				RMSDbfs(in), RMSDbfs(out), inF0, f0, lags)
		})
	}
	// The F0 check sees a pitch change: resampled speech plays 1.5x as
	// fast and 1.5x as high.
	fast, err := Resample(in, in.Rate*2/3)
	if err != nil {
		t.Fatal(err)
	}
	fast.Rate = in.Rate
	if f0 := medianF0(fast); math.Abs(f0/inF0-1) <= 0.03 {
		t.Errorf("resampled speech reads F0 %.1f Hz, input %.1f: the pitch check is blind", f0, inF0)
	}
}

func TestStretchSilence(t *testing.T) {
	for _, speed := range []float64{0.25, 0.7, 1.5, 4} {
		in := &Clip{Rate: 24000, Samples: make([]float32, 24000)}
		out, err := Stretch(in, speed)
		if err != nil {
			t.Fatal(err)
		}
		if p := peakAbs(out.Samples); p != 0 || len(out.Samples) != int(math.Round(24000/speed)) {
			t.Errorf("x%g: %d samples peaking at %g, want %d of silence", speed, len(out.Samples), p, int(math.Round(24000/speed)))
		}
	}
}

// TestStretchLengths covers short and odd lengths, speed 1 and the input
// being left alone.
func TestStretchLengths(t *testing.T) {
	tests := []struct {
		name  string
		rate  int
		n     int
		speed float64
		want  int
	}{
		{"empty", 24000, 0, 2, 0},
		{"one sample sped up to nothing", 24000, 1, 4, 0},
		{"one sample slowed", 24000, 1, 0.25, 4},
		{"shorter than a frame", 24000, 101, 0.5, 202},
		{"about a frame", 24000, 601, 0.3, 2003},
		{"odd length fast", 22050, 1001, 3, 334},
		{"a second slowed", 16000, 16000, 0.8, 20000},
		{"low rate", 8000, 12345, 1.7, 7262},
		{"high rate", 96000, 96001, 2.5, 38400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := noise(tt.rate, 0.3, float64(tt.n)/float64(tt.rate)+1e-9, 7)
			in.Samples = in.Samples[:tt.n]
			orig := slices.Clone(in.Samples)
			out, err := Stretch(in, tt.speed)
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Samples) != tt.want || out.Rate != tt.rate {
				t.Errorf("%d samples at %d Hz, want %d at %d", len(out.Samples), out.Rate, tt.want, tt.rate)
			}
			if !slices.Equal(in.Samples, orig) {
				t.Error("input modified")
			}
			if p := peakAbs(out.Samples); p > 0.3*1.01 {
				t.Errorf("output peaks at %.3f, input at most 0.3", p)
			}
		})
	}
	in := sine(24000, 440, 0.5, 0.5)
	if out, err := Stretch(in, 1); err != nil || out != in {
		t.Errorf("speed 1: got %p, %v; want the clip itself", out, err)
	}
}

func TestStretchRejects(t *testing.T) {
	clip := sine(24000, 440, 0.5, 0.1)
	tests := []struct {
		name  string
		clip  *Clip
		speed float64
	}{
		{"zero", clip, 0},
		{"below minimum", clip, 0.24},
		{"above maximum", clip, 4.01},
		{"negative", clip, -1},
		{"NaN", clip, math.NaN()},
		{"infinite", clip, math.Inf(1)},
		{"no sample rate", &Clip{Samples: clip.Samples}, 1.5},
		{"no sample rate at speed 1", &Clip{Samples: clip.Samples}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Stretch(tt.clip, tt.speed); !errors.Is(err, ErrInvalidParams) {
				t.Errorf("err = %v, want ErrInvalidParams", err)
			}
		})
	}
	for _, speed := range []float64{MinSpeed, MaxSpeed} {
		if _, err := Stretch(clip, speed); err != nil {
			t.Errorf("speed %g: %v", speed, err)
		}
	}
}

// maxStep is the largest absolute difference between neighbouring samples.
func maxStep(s []float32) float64 {
	var m float64
	for i := 1; i < len(s); i++ {
		m = math.Max(m, math.Abs(float64(s[i]-s[i-1])))
	}
	return m
}

func maxAbsDiff(a, b []float32) float64 {
	var m float64
	for i := range a {
		m = math.Max(m, math.Abs(float64(a[i]-b[i])))
	}
	return m
}

// medianF0 estimates the pitch of speech: the median, over 40 ms frames
// louder than -35 dBFS, of the autocorrelation peak between 70 and 400 Hz
// (frames whose normalized peak is under 0.5 are unvoiced and skipped).
// Not instrumented by the race detector (go:norace): a brute-force
// autocorrelation of the test's own, on the goroutine's own slices, it
// cost TestStretchSpeech most of its 15 s under -race; Stretch, which it
// measures, is instrumented as before.
//
//go:norace
func medianF0(c *Clip) float64 {
	frame := c.Rate / 25
	minLag, maxLag := c.Rate/400, c.Rate/70
	var f0s []float64
	for start := 0; start+frame+maxLag <= len(c.Samples); start += frame / 2 {
		x := c.Samples[start : start+frame+maxLag]
		e0 := energy(x[:frame])
		if 10*math.Log10(e0/float64(frame)) < -35 {
			continue
		}
		bestLag, best := 0, 0.5
		for lag := minLag; lag <= maxLag; lag++ {
			var r float64
			for i := range frame {
				r += float64(x[i]) * float64(x[i+lag])
			}
			if r /= math.Sqrt(e0 * energy(x[lag:lag+frame])); r > best {
				bestLag, best = lag, r
			}
		}
		if bestLag > 0 {
			f0s = append(f0s, float64(c.Rate)/float64(bestLag))
		}
	}
	if len(f0s) == 0 {
		return 0
	}
	sort.Float64s(f0s)
	return f0s[len(f0s)/2]
}

// energy is sumSquares, written out here so that medianF0's calls are
// not instrumented either.
//
//go:norace
func energy(s []float32) float64 {
	var sum float64
	for _, x := range s {
		sum += float64(x) * float64(x)
	}
	return sum
}

// envelopeLags compares out, a stretch of in by speed, with in: it cuts
// out into parts pieces and returns for each the shift (seconds, positive
// when out is late) that best aligns out's loudness envelope (5 ms frames)
// with in's at the same times multiplied by speed.
func envelopeLags(in, out *Clip, speed float64, parts int) []float64 {
	const frame = 0.005
	n := int(out.Seconds() / frame)
	envOut, envIn := make([]float64, n), make([]float64, n)
	seg := func(c *Clip, from, to float64) float64 {
		a := min(int(from*float64(c.Rate)), len(c.Samples))
		b := min(int(to*float64(c.Rate)), len(c.Samples))
		if b <= a {
			return 0
		}
		return math.Sqrt(sumSquares(c.Samples[a:b]) / float64(b-a))
	}
	for i := range n {
		t := float64(i) * frame
		envOut[i] = seg(out, t, t+frame)
		envIn[i] = seg(in, t*speed, (t+frame)*speed)
	}
	lags := make([]float64, parts)
	for q := range parts {
		a, b := q*n/parts, (q+1)*n/parts
		best := math.Inf(-1)
		for lag := -10; lag <= 10; lag++ { // ±50 ms
			var num, eo, ei float64
			for i := max(a, -lag); i < min(b, n-lag); i++ {
				num += envOut[i+lag] * envIn[i]
				eo += envOut[i+lag] * envOut[i+lag]
				ei += envIn[i] * envIn[i]
			}
			if r := num / math.Sqrt(eo*ei); r > best {
				best, lags[q] = r, float64(lag)*frame
			}
		}
	}
	return lags
}
