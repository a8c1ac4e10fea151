package audio

import (
	"math"
	"slices"
)

// peakEnvelope is the true-peak envelope of a clip (truePeak.envelope),
// computed only where it matters. The interpolation filter cannot lift a
// point above gain × the largest sample magnitude under its taps (gain:
// the largest sum of a phase's absolute coefficients), so a cheap bound
// of every envelope point comes from a sliding maximum of |x|. The exact
// envelope, 72 or more multiply-adds per sample, is computed per block
// of envBlock samples and only for blocks where the bound is above what
// the caller asks about: the limiter asks whether a point passes the
// ceiling at the gain it tries, and the clip's true peak needs only the
// loudest blocks. Speech spends most of its time well under its peaks,
// so most blocks are never computed: the envelope was 78% of a leveled
// clip's CPU before.
type peakEnvelope struct {
	tp    *truePeak
	x     []float32
	bound []float32 // upper bound of env[k]
	env   []float32 // exact where done[k/envBlock]
	done  []bool
	// blockMax is each block's largest bound, for truePeak; envMax its
	// largest exact point once done.
	blockMax []float32
	envMax   []float32
	// pts is compute's scratch.
	pts []float32
}

// envBlock is the block the exact envelope is computed in: long against
// the filter's reach (2·tpTaps samples of margin are computed twice),
// short against a clip's quiet stretches.
const envBlock = 512

func newPeakEnvelope(tp *truePeak, x []float32) *peakEnvelope {
	n := len(x)
	e := &peakEnvelope{tp: tp, x: x, bound: make([]float32, n), env: make([]float32, n),
		done: make([]bool, (n+envBlock-1)/envBlock), blockMax: make([]float32, (n+envBlock-1)/envBlock),
		envMax: make([]float32, (n+envBlock-1)/envBlock)}
	g := tp.gain()
	// env[k] reads x over [k-tpTaps+1, k+tpTaps]: the interpolated points
	// of samples j within tpTaps/2 of k, each reading tpTaps samples.
	slidingMaxAbs(x, e.bound, tpTaps-1, tpTaps, e.env) // env is free until compute
	for k, v := range e.bound {
		b := v * g
		e.bound[k] = b
		if i := k / envBlock; b > e.blockMax[i] {
			e.blockMax[i] = b
		}
	}
	return e
}

// at returns env[k] exactly when its bound is above thr, else a value
// that is at most thr (the bound). Hot path (the limiter, every sample of
// every search step).
func (e *peakEnvelope) at(k int, thr float32) float32 {
	if b := e.bound[k]; b <= thr {
		return b
	}
	i := k / envBlock
	if !e.done[i] {
		e.compute(i)
	}
	return e.env[k]
}

// compute fills block i of env exactly.
func (e *peakEnvelope) compute(i int) {
	n := len(e.x)
	from, to := i*envBlock, min((i+1)*envBlock, n)
	h := tpTaps / 2
	lo, hi := max(0, from-h), min(n, to+h)
	if cap(e.pts) < 3*(hi-lo) {
		e.pts = make([]float32, 3*(hi-lo))
	}
	pts, win, suf := e.pts[:hi-lo], e.pts[hi-lo:2*(hi-lo)], e.pts[2*(hi-lo):3*(hi-lo)]
	e.tp.points(e.x, lo, hi, pts)
	// The points are magnitudes already: the largest within h either
	// side, as truePeak's envelope takes it.
	slidingMaxAbs(pts, win, h, h, suf)
	copy(e.env[from:to], win[from-lo:to-lo])
	e.envMax[i] = slices.Max(e.env[from:to])
	e.done[i] = true
}

// truePeak returns the clip's true peak, linear: the exact envelope of
// the loudest blocks only, from the loudest bound down, until no block
// left can beat what was found.
func (e *peakEnvelope) truePeak() float64 {
	order := make([]int, len(e.blockMax))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmpDesc(e.blockMax[a], e.blockMax[b]) })
	var best float32
	for _, i := range order {
		if e.blockMax[i] <= best {
			break
		}
		if !e.done[i] {
			e.compute(i)
		}
		best = max(best, e.envMax[i])
	}
	return float64(best)
}

func cmpDesc(a, b float32) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// gain is the most the interpolation can lift a point above the largest
// sample magnitude under its taps: the largest sum of a phase's absolute
// coefficients, and at least 1 (the samples themselves).
func (tp *truePeak) gain() float32 {
	g := 1.0
	for p := 0; p < tp.phases-1; p++ {
		var s float64
		for _, c := range tp.coef[p*tpTaps : (p+1)*tpTaps] {
			s += math.Abs(float64(c))
		}
		g = math.Max(g, s)
	}
	// Rounding in float32 sums is far below this margin.
	return float32(g * (1 + 1e-5))
}

// bounds returns in bound, for every sample k of x, an upper bound of
// tp.at(x, k): the filter's gain times the largest |x| under its taps,
// [k-tpTaps/2+1, k+tpTaps/2] (samples outside x are 0, as at reads
// them), for three comparisons a sample where at costs 72 or more
// multiply-adds. bound and suf are reused when large enough.
func (tp *truePeak) bounds(x, bound, suf []float32) ([]float32, []float32) {
	bound, suf = slices.Grow(bound[:0], len(x))[:len(x)], slices.Grow(suf[:0], len(x))[:len(x)]
	slidingMaxAbs(x, bound, tpTaps/2-1, tpTaps/2, suf)
	g := tp.bound
	for k, v := range bound {
		bound[k] = v * g
	}
	return bound, suf
}

// slidingMaxAbs writes to out[k] the largest |x[j]| for j in
// [k-before, k+after] (clipped to x), by van Herk and Gil-Werman's
// method: running maxima forwards and backwards within blocks as long as
// the window, two of which cover any window, so each sample costs three
// comparisons whatever the window's length (a monotonic deque's pops and
// ring indexing cost more on speech). suf is scratch of len(x) (it may
// not be out; out may not be x). Not instrumented by the race
// detector: see points.
//
//go:norace
func slidingMaxAbs(x, out []float32, before, after int, suf []float32) {
	n := len(x)
	if n == 0 {
		return
	}
	w := before + after + 1
	out, suf = out[:n], suf[:n]
	// out holds the forward maxima (pre) until each is last read: out[k]
	// reads pre at k+after ≥ k, and no later k reads pre at k or before.
	for b := 0; b < n; b += w {
		e := min(b+w, n)
		m := absf(x[b])
		out[b] = m
		for j := b + 1; j < e; j++ {
			if a := absf(x[j]); a > m {
				m = a
			}
			out[j] = m
		}
		m = absf(x[e-1])
		suf[e-1] = m
		for j := e - 2; j >= b; j-- {
			if a := absf(x[j]); a > m {
				m = a
			}
			suf[j] = m
		}
	}
	// An inner window [s, e] spans w samples: it is one whole block or
	// the end of one and the start of the next, max(suf[s], pre[e])
	// either way. A clipped one at the edges is read as the definition says.
	edge := func(k int) float32 {
		s, e := max(k-before, 0), min(k+after, n-1)
		switch {
		case s/w != e/w:
			return max(suf[s], out[e])
		case s%w == 0:
			return out[e]
		}
		return suf[s]
	}
	k := 0
	for ; k < min(before, n); k++ {
		out[k] = edge(k)
	}
	for ; k+after < n; k++ {
		m := suf[k-before]
		if v := out[k+after]; v > m {
			m = v
		}
		out[k] = m
	}
	for ; k < n; k++ {
		out[k] = edge(k)
	}
}

// points writes tp.at(x, j) for j in [lo, hi) to out[j-lo], bit for bit:
// each phase's dot product adds its taps in at's order, but two samples'
// phases run side by side, three at a time, so that the adds of one dot
// product do not wait on one another's (each alone is a chain of tpTaps
// dependent adds). Summing a phase in another order (several
// accumulators) would change points by a float32 rounding, which
// long-file leveling was seen to amplify (see LevelLong). Hot path: the
// envelope of every loud block.
//
// It and the other arithmetic kernels of the package (the dot products
// below, slidingMaxAbs, at, the K-weighting's newKWeighted and sumPower,
// stretch's dot and addNCC) are left out of the race detector's
// instrumentation (go:norace): each reads the slices it is given and
// writes only its own output, and under the detector
// every load of their inner loops was a call into it, which made these
// few loops most of a race-built test's CPU (gateway/audio's tests and
// every end-to-end test that levels audio). The callers' reads and
// writes of the same memory are still instrumented, so a race on a
// clip's samples is still reported there. No effect on other builds.
//
//go:norace
func (tp *truePeak) points(x []float32, lo, hi int, out []float32) {
	np := tp.phases - 1
	row := func(p int) []float32 { return tp.coef[p*tpTaps : (p+1)*tpTaps : (p+1)*tpTaps] }
	j := lo
	for ; j < hi; j++ {
		from := j - tpTaps/2 + 1
		if from < 0 || from+tpTaps+1 > len(x) || j+1 >= hi {
			out[j-lo] = tp.at(x, j)
			continue
		}
		win := x[from : from+tpTaps+1 : from+tpTaps+1]
		a, b := absf(x[j]), absf(x[j+1])
		p := 0
		for ; p+3 <= np; p += 3 {
			a0, a1, a2, b0, b1, b2 := dot3x2(row(p), row(p+1), row(p+2), win)
			a = max32(a, a0, a1, a2)
			b = max32(b, b0, b1, b2)
		}
		switch np - p {
		case 2:
			a0, a1, b0, b1 := dot2x2(row(p), row(p+1), win)
			a = max32(a, a0, a1, 0)
			b = max32(b, b0, b1, 0)
		case 1:
			a0, b0 := dot1x2(row(p), win)
			a = max32(a, a0, 0, 0)
			b = max32(b, b0, 0, 0)
		}
		out[j-lo], out[j+1-lo] = a, b
		j++
	}
}

// dot3x2 is three phases' dot products at two neighbouring samples (win
// holds tpTaps+1 samples: the first's taps, then one more). Not
// instrumented by the race detector: see points.
//
//go:norace
func dot3x2(r0, r1, r2, win []float32) (a0, a1, a2, b0, b1, b2 float32) {
	r0, r1, r2 = r0[:tpTaps], r1[:tpTaps], r2[:tpTaps]
	win = win[:tpTaps+1]
	for i := range tpTaps {
		v, u := win[i], win[i+1]
		a0 += r0[i] * v
		a1 += r1[i] * v
		a2 += r2[i] * v
		b0 += r0[i] * u
		b1 += r1[i] * u
		b2 += r2[i] * u
	}
	return
}

// dot2x2 is dot3x2 for two phases.
//
//go:norace
func dot2x2(r0, r1, win []float32) (a0, a1, b0, b1 float32) {
	r0, r1 = r0[:tpTaps], r1[:tpTaps]
	win = win[:tpTaps+1]
	for i := range tpTaps {
		v, u := win[i], win[i+1]
		a0 += r0[i] * v
		a1 += r1[i] * v
		b0 += r0[i] * u
		b1 += r1[i] * u
	}
	return
}

// dot1x2 is dot3x2 for one phase.
//
//go:norace
func dot1x2(r0, win []float32) (a0, b0 float32) {
	r0 = r0[:tpTaps]
	win = win[:tpTaps+1]
	for i := range tpTaps {
		a0 += r0[i] * win[i]
		b0 += r0[i] * win[i+1]
	}
	return
}

// max32 is the largest of m and the magnitudes of a, b and c.
func max32(m, a, b, c float32) float32 {
	if a = absf(a); a > m {
		m = a
	}
	if b = absf(b); b > m {
		m = b
	}
	if c = absf(c); c > m {
		m = c
	}
	return m
}

// absf is |v| by its sign bit: the max builtin orders NaNs and signed
// zeros, which costs branches on every sample of a hot loop.
func absf(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }
