package readcache

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// key names a cached record: an organization and an id in it (a voice's
// id, a dictionary's id or "" for the organization's default rules, a
// secret's name).
type key struct{ org, id string }

// entry is one cached answer of the store: a value, or the negative answer
// (err, matching store.ErrNotFound) the store gave.
type entry[V any] struct {
	val V
	err error
	// cost is what the entry counts against its table's bound.
	cost int
	// expires is when a negative entry stops being fresh (unix nanos);
	// zero for values, which notifications keep current.
	expires int64
	// stale is set when a change notification, this instance's own
	// write or a notification gap says the entry may be out of date:
	// the next use rereads it, and serves it only if the store cannot be
	// reached.
	stale atomic.Bool
	// used is set by every hit and cleared by the eviction's sampling
	// (second chance).
	used atomic.Bool
}

// epochShards is how many invalidation counters a table keeps: an
// invalidation bumps its key's shard, so a read that was under way meanwhile
// can tell that its answer may predate the change.
const epochShards = 64

// table is a bounded map of entries of one kind.
//
// Written here rather than taken from an LRU library: a hit must cost a map
// read under a read lock (every synthesis request makes one or more), while
// an LRU list (hashicorp/golang-lru and the like) takes the exclusive lock
// on every Get to move the element, serializing all requests on one mutex.
// Eviction is a sampled second chance instead (as Redis approximates LRU):
// hits set a flag with an atomic store, and a full table evicts the first
// of a few randomly placed entries (Go's map iteration starts at a random
// place) that was not used since the last sampling passed it. It also needs
// what those libraries lack: entries marked stale but kept, and the epoch
// counters below.
type table[V any] struct {
	seed maphash.Seed
	// epochs count the invalidations per shard of keys.
	epochs [epochShards]atomic.Uint64

	mu   sync.RWMutex
	m    map[key]*entry[V]
	cost int
	max  int
}

func newTable[V any](max int) *table[V] {
	return &table[V]{seed: maphash.MakeSeed(), m: map[key]*entry[V]{}, max: max}
}

// lookup returns k's entry, nil when there is none. Hot path: a map read
// under the read lock; no allocation.
func (t *table[V]) lookup(k key) *entry[V] {
	t.mu.RLock()
	e := t.m[k]
	t.mu.RUnlock()
	if e != nil && !e.used.Load() {
		e.used.Store(true)
	}
	return e
}

// shard returns k's epoch counter.
func (t *table[V]) shard(k key) *atomic.Uint64 {
	h := maphash.String(t.seed, k.org) ^ 31*maphash.String(t.seed, k.id)
	return &t.epochs[h%epochShards]
}

// epoch returns k's invalidation count, read before asking the store.
func (t *table[V]) epoch(k key) uint64 { return t.shard(k).Load() }

// put stores e under k. An entry whose key was invalidated since epoch
// (read before the store was asked) is stored stale: it may predate the
// change, so it is reread on its next use, yet still serves while the store
// cannot be reached. An entry costlier than the whole bound is not kept.
func (t *table[V]) put(k key, e *entry[V], epoch uint64) {
	if e.cost > t.max {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.shard(k).Load() != epoch {
		e.stale.Store(true)
	}
	if old := t.m[k]; old != nil {
		t.cost -= old.cost
	}
	t.m[k] = e
	t.cost += e.cost
	t.evict(k)
}

// sample is how many entries one eviction step looks at.
const sample = 8

// evict removes entries, never keep, until the table is within its bound:
// each step evicts the first sampled entry that is stale or was not used
// since the sampling last passed it, else the last one sampled. Called
// with mu held.
func (t *table[V]) evict(keep key) {
	for t.cost > t.max {
		var victim key
		found, n := false, 0
		for k, e := range t.m {
			if k == keep {
				continue
			}
			victim, found = k, true
			if e.stale.Load() || !e.used.Load() {
				break
			}
			e.used.Store(false)
			if n++; n == sample {
				break
			}
		}
		if !found {
			return
		}
		t.cost -= t.m[victim].cost
		delete(t.m, victim)
	}
}

// invalidate marks k's entry stale, if there is one, and counts the
// invalidation against reads under way.
func (t *table[V]) invalidate(k key) {
	t.shard(k).Add(1)
	t.mu.RLock()
	if e := t.m[k]; e != nil {
		e.stale.Store(true)
	}
	t.mu.RUnlock()
}

// invalidateAll marks every entry stale (a notification gap).
func (t *table[V]) invalidateAll() {
	for i := range t.epochs {
		t.epochs[i].Add(1)
	}
	t.mu.RLock()
	for _, e := range t.m {
		e.stale.Store(true)
	}
	t.mu.RUnlock()
}

// size returns the number of entries and their cost.
func (t *table[V]) size() (n, cost int) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.m), t.cost
}
