package keypool

import (
	"context"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// Redis counts slots in the shared Redis: one sorted set per key, a member
// per call in flight scored by when its slot frees itself (so the slots of
// an instance that died come back), checked and taken by one script.
type Redis struct {
	client *redis.Client
	prefix string
}

// NewRedis returns slots in the Redis of client.
func NewRedis(client *redis.Client) *Redis { return &Redis{client: client, prefix: "voxgate:slots:"} }

// acquireScript drops expired members of KEYS[1], then adds ARGV[4]
// expiring at ARGV[2] (unix ms) if fewer than ARGV[3] remain. ARGV[1] is
// now (unix ms).
var acquireScript = redis.NewScript(`
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[4])
  redis.call('PEXPIREAT', KEYS[1], ARGV[2])
  return 1
end
return 0
`)

// Acquire implements Slots.
func (r *Redis) Acquire(ctx context.Context, key string, limit int, hold time.Duration) (func(), bool, error) {
	now := time.Now()
	member := uuid.NewString()
	set := r.prefix + key
	ok, err := acquireScript.Run(ctx, r.client, []string{set},
		strconv.FormatInt(now.UnixMilli(), 10), strconv.FormatInt(now.Add(hold).UnixMilli(), 10), limit, member).Int()
	if err != nil || ok != 1 {
		return nil, false, err
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		// A failed release frees itself when the member expires.
		_ = r.client.ZRem(ctx, set, member).Err()
	}, true, nil
}

// Fallback counts slots in a shared store while it answers and in this
// instance's memory while it does not (Redis away): calls go on, each
// key bounded per instance rather than across instances, instead of
// failing for want of a counter. A slot keeps the counter it was taken
// from, so it is given back there.
type Fallback struct {
	shared Slots
	local  *Memory
	// onError hears of each failure of the shared store; nil ignores
	// them.
	onError func(error)
}

// NewFallback returns shared backed by local counting.
func NewFallback(shared Slots, onError func(error)) *Fallback {
	return &Fallback{shared: shared, local: NewMemory(), onError: onError}
}

// Acquire implements Slots.
func (f *Fallback) Acquire(ctx context.Context, key string, limit int, hold time.Duration) (func(), bool, error) {
	release, ok, err := f.shared.Acquire(ctx, key, limit, hold)
	if err == nil || ctx.Err() != nil {
		return release, ok, err
	}
	if f.onError != nil {
		f.onError(err)
	}
	return f.local.Acquire(ctx, key, limit, hold)
}
