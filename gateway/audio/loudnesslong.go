package audio

import (
	"fmt"
	"math"
	"slices"

	"github.com/voxgate/voxgate/gateway/audio/internal/ebur128"
)

// Long audio (a long-form job's joined file: hours of it, on disk) is
// leveled in passes over its samples instead of in memory as a clip is
// (NormalizeLoudness): one pass measures it, a few more (only when the
// limiter must work) measure it leveled at a trial gain, and the caller's
// last pass levels it on its way to the encoder. Each pass holds a few
// milliseconds of samples, so memory does not grow with the length.

// longSearchPasses bounds the trial passes of LevelLong: each reads the
// whole audio again (from disk), so a target the limiter cannot reach is
// given up on early and the answer is as loud as those passes got it.
const longSearchPasses = 6

// LoudnessMeter measures long audio a piece at a time: its gated
// integrated loudness and its true peak.
type LoudnessMeter struct {
	m    *ebur128.Meter
	tp   *truePeak
	peak float32
	// bound and suf are Add's scratch (truePeak.bounds).
	bound, suf []float32
}

// NewLoudnessMeter returns a meter of audio at rate Hz; Close frees it.
func NewLoudnessMeter(rate int) (*LoudnessMeter, error) {
	if rate <= 0 {
		return nil, fmt.Errorf("%w: sample rate %d", ErrInvalidParams, rate)
	}
	m, err := ebur128.NewMeter(rate, 0)
	if err != nil {
		return nil, fmt.Errorf("audio: %w", err)
	}
	return &LoudnessMeter{m: m, tp: newTruePeak(rate)}, nil
}

// Add measures the next samples. The true peak between two pieces is
// interpolated from each side alone, which misreads it only where a
// piece ends mid-waveform.
func (lm *LoudnessMeter) Add(s []float32) error {
	if err := lm.m.Add(s); err != nil {
		return fmt.Errorf("audio: %w", err)
	}
	if lm.tp != nil {
		// Only a point whose bound is above the peak so far can raise
		// it: the others are not interpolated (the peak is the same).
		lm.bound, lm.suf = lm.tp.bounds(s, lm.bound, lm.suf)
		for k, b := range lm.bound {
			if b > lm.peak {
				lm.peak = max(lm.peak, lm.tp.at(s, k))
			}
		}
	}
	return nil
}

// Integrated is the gated integrated loudness of what was added, in
// LUFS (-Inf for silence or less than a gating block).
func (lm *LoudnessMeter) Integrated() float64 {
	v, err := lm.m.Integrated()
	if err != nil {
		return math.Inf(-1)
	}
	return v
}

// TruePeakDbtp is the largest true peak of what was added.
func (lm *LoudnessMeter) TruePeakDbtp() float64 { return dbfs(float64(lm.peak)) }

// Close frees the meter.
func (lm *LoudnessMeter) Close() { lm.m.Close() }

// FixedLeveler levels a stream at a fixed gain with a look-ahead limiter
// holding its true peaks under a ceiling (StreamLeveler's limiter, with
// the gain known beforehand and each sample's true peak, from the
// interpolation filter's reach either side of it, in place of its sample
// peak). It delays the stream by 5 ms and half the filter; Flush gives
// back the rest, so the output is exactly as long as the input.
type FixedLeveler struct {
	lim  *streamLimiter
	tp   *truePeak
	gain float64
	// thr is the largest peak the limiter leaves alone at gain: a
	// sample whose peak's bound is at most thr is not limited, whatever
	// its exact peak, so that is not interpolated.
	thr float32
	// win holds the samples not yet limited, after up to tpTaps/2-1
	// already limited ones kept as the filter's context (ctx of them).
	win   []float32
	ctx   int
	peaks []float32
	// bound and suf are limit's scratch (truePeak.bounds).
	bound, suf []float32
}

// NewFixedLeveler returns a leveler of a stream at rate Hz, at gainDb,
// its true peaks held under ceilingDbtp.
func NewFixedLeveler(rate int, gainDb, ceilingDbtp float64) *FixedLeveler {
	l := &FixedLeveler{lim: newStreamLimiter(rate, fromDb(ceilingDbtp)), tp: newTruePeak(rate), gain: fromDb(gainDb)}
	l.thr = unlimitedPeak(l.lim.ceiling, l.gain)
	return l
}

// unlimitedPeak is the largest peak p for which the limiter's test,
// float64(p)*gain > ceiling, is false: a sample whose peak is at most
// that gets the limiter's gain of 1 whatever its peak exactly is.
func unlimitedPeak(ceiling, gain float64) float32 {
	thr := float32(ceiling / gain)
	for thr > 0 && float64(thr)*gain > ceiling {
		thr = math.Nextafter32(thr, 0)
	}
	for next := math.Nextafter32(thr, float32(math.Inf(1))); float64(next)*gain <= ceiling; next = math.Nextafter32(thr, float32(math.Inf(1))) {
		thr = next
	}
	return thr
}

// Write levels in and appends the result to out. Hot path: nothing is
// allocated once the buffers have grown to in's length.
func (l *FixedLeveler) Write(in, out []float32) []float32 {
	l.win = append(l.win, in...)
	return l.limit(len(l.win)-tpTaps/2, out)
}

// Flush appends the last samples held back.
func (l *FixedLeveler) Flush(out []float32) []float32 {
	out = l.limit(len(l.win), out) // the filter reads zeros past the end
	return l.lim.flush(l.gain, out)
}

// limit passes win's samples from ctx up to n to the limiter with their
// true peaks, then keeps the filter's context before n.
func (l *FixedLeveler) limit(n int, out []float32) []float32 {
	if n <= l.ctx {
		return out
	}
	// A sample whose peak's bound is under the limiter's threshold gets
	// the bound for its peak (the limiter leaves it alone either way);
	// the others, runs of them near the loud peaks, are interpolated.
	// Speech spends most of its time well under its peaks: every sample
	// interpolated was most of a job's leveling passes.
	l.bound, l.suf = l.tp.bounds(l.win, l.bound, l.suf)
	l.peaks = slices.Grow(l.peaks[:0], n-l.ctx)[:n-l.ctx]
	for k := l.ctx; k < n; {
		if b := l.bound[k]; b <= l.thr {
			l.peaks[k-l.ctx] = b
			k++
			continue
		}
		run := k + 1
		for run < n && l.bound[run] > l.thr {
			run++
		}
		l.tp.points(l.win, k, run, l.peaks[k-l.ctx:run-l.ctx])
		k = run
	}
	out = l.lim.writePeaks(l.win[l.ctx:n], l.peaks, l.gain, out)
	from := max(0, n-(tpTaps/2-1))
	l.win = l.win[:copy(l.win, l.win[from:])]
	l.ctx = n - from
	return out
}

// LongLeveling is LevelLong's plan: the gain and sample-peak ceiling of
// the last pass (NewFixedLeveler), and what the output will measure.
type LongLeveling struct {
	LoudnessLeveling
	// CeilingDbtp is the limiter's true-peak ceiling.
	CeilingDbtp float64
	// InputPeakDbtp is the audio's true peak before leveling (what
	// Replan starts from, with InputLufs).
	InputPeakDbtp float64
	// Passes is how many times LevelLong (or Replan) read the audio.
	Passes int
}

// LevelLong plans the leveling of long audio at rate Hz to t: replay
// feeds the audio's samples, in order, to its argument, and is called
// once to measure the audio and, when the gain would lift a peak over
// the ceiling, up to longSearchPasses more times to measure the audio
// leveled at a trial gain (limiting lowers the loudness, so the gain is
// searched for as NormalizeLoudness does). The limiter's ceiling is
// headroomDb under t's (the encoder's overshoot, EncoderHeadroomDb, to
// start with) as a clip's is (NormalizeLoudness). Silence (under
// GateLufs) is left alone: the plan is Gated and the caller levels
// nothing. The plan's gain is the trial's that came nearest the target.
func LevelLong(rate int, t LoudnessTarget, headroomDb float64, replay func(func([]float32) error) error) (LongLeveling, error) {
	in, peak, err := measureLong(rate, replay, nil)
	if err != nil {
		return LongLeveling{Passes: 1}, err
	}
	plan, err := searchLong(rate, t, headroomDb, in, peak, replay)
	plan.Passes++
	return plan, err
}

// Replan plans the same audio again, to t under headroomDb, without
// measuring it again: an encoded file that missed its target is leveled
// again with the loudness aim and the encoder's overshoot corrected by
// what its decoded audio measured (the limiter's ceiling follows the
// overshoot, and the gain is searched again under it, so a lower
// ceiling costs only the loudness the limiter takes, not a trim's
// whole step). Passes counts the new trial passes only.
func (p LongLeveling) Replan(rate int, t LoudnessTarget, headroomDb float64, replay func(func([]float32) error) error) (LongLeveling, error) {
	return searchLong(rate, t, headroomDb, p.InputLufs, p.InputPeakDbtp, replay)
}

// searchLong is LevelLong after its measuring pass: in and peak are the
// audio's loudness and true peak.
func searchLong(rate int, t LoudnessTarget, headroomDb, in, peak float64, replay func(func([]float32) error) error) (LongLeveling, error) {
	ceil := t.TruePeak - headroomDb - truePeakSafetyDb
	plan := LongLeveling{CeilingDbtp: ceil, InputPeakDbtp: peak}
	plan.InputLufs, plan.OutputLufs, plan.TruePeakDbtp = in, in, peak
	if !(in >= GateLufs) {
		plan.Gated = true
		return plan, nil
	}
	g := t.Integrated - in
	plan.GainDb, plan.OutputLufs, plan.TruePeakDbtp = g, t.Integrated, peak+g
	if peak+g <= ceil {
		return plan, nil
	}
	// The limiter will work: measure what it leaves and add the loudness
	// it took, a little more each time (limiting returns less than a dB
	// of loudness per dB of gain).
	plan.Limited, plan.TruePeakDbtp = true, ceil
	top := g + maxLoudnessMakeupDb
	// lo and hi bracket the gain once a pass has come out under and one
	// over the target (hiSet); best is the pass nearest the target.
	type trial struct{ g, out float64 }
	var lo, hi, best trial
	var lastG, lastOut float64
	hiSet := false
	for pass := range longSearchPasses {
		out, _, err := measureLong(rate, replay, NewFixedLeveler(rate, g, ceil))
		plan.Passes++
		if err != nil {
			return plan, err
		}
		cur := trial{g, out}
		if pass == 0 || math.Abs(t.Integrated-out) < math.Abs(t.Integrated-best.out) {
			best = cur
		}
		miss := t.Integrated - out
		if math.Abs(miss) <= 2*loudnessTolerance || g >= top {
			break
		}
		if miss > 0 {
			lo = cur
		} else {
			hi, hiSet = cur, true
		}
		if !hiSet {
			// Under the target: step by the deficit over the loudness a
			// dB of gain returned so far (under 1 with limiting, so the
			// step passes the deficit), a little past it.
			slope := 1 / 1.5
			if pass > 0 && g > lastG {
				slope = math.Max(0.05, (out-lastOut)/(g-lastG))
			}
			lastG, lastOut = g, out
			g = math.Min(top, g+1.1*miss/slope)
			continue
		}
		if pass == 0 { // over at the first trial cannot happen (limiting only lowers), but stay in bounds
			break
		}
		// Between a pass under and one over: the false position.
		g = lo.g + (t.Integrated-lo.out)*(hi.g-lo.g)/(hi.out-lo.out)
	}
	plan.GainDb, plan.OutputLufs = best.g, best.out
	plan.Missed = plan.OutputLufs < t.Integrated-0.5
	return plan, nil
}

// measureLong runs one pass of replay through lev (nil: as it is) into a
// meter.
func measureLong(rate int, replay func(func([]float32) error) error, lev *FixedLeveler) (float64, float64, error) {
	m, err := NewLoudnessMeter(rate)
	if err != nil {
		return 0, 0, err
	}
	defer m.Close()
	if lev != nil {
		m.tp = nil // a trial's peaks are the limiter's: only its loudness is wanted
	}
	var buf []float32
	err = replay(func(s []float32) error {
		if lev == nil {
			return m.Add(s)
		}
		buf = lev.Write(s, buf[:0])
		return m.Add(buf)
	})
	if err != nil {
		return 0, 0, err
	}
	if lev != nil {
		if err := m.Add(lev.Flush(buf[:0])); err != nil {
			return 0, 0, err
		}
	}
	return m.Integrated(), m.TruePeakDbtp(), nil
}
