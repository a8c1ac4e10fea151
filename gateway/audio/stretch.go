package audio

import (
	"fmt"
	"io"
	"math"
)

// Bounds of the request's speed parameter, a multiple of the normal
// speaking rate.
const (
	// MinSpeed is the slowest speed a request may ask for.
	MinSpeed = 0.25
	// MaxSpeed is the fastest speed a request may ask for.
	MaxSpeed = 4.0
)

// WSOLA tuning. Frames of 25 ms hold two to three pitch periods of even a
// low voice (a 100 Hz period is 10 ms), so the similarity search can find
// the period, and are short enough that a syllable spans several frames.
// The ±12 ms search covers more than a full period of any voice above
// 85 Hz, so a frame can always be moved into phase with its neighbour.
const (
	// stretchFrame is the frame length in seconds; output frames overlap
	// by half, with a Hann window.
	stretchFrame = 0.025
	// stretchSeek is how far, in seconds, a frame may be moved from its
	// nominal place in the input to find the best match.
	stretchSeek = 0.012
	// stretchCoarseRate is the rate (Hz) of the coarse similarity search;
	// the fine search then refines its best position at the full rate.
	// Voiced speech correlates on its fundamental and first formant, which
	// lie below its 3 kHz Nyquist frequency.
	stretchCoarseRate = 6000
	// stretchSilence is the mean square (-100 dBFS) below which a frame is
	// silence: there is nothing to match, so it stays at its nominal place.
	stretchSilence = 1e-10
)

// Stretch returns the clip played speed times as fast without changing its
// pitch, for a request whose provider cannot change speed itself: the
// provider renders at normal speed and the gateway changes the tempo of the
// whole clip. The result is a new clip at the same rate with exactly
// round(len(c.Samples)/speed) samples, so its duration is c's divided by
// speed; c is not modified. Speed 1 returns c itself (callers that modify
// the result in place and need the original must copy first).
//
// Word timestamps scale by 1/speed: a word from start to end in c is from
// start/speed to end/speed in the result, so the caller divides both by
// speed (exactly so at both ends of the clip). Inside, an event lands off
// that by at most the 12 ms a frame may move plus, because time runs at
// normal speed within a 25 ms frame, 12.5 ms·|speed-1|, both in input
// time: in output time about 12 ms at any speed above 1, 37 ms at 0.5 and
// 86 ms at 0.25, finer than the boundaries of words in speech. Concat's
// turn starts are in the time of the clips it joins: stretch the turns
// before Concat, or divide the starts by speed when stretching its result.
//
// The algorithm is WSOLA (waveform-similarity overlap-add; Verhelst and
// Roelands, 1993). The output is built from 25 ms Hann-windowed frames
// overlapping by half. Frame k sits at output time k·h (h the output hop,
// 12.5 ms) and is read from the input around time k·h·speed, moved by up
// to ±12 ms to where the input correlates best (normalized
// cross-correlation) with the natural continuation of frame k-1, so
// overlapping frames add in phase: voiced sounds keep their pitch and
// level, and joins do not click. Where frames repeat or skip input, they do
// so a pitch period at a time. The first frame is the input's first and the
// last frame its last, fixed in place, so neither head nor tail is lost;
// silence in is silence out.
//
// Why hand-written and not a library: Rubber Band is GPL, which would bind
// the whole gateway. SoundTouch 2.3 (LGPL-2.1, with a C API in Debian) was
// tried and measured: it keeps pitch and level on steady tones as well as
// this does, and gets the length right, but it is a streaming processor
// that does not anchor a clip's ends. Its output starts with about 1.5 ms
// of silence followed by the input from a few milliseconds in, and the end
// of the input lands up to tens of milliseconds from the end of the
// output, so the tail comes out cut (speeds above 1) or followed by
// silence (below 1); padding and trimming around it cannot make the ends
// exact. WSOLA over a clip held in memory is under 200 lines, needs no
// system library, and runs over a thousand times faster than real time
// (BenchmarkStretch), in the range of SoundTouch's SSE code.
//
// Errors wrap ErrInvalidParams for a speed outside [MinSpeed, MaxSpeed]
// (including NaN) or a clip without a valid sample rate.
func Stretch(c *Clip, speed float64) (*Clip, error) {
	if !(speed >= MinSpeed && speed <= MaxSpeed) {
		return nil, fmt.Errorf("%w: speed %g is outside %g to %g", ErrInvalidParams, speed, MinSpeed, MaxSpeed)
	}
	if c.Rate <= 0 || c.Rate > maxRate {
		return nil, fmt.Errorf("%w: clip has sample rate %d", ErrInvalidParams, c.Rate)
	}
	if speed == 1 {
		return c, nil
	}
	m := stretchedLen(len(c.Samples), speed)
	out := make([]float32, m)
	if _, err := readFull(newStretchReader(clipSource{c}, m), out); err != nil {
		return nil, err
	}
	return &Clip{Rate: c.Rate, Samples: out}, nil
}

// stretchedLen is the length Stretch gives a clip of n samples.
func stretchedLen(n int, speed float64) int {
	return int(math.Round(float64(n) / speed))
}

// stretcher holds the sizes of one Stretch call, in samples, its window
// and the scratch of its similarity search.
type stretcher struct {
	n      int // frame length, even
	half   int // n/2: the nominal output hop and the length compared
	seek   int // how far a frame may move from its nominal place
	dec    int // decimation of the coarse search; 1 means no coarse search
	win    []float32
	scores []float64 // one per candidate move
}

func newStretcher(rate int) *stretcher {
	half := max(1, int(math.Round(stretchFrame*float64(rate)/2)))
	seek := int(math.Round(stretchSeek * float64(rate)))
	s := &stretcher{
		n:      2 * half,
		half:   half,
		seek:   seek,
		dec:    max(1, rate/stretchCoarseRate),
		win:    make([]float32, 2*half),
		scores: make([]float64, 2*seek+1),
	}
	// Periodic Hann: copies half a frame apart sum to exactly 1.
	for i := range s.win {
		s.win[i] = float32(0.5 - 0.5*math.Cos(math.Pi*float64(i)/float64(half)))
	}
	return s
}

// join is one overlap that a frame's position is chosen to make seamless:
// the half frame of xp at t (what the fixed neighbour frame continues
// with) should match the moving frame's half frame at s+δ.
type join struct{ t, s int }

// stretchBlock is how many frames the streaming stretcher lays out from
// one window of input: enough that the window's margins (a frame and a
// search range at each side) are a small part of it, few enough that the
// window stays under a megabyte at any speed and rate.
const stretchBlock = 64

// stretchReader is WSOLA (see Stretch) as a chain stage: it reads its
// input from a source a window at a time and hands out finished output,
// so neither the input nor the output is ever held whole.
//
// Frame k (k = 0..K) is centred at output sample c_k = round(k·m/K) and
// anchored at input sample a_k = round(k·l/K), so the anchors map the
// whole output onto the whole input; K is chosen so that no hop exceeds
// half a frame. The first frame is centred on the input's first sample and
// the last on its end, which keeps head and tail. Every other frame is read
// centred at a_k+δ (see moves), with δ chosen so that its rising half
// matches the input that follows frame k-1 (and, for the last of them, its
// falling half also matches the input before the last frame).
//
// The output is divided by the sum of the windows that contributed to it.
// Only the first and last frames reach past the clip's ends, by the half
// that lies outside the output too, so a frame adds only the samples it
// has input for; that matters only for a clip shorter than a frame.
//
// Frames are laid out stretchBlock at a time. A block's input window
// covers its frames' anchors with a margin of a frame, a search range and
// the coarse filter's reach at each side, read from the source with
// silence beyond the input's ends; an output sample is final once the
// next frame starts after it.
type stretchReader struct {
	s      *stretcher
	src    source
	l, m   int // input and output lengths
	k1     int // K, the index of the last frame
	k      int // the next frame to lay out
	prevC  int // the last frame's output centre
	prevP  int // and its input centre
	xp     []float32
	co     coarse
	joins  []join
	out    []float32 // output samples [olo, olo+len(out)) being added up
	wsum   []float32 // the window sum of each
	olo    int
	ready  []float32 // finished samples not yet read
	rpos   int
	filled int // output samples finished so far
}

func newStretchReader(src source, m int) *stretchReader {
	r := &stretchReader{s: newStretcher(src.rate()), src: src, l: src.frames(), m: m}
	if m > 0 {
		r.k1 = (m + r.s.half - 1) / r.s.half
	}
	return r
}

// at returns round(k·total/K).
func (r *stretchReader) at(k, total int) int {
	return int((int64(k)*int64(total) + int64(r.k1/2)) / int64(r.k1))
}

func (r *stretchReader) read(dst []float32) (int, error) {
	n := 0
	for n < len(dst) {
		if r.rpos == len(r.ready) {
			if r.filled == r.m {
				return n, io.EOF
			}
			r.block()
			continue
		}
		k := copy(dst[n:], r.ready[r.rpos:])
		r.rpos += k
		n += k
	}
	return n, nil
}

// block lays out the next stretchBlock frames and moves the output they
// finish to ready. Hot path.
func (r *stretchReader) block() {
	s, l, m := r.s, r.l, r.m
	if l == 0 { // no input: the output is silence
		r.ready = growZero(r.ready, min(m-r.filled, 1<<14))
		r.rpos, r.filled = 0, r.filled+len(r.ready)
		return
	}
	k0, kEnd := r.k, min(r.k1, r.k+stretchBlock-1)
	margin := s.n + s.seek + 2*s.dec + 2
	lo, hi := r.at(max(k0-1, 0), l)-margin, r.at(kEnd, l)+margin
	if kEnd >= r.k1-1 {
		hi = max(hi, l+margin) // the last moving frame also matches the end
	}
	r.xp = growZero(r.xp, hi-lo)
	r.src.at(r.xp, lo)
	xp, pad := r.xp, -lo // input sample i is xp[pad+i]
	var co *coarse
	if s.dec > 1 {
		r.co.reset(xp, s.dec)
		co = &r.co
	}
	outHi := min(r.at(kEnd, m)+s.half, m)
	if need := outHi - r.olo; need > len(r.out) {
		r.out = growKeep(r.out, need)
		r.wsum = growKeep(r.wsum, need)
	}
	out, wsum := r.out, r.wsum
	for k := k0; k <= kEnd; k++ {
		c, a := r.at(k, m), r.at(k, l)
		p := a
		if k > 0 && k < r.k1 {
			mlo, mhi := s.moves(a, l)
			p += mlo
			if mlo < mhi {
				joins := append(r.joins[:0], join{t: pad + r.prevP + c - r.prevC - s.half, s: pad + a - s.half})
				if k == r.k1-1 {
					last := pad + l - (r.at(r.k1, m) - c)
					joins = append(joins, join{t: last, s: pad + a})
				}
				r.joins = joins
				p = a + s.match(xp, co, joins, mlo, mhi)
			}
		}
		// Overlap-add frame k: window sample j is input p-half+j and lands
		// on output c-half+j.
		o, src := c-s.half, p-s.half
		jlo, jhi := max(0, -o, -src), min(s.n, m-o, l-src)
		in := xp[pad+src : pad+src+s.n]
		ob := o - r.olo
		for j := jlo; j < jhi; j++ {
			w := s.win[j]
			out[ob+j] += w * in[j]
			wsum[ob+j] += w
		}
		r.prevC, r.prevP = c, p
	}
	r.k = kEnd + 1
	final := m
	if r.k <= r.k1 {
		final = max(r.at(r.k, m)-s.half, r.olo)
	}
	done := final - r.olo
	r.ready = growZero(r.ready, done)
	for i, w := range wsum[:done] {
		// w is 0 only in a clip shorter than a frame slowed down, where no
		// frame has input for the middle of the output: that stays silent.
		if w > 0 {
			r.ready[i] = out[i] / w
		}
	}
	r.rpos, r.filled = 0, final
	// Keep the unfinished tail at the front for the next block.
	kept := copy(out, out[done:])
	copy(wsum, wsum[done:])
	clear(out[kept:])
	clear(wsum[kept:])
	r.olo = final
}

// growZero returns b resized to n zeroed samples, reusing its memory.
func growZero(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	b = b[:n]
	clear(b)
	return b
}

// growKeep returns b extended to n samples, its contents kept and the new
// ones zero.
func growKeep(b []float32, n int) []float32 {
	if cap(b) >= n {
		old := len(b)
		b = b[:n]
		clear(b[old:])
		return b
	}
	nb := make([]float32, n, n+n/2)
	copy(nb, b)
	return nb
}

// moves returns the range [lo, hi] of δ for a frame anchored at input
// sample a of l. A frame moves at most seek from its anchor and stays
// wholly inside the input, so that joins near the ends are cross-fades
// between real samples; near the ends of the input (within half a frame,
// at speeds below 1) that moves it inward from its anchor. In a clip
// shorter than a frame it only moves as far as it is from either end.
func (s *stretcher) moves(a, l int) (lo, hi int) {
	if l < s.n {
		r := min(s.seek, a, l-a)
		return -r, r
	}
	b := min(max(a, s.half), l-s.half)
	return max(b-s.seek, s.half) - a, min(b+s.seek, l-s.half) - a
}

// match returns the move δ in [lo, hi] that maximizes the summed normalized
// cross-correlation of the joins. It searches every dec-th δ on the
// low-passed, decimated signal first, then every δ within dec of the best
// at the full rate, which costs about a tenth of a full search at 24 kHz.
// Silent targets have nothing to match: with only those, δ is the one
// nearest 0.
func (s *stretcher) match(xp []float32, co *coarse, joins []join, lo, hi int) int {
	floor := float32(stretchSilence * float64(s.half))
	live := joins[:0]
	for _, j := range joins {
		if t := xp[j.t : j.t+s.half]; dot(t, t) >= floor {
			live = append(live, j)
		}
	}
	if len(live) == 0 {
		return max(lo, min(hi, 0))
	}
	if co != nil {
		d, n := s.dec, s.half/s.dec
		sc := s.clearScores((hi-lo)/d + 1)
		for _, j := range live {
			addNCC(sc, co.run(j.t, n), co.run(j.s+lo, n+len(sc)-1))
		}
		best := lo + argmax(sc)*d
		lo, hi = max(lo, best-d+1), min(hi, best+d-1)
	}
	sc := s.clearScores(hi - lo + 1)
	for _, j := range live {
		addNCC(sc, xp[j.t:j.t+s.half], xp[j.s+lo:j.s+hi+s.half])
	}
	return lo + argmax(sc)
}

func (s *stretcher) clearScores(n int) []float64 {
	sc := s.scores[:n]
	clear(sc)
	return sc
}

// addNCC adds to dst[i] the normalized cross-correlation of tgt with
// sig[i:i+len(tgt)], for every i < len(dst) (len(sig) must be
// len(tgt)+len(dst)-1). A silent candidate scores 0. Hot path: the
// candidate's energy slides along with it. Not instrumented by the
// race detector: see truePeak.points.
//
//go:norace
func addNCC(dst []float64, tgt, sig []float32) {
	n := len(tgt)
	et := float64(dot(tgt, tgt))
	e := float64(dot(sig[:n], sig[:n]))
	for i := range dst {
		if e > 1e-12*et {
			dst[i] += float64(dot(tgt, sig[i:])) / math.Sqrt(e*et)
		}
		if i+n < len(sig) {
			in, gone := float64(sig[i+n]), float64(sig[i])
			e += in*in - gone*gone
		}
	}
}

// argmax returns the index of the largest element, the first of equals.
func argmax(v []float64) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// coarse is the signal low-passed by a moving sum of 2·dec samples (first
// null at rate/(2·dec), the decimated Nyquist frequency) and split into its
// dec phases, so that every dec-th sample from any start is one contiguous
// run: phase p holds the samples at p, p+dec, p+2·dec, and so on.
type coarse struct {
	dec, stride int
	ph          []float32
}

// reset fills co from xp, reusing its memory.
func (co *coarse) reset(xp []float32, dec int) {
	stride := (len(xp) + dec - 1) / dec
	co.dec, co.stride = dec, stride
	if cap(co.ph) < dec*stride {
		co.ph = make([]float32, dec*stride)
	}
	co.ph = co.ph[:dec*stride]
	var sum float64 // of xp[i-dec : i+dec], a symmetric box, so no delay
	for _, v := range xp[:min(dec-1, len(xp))] {
		sum += float64(v)
	}
	for i := range xp {
		if j := i + dec - 1; j < len(xp) {
			sum += float64(xp[j])
		}
		if j := i - dec - 1; j >= 0 {
			sum -= float64(xp[j])
		}
		co.ph[(i%dec)*stride+i/dec] = float32(sum)
	}
}

// run returns the n samples taken every dec-th sample from xp index i.
func (co *coarse) run(i, n int) []float32 {
	j := (i%co.dec)*co.stride + i/co.dec
	return co.ph[j : j+n : j+n]
}

// dot is the inner product of a and b[:len(a)]. Hot path: four
// accumulators break the chain of dependent additions. Not instrumented
// by the race detector: see truePeak.points.
//
//go:norace
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		a4, b4 := a[i:i+4:i+4], b[i:i+4:i+4]
		s0 += a4[0] * b4[0]
		s1 += a4[1] * b4[1]
		s2 += a4[2] * b4[2]
		s3 += a4[3] * b4[3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}
