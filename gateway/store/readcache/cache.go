// Package readcache keeps what a synthesis request reads from the store in
// memory, so that the data plane does not wait on the control plane: saved
// voices (by organization and id), each organization's default
// pronunciation rules, the rules of each dictionary (by organization and
// id), and the sealed BYOK provider keys (by organization and name).
// API keys have their own table in memory (gateway/admission/auth); the provider
// catalog and everything in gateway.yaml never come from the store.
//
// # How it stays current
//
// Cache is a read-through cache in front of a store.Backend, and a
// store.Backend itself: reads it does not cache and every write pass
// through. An entry is read from the store on first use and kept until:
//
//   - a change notification names it (Apply with a store.Change, from the
//     store's Watcher: PostgreSQL's NOTIFY, sent by triggers for every
//     write of any instance, so another instance's change applies here
//     within a second);
//   - this instance writes it through the Cache (the only writer of a
//     bbolt file, which has no notifications);
//   - the watch reports a gap (store.ChangeResync after a reconnection):
//     every entry may have missed a change.
//
// Each of them marks the entry stale rather than dropping it: its next use
// rereads the store, and if the store cannot be reached
// (store.ErrUnavailable) the stale entry is served. So a voice, dictionary
// or key used before an outage keeps working through it, and one changed
// just before keeps its last known form. A read that was under way when
// its entry was invalidated stores its answer stale (see table.epoch), so
// an answer that may predate a change is never taken for current.
//
// Negative answers (no such voice, dictionary or secret) are cached too,
// for NegativeTTL at most: a client asking again and again for a voice it
// does not have costs the store nothing; a voice created on another
// instance is announced like any change, so it is usable here within a
// second all the same.
//
// # While the store is away
//
// Once a read or write finds the store unreachable, or the watch loses
// its connection, the store is taken as away: stale entries are served at
// once, and a record never read before fails at once with
// store.ErrUnavailable (the client gets 503 storage_unavailable with
// Retry-After), except that one read per RetryEvery tries the store, so
// that its return is noticed without waiting for the watch. A successful
// read or write, or the watch's resync, ends it. State reports it.
//
// # Memory
//
// Each kind is bounded (Options): voices and secrets count one each, a
// dictionary's rules one plus one per rule. Past the bound, entries are
// evicted by a sampled second chance (table).
//
// Values are shared, not copied: callers must not modify a returned
// voice, rule slice or secret. A hit costs a map read under a read lock
// and allocates nothing (BenchmarkHit).
package readcache

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"

	"github.com/voxgate/voxgate/gateway/store"
)

// Options bound and tune a Cache.
type Options struct {
	// MaxVoices bounds the saved voices kept (default 10,000).
	MaxVoices int
	// MaxRules bounds the pronunciation rules kept, over every cached
	// dictionary; each dictionary counts one more (default 100,000).
	MaxRules int
	// MaxSecrets bounds the sealed provider keys kept (default 10,000).
	MaxSecrets int
	// NegativeTTL is how long a "not found" is reused (default 5 s).
	NegativeTTL time.Duration
	// RetryEvery is how often, while the store is away, one read tries
	// it (default 1 s).
	RetryEvery time.Duration
	// Logger says when the store goes away and comes back; nil: no logs.
	Logger *zap.Logger
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
}

// Kind is a kind of cached record, for Counts.
type Kind int

// The kinds of cached record.
const (
	KindVoice Kind = iota
	KindRules
	KindSecret
	numKinds
)

// String names the kind for metrics.
func (k Kind) String() string { return [...]string{"voice", "dictionary_rules", "secret"}[k] }

// Result is how a lookup was answered, for Counts.
type Result int

// The results of a lookup.
const (
	// Hit: a current entry from memory.
	Hit Result = iota
	// Miss: read from the store (first use, stale, or expired).
	Miss
	// Stale: a stale entry served because the store could not be reached.
	Stale
	numResults
)

// String names the result for metrics.
func (r Result) String() string { return [...]string{"hit", "miss", "stale"}[r] }

// Cache is a store.Backend whose synthesis reads come from memory. It is
// safe for concurrent use.
type Cache struct {
	store.Backend

	opts    Options
	health  health
	voices  *table[*store.Voice]
	rules   *table[[]store.PronunciationRule]
	secrets *table[[]byte]
	flights singleflight.Group
	counts  [numKinds][numResults]atomic.Uint64
}

// errAway answers a record never read before while the store is away.
var errAway = errors.New("not in memory, and the store was unreachable moments ago")

// New returns a Cache in front of b.
func New(b store.Backend, o Options) *Cache {
	if o.MaxVoices <= 0 {
		o.MaxVoices = 10_000
	}
	if o.MaxRules <= 0 {
		o.MaxRules = 100_000
	}
	if o.MaxSecrets <= 0 {
		o.MaxSecrets = 10_000
	}
	if o.NegativeTTL <= 0 {
		o.NegativeTTL = 5 * time.Second
	}
	if o.RetryEvery <= 0 {
		o.RetryEvery = time.Second
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Cache{
		Backend: b,
		opts:    o,
		health:  health{log: o.Logger, now: o.Now, retry: o.RetryEvery},
		voices:  newTable[*store.Voice](o.MaxVoices),
		rules:   newTable[[]store.PronunciationRule](o.MaxRules),
		secrets: newTable[[]byte](o.MaxSecrets),
	}
}

// Apply takes a change the store's Watcher reported: it marks what changed
// stale, every entry on a gap, and follows the watch's view of the store's
// reachability. Key changes are not the cache's (gateway/admission/auth).
func (c *Cache) Apply(ch store.Change) {
	k := key{ch.OrgID, ch.ID}
	switch ch.Kind {
	case store.ChangeResync:
		c.voices.invalidateAll()
		c.rules.invalidateAll()
		c.secrets.invalidateAll()
		c.health.up()
	case store.ChangeDisconnected:
		c.health.down(errors.New("the watch lost its connection to the store"))
	case store.ChangeVoice:
		c.voices.invalidate(k)
	case store.ChangeDictionary:
		c.invalidateDictionary(ch.OrgID, ch.ID)
	case store.ChangeSecret:
		c.secrets.invalidate(k)
	}
}

// invalidateDictionary marks a dictionary's rules stale, and the
// organization's default rules with them: whether it is the default is not
// known without a read, and rereading the default once costs little.
func (c *Cache) invalidateDictionary(org, id string) {
	c.rules.invalidate(key{org, id})
	c.rules.invalidate(key{org, ""})
}

// State reports whether the store is reachable, as the cache last saw it.
func (c *Cache) State() State { return c.health.state() }

// Counts returns how many lookups of kind were answered with r.
func (c *Cache) Counts(kind Kind, r Result) uint64 { return c.counts[kind][r].Load() }

// Size returns the entries of kind held and their cost against the bound.
func (c *Cache) Size(kind Kind) (entries, cost int) {
	switch kind {
	case KindVoice:
		return c.voices.size()
	case KindRules:
		return c.rules.size()
	}
	return c.secrets.size()
}

// fresh returns e when it may be served without asking the store.
func fresh[V any](e *entry[V], now func() time.Time) bool {
	return e != nil && !e.stale.Load() && (e.expires == 0 || now().UnixNano() < e.expires)
}

// flight is the answer of one read of the store, shared by the callers
// that wanted it at once.
type flight[V any] struct {
	val V
	err error
}

// load answers a lookup that memory could not (e is the stale or expired
// entry, or nil): it reads the store once for all callers wanting k at
// the same time, keeps the answer, and falls back on e when the store
// cannot be reached. name identifies k among every kind's keys.
func load[V any](ctx context.Context, c *Cache, kind Kind, t *table[V], k key, e *entry[V], name string,
	read func(context.Context) (V, error), cost func(V) int) (V, error) {
	if c.health.away() && !c.health.tryNow() {
		// The store was just found away: do not wait on it.
		if e != nil {
			c.counts[kind][Stale].Add(1)
			return e.val, e.err
		}
		var zero V
		return zero, errAwayFor(name)
	}
	c.counts[kind][Miss].Add(1)
	epoch := t.epoch(k)
	ch := c.flights.DoChan(name, func() (any, error) {
		// Not the first caller's context: one caller giving up must not
		// fail the others. The store bounds each call (its op timeout).
		v, err := read(context.WithoutCancel(ctx))
		f := &flight[V]{val: v, err: err}
		switch {
		case err == nil || errors.Is(err, store.ErrNotFound):
			ne := &entry[V]{val: v, err: err, cost: 1}
			if err != nil {
				ne.expires = c.opts.Now().Add(c.opts.NegativeTTL).UnixNano()
			} else {
				ne.cost = cost(v)
			}
			t.put(k, ne, epoch)
			c.health.up()
		case errors.Is(err, store.ErrUnavailable):
			c.health.down(err)
		}
		return f, nil
	})
	var f *flight[V]
	select {
	case r := <-ch:
		f = r.Val.(*flight[V])
	case <-ctx.Done():
		var zero V
		return zero, ctx.Err()
	}
	if e != nil && f.err != nil && errors.Is(f.err, store.ErrUnavailable) {
		c.counts[kind][Stale].Add(1)
		return e.val, e.err
	}
	return f.val, f.err
}

// errAwayFor is the error of a record never read while the store is away.
func errAwayFor(name string) error {
	return &awayError{name: name}
}

type awayError struct{ name string }

func (e *awayError) Error() string { return "store: " + e.name + ": " + errAway.Error() }

// Is makes errors.Is(err, store.ErrUnavailable) hold, so the client gets
// 503 storage_unavailable with Retry-After.
func (e *awayError) Is(target error) bool { return target == store.ErrUnavailable }

// observe follows a write's outcome: it says whether the store answers.
// A full disk (store.ErrFull) refuses writes only: the store still
// answers reads, so it is not away.
func (c *Cache) observe(err error) error {
	switch {
	case err == nil:
		c.health.up()
	case errors.Is(err, store.ErrUnavailable) && !errors.Is(err, store.ErrFull):
		c.health.down(err)
	}
	return err
}
