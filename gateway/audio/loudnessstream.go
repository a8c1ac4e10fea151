package audio

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/voxgate/voxgate/gateway/audio/internal/ebur128"
)

// Stream leveling tuning.
const (
	// streamSlewDbPerSecond bounds how fast the running correction moves
	// a stream's gain: 3 dB a second is a slow ride on speech (a
	// syllable's gain moves by half a dB at most), never a step.
	streamSlewDbPerSecond = 3.0
	// maxStreamCorrectionDb bounds the running correction either way: the
	// limiter's loss at loud targets (eSpeak at -14 LUFS under -1 dBTP
	// needs some 8 dB of make-up, see NormalizeLoudness) plus an estimate
	// a few LU off.
	maxStreamCorrectionDb = 12.0
	// streamAimEvery is how much sent audio passes between two re-aims of
	// the correction.
	streamAimEvery = 0.1 // seconds
	// streamAimWeight is how much of the integrated miss one re-aim adds
	// to the correction: the miss is of everything sent so far, so the
	// audio still to come must overshoot it to pull the whole back, and
	// adding a fraction every re-aim integrates towards that.
	streamAimWeight = 0.15
)

// StreamLevelerLatency is the delay a StreamLeveler adds to a stream at
// rate Hz once its gain is known: the limiter's 5 ms look-ahead and half
// the true-peak filter (tpTaps/2 samples: 0.5 ms at 24 kHz).
func StreamLevelerLatency(rate int) time.Duration {
	la := max(1, int(limiterLookahead*float64(rate)))
	return time.Duration(float64(la+tpTaps/2) / float64(rate) * float64(time.Second))
}

// StreamLeveler levels a stream of mono float samples to a loudness target
// as it passes, for streams that cannot be measured before they are sent.
//
// The gain starts at the target minus an estimate of the voice's
// loudness: one learned from the voice's earlier clips and streams when
// the caller has it, else measured on the stream's own first seconds (the
// look-ahead: those seconds are held back until measured, which is the
// latency the first audio pays for a voice never heard before). A
// look-ahead limiter of 5 ms (the whole-clip limiter's attack and release,
// run sample by sample) holds the stream's true peaks (each sample's
// oversampled points, as FixedLeveler's) under the ceiling. Limiting
// takes loudness back and a learned estimate is only an average of the
// voice's texts, so the leveler also measures what it has sent, and every
// 100 ms re-aims a correction of the gain by a fraction of the sent
// audio's integrated miss (only while the last 400 ms were speech, so a
// pause does not wind it up); the gain follows the correction at most
// 3 dB a second, so it never steps and the stream never pumps. It also
// measures the stream's input, so that the caller can learn the voice's
// loudness for the next stream (InputLufs).
//
// Hot path: Write allocates nothing once its buffers have grown to the
// stream's chunk size.
type StreamLeveler struct {
	rate   int
	target LoudnessTarget
	// base is the gain (dB) from the estimate, NaN until known; corr the
	// running correction (dB) and want where it is heading; lin the
	// linear gain base+corr.
	base, corr, want, lin float64
	slew                  float64 // dB per sample
	held                  []float32
	lookahead             int
	meter, sent           *ebur128.Meter
	tp                    *truePeak
	lim                   *streamLimiter
	// win holds the samples not yet limited, after up to tpTaps/2-1
	// already limited ones kept as the filter's context (ctx of them).
	win          []float32
	ctx          int
	peaks, gains []float32
	// bound and suf are limit's scratch (truePeak.bounds); everyPeak
	// (tests) interpolates every sample's peak, as limit did before it
	// used the bounds.
	bound, suf  []float32
	everyPeak   bool
	sinceAim    int
	aimEvery    int
	sentSamples int
}

// NewStreamLeveler returns a leveler of a stream at rate Hz to t, its
// true peaks headroomDb under t's ceiling (EncoderHeadroomDb of the
// format the stream is encoded in). estimate is the voice's learned
// loudness in LUFS, or NaN when it has none; lookahead is how much of the
// stream is held back and measured when it has none.
func NewStreamLeveler(rate int, t LoudnessTarget, estimate float64, lookahead time.Duration, headroomDb float64) (*StreamLeveler, error) {
	if rate <= 0 {
		return nil, fmt.Errorf("%w: sample rate %d", ErrInvalidParams, rate)
	}
	m, err := ebur128.NewMeter(rate, 0)
	if err != nil {
		return nil, fmt.Errorf("audio: %w", err)
	}
	sent, err := ebur128.NewMeter(rate, 0)
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("audio: %w", err)
	}
	l := &StreamLeveler{rate: rate, target: t, meter: m, sent: sent, base: math.NaN(),
		lookahead: max(1, int(lookahead.Seconds()*float64(rate))),
		slew:      streamSlewDbPerSecond / float64(rate),
		aimEvery:  max(1, int(streamAimEvery*float64(rate))),
		tp:        newTruePeak(rate),
		lim:       newStreamLimiter(rate, fromDb(t.TruePeak-headroomDb-truePeakSafetyDb))}
	if !math.IsNaN(estimate) && estimate >= GateLufs {
		l.setBase(t.Integrated - estimate)
	}
	return l, nil
}

func (l *StreamLeveler) setBase(db float64) {
	l.base = db
	l.lin = fromDb(l.base + l.corr)
}

// Write levels in and appends the result to out. While the gain is not
// known yet, it holds the samples back and appends nothing.
func (l *StreamLeveler) Write(in, out []float32) ([]float32, error) {
	if err := l.meter.Add(in); err != nil {
		return out, fmt.Errorf("audio: %w", err)
	}
	if math.IsNaN(l.base) {
		l.held = append(l.held, in...)
		if len(l.held) < l.lookahead {
			return out, nil
		}
		l.setGain()
		in, l.held = l.held, l.held[:0]
	}
	l.win = append(l.win, in...)
	return l.limit(len(l.win)-tpTaps/2, out)
}

// Flush levels what is held back (a stream shorter than the look-ahead)
// and the limiter's last few milliseconds, and appends them to out.
func (l *StreamLeveler) Flush(out []float32) []float32 {
	if math.IsNaN(l.base) {
		l.setGain()
		l.win = append(l.win, l.held...)
		l.held = l.held[:0]
	}
	out, _ = l.limit(len(l.win), out) // the filter reads zeros past the end
	return l.lim.flushGains(l.lin, out)
}

// limit passes win's samples from ctx up to n to the limiter with their
// true peaks and gains, measures what it sends and re-aims the
// correction, then keeps the filter's context before n.
func (l *StreamLeveler) limit(n int, out []float32) ([]float32, error) {
	if n <= l.ctx {
		return out, nil
	}
	l.gains = l.gains[:0]
	for k := l.ctx; k < n; k++ {
		l.gains = append(l.gains, float32(l.lin))
		if l.corr != l.want {
			l.step()
		}
	}
	l.peaks = slices.Grow(l.peaks[:0], n-l.ctx)[:n-l.ctx]
	if l.everyPeak {
		l.tp.points(l.win, l.ctx, n, l.peaks)
	} else {
		l.boundedPeaks(n)
	}
	from := len(out)
	out = l.lim.writePeaksGains(l.win[l.ctx:n], l.peaks, l.gains, out)
	l.sentSamples += len(out) - from
	if err := l.sent.Add(out[from:]); err != nil {
		return out, fmt.Errorf("audio: %w", err)
	}
	if l.sinceAim += len(out) - from; l.sinceAim >= l.aimEvery {
		l.aim(float64(l.sinceAim / l.aimEvery))
		l.sinceAim %= l.aimEvery
	}
	keep := max(0, n-(tpTaps/2-1))
	l.win = l.win[:copy(l.win, l.win[keep:])]
	l.ctx = n - keep
	return out, nil
}

// boundedPeaks sets peaks for win's samples from ctx up to n: a sample
// whose peak's bound (truePeak.bounds) at its gain is under the
// limiter's ceiling gets the bound (the limiter leaves it alone whatever
// its exact peak: its test is peak*gain > ceiling); the others, runs of
// them near the loud peaks, are interpolated. The limiter's output is
// the same bit for bit; speech spends most of its time well under its
// peaks, and interpolating every sample was most of a leveled stream's
// CPU.
func (l *StreamLeveler) boundedPeaks(n int) {
	l.bound, l.suf = l.tp.bounds(l.win, l.bound, l.suf)
	ceil := l.lim.ceiling
	over := func(k int) bool { return float64(l.bound[k])*float64(l.gains[k-l.ctx]) > ceil }
	for k := l.ctx; k < n; {
		if !over(k) {
			l.peaks[k-l.ctx] = l.bound[k]
			k++
			continue
		}
		run := k + 1
		for run < n && over(run) {
			run++
		}
		l.tp.points(l.win, k, run, l.peaks[k-l.ctx:run-l.ctx])
		k = run
	}
}

// step moves the correction one sample's slew towards want.
func (l *StreamLeveler) step() {
	switch {
	case l.want > l.corr+l.slew:
		l.corr += l.slew
	case l.want < l.corr-l.slew:
		l.corr -= l.slew
	default:
		l.corr = l.want
	}
	l.lin = fromDb(l.base + l.corr)
}

// aim re-aims the correction by the sent audio's integrated miss, times
// the re-aim periods that passed, once a gating block has been sent and
// while its last 400 ms are speech (not under the relative gate).
func (l *StreamLeveler) aim(periods float64) {
	if l.sentSamples < int(GatingBlock*float64(l.rate)) {
		return
	}
	got, err := l.sent.Integrated()
	if err != nil || math.IsInf(got, 0) {
		return
	}
	recent, err := l.sent.Window(400)
	if err != nil || !(recent >= got-10) {
		return
	}
	l.want = math.Max(-maxStreamCorrectionDb, math.Min(maxStreamCorrectionDb, l.want+periods*streamAimWeight*(l.target.Integrated-got)))
}

// setGain measures the held samples: gated when they hold a gating
// block, else ungated, as NormalizeLoudness does; silence gets unity.
func (l *StreamLeveler) setGain() {
	c := &Clip{Rate: l.rate, Samples: l.held}
	lufs, _, err := MeasureLoudness(c)
	if err != nil || !(lufs >= GateLufs) {
		l.setBase(0)
		return
	}
	l.setBase(l.target.Integrated - lufs)
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

// CorrectionDb is the running correction's gain now (dB over the gain
// the estimate gave).
func (l *StreamLeveler) CorrectionDb() float64 { return l.corr }

// Close frees the meters.
func (l *StreamLeveler) Close() {
	l.meter.Close()
	l.sent.Close()
}

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
	// dgain is the ring of their gains, for writePeaksGains (nil until
	// then: FixedLeveler's gain is fixed).
	dgain  []float64
	dmask  int
	head   int
	tail   int
	boxSum float64
	boxPos int
	r      float64
	j      int // samples taken in
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
	k, sum, w := s.advance(x, peak, real, g)
	if k < 0 {
		return out
	}
	return append(out, s.clamp(float64(s.delay[k&s.dmask])*g*sum/float64(w)))
}

// advance takes sample j = s.j (x, its peak, at gain g) into the look-ahead:
// the gain it needs to stay under the ceiling joins the window's minimum,
// the release and the box average move on. It returns the index of the
// sample leaving the delay line (negative while the line fills) and the
// box average as its sum over w, which the caller multiplies in that
// order (the figures stay bit for bit what they were).
func (s *streamLimiter) advance(x, peak float64, real bool, g float64) (k int, sum float64, w int) {
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
	k = j - la
	for s.dqIdx[s.head&mask] < k {
		s.head++
	}
	m := s.dqVal[s.head&mask]
	if j == 0 || m < s.r {
		s.r = m
	} else {
		s.r += (m - s.r) * s.relCoef
	}
	w = la + 1
	s.boxSum += s.r - s.box[s.boxPos]
	s.box[s.boxPos] = s.r
	if s.boxPos++; s.boxPos == w {
		s.boxPos = 0
	}
	s.j++
	return k, s.boxSum, w
}

// clamp holds y within the ceiling.
func (s *streamLimiter) clamp(y float64) float32 {
	if y > s.ceiling {
		y = s.ceiling
	} else if y < -s.ceiling {
		y = -s.ceiling
	}
	return float32(y)
}

// writePeaksGains is writePeaks with each sample's gain given too
// (gains[i] for in[i]): the gain travels with its sample through the
// look-ahead, so a gain that moves between a sample's limiting and its
// output cannot lift it over the ceiling. Hot path.
func (s *streamLimiter) writePeaksGains(in, peaks, gains []float32, out []float32) []float32 {
	if s.dgain == nil {
		s.dgain = make([]float64, len(s.delay))
	}
	for i, x := range in {
		out = s.stepGain(float64(x), float64(peaks[i]), true, float64(gains[i]), out)
	}
	return out
}

// flushGains appends the last la samples of writePeaksGains.
func (s *streamLimiter) flushGains(g float64, out []float32) []float32 {
	if s.dgain == nil {
		s.dgain = make([]float64, len(s.delay))
	}
	for range s.la {
		out = s.stepGain(0, 0, false, g, out)
	}
	return out
}

// stepGain is stepPeak with sample j's own gain g, kept with it.
func (s *streamLimiter) stepGain(x, peak float64, real bool, g float64, out []float32) []float32 {
	s.dgain[s.j&s.dmask] = g
	k, sum, w := s.advance(x, peak, real, g)
	if k < 0 {
		return out
	}
	return append(out, s.clamp(float64(s.delay[k&s.dmask])*s.dgain[k&s.dmask]*sum/float64(w)))
}
