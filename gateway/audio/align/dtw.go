package align

import (
	"math"
)

// step is one cell of a warping path: reference frame i matched with clip
// frame j.
type step struct{ i, j int32 }

// band is the part of the cost matrix a DTW pass may visit: for each
// reference frame i, the clip frames lo[i] <= j < hi[i]. Its rows must
// chain (some cell of row i is reachable from row i-1) and it must hold
// both corners.
type band struct {
	lo, hi []int32
}

// cells returns the number of cells in b.
func (b *band) cells() int {
	n := 0
	for i := range b.lo {
		n += int(b.hi[i] - b.lo[i])
	}
	return n
}

// stripe returns the band of half-width w around the straight line from
// (0, 0) to (n-1, m-1), as aeneas' "stripe" DTW: the path may wander w
// frames off the average speaking rate.
func stripe(n, m, w int) band {
	b := band{lo: make([]int32, n), hi: make([]int32, n)}
	for i := range n {
		c := 0
		if n > 1 {
			c = int(int64(i) * int64(m-1) / int64(n-1))
		}
		b.lo[i] = int32(max(c-w, 0))
		b.hi[i] = int32(min(c+w+1, m))
	}
	return b
}

// around returns the band of fine frames within radius frames of a
// coarse path, whose cells each cover factor × factor fine cells; n and m
// are the fine sizes.
func around(path []step, factor, radius, n, m int) band {
	b := band{lo: make([]int32, n), hi: make([]int32, n)}
	for i := range n {
		b.lo[i], b.hi[i] = int32(m), 0
	}
	for _, s := range path {
		i0, j0 := int(s.i)*factor, int(s.j)*factor
		lo, hi := int32(max(j0-radius, 0)), int32(min(j0+factor+radius, m))
		for i := max(i0-radius, 0); i < min(i0+factor+radius, n); i++ {
			b.lo[i] = min(b.lo[i], lo)
			b.hi[i] = max(b.hi[i], hi)
		}
	}
	// Rows past the coarse grid (a remainder of frames) and the corners.
	for i := range n {
		if b.lo[i] >= b.hi[i] {
			if i > 0 {
				b.lo[i], b.hi[i] = b.lo[i-1], b.hi[i-1]
			} else {
				b.lo[i], b.hi[i] = 0, 1
			}
		}
	}
	b.lo[0] = 0
	b.hi[n-1] = int32(m)
	// Windows only move right, so every row chains to the one before.
	for i := 1; i < n; i++ {
		b.hi[i] = max(b.hi[i], b.hi[i-1])
	}
	for i := n - 2; i >= 0; i-- {
		b.lo[i] = min(b.lo[i], b.lo[i+1])
	}
	return b
}

// Directions a path arrives from, stored per cell for the backtrack.
const (
	fromDiag byte = iota
	fromUp        // (i-1, j): the reference advanced, the clip did not
	fromLeft      // (i, j-1): the clip advanced, the reference did not
)

// warp finds the cheapest monotonic path through b from (0, 0) to
// (n-1, m-1) under dist, with the symmetric step pattern: a diagonal step
// costs twice the cell, a horizontal or vertical one once, so a path's
// cost does not depend on how it mixes them. It returns the path and its
// mean cost per frame of both clips (the cost divided by n+m).
//
// Hot path: every cell of the band costs one distance and three
// comparisons; BenchmarkAlign covers it.
func warp(ref, clip *features, b band) ([]step, float64) {
	n, m := ref.n, clip.n
	dirs := make([]byte, b.cells())
	offs := make([]int, n+1)
	for i := range n {
		offs[i+1] = offs[i] + int(b.hi[i]-b.lo[i])
	}
	inf := float32(math.Inf(1))
	// prev and cur hold the accumulated cost of the previous and current
	// row, indexed by clip frame; only the band's span is ever read.
	prev, cur := make([]float32, m), make([]float32, m)
	for i := range n {
		lo, hi := int(b.lo[i]), int(b.hi[i])
		plo, phi := 0, 0
		if i > 0 {
			plo, phi = int(b.lo[i-1]), int(b.hi[i-1])
		}
		r := ref.row(i)
		d := dirs[offs[i]:offs[i+1]]
		for j := lo; j < hi; j++ {
			c := dist(r, clip.row(j))
			if i == 0 && j == 0 {
				cur[j] = c
				d[0] = fromDiag
				continue
			}
			best, dir := inf, fromDiag
			if i > 0 && j > 0 && j-1 >= plo && j-1 < phi {
				best = prev[j-1] + 2*c
			}
			if i > 0 && j >= plo && j < phi {
				if v := prev[j] + c; v < best {
					best, dir = v, fromUp
				}
			}
			if j > lo {
				if v := cur[j-1] + c; v < best {
					best, dir = v, fromLeft
				}
			}
			cur[j] = best
			d[j-lo] = dir
		}
		prev, cur = cur, prev
	}
	total := float64(prev[m-1])
	path := make([]step, 0, n+m)
	i, j := n-1, m-1
	for {
		path = append(path, step{int32(i), int32(j)})
		if i == 0 && j == 0 {
			break
		}
		switch dirs[offs[i]+j-int(b.lo[i])] {
		case fromDiag:
			i, j = i-1, j-1
		case fromUp:
			i--
		default:
			j--
		}
	}
	for l, r := 0, len(path)-1; l < r; l, r = l+1, r-1 {
		path[l], path[r] = path[r], path[l]
	}
	return path, total / float64(n+m)
}

// dist is the Euclidean distance between two frames.
func dist(a, b []float32) float32 {
	_ = a[dims-1]
	_ = b[dims-1]
	var s float32
	for k := range dims {
		d := a[k] - b[k]
		s += d * d
	}
	return float32(math.Sqrt(float64(s)))
}

// pool returns f with every factor frames averaged into one: the coarse
// level of the multi-resolution search. Energy keeps the loudest frame.
func (f *features) pool(factor int) *features {
	n := (f.n + factor - 1) / factor
	out := &features{n: n, mfcc: make([]float32, n*dims), energy: make([]float32, n)}
	for i := range n {
		row := out.row(i)
		k0, k1 := i*factor, min((i+1)*factor, f.n)
		out.energy[i] = float32(math.Inf(-1))
		for k := k0; k < k1; k++ {
			for c, v := range f.row(k) {
				row[c] += v
			}
			out.energy[i] = max(out.energy[i], f.energy[k])
		}
		for c := range row {
			row[c] /= float32(k1 - k0)
		}
	}
	return out
}

// reversed returns f with its frames in reverse order (and its deltas
// negated): a reference that sounds like the original frame by frame but
// says nothing in order.
func (f *features) reversed() *features {
	out := &features{n: f.n, mfcc: make([]float32, len(f.mfcc)), energy: make([]float32, f.n)}
	for i := range f.n {
		src, dst := f.row(f.n-1-i), out.row(i)
		copy(dst, src)
		for c := cepstra + 1; c < dims; c++ {
			dst[c] = -dst[c]
		}
		out.energy[i] = f.energy[f.n-1-i]
	}
	return out
}
