package audio

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestLimiterTraceMatchesRun holds the loudness search's sparse limiter
// (limiter.trace, closed-form release between the limited stretches) to
// the plain one (limiter.run) on eSpeak speech at several rates and
// gains, and on a clip limited from its first sample to its last: every
// sample's gain and output agree to float32 rounding.
func TestLimiterTraceMatchesRun(t *testing.T) {
	speech := speechClip(t, 6)
	edge := sine(24000, 440, 0.9, 0.5)
	cases := []struct {
		name string
		c    *Clip
	}{{"speech", speech}, {"edge", edge}}
	for _, rate := range []int{8000, 22050, 48000} {
		r, err := Resample(speech, rate)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct {
			name string
			c    *Clip
		}{fmt.Sprint("speech", rate), r})
	}
	for _, tc := range cases {
		peaks := newPeakEnvelope(newTruePeak(tc.c.Rate), tc.c.Samples)
		top := dbfs(peaks.truePeak())
		for _, over := range []float64{-3, 0.5, 3, 8, 15, 25} {
			t.Run(fmt.Sprintf("%s/%+g", tc.name, over), func(t *testing.T) {
				ceil := -1.1
				g := fromDb(ceil - top + over)
				n := len(tc.c.Samples)
				l := newLimiter(tc.c.Rate, fromDb(ceil))
				l.peaks = peaks
				want, wantOut := make([]float32, n), make([]float32, n)
				l.gains = want
				l.run(tc.c.Samples, g, false, wantOut)
				l.gains = nil
				got, gotOut := make([]float32, n), make([]float32, n)
				l.trace(tc.c.Samples, g, got)
				l.fillGains(g, got)
				l.apply(tc.c.Samples, gotOut, g, got)
				var worstG, worstY float64
				at := 0
				for k := range n {
					if d := math.Abs(float64(got[k])/float64(want[k]) - 1); d > worstG {
						worstG, at = d, k
					}
					worstY = math.Max(worstY, math.Abs(float64(gotOut[k]-wantOut[k])))
				}
				if worstG > 1e-6 || worstY > 1e-6 {
					t.Errorf("gain off by %.3g (relative) at %d of %d (%g, want %g); output off by %.3g", worstG, at, n, got[at], want[at], worstY)
				}
			})
		}
	}
}

// TestTruePeakPointsExact holds the envelope's interleaved dot products
// (truePeak.points) to truePeak.at bit for bit at every rate's number of
// phases, edges included.
func TestTruePeakPointsExact(t *testing.T) {
	speech := speechClip(t, 2)
	for _, rate := range []int{8000, 16000, 22050, 24000, 44100, 48000} {
		c, err := Resample(speech, rate)
		if err != nil {
			t.Fatal(err)
		}
		tp := newTruePeak(rate)
		got := make([]float32, len(c.Samples))
		tp.points(c.Samples, 0, len(c.Samples), got)
		for j, v := range got {
			if want := tp.at(c.Samples, j); v != want {
				t.Fatalf("%d Hz (%d phases): point %d is %g, at gives %g", rate, tp.phases, j, v, want)
			}
		}
	}
}

// TestSlidingMaxAbs checks the block-wise sliding maximum against the
// definition, on lengths shorter and longer than its window.
func TestSlidingMaxAbs(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 5, 23, 24, 47, 48, 100, 1000} {
		for _, ba := range [][2]int{{0, 0}, {1, 0}, {0, 1}, {11, 12}, {23, 24}, {5, 40}} {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(rnd.NormFloat64())
			}
			out, suf := make([]float32, n), make([]float32, n)
			slidingMaxAbs(x, out, ba[0], ba[1], suf)
			for k := range n {
				var want float32
				for j := max(0, k-ba[0]); j <= min(n-1, k+ba[1]); j++ {
					want = max(want, x[j], -x[j])
				}
				if out[k] != want {
					t.Fatalf("n=%d window -%d..+%d: out[%d] = %g, want %g", n, ba[0], ba[1], k, out[k], want)
				}
			}
		}
	}
}
