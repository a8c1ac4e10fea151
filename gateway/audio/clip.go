package audio

import "time"

// Clip is a whole mono audio clip in memory: Rate samples per second, each
// a float32 where ±1.0 is digital full scale.
//
// Why mono float32: every TTS provider returns mono speech (stereo input
// is mixed down on decode), so one channel keeps every loop simple. Float
// gives headroom: gain and resampling can overshoot ±1.0 between stages
// without clipping, and only the encoder quantises. 32 bits carry 24 bits of
// mantissa, more than any 16-bit provider output, at half the memory of
// float64 (a 60 s clip at 48 kHz is 11.5 MB). It is also the native sample
// type of both C libraries used here: libsoxr and LAME's ieee_float input.
//
// Integer sources are scaled by 1/2^(bits-1), so a 16-bit sample s becomes
// s/32768 and encodes back to exactly s.
type Clip struct {
	// Rate is the sample rate in Hz.
	Rate int
	// Samples holds the mono samples, nominally in [-1, 1].
	Samples []float32
}

// Seconds returns the clip's length in seconds.
func (c *Clip) Seconds() float64 {
	if c.Rate <= 0 {
		return 0
	}
	return float64(len(c.Samples)) / float64(c.Rate)
}

// Duration returns the clip's length as a time.Duration.
func (c *Clip) Duration() time.Duration {
	return time.Duration(c.Seconds() * float64(time.Second))
}
