package store

import (
	"math"
	"testing"
	"time"
)

func TestLatencyBucket(t *testing.T) {
	for _, c := range []struct {
		ms   int64
		want int
	}{{0, 0}, {9, 0}, {10, 1}, {24, 1}, {25, 2}, {999, 10}, {1000, 11}, {59999, 19}, {60000, 20}, {1 << 40, 20}} {
		if got := LatencyBucket(c.ms); got != c.want {
			t.Errorf("LatencyBucket(%d) = %d, want %d", c.ms, got, c.want)
		}
	}
}

func TestLatencyPercentile(t *testing.T) {
	var c UsageCounts
	if got := c.LatencyPercentile(0.5); got != 0 {
		t.Errorf("empty: %v", got)
	}
	// 100 requests spread evenly over 100..150 ms: the p50 is 125 ms.
	for i := range 100 {
		c.AddRow(&LogRow{Status: 200, LatencyMS: 100 + int64(i)/2})
	}
	for _, q := range []struct{ q, want float64 }{{0.5, 125}, {0.9, 145}, {0.01, 100.5}} {
		if got := c.LatencyPercentile(q.q); math.Abs(got-q.want) > 0.01 {
			t.Errorf("p%v = %v, want %v", q.q*100, got, q.want)
		}
	}
	// The open last bucket reports its lower bound.
	var slow UsageCounts
	slow.AddRow(&LogRow{LatencyMS: 90000})
	if got := slow.LatencyPercentile(0.99); got != 60000 {
		t.Errorf("slow p99 = %v", got)
	}
}

func TestRollUp(t *testing.T) {
	now := time.Date(2026, 3, 1, 23, 59, 0, 0, time.UTC)
	rows := []LogRow{
		{OrgID: "b", TS: now, Provider: "p", Status: 200, CharCount: 1},
		{OrgID: "a", TS: now.Add(time.Minute), Provider: "p", Status: 502, CharCount: 2},      // the next day
		{OrgID: "a", Provider: "p", Status: 200, CharCount: 4},                                // zero TS: now
		{OrgID: "a", TS: now, Provider: "p", Status: 200, CharCount: 8, ParentRequestID: "x"}, // a turn: not counted
		{OrgID: "a", TS: now, Provider: "p", Status: 429, CharCount: 16, Cache: "hit"},
	}
	got := RollUp(rows, now)
	if len(got) != 3 {
		t.Fatalf("%d groups: %+v", len(got), got)
	}
	a1, a2, b := got[0], got[1], got[2]
	if a1.OrgID != "a" || !a1.Row.Day.Equal(UsageDayOf(now)) || a1.Row.Requests != 2 || a1.Row.Characters != 20 || a1.Row.Errors != 1 || a1.Row.CacheHits != 1 {
		t.Errorf("a, first day: %+v", a1)
	}
	if a2.OrgID != "a" || a2.Row.ServerErrors != 1 || a2.Row.Characters != 2 || !a2.Row.Day.After(a1.Row.Day) {
		t.Errorf("a, next day: %+v", a2)
	}
	if b.OrgID != "b" || b.Row.Requests != 1 {
		t.Errorf("b: %+v", b)
	}
}
