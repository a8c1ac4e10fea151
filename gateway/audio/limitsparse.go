package audio

import "math"

// The loudness search (NormalizeLoudness) tries four to six static gains,
// and at each one the limiter's gain curve is all it needs. Running the
// limiter (limiter.run) over the whole clip for each costs a sliding
// minimum, a release and a moving average on every sample, although the
// limiter acts only around the peaks that the tried gain lifts over the
// ceiling: speech at -16 LUFS has some 5% of such samples, and the limiter
// follows them for at most 10 ms (the look-ahead and the average).
// Everywhere else the limiter's gain is only releasing towards 1, which
// has a closed form: with m = 1 the release r ← r + (1-r)·c makes 1-r
// decay geometrically (d·q^n, q = 1-c), and the moving average of such a
// tail is the tail times a constant. limiter.trace runs the limiter
// exactly only over the stretches around limited samples and fills the
// rest from the closed form, so a search step costs a scan of the
// envelope's block maxima, the exact limiter over those stretches and
// one multiply per sample for the gain curve. The result equals
// limiter.run's to float rounding (TestLimiterTraceMatchesRun).

// limPiece is one stretch of output samples [from, to) of a trace: either
// limited exactly (its gains written by trace) or releasing in closed
// form (the release's 1-r is d0 at sample j0, and q per sample).
type limPiece struct {
	from, to int
	exact    bool
	d0       float64
	j0       int
}

// trace computes the limiter's gain curve for x at static gain g (no hot
// chain) into l.pieces, and writes the gains of its exact pieces to gains
// (fillGains writes the others; apply reads both). l.peaks must be set.
// Hot path of the loudness search: no allocation once the scratch has
// grown.
func (l *limiter) trace(x []float32, g float64, gains []float32) {
	n, la := len(x), l.la
	limit := l.ceiling
	e := l.peaks
	l.pieces = l.pieces[:0]
	l.lidx, l.lt = l.lidx[:0], l.lt[:0]
	thr := float32(limit / g)
	// The samples the gain lifts over the ceiling, with the limiter's
	// target gain there, exactly as limiter.run computes them. A block
	// whose largest bound stays under the ceiling has none (every point
	// is at most its bound).
	for i, bm := range e.blockMax {
		if float64(bm)*g <= limit || e.done[i] && float64(e.envMax[i])*g <= limit {
			continue
		}
		from, to := i*envBlock, min((i+1)*envBlock, n)
		for j, b := range e.bound[from:to] {
			if b <= thr { // e.at's answer, inlined
				if a := float64(b) * g; a > limit {
					l.lidx = append(l.lidx, from+j)
					l.lt = append(l.lt, limit/a)
				}
				continue
			}
			if !e.done[i] {
				e.compute(i)
			}
			if a := float64(e.env[from+j]) * g; a > limit {
				l.lidx = append(l.lidx, from+j)
				l.lt = append(l.lt, limit/a)
			}
		}
	}
	q := 1 - l.relCoef
	w := la + 1
	// The quiet state between stretches: 1-r is dRef at sample jRef.
	dRef, jRef := 0.0, -1
	quietTo := func(to int) { // outputs from the last piece's end up to to
		from := 0
		if len(l.pieces) > 0 {
			from = l.pieces[len(l.pieces)-1].to
		}
		if to > from {
			l.pieces = append(l.pieces, limPiece{from: from, to: to, d0: dRef, j0: jRef})
		}
	}
	for s := 0; s < len(l.lidx); {
		// A stretch: limited samples whose look-ahead windows [j, j+la]
		// lie closer than la apart, so that the releasing samples between
		// two stretches' averages never overlap.
		e := s + 1
		for e < len(l.lidx) && l.lidx[e] < l.lidx[e-1]+la+1+la {
			e++
		}
		A, B := l.lidx[s], l.lidx[e-1]+la+1 // r is exact for j in [A, B)
		quietTo(max(0, A-la))
		// r over [A-la, B+la): the release before, exact, the release after.
		base := A - la
		need := B + la - base
		if cap(l.rbuf) < need {
			l.rbuf = make([]float64, need)
		}
		rb := l.rbuf[:need]
		d := dRef * math.Pow(q, float64(base-jRef))
		for j := base; j < A; j++ {
			rb[j-base] = 1 - d
			d *= q
		}
		r := 1 - dRef*math.Pow(q, float64(A-1-jRef))
		head, tail, mask := 0, 0, l.mask
		p := s
		for j := A; j < B; j++ {
			if p < e && l.lidx[p] == j {
				t := l.lt[p]
				for tail > head && l.dqVal[(tail-1)&mask] >= t {
					tail--
				}
				l.dqIdx[tail&mask], l.dqVal[tail&mask] = j, t
				tail++
				p++
			}
			for tail > head && l.dqIdx[head&mask] < j-la {
				head++
			}
			m := 1.0
			if tail > head {
				m = l.dqVal[head&mask]
			}
			if m < r {
				r = m
			} else {
				r += (m - r) * l.relCoef
			}
			rb[j-base] = r
		}
		d = 1 - r
		for j := B; j < B+la; j++ {
			d *= q
			rb[j-base] = 1 - d
		}
		// The outputs whose averages reach into [A, B).
		from, to := max(0, A-la), min(n, B)
		piece := limPiece{from: from, to: to, exact: true}
		var sum float64
		for j := from; j < from+w; j++ {
			sum += rb[j-base]
		}
		inv := 1 / float64(w)
		for k := from; k < to; k++ {
			gains[k] = float32(g * sum * inv)
			if k+1 < to {
				sum += rb[k+w-base] - rb[k-base]
			}
		}
		l.pieces = append(l.pieces, piece)
		dRef, jRef = 1-rb[B-1-base], B-1
		s = e
	}
	quietTo(n)
}

// releaseAvg is the moving average's factor on a release tail: the
// average of 1-r over [k, k+la] is (1-r at k) times it.
func (l *limiter) releaseAvg() float64 {
	q := 1 - l.relCoef
	w := float64(l.la + 1)
	return (1 - math.Pow(q, w)) / (l.relCoef * w)
}

// fillGains writes the gains of the trace's releasing pieces to gains
// (trace wrote the exact ones).
func (l *limiter) fillGains(g float64, gains []float32) {
	q := 1 - l.relCoef
	avg := l.releaseAvg()
	for _, pc := range l.pieces {
		if pc.exact {
			continue
		}
		d := pc.d0 * math.Pow(q, float64(pc.from-pc.j0))
		k := pc.from
		// Once the tail is under float32's resolution the gain is g.
		for ; k < pc.to && d > 1e-9; k++ {
			gains[k] = float32(g * (1 - avg*d))
			d *= q
		}
		g32 := float32(g)
		for ; k < pc.to; k++ {
			gains[k] = g32
		}
	}
}

// apply writes x at the trace's gains to out (out may be x): the exact
// pieces' from gains (as trace wrote them), the others' from the closed
// form.
func (l *limiter) apply(x, out []float32, g float64, gains []float32) {
	q := 1 - l.relCoef
	avg := l.releaseAvg()
	ceil := l.ceiling
	put := func(k int, gk float64) {
		y := float64(x[k]) * gk
		if y > ceil {
			y = ceil
		} else if y < -ceil {
			y = -ceil
		}
		out[k] = float32(y)
	}
	for _, pc := range l.pieces {
		if pc.exact {
			for k := pc.from; k < pc.to; k++ {
				put(k, float64(gains[k]))
			}
			continue
		}
		d := pc.d0 * math.Pow(q, float64(pc.from-pc.j0))
		for k := pc.from; k < pc.to; k++ {
			put(k, g*(1-avg*d))
			d *= q
		}
	}
}
