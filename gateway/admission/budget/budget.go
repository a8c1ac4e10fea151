// Package budget enforces budgets in credits and in money: an
// organization's (from the config or the admin API) and an API key's
// (from its scope), each per UTC day or month.
//
// A request reserves the credits it will cost before the provider is
// called, and settles with what it actually cost once it is done (nothing
// for a failure). Reservation is one atomic step in the counter, so
// instances sharing a counter never spend past a budget together: the
// total spent is at most the budget. Like the rate limiter, the counter
// has two strategies behind one small interface:
//
//	Memory  counts in this process: exact for one instance, and N
//	        instances allow N times a budget.
//	Redis   one counter per budget and period in a shared Redis, checked
//	        and incremented by one Lua script, expiring after its period.
package budget

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/voxgate/voxgate/gateway/pricing"
)

// Period is what a budget counts over.
type Period string

// The periods, in UTC.
const (
	Day   Period = "day"
	Month Period = "month"
)

// window returns the period containing now: a name for its counter and
// when it ends.
func (p Period) window(now time.Time) (string, time.Time) {
	now = now.UTC()
	if p == Month {
		start := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
		return start.Format("200601"), start.AddDate(0, 1, 0)
	}
	start := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	return start.Format("20060102"), start.AddDate(0, 0, 1)
}

// Limit is a budget per Period: Credits, Cost (nano-units of the
// gateway's currency, see package pricing), or both. Zero means none.
type Limit struct {
	Credits int64
	Cost    int64
	Period  Period
	// Currency names Cost's currency in messages ("USD").
	Currency string
}

// Amount is what a request spends: credits, and cost in nano-units of
// the gateway's currency.
type Amount struct {
	Credits, Cost int64
}

// Counter keeps spend per key. Reserve adds n to key's count unless that
// would pass limit, atomically; Release takes n back. expires is when the
// count may be forgotten (the end of its period). An error means the
// counter could not be asked.
type Counter interface {
	Reserve(ctx context.Context, key string, n, limit int64, expires time.Time) (ok bool, spent int64, err error)
	Release(ctx context.Context, key string, n int64) error
}

// Exceeded is a reservation refused by a budget.
type Exceeded struct {
	// Scope names the budget: "organization" or "API key".
	Scope string
	// Unit is what the refusing budget counts: "credits", or the
	// currency's code for a budget in money.
	Unit  string
	Limit Limit
	// Spent is what the period has spent, Want what the request needed,
	// in Unit (nano-units for money).
	Spent, Want int64
	// Reset is when the period ends.
	Reset time.Time
}

// Money reports whether the refusing budget is one in currency.
func (e *Exceeded) Money() bool { return e.Unit != "credits" }

// Quota is the refusing budget's size in its unit.
func (e *Exceeded) Quota() int64 {
	if e.Money() {
		return e.Limit.Cost
	}
	return e.Limit.Credits
}

func (e *Exceeded) Error() string {
	if e.Money() {
		return fmt.Sprintf("the %s's budget of %s %s a %s is spent (%s used, this request is quoted at %s); it resets at %s",
			e.Scope, pricing.Format(e.Limit.Cost), e.Unit, e.Limit.Period, pricing.Format(e.Spent), pricing.Format(e.Want), e.Reset.Format(time.RFC3339))
	}
	return fmt.Sprintf("the %s's budget of %d credits a %s is spent (%d used, this request needs %d); it resets at %s",
		e.Scope, e.Limit.Credits, e.Limit.Period, e.Spent, e.Want, e.Reset.Format(time.RFC3339))
}

// Unavailable is a reservation the counter could not decide.
type Unavailable struct{ Err error }

func (e *Unavailable) Error() string { return "the budget counter cannot be reached: " + e.Err.Error() }
func (e *Unavailable) Unwrap() error { return e.Err }

// Budgets reserves against an organization's and a key's budgets.
type Budgets struct {
	counter Counter
	// failOpen lets requests through when the counter cannot be asked.
	failOpen bool
	now      func() time.Time
}

// New returns Budgets over counter.
func New(counter Counter, failOpen bool) *Budgets {
	return &Budgets{counter: counter, failOpen: failOpen, now: time.Now}
}

// Charge is what one request reserved; Settle releases what it did not
// spend.
type Charge struct {
	b        *Budgets
	reserved Amount
	// keys are the counters reserved from, credits' and money's apart.
	credits, cost []string
}

// counts reports whether l has a budget that want takes from: credits
// for credits wanted, money for a cost (ReserveAmount's loop skips the
// rest).
func (l Limit) counts(want Amount) bool {
	return l.Credits > 0 && want.Credits > 0 || l.Cost > 0 && want.Cost > 0
}

// Reserve takes n credits from the organization's budget and the key's,
// if they have one. It fails with *Exceeded past a budget, and with
// *Unavailable when the counter cannot be asked and the deployment fails
// closed. A nil Charge settles as a no-op.
func (b *Budgets) Reserve(ctx context.Context, org string, orgLimit Limit, keyID string, keyLimit Limit, n int64) (*Charge, error) {
	return b.ReserveAmount(ctx, org, orgLimit, keyID, keyLimit, Amount{Credits: n})
}

// ReserveAmount takes want from the organization's budgets and the
// key's: credits from credit budgets, cost from budgets in currency,
// each in one atomic step of its counter (a budget's credits and its
// money are two counters, so a request refused by the second gives the
// first back). Errors as Reserve.
func (b *Budgets) ReserveAmount(ctx context.Context, org string, orgLimit Limit, keyID string, keyLimit Limit, want Amount) (*Charge, error) {
	if b == nil || !orgLimit.counts(want) && !keyLimit.counts(want) {
		// Hot path: most requests meet no budget, and then nothing is
		// made for them (a Charge, its counters' names).
		return nil, nil
	}
	c := &Charge{b: b, reserved: want}
	for _, t := range []struct {
		scope, id string
		limit     Limit
	}{{"organization", "org:" + org, orgLimit}, {"API key", "key:" + keyID, keyLimit}} {
		for _, d := range []struct {
			unit   string
			n, max int64
			prefix string
			keys   *[]string
		}{{"credits", want.Credits, t.limit.Credits, "", &c.credits}, {t.limit.Currency, want.Cost, t.limit.Cost, "cost:", &c.cost}} {
			if d.max <= 0 || d.n <= 0 {
				continue
			}
			name, reset := t.limit.Period.window(b.now())
			key := t.id + ":" + d.prefix + string(t.limit.Period) + ":" + name
			ok, spent, err := b.counter.Reserve(ctx, key, d.n, d.max, reset)
			if err != nil {
				if b.failOpen {
					continue
				}
				c.SettleAmount(context.WithoutCancel(ctx), Amount{})
				return nil, &Unavailable{Err: err}
			}
			if !ok {
				c.SettleAmount(context.WithoutCancel(ctx), Amount{})
				unit := d.unit
				if d.prefix != "" && unit == "" {
					unit = "USD"
				}
				return nil, &Exceeded{Scope: t.scope, Unit: unit, Limit: t.limit, Spent: spent, Want: d.n, Reset: reset}
			}
			*d.keys = append(*d.keys, key)
		}
	}
	if len(c.credits) == 0 && len(c.cost) == 0 {
		return nil, nil
	}
	return c, nil
}

// Settle records that the request cost spent credits: the rest of the
// credits reserved go back. Money reserved stays reserved (the safe side
// of a budget): callers that know the cost call SettleAmount. It is safe
// to call on a nil Charge, and once.
func (c *Charge) Settle(ctx context.Context, spent int64) {
	if c == nil {
		return
	}
	c.SettleAmount(ctx, Amount{Credits: min(spent, c.reserved.Credits), Cost: c.reserved.Cost})
}

// SettleAmount records that the request spent spent: the rest of each
// reservation goes back, and a spend above it (audio longer than the
// quote estimated) is added, past the limit if need be: the request was
// admitted on its quote, and the period counts what was spent. Safe on a
// nil Charge.
func (c *Charge) SettleAmount(ctx context.Context, spent Amount) {
	if c == nil {
		return
	}
	release := func(keys []string, reserved *int64, spent int64) {
		if spent == *reserved {
			return
		}
		// A negative release adds: both counters' releases add -n.
		back := *reserved - spent
		*reserved = spent
		for _, k := range keys {
			// A failed release overcounts the period, the safe side of a
			// budget; the next period starts from zero either way.
			_ = c.b.counter.Release(ctx, k, back)
		}
	}
	release(c.credits, &c.reserved.Credits, spent.Credits)
	release(c.cost, &c.reserved.Cost, spent.Cost)
}

// Memory is the in-process counter.
type Memory struct {
	mu     sync.Mutex
	counts map[string]memCount
}

type memCount struct {
	n       int64
	expires time.Time
}

// NewMemory returns an empty in-process counter.
func NewMemory() *Memory { return &Memory{counts: map[string]memCount{}} }

// Reserve implements Counter.
func (m *Memory) Reserve(_ context.Context, key string, n, limit int64, expires time.Time) (bool, int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	for k, c := range m.counts {
		if now.After(c.expires) {
			delete(m.counts, k) // keys are one per budget and period: few
		}
	}
	c := m.counts[key]
	if c.n+n > limit {
		return false, c.n, nil
	}
	m.counts[key] = memCount{n: c.n + n, expires: expires}
	return true, c.n + n, nil
}

// Release implements Counter.
func (m *Memory) Release(_ context.Context, key string, n int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.counts[key]; ok {
		c.n = max(0, c.n-n)
		m.counts[key] = c
	}
	return nil
}

// Redis is the shared counter.
type Redis struct {
	client *redis.Client
	prefix string
}

// NewRedis returns a counter in the Redis of client.
func NewRedis(client *redis.Client) *Redis { return &Redis{client: client, prefix: "voxgate:budget:"} }

// reserveScript adds ARGV[1] to KEYS[1] unless the sum would pass ARGV[2],
// and makes the key expire at ARGV[3] (unix ms). It returns {allowed,
// count}.
var reserveScript = redis.NewScript(`
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
local n = tonumber(ARGV[1])
if cur + n > tonumber(ARGV[2]) then
  return {0, cur}
end
cur = redis.call('INCRBY', KEYS[1], n)
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
return {1, cur}
`)

// Reserve implements Counter: one round trip.
func (r *Redis) Reserve(ctx context.Context, key string, n, limit int64, expires time.Time) (bool, int64, error) {
	// Kept a day past the period's end, so a late release still finds it.
	exp := expires.Add(24 * time.Hour).UnixMilli()
	res, err := reserveScript.Run(ctx, r.client, []string{r.prefix + key}, n, limit, strconv.FormatInt(exp, 10)).Int64Slice()
	if err != nil {
		return false, 0, err
	}
	if len(res) != 2 {
		return false, 0, fmt.Errorf("budget script answered %v", res)
	}
	return res[0] == 1, res[1], nil
}

// releaseScript takes ARGV[1] back from KEYS[1] if it still exists: a
// DECRBY on an expired counter would create one that never expires.
var releaseScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then
  return redis.call('DECRBY', KEYS[1], ARGV[1])
end
return 0
`)

// Release implements Counter.
func (r *Redis) Release(ctx context.Context, key string, n int64) error {
	return releaseScript.Run(ctx, r.client, []string{r.prefix + key}, n).Err()
}
