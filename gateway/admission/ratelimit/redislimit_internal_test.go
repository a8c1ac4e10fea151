package ratelimit

import (
	"testing"
	"time"
)

// TestRedisLimitPerMinute: a rate of N a minute is N per minute in Redis,
// for every N (N/60 is not a whole number of anything per second).
func TestRedisLimitPerMinute(t *testing.T) {
	for _, n := range []int{1, 7, 30, 59, 61, 1000} {
		got := redisLimit(Limit{Rate: float64(n) / 60, Burst: n})
		if got.Rate != n || got.Period != time.Minute || got.Burst != n {
			t.Errorf("%d a minute = %+v", n, got)
		}
	}
	// Any other rate keeps its value, whatever the period it is put in.
	for _, r := range []float64{0.5, 12.5, 3} {
		got := redisLimit(Limit{Rate: r})
		if per := float64(got.Rate) / got.Period.Seconds(); per != r {
			t.Errorf("%v/s = %+v (%v/s)", r, got, per)
		}
	}
}
