package provenance

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// TestHasher: pieces hash as the whole, and a Hasher never written (its
// SHA-256 state made at the first Write) sums as the empty input.
func TestHasher(t *testing.T) {
	for _, pieces := range [][]string{nil, {""}, {"a"}, {"he", "ll", "o, ", "world"}} {
		h := NewHasher()
		var whole []byte
		for _, p := range pieces {
			h.Write([]byte(p))
			whole = append(whole, p...)
		}
		want := sha256.Sum256(whole)
		if sum, n := h.Sum(); sum != hex.EncodeToString(want[:]) || n != int64(len(whole)) {
			t.Errorf("%q: %s, %d bytes; want %x, %d", pieces, sum, n, want, len(whole))
		}
	}
}
