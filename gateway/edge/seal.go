package edge

import (
	"bytes"
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/valyala/fasthttp"

	"github.com/voxgate/voxgate/gateway/admission/auth"
	"github.com/voxgate/voxgate/gateway/provenance"
	"github.com/voxgate/voxgate/gateway/speech"
	"github.com/voxgate/voxgate/gateway/store"
)

// A seal is an answer's log row waiting for its signed provenance
// record. The SHA-256 of a clip and the Ed25519 signature cost about a
// third of the relay's CPU on a 144 KB clip (BENCHMARKS.md); made in the
// handler they held up the answer's first and last byte. A seal makes
// them after the answer is handed to fasthttp (a stream's, after its
// last piece): the row goes to the request log only with its record, so
// a row is never stored without one.
//
// A pooled clip's bytes live in the upstream answer's buffer, which goes
// back to its pool once written: the seal then has two parties, the
// handler (the row is ready) and the clip's body (the bytes are
// written), and the second to finish hands the seal to a sealer, which
// hashes and only then returns the buffer.
type seal struct {
	s        *Server
	c        *exchange
	ps       *provState
	row      store.LogRow
	complete bool
	// audio is a clip's bytes still to hash and fingerprint; release
	// returns the pooled buffer they live in (nil: not pooled).
	audio   []byte
	release func()
	// parties counts who must finish before the seal is made.
	parties atomic.Int32
	// commit records the sealed row (nil: the request log's Record).
	commit func(store.LogRow)
	// held lets the request log's Flush go once the row is recorded.
	held func()
}

// maxSealers bounds the seals waiting for a sealer; a seal that finds
// the queue full is made by the goroutine that finished it (the
// request's, or the connection's after the body), which slows that
// connection rather than queueing without bound.
const maxSealers = 64

// sealers makes seals on a few long-lived goroutines, one per CPU, and
// lets shutdown wait for them. Hot path (a seal per answer): a goroutine
// per seal, as before, cost its start and, since an Ed25519 signature
// needs more than a new goroutine's stack, a stack copy (runtime.newstack
// in the CPU profile) on every answer; a worker grows its stack once.
type sealers struct {
	queue   chan *seal // nil: every seal is made where it is finished
	workers int
	start   sync.Once
	// wg counts the seals queued or being made.
	wg sync.WaitGroup
}

// newSealers returns sealers queueing at most n seals for their workers;
// with n 0 every seal is made where it is finished (the request path, as
// before seals: BenchmarkClipPath's inline case).
func newSealers(n int) *sealers {
	q := &sealers{workers: max(2, runtime.GOMAXPROCS(0))}
	if n > 0 {
		q.queue = make(chan *seal, n)
	}
	return q
}

// run hands sl to a worker when the queue has room, else makes it now.
// The workers start with the first seal, so a server that never seals
// runs none.
func (q *sealers) run(sl *seal) {
	if q.queue == nil {
		sl.make()
		return
	}
	q.start.Do(func() {
		for range q.workers {
			go q.work()
		}
	})
	q.wg.Add(1)
	select {
	case q.queue <- sl:
	default:
		q.wg.Done()
		sl.make()
	}
}

// work makes queued seals for the life of the process: a server's
// sealers live as long as it can answer (a stream's seal may come after
// Shutdown returned), and an idle worker costs only its parked goroutine.
func (q *sealers) work() {
	for sl := range q.queue {
		sl.make()
		q.wg.Done()
	}
}

// wait waits for the seals queued and running, or for ctx.
func (q *sealers) wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { q.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// newSeal returns the seal of an answer with provenance state ps, or nil
// when it gets no record (provenance off, or records off for the
// organization).
func (s *Server) newSeal(c *exchange, ps *provState, complete bool) *seal {
	if ps == nil || ps.hasher == nil {
		return nil
	}
	sl := &seal{s: s, c: c, ps: ps, complete: complete, held: s.logs.Hold()}
	sl.parties.Store(1)
	return sl
}

// sealClip is newSeal for a whole clip: its bytes are hashed by the
// seal. A pooled clip written by writeClip's body gives the seal its
// buffer (takeBody); one whose writer releases the buffer itself (a
// with-timestamps envelope) is hashed now.
func (s *Server) sealClip(c *exchange, ps *provState, res *speech.Result, ep speech.Delivery) *seal {
	sl := s.newSeal(c, ps, true)
	if sl == nil {
		return nil
	}
	if res.Pooled() && ep == speech.DeliverTimestamps {
		ps.hasher.Write(res.Audio)
		if s.prov.Indexing() && len(res.Audio) <= maxIndexedStream {
			ps.kept = bytes.Clone(res.Audio) // fingerprinted from the copy
		}
		return sl
	}
	sl.audio = res.Audio
	if res.Pooled() {
		sl.parties.Store(2) // the handler, and the body once written
	}
	return sl
}

// takeBody is the clip body's release for a pooled clip under seal sl:
// the buffer goes back once the seal has hashed it.
func (sl *seal) takeBody(release func()) func() {
	sl.release = release
	return sl.done
}

// record is Server.record for a row with a seal: the row is finished
// now (its path and status are read from ctx) and recorded once sealed.
func (s *Server) recordSealed(ctx *fasthttp.RequestCtx, c *exchange, row store.LogRow, sl *seal) {
	if sl == nil {
		s.record(ctx, c, row)
		return
	}
	sl.row = s.finishRow(ctx, c, row)
	// Usage is counted now, as for a row without a seal: metrics read
	// right after the answer include it.
	s.metrics.CountUsage(&sl.row)
	sl.done()
}

// done is one party finishing; the last hands the seal to a sealer.
func (sl *seal) done() {
	if sl.parties.Add(-1) == 0 {
		sl.s.sealers.run(sl)
	}
}

// make hashes what is left to hash, returns a pooled buffer, queues the
// fingerprint, signs the record and records the row.
func (sl *seal) make() {
	s, ps := sl.s, sl.ps
	if sl.audio != nil {
		ps.hasher.Write(sl.audio)
		if s.prov.Indexing() && len(sl.audio) <= maxIndexedStream {
			if sl.release != nil {
				// The pooled buffer goes back now; the indexer reads later.
				ps.kept = bytes.Clone(sl.audio)
			} else {
				ps.kept = sl.audio
			}
		}
		sl.audio = nil
	}
	if sl.release != nil {
		sl.release()
		sl.release = nil
	}
	s.signRow(sl.c, &sl.row, ps, sl.complete)
	defer sl.held()
	if sl.commit != nil {
		sl.commit(sl.row)
		return
	}
	s.logs.Record(sl.row)
}

// realtimeProvenance is the realtime hub's Provenance hook: a context's
// signed record (unmarked: its audio goes out in pieces without a file
// header), made by a sealer like an answer's; nil when provenance is off.
func (s *Server) realtimeProvenance() func(store.LogRow, *provenance.Hasher, string, bool) {
	if s.prov == nil {
		return nil
	}
	return func(row store.LogRow, h *provenance.Hasher, mediaType string, complete bool) {
		if s.orgProvenance(row.OrgID).NoRecords {
			s.logs.Record(row)
			return
		}
		c := &exchange{ctx: context.Background(), p: auth.Principal{OrgID: row.OrgID, KeyID: row.KeyID}, reqID: row.RequestID,
			start: row.TS, live: s.Live()}
		sl := &seal{s: s, c: c, complete: complete, row: row, commit: func(r store.LogRow) { s.logs.Record(r) }, held: s.logs.Hold(),
			ps: &provState{how: provenance.UnmarkedRealtime, mediaType: mediaType, hasher: h}}
		sl.parties.Store(1)
		sl.done()
	}
}
