package audio

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestPeakEnvelopeMatchesTheFullEnvelope: the lazily computed envelope
// gives the limiter exactly the full envelope wherever it asks above the
// bound, never an answer above its threshold elsewhere, and the clip's
// true peak exactly, on speech, a tone and noise at several rates.
// Six seconds of speech (as TestLimiterTraceMatchesRun has), not the
// benchmarks' minute: every sample is checked against the full envelope,
// and the minute, the same sentences ten times over, cost this test 18 s
// under the race detector.
func TestPeakEnvelopeMatchesTheFullEnvelope(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	speech := speechClip(t, 6)
	for _, rate := range []int{8000, 16000, 24000, 48000} {
		for _, kind := range []string{"speech", "tone", "noise"} {
			var x []float32
			switch kind {
			case "speech":
				c, err := Resample(speech, rate)
				if err != nil {
					t.Fatal(err)
				}
				x = c.Samples
			case "tone":
				x = make([]float32, rate)
				for i := range x {
					x[i] = float32(0.7 * math.Sin(2*math.Pi*float64(rate)*0.37*float64(i)/float64(rate)))
				}
			case "noise":
				x = make([]float32, rate/3)
				for i := range x {
					x[i] = float32(r.NormFloat64() * 0.2)
				}
			}
			tp := newTruePeak(rate)
			full := make([]float32, len(x))
			tp.envelope(x, full)
			e := newPeakEnvelope(tp, x)
			if got, want := e.truePeak(), tp.max(x); got != want {
				t.Errorf("%d Hz %s: true peak %g, full computation %g", rate, kind, got, want)
			}
			for k := range x {
				if e.bound[k] < full[k] {
					t.Fatalf("%d Hz %s: bound %g under the envelope %g at %d", rate, kind, e.bound[k], full[k], k)
				}
				thr := full[k] * float32(0.5+r.Float64())
				got := e.at(k, thr)
				switch {
				case e.bound[k] > thr && got != full[k]:
					t.Fatalf("%d Hz %s: at(%d, %g) = %g, the envelope is %g", rate, kind, k, thr, got, full[k])
				case e.bound[k] <= thr && got > thr:
					t.Fatalf("%d Hz %s: at(%d, %g) = %g, above the threshold", rate, kind, k, thr, got)
				}
			}
		}
	}
}

// max returns the true peak of x, linear.
func (tp *truePeak) max(x []float32) float64 {
	var best float32
	for k := range x {
		best = max(best, tp.at(x, k))
	}
	return float64(best)
}

// envelope writes to env, for each sample, the largest true peak within
// the interpolation filter's reach (tpTaps/2 samples either side): a gain
// that holds the ceiling for env[k] holds it for every interpolated point
// that sample k takes part in, as long as the gain hardly changes over a
// dozen samples, which the limiter's smoothing ensures. Hot path.
func (tp *truePeak) envelope(x, env []float32) {
	for k := range x {
		env[k] = tp.at(x, k)
	}
	// Sliding maximum over [k-h, k+h] with a monotonic deque that holds
	// values, so env can be overwritten behind the window.
	h := tpTaps / 2
	n := len(x)
	size := 1
	for size < 2*h+2 {
		size <<= 1
	}
	mask := size - 1
	dqIdx := make([]int, size)
	dqVal := make([]float32, size)
	head, tail := 0, 0
	for j := 0; j < n+h; j++ {
		if j < n {
			v := env[j]
			for tail > head && dqVal[(tail-1)&mask] <= v {
				tail--
			}
			dqIdx[tail&mask], dqVal[tail&mask] = j, v
			tail++
		}
		k := j - h
		if k < 0 {
			continue
		}
		for dqIdx[head&mask] < k-h {
			head++
		}
		env[k] = dqVal[head&mask]
	}
}
