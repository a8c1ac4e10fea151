package audio

import (
	"fmt"
	"testing"
)

// BenchmarkStretch changes the tempo of a 60 s clip of speech, the work of
// a speech request with speed when the provider cannot change speed.
func BenchmarkStretch(b *testing.B) {
	for _, rate := range []int{24000, 48000} {
		src := benchSpeech(b, rate)
		for _, speed := range []float64{1.5, 0.75} {
			b.Run(fmt.Sprintf("%dHz/x%g", rate, speed), func(b *testing.B) {
				for b.Loop() {
					if _, err := Stretch(src, speed); err != nil {
						b.Fatal(err)
					}
				}
				reportRealtime(b, benchSeconds)
			})
		}
	}
}
