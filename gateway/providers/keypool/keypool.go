// Package keypool spreads a provider's managed calls over several API keys
// and keeps each key within its account's concurrency.
//
// Providers cap concurrent requests per account and throttle per key: one
// key saturates before the gateway does. A Pool picks a key per call by
// weight among the keys that are not resting, rests a key the provider
// throttled (429, for its Retry-After) or refused (401, for longer: it was
// revoked or mistyped), and moves the call to the next key. With a
// concurrency limit a key's calls hold slots; slots are counted in memory
// or, for several instances, in the shared Redis, so the account's limit
// holds across instances. A call that finds no free slot waits, up to the
// queue wait, in a queue of its organization: only the oldest waiter of
// each organization competes for a slot, so an organization with many
// waiting calls gets no more turns than one with a single call.
package keypool

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Key is one API key of a pool.
type Key struct {
	// Name labels the key in metrics and logs; the key itself is never
	// shown.
	Name   string
	Secret string
	// Weight is the key's share of calls (default 1).
	Weight int
	// MaxConcurrency bounds the key's calls in flight across instances;
	// 0 means no bound.
	MaxConcurrency int
}

// Slots counts calls in flight per key. Acquire takes a slot of key
// unless limit are taken, for at most hold (a slot of a crashed instance
// frees itself then); the returned release gives it back.
type Slots interface {
	Acquire(ctx context.Context, key string, limit int, hold time.Duration) (release func(), ok bool, err error)
}

// Errors of Acquire.
var (
	// ErrAllResting: every key of the pool is resting.
	ErrAllResting = errors.New("every API key of the provider is resting after it was throttled or refused")
	// ErrQueueTimeout: no slot freed within the queue wait.
	ErrQueueTimeout = errors.New("the provider's API keys are all at their concurrency limit")
)

// Pool is one provider's keys.
type Pool struct {
	provider string
	keys     []*key
	slots    Slots
	wait     time.Duration
	hold     time.Duration

	mu     sync.Mutex
	queues map[string]*keyQueue // by key name
}

type key struct {
	Key
	restUntil atomic.Int64 // unix nanos
}

// New returns a pool of keys. wait bounds how long a call waits for a
// slot; hold how long a slot may be held (the longest call).
func New(provider string, keys []Key, slots Slots, wait, hold time.Duration) *Pool {
	p := &Pool{provider: provider, slots: slots, wait: wait, hold: hold, queues: map[string]*keyQueue{}}
	for _, k := range keys {
		if k.Weight <= 0 {
			k.Weight = 1
		}
		p.keys = append(p.keys, &key{Key: k})
	}
	return p
}

// Lease is a key held for one call.
type Lease struct {
	p       *Pool
	k       *key
	release func()
	once    sync.Once
}

// Name is the leased key's name; Secret the key.
func (l *Lease) Name() string   { return l.k.Name }
func (l *Lease) Secret() string { return l.k.Secret }

// Release gives the key's slot back; it is safe to call twice.
func (l *Lease) Release() {
	l.once.Do(func() {
		if l.release != nil {
			l.release()
		}
	})
}

// Rest takes the key out of rotation for d (the provider throttled or
// refused it) and releases the lease.
func (l *Lease) Rest(d time.Duration) {
	l.k.restUntil.Store(time.Now().Add(d).UnixNano())
	l.Release()
}

// States reports each key's state: the time it rests until, zero when it
// is in rotation.
func (p *Pool) States() map[string]time.Time {
	out := make(map[string]time.Time, len(p.keys))
	now := time.Now().UnixNano()
	for _, k := range p.keys {
		if u := k.restUntil.Load(); u > now {
			out[k.Name] = time.Unix(0, u)
		} else {
			out[k.Name] = time.Time{}
		}
	}
	return out
}

// Names returns the keys' names, in configuration order.
func (p *Pool) Names() []string {
	out := make([]string, len(p.keys))
	for i, k := range p.keys {
		out[i] = k.Name
	}
	return out
}

// Acquire leases a key for one of org's calls, skipping the keys named in
// tried (those that already failed this call). It picks by weight among
// the keys not resting, then waits for a slot of that key, fairly between
// organizations, up to the pool's queue wait.
func (p *Pool) Acquire(ctx context.Context, org string, tried map[string]bool) (*Lease, error) {
	k := p.pick(tried)
	if k == nil {
		return nil, ErrAllResting
	}
	if k.MaxConcurrency <= 0 {
		return &Lease{p: p, k: k}, nil
	}
	release, ok, err := p.slots.Acquire(ctx, p.provider+":"+k.Name, k.MaxConcurrency, p.hold)
	if err != nil || ok {
		return &Lease{p: p, k: k, release: release}, err
	}
	return p.queue(ctx, org, k)
}

// pick chooses a key by weight among those not resting and not tried.
func (p *Pool) pick(tried map[string]bool) *key {
	now := time.Now().UnixNano()
	total := 0
	for _, k := range p.keys {
		if !tried[k.Name] && k.restUntil.Load() <= now {
			total += k.Weight
		}
	}
	if total == 0 {
		return nil
	}
	n := rand.IntN(total)
	for _, k := range p.keys {
		if tried[k.Name] || k.restUntil.Load() > now {
			continue
		}
		if n -= k.Weight; n < 0 {
			return k
		}
	}
	return nil
}

// queue waits for a slot of k. Waiters queue per organization, and the
// organizations with waiters take turns: only the oldest waiter of the
// organization whose turn it is tries for a slot (polling: a slot may
// free on another instance), and when it gets one the turn passes to the
// next organization. It gives up after the pool's wait.
func (p *Pool) queue(ctx context.Context, org string, k *key) (*Lease, error) {
	ctx, cancel := context.WithTimeout(ctx, p.wait)
	defer cancel()
	me := make(chan struct{}, 1)
	p.mu.Lock()
	q := p.queues[k.Name]
	if q == nil {
		q = &keyQueue{waits: map[string][]chan struct{}{}}
		p.queues[k.Name] = q
	}
	q.add(org, me)
	p.mu.Unlock()
	acquired := false
	defer func() {
		p.mu.Lock()
		if q.remove(org, me, acquired) {
			delete(p.queues, k.Name)
		}
		p.mu.Unlock()
	}()
	select {
	case <-me:
	case <-ctx.Done():
		return nil, p.timeoutErr(ctx)
	}
	backoff := 5 * time.Millisecond
	for {
		release, ok, err := p.slots.Acquire(ctx, p.provider+":"+k.Name, k.MaxConcurrency, p.hold)
		if err != nil {
			if ctx.Err() != nil {
				return nil, p.timeoutErr(ctx) // the wait ran out during the call
			}
			return nil, err
		}
		if ok {
			acquired = true
			return &Lease{p: p, k: k, release: release}, nil
		}
		select {
		case <-time.After(backoff):
			backoff = min(2*backoff, 50*time.Millisecond)
		case <-ctx.Done():
			return nil, p.timeoutErr(ctx)
		}
	}
}

// keyQueue is the waiters for one key: a queue per organization, and the
// organizations in turn. Its methods run under the pool's lock.
type keyQueue struct {
	orgs  []string
	turn  int
	waits map[string][]chan struct{}
}

// add queues a waiter of org and wakes whoever may try now.
func (q *keyQueue) add(org string, me chan struct{}) {
	if len(q.waits[org]) == 0 {
		q.orgs = append(q.orgs, org)
	}
	q.waits[org] = append(q.waits[org], me)
	q.wake()
}

// remove takes a waiter of org out; when it left with a slot the turn
// passes to the next organization. It reports whether the queue is empty.
func (q *keyQueue) remove(org string, me chan struct{}, acquired bool) bool {
	w := q.waits[org]
	for i, c := range w {
		if c == me {
			w = append(w[:i], w[i+1:]...)
			break
		}
	}
	q.waits[org] = w
	idx := slices.Index(q.orgs, org)
	if acquired && idx >= 0 {
		q.turn = idx + 1
	}
	if len(w) == 0 && idx >= 0 {
		delete(q.waits, org)
		q.orgs = append(q.orgs[:idx], q.orgs[idx+1:]...)
		if q.turn > idx {
			q.turn--
		}
	}
	if len(q.orgs) == 0 {
		return true
	}
	q.wake()
	return false
}

// wake signals the oldest waiter of the organization whose turn it is.
func (q *keyQueue) wake() {
	if len(q.orgs) == 0 {
		return
	}
	q.turn %= len(q.orgs)
	select {
	case q.waits[q.orgs[q.turn]][0] <- struct{}{}:
	default: // already signalled
	}
}

func (p *Pool) timeoutErr(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), context.Canceled) {
		return context.Canceled
	}
	return ErrQueueTimeout
}

// Memory counts slots in this process.
type Memory struct {
	mu    sync.Mutex
	inUse map[string]int
}

// NewMemory returns in-process slots.
func NewMemory() *Memory { return &Memory{inUse: map[string]int{}} }

// Acquire implements Slots.
func (m *Memory) Acquire(_ context.Context, key string, limit int, _ time.Duration) (func(), bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.inUse[key] >= limit {
		return nil, false, nil
	}
	m.inUse[key]++
	return func() {
		m.mu.Lock()
		m.inUse[key]--
		m.mu.Unlock()
	}, true, nil
}
