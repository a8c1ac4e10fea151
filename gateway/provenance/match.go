package provenance

import (
	"math/bits"
	"slices"
)

// Matching, after AcoustID's approach: the index lookup finds the clips
// that share a few fingerprint keys with the query (Keys), and Score
// compares two fingerprints bit by bit at every alignment within
// MaxShift items, so that a clip found again after re-encoding (a few
// bits flip), trimming (it starts later) or a rate change (Chromaprint
// resamples to 11025 Hz first) still scores high, and unrelated audio
// scores near one half.

// keyShift keeps a fingerprint value's 16 most significant bits as its
// index key: re-encoding flips some bits of most values, and a shorter
// key is more often kept whole.
const keyShift = 16

// Keys returns the distinct index keys of fp.
func Keys(fp []uint32) []uint32 {
	keys := make([]uint32, 0, len(fp))
	for _, v := range fp {
		keys = append(keys, v>>keyShift)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// MaxShift is how many items (~124 ms each) either fingerprint may start
// later than the other: 4 s of trimming.
const MaxShift = 32

// minOverlap is the fewest items compared for a score to count (~1.2 s).
const minOverlap = 10

// MatchThreshold is the least Score of a match: the share of agreeing
// bits of the same speech after re-encoding is well above it, and of
// unrelated audio near 0.5.
const MatchThreshold = 0.8

// Score returns the best share of agreeing bits between a and b over
// every alignment within MaxShift items, 0 when they overlap too little.
func Score(a, b []uint32) float64 {
	best := 0.0
	for shift := -MaxShift; shift <= MaxShift; shift++ {
		x, y := a, b
		if shift > 0 {
			if shift >= len(x) {
				continue
			}
			x = x[shift:]
		} else if shift < 0 {
			if -shift >= len(y) {
				continue
			}
			y = y[-shift:]
		}
		n := min(len(x), len(y))
		if n < minOverlap {
			continue
		}
		diff := 0
		for i := range n {
			diff += bits.OnesCount32(x[i] ^ y[i])
		}
		if s := 1 - float64(diff)/float64(32*n); s > best {
			best = s
		}
	}
	return best
}
