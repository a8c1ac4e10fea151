package audio

import (
	"fmt"
	"math"
	"time"

	"github.com/voxgate/voxgate/gateway/audio/internal/ebur128"
)

// streamPeakMarginDb is how far under the ceiling a stream's limiter holds
// sample peaks: a stream has no whole clip to run the true-peak envelope
// over ahead of time, so inter-sample peaks are left this margin (speech's
// rarely pass half a dB; see truePeak for the whole-clip limiter).
const streamPeakMarginDb = 0.5

// StreamLeveler levels a stream of mono float samples to a loudness target
// as it passes, for streams that cannot be measured before they are sent.
//
// The gain is the target minus an estimate of the voice's loudness: one
// learned from the voice's earlier clips and streams when the caller has
// it, else measured on the stream's own first seconds (the look-ahead:
// those seconds are held back until measured, which is the latency the
// first audio pays for a voice never heard before). After the gain is set
// it does not change, so the stream never pumps; a look-ahead limiter of
// 5 ms (the whole-clip limiter's attack and release, run sample by
// sample) holds the peaks under the ceiling. It also measures the whole
// stream's input, so that the caller can learn the voice's loudness for
// the next stream (InputLufs).
//
// Hot path: Write allocates nothing once its buffers have grown to the
// stream's chunk size.
type StreamLeveler struct {
	rate      int
	target    LoudnessTarget
	gain      float64 // linear; 0 until known
	held      []float32
	lookahead int
	meter     *ebur128.Meter
	lim       *streamLimiter
}

// NewStreamLeveler returns a leveler of a stream at rate Hz to t.
// estimate is the voice's learned loudness in LUFS, or NaN when it has
// none; lookahead is how much of the stream is held back and measured
// when it has none.
func NewStreamLeveler(rate int, t LoudnessTarget, estimate float64, lookahead time.Duration) (*StreamLeveler, error) {
	if rate <= 0 {
		return nil, fmt.Errorf("%w: sample rate %d", ErrInvalidParams, rate)
	}
	m, err := ebur128.NewMeter(rate, 0)
	if err != nil {
		return nil, fmt.Errorf("audio: %w", err)
	}
	l := &StreamLeveler{rate: rate, target: t, meter: m,
		lookahead: max(1, int(lookahead.Seconds()*float64(rate))),
		lim:       newStreamLimiter(rate, fromDb(t.TruePeak-streamPeakMarginDb))}
	if !math.IsNaN(estimate) && estimate >= GateLufs {
		l.gain = fromDb(t.Integrated - estimate)
	}
	return l, nil
}

// Write levels in and appends the result to out. While the gain is not
// known yet, it holds the samples back and appends nothing.
func (l *StreamLeveler) Write(in, out []float32) ([]float32, error) {
	if err := l.meter.Add(in); err != nil {
		return out, fmt.Errorf("audio: %w", err)
	}
	if l.gain == 0 {
		l.held = append(l.held, in...)
		if len(l.held) < l.lookahead {
			return out, nil
		}
		l.setGain()
		in, l.held = l.held, l.held[:0]
	}
	return l.lim.write(in, l.gain, out), nil
}

// Flush levels what is held back (a stream shorter than the look-ahead)
// and the limiter's last few milliseconds, and appends them to out.
func (l *StreamLeveler) Flush(out []float32) []float32 {
	if l.gain == 0 {
		l.setGain()
		out = l.lim.write(l.held, l.gain, out)
		l.held = l.held[:0]
	}
	return l.lim.flush(l.gain, out)
}

// setGain measures the held samples: gated when they hold a gating
// block, else ungated, as NormalizeLoudness does; silence gets unity.
func (l *StreamLeveler) setGain() {
	c := &Clip{Rate: l.rate, Samples: l.held}
	lufs, _, err := MeasureLoudness(c)
	if err != nil || !(lufs >= GateLufs) {
		l.gain = 1
		return
	}
	l.gain = fromDb(l.target.Integrated - lufs)
}

// InputLufs is the gated loudness of everything written so far (-Inf
// before a gating block's worth): the voice's loudness to learn.
func (l *StreamLeveler) InputLufs() float64 {
	v, err := l.meter.Integrated()
	if err != nil {
		return math.Inf(-1)
	}
	return v
}

// Close frees the meter.
func (l *StreamLeveler) Close() { l.meter.Close() }

// streamLimiter is the whole-clip limiter (limiter.run) as a running
// state: the same sliding minimum over the look-ahead, release and moving
// average, with the input delayed by the look-ahead in a ring.
type streamLimiter struct {
	ceiling float64
	la      int
	relCoef float64
	mask    int
	dqIdx   []int
	dqVal   []float64
	box     []float64
	delay   []float32 // ring of the last la+1 inputs, by position & dmask
	dmask   int
	head    int
	tail    int
	boxSum  float64
	boxPos  int
	r       float64
	j       int // samples taken in
}

func newStreamLimiter(rate int, ceiling float64) *streamLimiter {
	la := max(1, int(limiterLookahead*float64(rate)))
	size := 1
	for size < la+2 {
		size <<= 1
	}
	return &streamLimiter{ceiling: ceiling, la: la, relCoef: 1 - math.Exp(-1/(limiterRelease*float64(rate))),
		mask: size - 1, dqIdx: make([]int, size), dqVal: make([]float64, size), box: make([]float64, la+1),
		delay: make([]float32, size), dmask: size - 1}
}

// write takes in at gain g and appends the samples whose look-ahead is
// complete. Hot path.
func (s *streamLimiter) write(in []float32, g float64, out []float32) []float32 {
	for _, x := range in {
		out = s.step(float64(x), true, g, out)
	}
	return out
}

// flush appends the last la samples.
func (s *streamLimiter) flush(g float64, out []float32) []float32 {
	for range s.la {
		out = s.step(0, false, g, out)
	}
	return out
}

// writePeaks is write with each sample's peak given (peaks[i] for
// in[i]: its true peak, for a limiter that holds true peaks). Hot path.
func (s *streamLimiter) writePeaks(in, peaks []float32, g float64, out []float32) []float32 {
	for i, x := range in {
		out = s.stepPeak(float64(x), float64(peaks[i]), true, g, out)
	}
	return out
}

func (s *streamLimiter) step(x float64, real bool, g float64, out []float32) []float32 {
	return s.stepPeak(x, math.Abs(x), real, g, out)
}

func (s *streamLimiter) stepPeak(x, peak float64, real bool, g float64, out []float32) []float32 {
	j, la, mask := s.j, s.la, s.mask
	t := 1.0
	if real {
		if a := peak * g; a > s.ceiling {
			t = s.ceiling / a
		}
	}
	for s.tail > s.head && s.dqVal[(s.tail-1)&mask] >= t {
		s.tail--
	}
	s.dqIdx[s.tail&mask], s.dqVal[s.tail&mask] = j, t
	s.tail++
	s.delay[j&s.dmask] = float32(x)
	k := j - la
	for s.dqIdx[s.head&mask] < k {
		s.head++
	}
	m := s.dqVal[s.head&mask]
	if j == 0 || m < s.r {
		s.r = m
	} else {
		s.r += (m - s.r) * s.relCoef
	}
	w := la + 1
	s.boxSum += s.r - s.box[s.boxPos]
	s.box[s.boxPos] = s.r
	if s.boxPos++; s.boxPos == w {
		s.boxPos = 0
	}
	s.j++
	if k < 0 {
		return out
	}
	y := float64(s.delay[k&s.dmask]) * g * s.boxSum / float64(w)
	if y > s.ceiling {
		y = s.ceiling
	} else if y < -s.ceiling {
		y = -s.ceiling
	}
	return append(out, float32(y))
}
