package ratelimit_test

import (
	"context"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/admission/ratelimit"
	"github.com/voxgate/voxgate/internal/redistest"
)

// Every strategy must pass the same table: the burst, then refusals with a
// positive Retry-After; independent keys; refill over time.
func TestStrategies(t *testing.T) {
	srv := redistest.StartT(t)
	strategies := map[string]func(t *testing.T) ratelimit.Limiter{
		"memory": func(*testing.T) ratelimit.Limiter { return ratelimit.NewMemory() },
		"redis": func(t *testing.T) ratelimit.Limiter {
			r, err := ratelimit.NewRedis(srv.URL())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			return r
		},
	}
	for name, mk := range strategies {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			l := mk(t)
			lim := ratelimit.Limit{Rate: 2, Burst: 5}
			key := "org:" + name + ":" + t.Name()
			allowed := 0
			var retry time.Duration
			for range 10 {
				d, err := l.Allow(ctx, key, lim)
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed {
					allowed++
				} else {
					retry = d.RetryAfter
				}
			}
			// A burst of 5; a request or so may refill while the loop runs.
			if allowed < 5 || allowed > 6 || retry <= 0 {
				t.Fatalf("allowed %d of 10 (want the burst, 5), retry after %s", allowed, retry)
			}
			if d, _ := l.Allow(ctx, key+"-other", lim); !d.Allowed {
				t.Fatal("another key shares the budget")
			}
			time.Sleep(retry + 50*time.Millisecond)
			if d, _ := l.Allow(ctx, key, lim); !d.Allowed {
				t.Fatal("no refill after Retry-After")
			}
			if d, _ := l.Allow(ctx, key, ratelimit.Limit{}); !d.Allowed {
				t.Fatal("an unlimited limit refused")
			}
		})
	}
}

// Two limiters on one Redis (two gateways) share one budget.
func TestRedisSharesTheBudget(t *testing.T) {
	srv := redistest.StartT(t)
	a, _ := ratelimit.NewRedis(srv.URL())
	b, _ := ratelimit.NewRedis(srv.URL())
	defer a.Close()
	defer b.Close()
	ctx := context.Background()
	lim := ratelimit.Limit{Rate: 1, Burst: 4}
	allowed := 0
	for i := range 10 {
		l := ratelimit.Limiter(a)
		if i%2 == 1 {
			l = b
		}
		d, err := l.Allow(ctx, "org:shared", lim)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			allowed++
		}
	}
	if allowed != 4 {
		t.Fatalf("two instances allowed %d, want the one burst of 4", allowed)
	}
}

// A Redis that goes away is an error (the caller decides), and the limiter
// works again once it is back.
func TestRedisOutage(t *testing.T) {
	srv := redistest.StartT(t)
	r, _ := ratelimit.NewRedis(srv.URL())
	defer r.Close()
	ctx := context.Background()
	lim := ratelimit.Limit{Rate: 100, Burst: 100}
	if _, err := r.Allow(ctx, "org:x", lim); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	start := time.Now()
	if _, err := r.Allow(ctx, "org:x", lim); err == nil {
		t.Fatal("no error with Redis down")
	}
	t.Logf("an Allow with Redis down failed after %s", time.Since(start))
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if d, err := r.Allow(ctx, "org:x", lim); err == nil && d.Allowed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no recovery after Redis came back")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestFractionalRates(t *testing.T) {
	m := ratelimit.NewMemory()
	ctx := context.Background()
	lim := ratelimit.Limit{Rate: 0.5, Burst: 1}
	if d, _ := m.Allow(ctx, "k", lim); !d.Allowed {
		t.Fatal("first request refused")
	}
	d, _ := m.Allow(ctx, "k", lim)
	if d.Allowed || d.RetryAfter < time.Second || d.RetryAfter > 2*time.Second {
		t.Fatalf("second request at 0.5/s: %+v, want refused with ~2 s", d)
	}
}
