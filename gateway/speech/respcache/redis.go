package respcache

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis is a cache in a shared Redis: one string per entry with the
// entry's TTL. Redis bounds the total itself when it is configured as a
// cache (maxmemory with an eviction policy; docs/deploy.md).
type Redis struct {
	client   *redis.Client
	prefix   string
	maxEntry int64
}

// NewRedis returns a cache on the Redis at url. Its timeouts suit values
// of megabytes; a slow or absent Redis makes requests misses, never
// failures.
func NewRedis(url string, maxEntry int64) (*Redis, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, errors.New("shared.redis_url is not a redis:// URL")
	}
	opts.DialTimeout = time.Second
	opts.ReadTimeout = 2 * time.Second
	opts.WriteTimeout = 2 * time.Second
	opts.MaxRetries = 0
	opts.DialerRetries = 1 // a cache that is away is a miss, not a wait
	return &Redis{client: redis.NewClient(opts), prefix: "voxgate:cache:", maxEntry: maxEntry}, nil
}

// Close closes the client.
func (r *Redis) Close() error { return r.client.Close() }

// Get implements Store.
func (r *Redis) Get(ctx context.Context, key string) (Entry, bool, error) {
	b, err := r.client.Get(ctx, r.prefix+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, err
	}
	e, _, err := decode(b)
	if err != nil {
		return Entry{}, false, err
	}
	return e, true, nil
}

// Put implements Store.
func (r *Redis) Put(ctx context.Context, key string, e Entry, ttl time.Duration) error {
	b := encode(e, time.Now().Add(ttl))
	if int64(len(b)) > r.maxEntry {
		return ErrTooLarge
	}
	return r.client.Set(ctx, r.prefix+key, b, ttl).Err()
}
