package audio

import (
	"fmt"

	"github.com/voxgate/voxgate/gateway/audio/internal/soxr"
)

// Resample returns the clip converted to rate Hz, or c itself when it is
// already at that rate (callers that modify the result in place and need
// the original must copy first).
//
// The conversion is libsoxr's band-limited, linear-phase "high quality"
// recipe (20-bit precision, passband flat to 91.3% of the lower Nyquist
// frequency, stopband rejection beyond 120 dB), so downsampling removes
// everything above the new Nyquist frequency before it can alias and
// upsampling adds no images. The result has len(c.Samples)·rate/c.Rate
// samples, rounded, so the duration is preserved.
//
// Why libsoxr over a hand-written windowed-sinc filter: it is the resampler
// of SoX and FFmpeg's soxr option, is packaged by every distribution, is
// exact for irrational ratios such as 44.1k to 16k, and runs SIMD code that
// a pure-Go polyphase filter would not match.
func Resample(c *Clip, rate int) (*Clip, error) {
	if rate <= 0 || rate > maxRate {
		return nil, fmt.Errorf("%w: sample rate %d", ErrInvalidParams, rate)
	}
	if c.Rate == rate {
		return c, nil
	}
	if c.Rate <= 0 {
		return nil, fmt.Errorf("%w: clip has sample rate %d", ErrInvalidParams, c.Rate)
	}
	out, err := soxr.Resample(c.Samples, c.Rate, rate)
	if err != nil {
		return nil, fmt.Errorf("audio: resample %d -> %d Hz: %w", c.Rate, rate, err)
	}
	return &Clip{Rate: rate, Samples: out}, nil
}
