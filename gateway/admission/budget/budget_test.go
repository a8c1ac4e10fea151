package budget

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/voxgate/voxgate/internal/redistest"
)

// counters are the strategies every test runs against.
func counters(t *testing.T) map[string]Counter {
	srv := redistest.StartT(t)
	opts, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return map[string]Counter{"memory": NewMemory(), "redis": NewRedis(c)}
}

func TestReserveNeverPassesTheBudget(t *testing.T) {
	for name, c := range counters(t) {
		t.Run(name, func(t *testing.T) {
			b := New(c, false)
			limit := Limit{Credits: 100, Period: Day}
			var granted atomic.Int64
			var wg sync.WaitGroup
			for range 40 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ch, err := b.Reserve(context.Background(), "acme", limit, "", Limit{}, 7)
					var ex *Exceeded
					switch {
					case err == nil:
						granted.Add(7)
						ch.Settle(context.Background(), 7)
					case errors.As(err, &ex):
						if ex.Scope != "organization" || ex.Limit != limit || ex.Want != 7 || !ex.Reset.After(time.Now()) {
							t.Errorf("exceeded: %+v", ex)
						}
					default:
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			if g := granted.Load(); g > 100 || g < 93 {
				t.Errorf("granted %d credits of a 100-credit budget in 7s", g)
			}
		})
	}
}

func TestSettleReleasesWhatWasNotSpent(t *testing.T) {
	for name, c := range counters(t) {
		t.Run(name, func(t *testing.T) {
			b := New(c, false)
			org, key := Limit{Credits: 10, Period: Month}, Limit{Credits: 5, Period: Day}
			ch, err := b.Reserve(context.Background(), "o", org, "k1", key, 5)
			if err != nil {
				t.Fatal(err)
			}
			// The key's budget is spent until the reservation settles.
			if _, err := b.Reserve(context.Background(), "o", org, "k1", key, 1); !isExceeded(err, "API key") {
				t.Fatalf("a sixth credit on a 5-credit key: %v", err)
			}
			ch.Settle(context.Background(), 0) // the request failed
			ch.Settle(context.Background(), 0) // settling twice is harmless
			for range 5 {
				if _, err := b.Reserve(context.Background(), "o", org, "k1", key, 1); err != nil {
					t.Fatalf("after the release: %v", err)
				}
			}
			// Another key of the same org still has the org's 5 left.
			if _, err := b.Reserve(context.Background(), "o", org, "k2", Limit{}, 5); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Reserve(context.Background(), "o", org, "k2", Limit{}, 1); !isExceeded(err, "organization") {
				t.Fatalf("past the org's budget: %v", err)
			}
			var nilCharge *Charge
			nilCharge.Settle(context.Background(), 3)
		})
	}
}

func isExceeded(err error, scope string) bool {
	var ex *Exceeded
	return errors.As(err, &ex) && ex.Scope == scope
}

// brokenCounter cannot be asked.
type brokenCounter struct{}

func (brokenCounter) Reserve(context.Context, string, int64, int64, time.Time) (bool, int64, error) {
	return false, 0, errors.New("connection refused")
}
func (brokenCounter) Release(context.Context, string, int64) error {
	return errors.New("connection refused")
}

func TestUnreachableCounterFailsAsConfigured(t *testing.T) {
	limit := Limit{Credits: 10, Period: Day}
	if _, err := New(brokenCounter{}, true).Reserve(context.Background(), "o", limit, "", Limit{}, 1); err != nil {
		t.Errorf("fail open: %v", err)
	}
	var un *Unavailable
	if _, err := New(brokenCounter{}, false).Reserve(context.Background(), "o", limit, "", Limit{}, 1); !errors.As(err, &un) {
		t.Errorf("fail closed: %v", err)
	}
	// Without a budget nothing is asked.
	if ch, err := New(brokenCounter{}, false).Reserve(context.Background(), "o", Limit{}, "", Limit{}, 1); err != nil || ch != nil {
		t.Errorf("no budget: %v %v", ch, err)
	}
}

func TestPeriodWindows(t *testing.T) {
	now := time.Date(2026, 12, 31, 23, 59, 0, 0, time.UTC)
	if name, reset := Day.window(now); name != "20261231" || !reset.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("day: %s %s", name, reset)
	}
	if name, reset := Month.window(now); name != "202612" || !reset.Equal(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("month: %s %s", name, reset)
	}
}

// TestMoneyBudgets: a budget in currency is counted apart from credits,
// refuses with its own unit, and settles to what was spent.
func TestMoneyBudgets(t *testing.T) {
	for name, c := range counters(t) {
		t.Run(name, func(t *testing.T) {
			b := New(c, false)
			org := Limit{Credits: 1000, Cost: 1_000_000, Period: Day, Currency: "EUR"} // 0.001 EUR
			key := Limit{Cost: 600_000, Period: Month, Currency: "EUR"}
			ctx := context.Background()
			ch, err := b.ReserveAmount(ctx, "acme-"+name, org, "k1-"+name, key, Amount{Credits: 10, Cost: 500_000})
			if err != nil {
				t.Fatal(err)
			}
			// The key's money budget refuses next, not the credits.
			_, err = b.ReserveAmount(ctx, "acme-"+name, org, "k1-"+name, key, Amount{Credits: 10, Cost: 200_000})
			var ex *Exceeded
			if !errors.As(err, &ex) || ex.Scope != "API key" || ex.Unit != "EUR" || !ex.Money() || ex.Quota() != 600_000 || ex.Spent != 500_000 {
				t.Fatalf("err %v (%+v), want the key's EUR budget", err, ex)
			}
			// The refused request gave back the organization's reservation.
			ch.SettleAmount(ctx, Amount{Credits: 10, Cost: 100_000})
			ch2, err := b.ReserveAmount(ctx, "acme-"+name, org, "k1-"+name, key, Amount{Credits: 10, Cost: 500_000})
			if err != nil {
				t.Fatalf("after settling at 0.0001 EUR of 0.0005 reserved: %v", err)
			}
			ch2.SettleAmount(ctx, Amount{Credits: 10, Cost: 500_000})
			_, err = b.ReserveAmount(ctx, "acme-"+name, org, "k2-"+name, Limit{}, Amount{Credits: 10, Cost: 400_001})
			if !errors.As(err, &ex) || ex.Scope != "organization" || ex.Unit != "EUR" || ex.Spent != 600_000 {
				t.Fatalf("err %v (%+v), want the organization's EUR budget with 0.0006 spent", err, ex)
			}
			if got := ex.Error(); got == "" || !strings.Contains(got, "0.001 EUR") {
				t.Errorf("message %q does not name the budget in EUR", got)
			}
		})
	}
}

// TestSettleAboveTheQuoteCounts: a request that cost more than it
// reserved (audio longer than quoted) adds the rest to the period.
func TestSettleAboveTheQuoteCounts(t *testing.T) {
	for name, c := range counters(t) {
		t.Run(name, func(t *testing.T) {
			b := New(c, false)
			org := Limit{Cost: 1000, Period: Day, Currency: "USD"}
			ctx := context.Background()
			ch, err := b.ReserveAmount(ctx, "over-"+name, org, "", Limit{}, Amount{Cost: 100})
			if err != nil {
				t.Fatal(err)
			}
			ch.SettleAmount(ctx, Amount{Cost: 700})
			_, err = b.ReserveAmount(ctx, "over-"+name, org, "", Limit{}, Amount{Cost: 301})
			var ex *Exceeded
			if !errors.As(err, &ex) || ex.Spent != 700 {
				t.Fatalf("err %v (%+v), want the budget refusing with 700 spent", err, ex)
			}
		})
	}
}
