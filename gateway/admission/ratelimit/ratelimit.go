// Package ratelimit enforces per-organization request rates. Like traefik's
// rate limiter, one small interface has two strategies picked by config:
//
//	Memory  golang.org/x/time/rate token buckets in this process: exact
//	        for one instance, and N instances allow N times the rate.
//	Redis   GCRA (github.com/go-redis/redis_rate) in a shared Redis: one
//	        budget across every instance. It costs one Redis round trip
//	        per request.
//
// Both implement GCRA-equivalent semantics: a sustained rate of Limit.Rate
// per second with Limit.Burst requests allowed at once.
package ratelimit

import (
	"context"
	"errors"
	"math"
	"sync"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"
)

// Limit is a sustained rate (requests per second) with a burst.
type Limit struct {
	Rate  float64
	Burst int
}

// Unlimited reports whether l imposes no limit.
func (l Limit) Unlimited() bool { return l.Rate <= 0 }

// burst is the effective burst: at least one request, and by default one
// second's worth.
func (l Limit) burst() int {
	if l.Burst > 0 {
		return l.Burst
	}
	return max(1, int(l.Rate))
}

// Decision is the outcome of one Allow.
type Decision struct {
	// Allowed says the request may proceed.
	Allowed bool
	// RetryAfter is when a refused request could next succeed.
	RetryAfter time.Duration
}

// Limiter takes one request from key's budget under limit l. An error
// means the decision could not be made (a shared store is unreachable);
// the caller chooses whether that allows or refuses.
type Limiter interface {
	Allow(ctx context.Context, key string, l Limit) (Decision, error)
}

// Memory is the in-process strategy. Keys come from configuration (an
// organization and a class of routes), so the map is bounded by it.
type Memory struct {
	mu sync.Mutex
	m  map[string]*bucket
}

type bucket struct {
	l   Limit
	lim *rate.Limiter
}

// NewMemory returns an empty in-process limiter.
func NewMemory() *Memory { return &Memory{m: map[string]*bucket{}} }

// Allow implements Limiter. Hot path: one map lookup and a token take.
func (m *Memory) Allow(_ context.Context, key string, l Limit) (Decision, error) {
	if l.Unlimited() {
		return Decision{Allowed: true}, nil
	}
	m.mu.Lock()
	b := m.m[key]
	if b == nil || b.l != l {
		b = &bucket{l: l, lim: rate.NewLimiter(rate.Limit(l.Rate), l.burst())}
		m.m[key] = b
	}
	m.mu.Unlock()
	r := b.lim.Reserve()
	if !r.OK() {
		return Decision{RetryAfter: time.Second}, nil
	}
	if d := r.Delay(); d > 0 {
		r.Cancel()
		return Decision{RetryAfter: d}, nil
	}
	return Decision{Allowed: true}, nil
}

// Redis is the shared strategy.
type Redis struct {
	client *redis.Client
	rl     *redis_rate.Limiter
	prefix string
}

// NewRedis returns a limiter on the Redis at url (redis://host:port/db).
// It does not connect until first use; Ping checks the server.
func NewRedis(url string) (*Redis, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, errors.New("shared.redis_url is not a redis:// URL")
	}
	// Rate limiting sits on every request: a slow Redis must not become a
	// slow gateway, so its calls are bounded tightly.
	opts.DialTimeout = 500 * time.Millisecond
	opts.ReadTimeout = 200 * time.Millisecond
	opts.WriteTimeout = 200 * time.Millisecond
	opts.MaxRetries = 0
	// One dial per call: go-redis otherwise dials five times with pauses
	// between (DialerRetries), which made every request wait about two
	// seconds while Redis was down.
	opts.DialerRetries = 1
	c := redis.NewClient(opts)
	return &Redis{client: c, rl: redis_rate.NewLimiter(c), prefix: "voxgate:rl:"}, nil
}

// Ping checks that Redis answers.
func (r *Redis) Ping(ctx context.Context) error { return r.client.Ping(ctx).Err() }

// Close closes the client.
func (r *Redis) Close() error { return r.client.Close() }

// Client is the Redis client, for other small shared counters (budgets)
// that want the same tight timeouts.
func (r *Redis) Client() *redis.Client { return r.client }

// Allow implements Limiter with redis_rate's GCRA script.
func (r *Redis) Allow(ctx context.Context, key string, l Limit) (Decision, error) {
	if l.Unlimited() {
		return Decision{Allowed: true}, nil
	}
	res, err := r.rl.Allow(ctx, r.prefix+key, redisLimit(l))
	if err != nil {
		return Decision{}, err
	}
	if res.Allowed > 0 {
		return Decision{Allowed: true}, nil
	}
	return Decision{RetryAfter: max(res.RetryAfter, time.Millisecond)}, nil
}

// redisLimit expresses a fractional per-second rate in redis_rate's integer
// Rate per Period: the emission interval Period/Rate is what GCRA uses, so
// 0.5/s becomes 1 per 2 s and 12.5/s 25 per 2 s.
func redisLimit(l Limit) redis_rate.Limit {
	// A whole number a minute (an API key's per_minute) is that many a
	// minute exactly; halving 1/60 s toward a whole number never gets there.
	if pm := math.Round(l.Rate * 60); l.Rate != math.Trunc(l.Rate) && math.Abs(pm-l.Rate*60) < 1e-9 {
		return redis_rate.Limit{Rate: max(1, int(pm)), Burst: l.burst(), Period: time.Minute}
	}
	period := time.Second
	r := l.Rate
	for r != math.Trunc(r) && period < time.Hour {
		r *= 2
		period *= 2
	}
	return redis_rate.Limit{Rate: max(1, int(math.Round(r))), Burst: l.burst(), Period: period}
}
