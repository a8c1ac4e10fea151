package provenance

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/voxgate/voxgate/gateway/audio"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/memory"
)

// BenchmarkFingerprint is the fingerprint of one second of 22050 Hz
// speech (decoded; decoding is apart): ns/op is the cost per second of
// audio, paid by the background indexer, never by the answer.
func BenchmarkFingerprint(b *testing.B) {
	t := &testing.T{}
	data, err := os.ReadFile(speech(t, "The quick brown fox jumps over the lazy dog, and then it runs far away into the forest."))
	if err != nil {
		b.Skip("espeak-ng")
	}
	c, err := audio.Decode(data, "audio/wav")
	if err != nil {
		b.Fatal(err)
	}
	secs := c.Seconds()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Fingerprint(c.Samples, c.Rate); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/secs, "ns/audio-second")
}

// BenchmarkIdentifyLookup is Identify's index lookup and scoring (the
// query's fingerprint apart) over n indexed clips of random 40-value
// fingerprints, in the memory store.
func BenchmarkIdentifyLookup(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			st := memory.New(store.Options{})
			rng := rand.New(rand.NewPCG(1, 2))
			var query []uint32
			for i := range n {
				fp := make([]uint32, 40)
				for j := range fp {
					fp[j] = rng.Uint32()
				}
				if i == n/2 {
					query = fp
				}
				if err := st.PutFingerprint(context.Background(), &store.Fingerprint{OrgID: "o", RequestID: fmt.Sprint(i), Values: fp, Keys: Keys(fp)}); err != nil {
					b.Fatal(err)
				}
			}
			keys := Keys(query)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				found, err := st.MatchFingerprints(context.Background(), "o", keys, candidates)
				if err != nil {
					b.Fatal(err)
				}
				best := 0.0
				for _, f := range found {
					best = max(best, Score(f.Values, query))
				}
				if best < 0.99 {
					b.Fatalf("best %.3f", best)
				}
			}
		})
	}
}
