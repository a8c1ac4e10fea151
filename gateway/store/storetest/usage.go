package storetest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
)

// usageModel aggregates rows the slow way: what Usage must return.
func usageModel(rows []store.LogRow, org string, since, until time.Time) []store.UsageRow {
	acc := map[store.UsageKey]*store.UsageCounts{}
	for i := range rows {
		r := rows[i]
		if r.OrgID != org || r.ParentRequestID != "" {
			continue
		}
		day := time.Date(r.TS.Year(), r.TS.Month(), r.TS.Day(), 0, 0, 0, 0, time.UTC)
		if day.Before(since) || !day.Before(until) {
			continue
		}
		k := store.UsageKey{Day: day, Provider: r.Provider, Model: r.Model, KeyID: r.KeyID}
		c := acc[k]
		if c == nil {
			c = &store.UsageCounts{}
			acc[k] = c
		}
		c.Requests++
		if r.Status >= 400 {
			c.Errors++
		}
		if r.Status >= 500 {
			c.ServerErrors++
		}
		c.Characters += int64(r.CharCount)
		c.Credits += int64(r.CreditsUsed)
		c.Cost += r.Cost
		c.AudioMS += r.AudioMS
		if r.Cache == "hit" {
			c.CacheHits++
		}
		c.LatencyMSSum += r.LatencyMS
		b := 0
		for b < len(store.LatencyBoundsMS) && r.LatencyMS >= store.LatencyBoundsMS[b] {
			b++
		}
		c.Latency[b]++
	}
	out := make([]store.UsageRow, 0, len(acc))
	for k, c := range acc {
		out = append(out, store.UsageRow{UsageKey: k, UsageCounts: *c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UsageKey.Less(&out[j].UsageKey) })
	return out
}

// usageRows makes n rows of orgs o1 and o2 over the ten days before now,
// with conversation children, several keys, providers and models, cache
// hits, failures and latencies across the histogram.
func usageRows(rng *rand.Rand, now time.Time, n int) []store.LogRow {
	providers := []string{"espeak", "openai", "mixed"}
	models := []string{"m1", "m2"}
	keys := []string{"", "k1", "k2"}
	statuses := []int{200, 200, 200, 200, 422, 429, 502, 504, 499}
	caches := []string{"", "", "miss", "hit"}
	latencies := []int64{0, 3, 10, 42, 99, 100, 250, 999, 1000, 4000, 59999, 60000, 90000}
	rows := make([]store.LogRow, n)
	for i := range rows {
		r := store.LogRow{
			RequestID:   fmt.Sprintf("u-%05d", i),
			OrgID:       []string{"o1", "o1", "o1", "o2"}[rng.IntN(4)],
			TS:          now.Add(-time.Duration(rng.IntN(10*24*3600)) * time.Second),
			Path:        "/v1/audio/speech",
			Status:      statuses[rng.IntN(len(statuses))],
			Provider:    providers[rng.IntN(len(providers))],
			Model:       models[rng.IntN(len(models))],
			KeyID:       keys[rng.IntN(len(keys))],
			CharCount:   rng.IntN(900),
			CreditsUsed: rng.IntN(5),
			Cost:        rng.Int64N(2_000_000_000),
			Currency:    "USD",
			AudioMS:     int64(rng.IntN(30000)),
			Cache:       caches[rng.IntN(len(caches))],
			LatencyMS:   latencies[rng.IntN(len(latencies))],
		}
		if rng.IntN(5) == 0 {
			r.ParentRequestID = "conv"
		}
		rows[i] = r
	}
	return rows
}

func appendInBatches(t *testing.T, s store.Backend, rng *rand.Rand, rows []store.LogRow) {
	t.Helper()
	for len(rows) > 0 {
		n := min(len(rows), 1+rng.IntN(90))
		mustDo(t, s.AppendLogs(context.Background(), rows[:n]))
		rows = rows[n:]
	}
}

func checkUsage(t *testing.T, s store.Backend, rows []store.LogRow, org string, since, until time.Time) {
	t.Helper()
	got, err := s.Usage(context.Background(), org, since, until)
	if err != nil {
		t.Fatalf("Usage(%s, %s..%s): %v", org, since, until, err)
	}
	want := usageModel(rows, org, since, until)
	if len(got) != len(want) {
		t.Fatalf("Usage(%s, %s..%s): %d rows, want %d", org, since.Format(time.DateOnly), until.Format(time.DateOnly), len(got), len(want))
	}
	for i := range want {
		if !got[i].Day.Equal(want[i].Day) {
			t.Fatalf("row %d: day %s, want %s", i, got[i].Day, want[i].Day)
		}
		got[i].Day = want[i].Day
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("row %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

func testUsageMatchesLog(t *testing.T, open Opener) {
	clk := newClock()
	s := openWith(t, open, clk)
	rng := rand.New(rand.NewPCG(3, 4))
	rows := usageRows(rng, clk.Now(), 3000)
	// Rows with a zero TS count on the backend's "now".
	rows = append(rows, store.LogRow{RequestID: "zero-ts", OrgID: "o1", Provider: "espeak", Model: "m1", Status: 200, CharCount: 7})
	appendInBatches(t, s, rng, rows)
	rows[len(rows)-1].TS = clk.Now()

	today := store.UsageDayOf(clk.Now())
	for _, w := range []struct{ since, until time.Time }{
		{today.Add(-30 * store.UsageDay), today.Add(store.UsageDay)}, // everything
		{today.Add(-3 * store.UsageDay), today},                      // a few whole days, today excluded
		{today, today.Add(store.UsageDay)},                           // today only
		{today.Add(-9 * store.UsageDay), today.Add(-8 * store.UsageDay)},
		{today.Add(store.UsageDay), today.Add(5 * store.UsageDay)}, // the future: nothing
	} {
		for _, org := range []string{"o1", "o2", "nobody"} {
			checkUsage(t, s, rows, org, w.since, w.until)
		}
	}
	// Later batches add to the same rollup rows.
	more := usageRows(rng, clk.Now(), 500)
	appendInBatches(t, s, rng, more)
	checkUsage(t, s, append(rows, more...), "o1", today.Add(-30*store.UsageDay), today.Add(store.UsageDay))
}

func testUsageOutlivesLogs(t *testing.T, open Opener) {
	ctx := context.Background()
	clk := newClock()
	s := openWith(t, open, clk)
	rng := rand.New(rand.NewPCG(5, 6))
	rows := usageRows(rng, clk.Now(), 400)
	appendInBatches(t, s, rng, rows)
	today := store.UsageDayOf(clk.Now())
	all := func() (time.Time, time.Time) { return today.Add(-30 * store.UsageDay), today.Add(store.UsageDay) }

	// The log rows go; their usage stays.
	if _, err := s.PurgeLogs(ctx, clk.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got := pageAll(t, s, "o1", store.LogFilter{}, 100, nil); len(got) != 0 {
		t.Fatalf("%d log rows left after the purge", len(got))
	}
	since, until := all()
	checkUsage(t, s, rows, "o1", since, until)

	// Past store.UsageRetention the rollup goes too.
	clk.Advance(store.UsageRetention - 5*store.UsageDay)
	if _, err := s.PurgeLogs(ctx, clk.Now().Add(-store.DefaultLogRetention)); err != nil {
		t.Fatal(err)
	}
	cutoff := store.UsageDayOf(clk.Now().Add(-store.UsageRetention))
	var kept []store.LogRow
	for _, r := range rows {
		if !r.TS.Before(cutoff) {
			kept = append(kept, r)
		}
	}
	if len(kept) == 0 || len(kept) == len(rows) {
		t.Fatalf("fixture: %d of %d rows fall after the cutoff; want some but not all", len(kept), len(rows))
	}
	checkUsage(t, s, kept, "o1", since, until)
}

func testUsageRejectsBadWindow(t *testing.T, open Opener) {
	s := openWith(t, open, nil)
	day := store.UsageDayOf(time.Now())
	for _, w := range []struct{ since, until time.Time }{
		{day.Add(time.Hour), day.Add(store.UsageDay)},
		{day, day.Add(store.UsageDay + time.Second)},
		{day, day},
		{day.Add(store.UsageDay), day},
	} {
		if _, err := s.Usage(context.Background(), "o", w.since, w.until); err == nil {
			t.Errorf("Usage(%s, %s) accepted", w.since, w.until)
		}
	}
}
