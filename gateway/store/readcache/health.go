package readcache

import (
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// health is what the cache knows of the store's reachability, from the
// answers it gets (store.ErrUnavailable or not) and from the watch (a lost
// connection, a resync). It decides whether a stale entry is reread or
// served as it is.
type health struct {
	log *zap.Logger
	now func() time.Time
	// retry is how often, while the store is away, one read may try it.
	retry time.Duration

	// downSince is when the store was found unreachable (unix nanos);
	// zero while it answers.
	downSince atomic.Int64
	// lastTry is when a read last tried the store while it was away.
	lastTry atomic.Int64
}

// up records that the store answered.
func (h *health) up() {
	if since := h.downSince.Swap(0); since != 0 {
		h.log.Info("the store answers again: saved voices, dictionaries and provider keys are read from it again",
			zap.Duration("away_for", h.now().Sub(time.Unix(0, since)).Round(time.Millisecond)))
	}
}

// down records that the store could not be reached.
func (h *health) down(err error) {
	now := h.now().UnixNano()
	if h.downSince.CompareAndSwap(0, now) {
		h.lastTry.Store(now)
		h.log.Warn("the store cannot be reached: synthesis goes on with the saved voices, dictionaries and provider keys in memory; writes answer 503 until it is back",
			zap.Error(err))
	}
}

// away reports whether the store is known to be unreachable.
func (h *health) away() bool { return h.downSince.Load() != 0 }

// tryNow reports whether this read, while the store is away, is the one
// that may try it (at most one per retry interval); the others do not wait
// on a store that is not there.
func (h *health) tryNow() bool {
	now := h.now().UnixNano()
	last := h.lastTry.Load()
	return now-last >= int64(h.retry) && h.lastTry.CompareAndSwap(last, now)
}

// State is the store's reachability as the cache last saw it.
type State struct {
	// Up is false from the moment the store could not be reached until it
	// answers again.
	Up bool
	// Since is when it went away (zero while up).
	Since time.Time
}

func (h *health) state() State {
	since := h.downSince.Load()
	if since == 0 {
		return State{Up: true}
	}
	return State{Since: time.Unix(0, since).UTC()}
}
