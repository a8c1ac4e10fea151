package speech

import (
	"context"
	"math"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/speech/respcache"
	"github.com/voxgate/voxgate/sdk"
)

// mapStore is an in-memory respcache.Store.
type mapStore struct {
	mu sync.Mutex
	m  map[string]respcache.Entry
}

func (s *mapStore) Get(_ context.Context, key string) (respcache.Entry, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[key]
	return e, ok, nil
}

func (s *mapStore) Put(_ context.Context, key string, e respcache.Entry, _ time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = e
	return nil
}

// TestCacheKeepsTimingMetadata checks that a hit is the answer that was
// stored, timing metadata included: the with-timestamps envelope of a hit
// must be the miss's, byte for byte.
func TestCacheKeepsTimingMetadata(t *testing.T) {
	tests := []struct {
		name string
		res  Result
	}{
		{"native", Result{Audio: []byte("RIFF"), MediaType: "audio/wav", Source: SourceNative, Match: math.NaN(),
			Timestamps: []sdk.WordTimestamp{{Text: "Hi", Start: 0, End: 0.3}}, Warnings: []string{"w"}}},
		{"aligned, long text", Result{Audio: []byte("ID3"), MediaType: "audio/mpeg", Source: SourceAligned, Match: 0.61,
			ReferenceVoice: "en-us+f3", Pieces: []float64{0, 4.2}, Timestamps: []sdk.WordTimestamp{{Text: "Hi", Start: 0.1, End: 0.4}}}},
		{"no timestamps", Result{Audio: []byte{1, 2}, MediaType: "audio/pcm;rate=24000", Match: math.NaN()}},
	}
	for _, tt := range tests {
		c := newResponseCache(CacheOptions{Store: &mapStore{m: map[string]respcache.Entry{}}, TTL: time.Minute}, nil, nil)
		c.put("k", &tt.res, true)
		var got *Result
		for range 200 { // put writes in the background
			if got = c.get(context.Background(), "k"); got != nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if got == nil {
			t.Fatalf("%s: no entry", tt.name)
		}
		if math.IsNaN(tt.res.Match) != math.IsNaN(got.Match) || (!math.IsNaN(got.Match) && got.Match != tt.res.Match) {
			t.Errorf("%s: match %v, want %v", tt.name, got.Match, tt.res.Match)
		}
		got.Match, tt.res.Match = 0, 0
		if !reflect.DeepEqual(*got, tt.res) {
			t.Errorf("%s: got %+v, want %+v", tt.name, *got, tt.res)
		}
	}
}
