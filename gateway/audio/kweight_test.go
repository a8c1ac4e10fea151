package audio

import (
	"math"
	"testing"
)

// TestKWeightedAgreesWithLibebur128: the estimate the loudness search
// steps on reads eSpeak speech, whole and as a short word, as libebur128
// does, at every rate the gateway levels, unscaled and under a gain that
// moves as the limiter's does.
func TestKWeightedAgreesWithLibebur128(t *testing.T) {
	for _, rate := range []int{8000, 16000, 22050, 24000, 44100, 48000} {
		for _, seconds := range []float64{0.3, 8} {
			c, err := Resample(speechClip(t, seconds), rate)
			if err != nil {
				t.Fatal(err)
			}
			gains := make([]float32, len(c.Samples))
			for i := range gains { // ±3 dB over 200 ms
				gains[i] = float32(fromDb(3 * math.Sin(2*math.Pi*5*float64(i)/float64(rate))))
			}
			kw := newKWeighted(c.Samples, rate)
			var cum []float64
			for _, g := range [][]float32{nil, gains} {
				scaled := &Clip{Rate: rate, Samples: append([]float32(nil), c.Samples...)}
				for i := range scaled.Samples {
					if g != nil {
						scaled.Samples[i] *= g[i]
					}
				}
				want, _, err := MeasureLoudness(scaled)
				if err != nil {
					t.Fatal(err)
				}
				got := kw.loudness(g, &cum)
				if math.Abs(got-want) > 0.05 {
					t.Errorf("%d Hz, %g s, gain varying %t: estimate %.3f LUFS, libebur128 %.3f", rate, seconds, g != nil, got, want)
				}
			}
		}
	}
}
