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
	// blockMax is each block's largest bound, for truePeak.
	blockMax []float32
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
		done: make([]bool, (n+envBlock-1)/envBlock), blockMax: make([]float32, (n+envBlock-1)/envBlock)}
	g := tp.gain()
	// env[k] reads x over [k-tpTaps+1, k+tpTaps]: the interpolated points
	// of samples j within tpTaps/2 of k, each reading tpTaps samples.
	slidingMaxAbs(x, e.bound, tpTaps-1, tpTaps)
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
	if cap(e.pts) < 2*(hi-lo) {
		e.pts = make([]float32, 2*(hi-lo))
	}
	pts, win := e.pts[:hi-lo], e.pts[hi-lo:2*(hi-lo)]
	for j := lo; j < hi; j++ {
		pts[j-lo] = e.tp.at(e.x, j)
	}
	// The points are magnitudes already: the largest within h either
	// side, as truePeak's envelope takes it.
	slidingMaxAbs(pts, win, h, h)
	copy(e.env[from:to], win[from-lo:to-lo])
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
		from, to := i*envBlock, min((i+1)*envBlock, len(e.x))
		best = max(best, slices.Max(e.env[from:to]))
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

// slidingMaxAbs writes to out[k] the largest |x[j]| for j in
// [k-before, k+after] (clipped to x), with a monotonic deque.
func slidingMaxAbs(x, out []float32, before, after int) {
	n := len(x)
	w := before + after + 1
	size := 1
	for size < w+1 {
		size <<= 1
	}
	mask := size - 1
	dqIdx := make([]int, size)
	dqVal := make([]float32, size)
	head, tail := 0, 0
	for j := 0; j < n+after; j++ {
		if j < n {
			v := max(x[j], -x[j])
			for tail > head && dqVal[(tail-1)&mask] <= v {
				tail--
			}
			dqIdx[tail&mask], dqVal[tail&mask] = j, v
			tail++
		}
		k := j - after
		if k < 0 {
			continue
		}
		for dqIdx[head&mask] < k-before {
			head++
		}
		out[k] = dqVal[head&mask]
	}
}
