package audio

import "math"

// kWeighted is a clip's K-weighted power (BS.1770-4's pre-filter and
// RLB high-pass, with the coefficients libebur128 derives for any rate),
// kept so that the loudness search can estimate the integrated loudness
// of the clip under any slowly varying gain without filtering again.
//
// Why an estimate of our own beside libebur128: levelling searches the
// static gain in four to eight steps, each a limiter pass and a
// measurement, and libebur128 has no way to measure a gain trajectory
// but to filter the whole clip again. The limiter's gain moves over
// milliseconds (5 ms attack, 50 ms release, then smoothed) while the
// K-filter's response is a few samples long, so K(gain·x) ≈ gain·K(x)
// within a hundredth of a LU on speech; each step then costs a limiter
// pass and one multiply-add per sample. libebur128 still measures the
// result once, and the search corrects for any difference.
type kWeighted struct {
	rate  int
	power []float32 // K-weighted x², per sample
}

// newKWeighted filters x once. Not instrumented by the race detector (see
// truePeak.points): it reads x and writes only the power it allocates.
//
//go:norace
func newKWeighted(x []float32, rate int) *kWeighted {
	pb, pa, rb, ra := kCoefficients(rate)
	kw := &kWeighted{rate: rate, power: make([]float32, len(x))}
	var s1, s2, t1, t2 float64 // direct form II state of the two biquads
	for i, v := range x {
		// Stage 1: the high shelf (head response); stage 2: RLB high-pass.
		w := float64(v) - pa[1]*s1 - pa[2]*s2
		y := pb[0]*w + pb[1]*s1 + pb[2]*s2
		s2, s1 = s1, w
		u := y - ra[1]*t1 - ra[2]*t2
		z := rb[0]*u + rb[1]*t1 + rb[2]*t2
		t2, t1 = t1, u
		kw.power[i] = float32(z * z)
	}
	return kw
}

// kCoefficients are libebur128's (ebur128_init_filter): BS.1770's two
// stages derived for rate from their analogue prototypes.
func kCoefficients(rate int) (pb, pa, rb, ra [3]float64) {
	f0, g, q := 1681.974450955533, 3.999843853973347, 0.7071752369554196
	k := math.Tan(math.Pi * f0 / float64(rate))
	vh := math.Pow(10, g/20)
	vb := math.Pow(vh, 0.4996667741545416)
	a0 := 1 + k/q + k*k
	pb = [3]float64{(vh + vb*k/q + k*k) / a0, 2 * (k*k - vh) / a0, (vh - vb*k/q + k*k) / a0}
	pa = [3]float64{1, 2 * (k*k - 1) / a0, (1 - k/q + k*k) / a0}
	f0, q = 38.13547087602444, 0.5003270373238773
	k = math.Tan(math.Pi * f0 / float64(rate))
	rb = [3]float64{1, -2, 1}
	ra = [3]float64{1, 2 * (k*k - 1) / (1 + k/q + k*k), (1 - k/q + k*k) / (1 + k/q + k*k)}
	return
}

// loudness estimates the gated integrated loudness (LUFS) of the clip
// with each sample scaled by gains[k] (nil: unscaled): 400 ms blocks
// every 100 ms, the absolute gate at -70 LUFS and the relative gate 10 LU
// under the mean of the blocks that pass it, as BS.1770-4 gates. For a
// clip shorter than a block, the ungated mean over all of it. Hot path
// (every step of the loudness search): one running sum over the samples,
// read at the blocks' edges only; edges is scratch the estimate grows.
func (kw *kWeighted) loudness(gains []float32, edges *[]float64) float64 {
	n := len(kw.power)
	block, hop := int(0.4*float64(kw.rate)+0.5), int(0.1*float64(kw.rate)+0.5)
	lufs := func(z float64) float64 { return -0.691 + 10*math.Log10(z) }
	// The running sum at every block's start (s = m·hop) and end (s+block):
	// starts[m] and ends[m]; both sequences rise, so one pass records them.
	nb := 0
	if n >= block {
		nb = (n-block)/hop + 1
	}
	if cap(*edges) < 2*nb {
		*edges = make([]float64, 2*nb)
	}
	starts, ends := (*edges)[:nb], (*edges)[nb:2*nb]
	var acc float64
	ns, ne := 0, 0
	at := func(i int) { // records the sum of the samples before i
		for ns < nb && ns*hop == i {
			starts[ns] = acc
			ns++
		}
		for ne < nb && ne*hop+block == i {
			ends[ne] = acc
			ne++
		}
	}
	i := 0
	for i < n {
		at(i)
		next := n
		if ns < nb {
			next = min(next, ns*hop)
		}
		if ne < nb {
			next = min(next, ne*hop+block)
		}
		if next == i {
			next = i + 1
		}
		acc += sumPower(kw.power[i:next], gains, i)
		i = next
	}
	at(n)
	if n < block {
		if n == 0 || acc == 0 {
			return math.Inf(-1)
		}
		return lufs(acc / float64(n))
	}
	absGate := math.Pow(10, (GateLufs+0.691)/10)
	var sum float64
	var cnt int
	for m := range nb {
		if z := (ends[m] - starts[m]) / float64(block); z >= absGate {
			sum += z
			cnt++
		}
	}
	if cnt == 0 {
		return math.Inf(-1)
	}
	relGate := sum / float64(cnt) * math.Pow(10, -10.0/10)
	sum, cnt = 0, 0
	for m := range nb {
		if z := (ends[m] - starts[m]) / float64(block); z >= absGate && z >= relGate {
			sum += z
			cnt++
		}
	}
	if cnt == 0 {
		return math.Inf(-1)
	}
	return lufs(sum / float64(cnt))
}

// sumPower is the sum of power[j]·gains[from+j]² (gains nil: of power),
// in four running sums: one would be a chain of dependent adds, four
// times as slow. Hot path (every step of the loudness search), not
// instrumented by the race detector: see truePeak.points.
//
//go:norace
func sumPower(power, gains []float32, from int) float64 {
	var a0, a1, a2, a3 float64
	n := len(power)
	j := 0
	if gains == nil {
		for ; j+4 <= n; j += 4 {
			a0 += float64(power[j])
			a1 += float64(power[j+1])
			a2 += float64(power[j+2])
			a3 += float64(power[j+3])
		}
		for ; j < n; j++ {
			a0 += float64(power[j])
		}
		return (a0 + a1) + (a2 + a3)
	}
	g := gains[from : from+n]
	for ; j+4 <= n; j += 4 {
		g0, g1, g2, g3 := float64(g[j]), float64(g[j+1]), float64(g[j+2]), float64(g[j+3])
		a0 += float64(power[j]) * g0 * g0
		a1 += float64(power[j+1]) * g1 * g1
		a2 += float64(power[j+2]) * g2 * g2
		a3 += float64(power[j+3]) * g3 * g3
	}
	for ; j < n; j++ {
		gj := float64(g[j])
		a0 += float64(power[j]) * gj * gj
	}
	return (a0 + a1) + (a2 + a3)
}
