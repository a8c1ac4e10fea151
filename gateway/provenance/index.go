package provenance

import (
	"context"
	"errors"
	"slices"
	"sync"

	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/store"
)

// Fingerprinter computes the fingerprint of a file of audio. Workers is
// the gateway's (child processes); tests may fingerprint in-process
// (InProcess).
type Fingerprinter interface {
	Fingerprint(ctx context.Context, data []byte, mediaType string) ([]uint32, error)
}

// InProcess fingerprints in the calling process (FingerprintAudio): for
// tests and tools, not for a gateway (see Workers).
type InProcess struct{}

// Fingerprint implements Fingerprinter.
func (InProcess) Fingerprint(_ context.Context, data []byte, mediaType string) ([]uint32, error) {
	return FingerprintAudio(data, mediaType)
}

// Index fingerprints finished clips off the request path and keeps the
// fingerprints in the store; Identify finds an organization's clips from
// audio again. The queue is bounded: under a burst a clip may go
// unindexed (logged), never the answer delayed.
type Index struct {
	store store.FingerprintStore
	log   *zap.Logger
	// bg fingerprints indexed clips, fg identify's queries: separate
	// workers, so a query does not wait behind a backlog of clips.
	bg, fg Fingerprinter
	jobs   chan indexJob
	wg     sync.WaitGroup
	once   sync.Once
}

type indexJob struct {
	org, requestID, mediaType string
	audio                     []byte
}

// indexQueue bounds the clips waiting to be fingerprinted.
const indexQueue = 256

// NewIndex starts workers goroutines that fingerprint clips with bg and
// store them; Identify fingerprints queries with fg.
func NewIndex(st store.FingerprintStore, log *zap.Logger, workers int, bg, fg Fingerprinter) *Index {
	ix := &Index{store: st, log: log, bg: bg, fg: fg, jobs: make(chan indexJob, indexQueue)}
	for range max(1, workers) {
		ix.wg.Add(1)
		go ix.work()
	}
	return ix
}

// Index implements Indexer: audio must stay unchanged until it is
// fingerprinted (the caller hands over a copy or bytes nobody changes).
func (ix *Index) Index(org, requestID, mediaType string, audio []byte) {
	select {
	case ix.jobs <- indexJob{org, requestID, mediaType, audio}:
	default:
		ix.log.Warn("provenance: fingerprint queue full; clip not indexed", zap.String("request_id", requestID))
	}
}

// Close stops taking clips and waits for those queued to be stored.
func (ix *Index) Close() {
	ix.once.Do(func() { close(ix.jobs) })
	ix.wg.Wait()
}

func (ix *Index) work() {
	defer ix.wg.Done()
	for j := range ix.jobs {
		fp, err := ix.bg.Fingerprint(context.Background(), j.audio, j.mediaType)
		if err != nil {
			if !errors.Is(err, ErrNoAudio) {
				ix.log.Warn("provenance: clip not fingerprinted", zap.String("request_id", j.requestID), zap.String("media_type", j.mediaType), zap.Error(err))
			}
			continue
		}
		if err := ix.store.PutFingerprint(context.Background(), &store.Fingerprint{OrgID: j.org, RequestID: j.requestID, Values: fp, Keys: Keys(fp)}); err != nil {
			ix.log.Warn("provenance: fingerprint not stored", zap.String("request_id", j.requestID), zap.Error(err))
		}
	}
}

// Match is one clip found by Identify.
type Match struct {
	RequestID string
	// Score is the share of agreeing fingerprint bits at the best
	// alignment (MatchThreshold or more).
	Score float64
}

// candidates bounds the fingerprints compared in full for one query.
const candidates = 100

// Identify returns org's clips that sound like data (of mediaType),
// best first.
func (ix *Index) Identify(ctx context.Context, org string, data []byte, mediaType string) ([]Match, error) {
	fp, err := ix.fg.Fingerprint(ctx, data, mediaType)
	if err != nil {
		return nil, err
	}
	found, err := ix.store.MatchFingerprints(ctx, org, Keys(fp), candidates)
	if err != nil {
		return nil, err
	}
	var out []Match
	for _, f := range found {
		if s := Score(f.Values, fp); s >= MatchThreshold {
			out = append(out, Match{RequestID: f.RequestID, Score: s})
		}
	}
	slices.SortStableFunc(out, func(a, b Match) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	return out, nil
}
