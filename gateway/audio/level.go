package audio

import "math"

// Level conventions.
//
// dBFS here is 20·log10(x) of a linear level x measured on samples where
// ±1.0 is digital full scale. For RMS that makes a full-scale sine
// -3.01 dBFS and full-scale square wave 0 dBFS (the plain definition, not
// AES17's, which adds 3.01 dB so that the sine reads 0).
const (
	// MinVolumeDbfs is the lowest volumeDbfs a request may ask for.
	MinVolumeDbfs = -60.0
	// MaxVolumeDbfs is the highest volumeDbfs a request may ask for.
	MaxVolumeDbfs = 0.0
	// GateDbfs is the RMS level below which Normalize leaves a clip alone:
	// such a clip is silence or near-silence, and raising it would only
	// amplify noise (and divide by zero for digital silence).
	GateDbfs = -70.0
	// CeilingDbfs is the limiter's peak ceiling: no sample Normalize
	// produces has a magnitude above it, so leveled clips never reach full
	// scale, and MP3 encoding and resampling have 1 dB of headroom for
	// their own overshoot.
	CeilingDbfs = -1.0
)

// Limiter and leveling tuning. The look-ahead is the attack: the gain
// starts falling this long before a peak, long enough for the ramp to be
// inaudible on speech and short enough not to duck the syllable before.
// The release lets the gain recover with a 50 ms time constant, slow
// enough not to distort low voices (a 100 Hz period is 10 ms).
const (
	limiterLookahead = 0.005 // seconds
	limiterRelease   = 0.050 // seconds, time constant
	// levelTolerance is how close (dB) the leveling loop gets the RMS to
	// the target before it stops.
	levelTolerance = 0.05
	// maxMakeupDb bounds the extra gain the loop adds to make up for what
	// the limiter takes: a target that needs more (e.g. -3 dBFS RMS with a
	// -1 dBFS peak ceiling, a 2 dB crest factor) is unreachable without
	// wrecking speech, so the loop settles as close as this allows.
	maxMakeupDb = 12.0
	// maxLevelPasses bounds the measuring passes of the search, after the
	// two that bracket the target.
	maxLevelPasses = 8
	// hotHeadroomDb is how far the hot chain raises the limiter's ceiling,
	// and how far under the ceiling its soft knee starts.
	hotHeadroomDb = 6.0
)

// dbfs converts a linear level to dBFS, -Inf for 0.
func dbfs(x float64) float64 { return 20 * math.Log10(x) }

// fromDb converts dB to a linear factor.
func fromDb(db float64) float64 { return math.Pow(10, db/20) }

// RMSDbfs returns the clip's RMS level in dBFS (a full-scale sine is
// -3.01), or -Inf for an empty or all-zero clip.
func RMSDbfs(c *Clip) float64 {
	if len(c.Samples) == 0 {
		return math.Inf(-1)
	}
	return 10 * math.Log10(sumSquares(c.Samples)/float64(len(c.Samples)))
}

// PeakDbfs returns the clip's sample peak in dBFS (0 at full scale), or
// -Inf for an empty or all-zero clip.
func PeakDbfs(c *Clip) float64 {
	return dbfs(peakAbs(c.Samples))
}

// sumSquares is the energy of the samples. Hot path: float64 accumulation
// so a 60 s clip loses no precision.
func sumSquares(s []float32) float64 {
	var sum float64
	for _, x := range s {
		sum += float64(x) * float64(x)
	}
	return sum
}

func peakAbs(s []float32) float64 {
	var p float32
	for _, x := range s {
		p = max(p, x, -x)
	}
	return float64(p)
}

// Leveling reports what Normalize did, for logs and warnings.
type Leveling struct {
	// InputDbfs and OutputDbfs are the clip's RMS before and after.
	InputDbfs, OutputDbfs float64
	// GainDb is the gain applied ahead of the limiter (the limiter then
	// takes some of it back on peaks).
	GainDb float64
	// Limited is set when the limiter reduced any peak.
	Limited bool
	// Saturated is set when the target was beyond what the limiter alone
	// reaches and the soft-knee stage shaped the peaks (see Normalize).
	Saturated bool
	// Gated is set when the clip was below GateDbfs and left untouched.
	Gated bool
}

// Normalize levels the clip in place to an RMS of targetDbfs, the
// request's volumeDbfs, without letting any sample exceed CeilingDbfs.
//
// Gain that would push peaks over the ceiling goes through a look-ahead
// limiter. For every sample it computes the gain that would put the sample
// at the ceiling, takes the minimum of that over a 5 ms look-ahead window,
// lets it recover with a 50 ms one-pole release, and smooths it with a
// moving average as long as the window. Because each average covers only
// minima of windows that contain the sample, the smoothed gain never
// exceeds what the sample needs: peaks land at or under the ceiling, with
// no hard clipping and no step in the gain.
//
// Limiting lowers the RMS, so the static gain is found by a bracketing
// search (Illinois method, in dB) until the RMS is within 0.05 dB of the
// target, with at most maxMakeupDb of extra gain. Speech has a crest factor
// of 15 to 20 dB, so very loud targets (around -12 dBFS and up) are out of
// reach of any limiter slower than a pitch period; for those, Normalize
// switches to a hot chain: the limiter's ceiling is raised 6 dB and a
// soft-knee saturator (linear up to 6 dB under the ceiling, then a tanh
// curve that approaches the ceiling without reaching it) rounds off what is
// left of the peaks. That trades a little distortion on peaks for the
// loudness asked for, and still never clips.
//
// Clips below GateDbfs (silence) are left as they are.
func Normalize(c *Clip, targetDbfs float64) Leveling {
	in := RMSDbfs(c)
	rep := Leveling{InputDbfs: in, OutputDbfs: in}
	if !(in >= GateDbfs) || math.IsNaN(targetDbfs) { // also catches -Inf and NaN
		rep.Gated = true
		return rep
	}
	ceiling := fromDb(CeilingDbfs)
	g0 := targetDbfs - in // dB
	if peakAbs(c.Samples)*fromDb(g0) <= ceiling {
		scale(c.Samples, float32(fromDb(g0)))
		rep.GainDb = g0
		rep.OutputDbfs = RMSDbfs(c)
		return rep
	}

	l := newLimiter(c.Rate, ceiling)
	n := float64(len(c.Samples))
	solve := func(hot bool) (float64, float64) {
		return solveGain(func(gDb float64) float64 {
			return 10*math.Log10(l.run(c.Samples, fromDb(gDb), hot, nil)/n) - targetDbfs
		}, g0, g0+maxMakeupDb)
	}
	g, miss := solve(false)
	if miss < -levelTolerance { // the limiter alone falls short: go hot
		g, _ = solve(true)
		rep.Saturated = true
	}
	l.run(c.Samples, fromDb(g), rep.Saturated, c.Samples)
	rep.GainDb = g
	rep.Limited = true
	rep.OutputDbfs = RMSDbfs(c)
	return rep
}

// solveGain finds the gain in [lo, hi] (dB) where the increasing function
// f, the output level's distance from the target, is zero, to within
// levelTolerance, by the Illinois variant of regula falsi. f(lo) <= 0 holds
// because limiting only ever lowers the level. If even hi falls short it
// returns hi, the closest reachable. It returns the gain and f there.
func solveGain(f func(float64) float64, lo, hi float64) (float64, float64) {
	return solveGainTol(f, lo, hi, levelTolerance)
}

// solveGainTol is solveGain to within tol.
func solveGainTol(f func(float64) float64, lo, hi, tol float64) (float64, float64) {
	levelTolerance := tol
	flo := f(lo)
	if flo >= -levelTolerance {
		return lo, flo
	}
	fhi := f(hi)
	if fhi <= levelTolerance {
		return hi, fhi
	}
	side := 0
	for range maxLevelPasses {
		g := hi - fhi*(hi-lo)/(fhi-flo)
		fg := f(g)
		if math.Abs(fg) <= levelTolerance {
			return g, fg
		}
		if fg < 0 {
			lo, flo = g, fg
			if side == -1 {
				fhi /= 2 // Illinois: keep the stale end from stalling
			}
			side = -1
		} else {
			hi, fhi = g, fg
			if side == 1 {
				flo /= 2
			}
			side = 1
		}
	}
	if -flo < fhi {
		return lo, flo
	}
	return hi, fhi
}

// scale multiplies the samples by g. Hot path.
func scale(s []float32, g float32) {
	for i := range s {
		s[i] *= g
	}
}

// limiter holds the scratch state of one limiter run: a monotonic deque
// for the sliding minimum and a ring for the moving average, both one
// look-ahead window long. Allocated once per Normalize, reused per pass.
type limiter struct {
	ceiling float64 // peak ceiling of the output
	la      int     // look-ahead in samples
	relCoef float64 // one-pole release coefficient per sample
	mask    int
	dqIdx   []int
	dqVal   []float64
	box     []float64
	// peaks, when set, is the input's true-peak envelope (see
	// peakEnvelope): the limiter holds it, not the sample peaks.
	peaks *peakEnvelope
	// gains, when set, receives each sample's total gain (the static
	// gain times the limiter's), without the hot saturator: the loudness
	// search estimates the limited clip's loudness from it.
	gains []float32
	// trace's scratch and result (see limitsparse.go).
	pieces []limPiece
	lidx   []int
	lt     []float64
	rbuf   []float64
}

func newLimiter(rate int, ceiling float64) *limiter {
	la := max(1, int(limiterLookahead*float64(rate)))
	size := 1
	for size < la+2 {
		size <<= 1
	}
	return &limiter{
		ceiling: ceiling,
		la:      la,
		relCoef: 1 - math.Exp(-1/(limiterRelease*float64(max(rate, 1)))),
		mask:    size - 1,
		dqIdx:   make([]int, size),
		dqVal:   make([]float64, size),
		box:     make([]float64, la+1),
	}
}

// run applies the static gain g and the limiter to x, plus the soft-knee
// saturator if hot (see Normalize). It writes the result to out when out is
// not nil (out may be x itself: sample k is written only after every read
// of it) and returns the result's sum of squares. Hot path: one pass, no
// allocation.
func (l *limiter) run(x []float32, g float64, hot bool, out []float32) float64 {
	n, la, mask := len(x), l.la, l.mask
	limit, knee := l.ceiling, l.ceiling
	if hot {
		limit = l.ceiling * fromDb(hotHeadroomDb)
		knee = l.ceiling * fromDb(-hotHeadroomDb)
	}
	span := l.ceiling - knee
	w := la + 1
	inv := 1 / float64(w)
	clear(l.box)
	var (
		head, tail int // deque holds positions [head, tail)
		boxSum     float64
		boxPos     int
		r          float64
		sumSq      float64
	)
	for j := 0; j < n+la; j++ {
		if j < n {
			// Gain that puts sample j exactly at the ceiling, at most 1.
			t := 1.0
			pk := math.Abs(float64(x[j]))
			if l.peaks != nil {
				pk = float64(l.peaks.at(j, float32(limit/g)))
			}
			if a := pk * g; a > limit {
				t = limit / a
			}
			for tail > head && l.dqVal[(tail-1)&mask] >= t {
				tail--
			}
			l.dqIdx[tail&mask], l.dqVal[tail&mask] = j, t
			tail++
		}
		// k is the sample whose look-ahead window [k, k+la] ends at j;
		// k < 0 are virtual samples that prime the moving average.
		k := j - la
		for l.dqIdx[head&mask] < k {
			head++
		}
		m := l.dqVal[head&mask]
		switch {
		case j == 0, m < r:
			r = m // attack is instantaneous here; the average smooths it
		default:
			r += (m - r) * l.relCoef // release, always staying below m
		}
		boxSum += r - l.box[boxPos]
		l.box[boxPos] = r
		if boxPos++; boxPos == w {
			boxPos = 0
		}
		if k < 0 {
			continue
		}
		gk := g * boxSum * inv
		if l.gains != nil {
			l.gains[k] = float32(gk)
		}
		y := float64(x[k]) * gk
		if hot {
			// Soft knee: identity up to the knee, then a tanh curve with
			// slope 1 at the knee that approaches the ceiling.
			if a := math.Abs(y); a > knee {
				y = math.Copysign(knee+span*math.Tanh((a-knee)/span), y)
			}
		}
		// Numerical safety net, not a clipper: in exact arithmetic the
		// averaged gain never lets |y| exceed the ceiling; this only trims
		// float rounding of the running sum.
		// (Plain comparisons: math.Max and math.Min are not inlined.)
		if y > l.ceiling {
			y = l.ceiling
		} else if y < -l.ceiling {
			y = -l.ceiling
		}
		sumSq += y * y
		if out != nil {
			out[k] = float32(y)
		}
	}
	return sumSq
}
