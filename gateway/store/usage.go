package store

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// Usage is kept as a rollup beside the request log: one UsageRow per
// organization, UTC day, provider, model and API key, updated in the same
// transaction as the log rows it counts (AppendLogs). Reading usage then
// costs O(rollup rows in the window) however many log rows there are, and
// the rollup outlives the rows: PurgeLogs keeps UsageRetention of it.
//
// Only top-level rows count (ParentRequestID empty): a conversation's own
// row already carries the credits, characters and audio of its turns, so
// counting the turns too would bill them twice. A conversation of several
// providers is counted under provider "mixed", as its row says. The one
// exception is a realtime socket's contexts: their parent is the socket,
// which has no row of its own, so each context counts.

// UsageDay is the rollup's time granularity: usage windows start and end
// on whole UTC days.
const UsageDay = 24 * time.Hour

// UsageRetention is how long the rollup is kept: longer than any log
// retention, so a year of usage can be compared with the one before.
const UsageRetention = 400 * UsageDay

// LatencyBoundsMS are the upper bounds (exclusive) of the rollup's latency
// histogram buckets, in milliseconds; a last bucket holds everything from
// the last bound up. Fixed buckets make histograms of different rows and
// instances add up, which is what lets percentiles be served from the
// rollup. The bounds are part of the storage format: append only.
var LatencyBoundsMS = [...]int64{10, 25, 50, 100, 150, 200, 300, 400, 500, 750, 1000, 1500, 2000, 3000, 5000, 7500, 10000, 20000, 30000, 60000}

// LatencyBuckets is the number of histogram buckets.
const LatencyBuckets = len(LatencyBoundsMS) + 1

// LatencyBucket returns the histogram bucket of a latency: the number of
// bounds at or below it (PostgreSQL's width_bucket with an array of
// thresholds counts the same way).
func LatencyBucket(ms int64) int {
	return sort.Search(len(LatencyBoundsMS), func(i int) bool { return ms < LatencyBoundsMS[i] })
}

// UsageKey identifies one rollup row within an organization.
type UsageKey struct {
	// Day is the UTC midnight starting the day.
	Day time.Time
	// Provider and Model are the log rows' provider and model ids.
	Provider, Model string
	// KeyID is the API key's id ("" for rows without one).
	KeyID string
}

// UsageCounts are what a rollup row adds up.
type UsageCounts struct {
	// Requests counts top-level log rows.
	Requests int64
	// Errors counts those with a status of 400 or more, ServerErrors
	// those of 500 or more.
	Errors, ServerErrors int64
	// Characters, Credits and AudioMS are the rows' sums.
	Characters, Credits, AudioMS int64
	// Cost is the rows' cost in nano-units of the gateway's currency.
	Cost int64
	// CacheHits counts rows answered from the response cache.
	CacheHits int64
	// LatencyMSSum is the sum of the rows' latencies, for the mean.
	LatencyMSSum int64
	// Latency is the latency histogram (see LatencyBoundsMS).
	Latency [LatencyBuckets]int64
}

// UsageRow is one rollup row.
type UsageRow struct {
	UsageKey
	UsageCounts
}

// RealtimePath is the path of a realtime context's row (package realtime).
const RealtimePath = "/v1/audio/speech/realtime"

// Counted reports whether a log row counts towards usage: top-level rows
// and realtime contexts (see above).
func Counted(r *LogRow) bool { return r.ParentRequestID == "" || r.Path == RealtimePath }

// UsageDayOf returns the UTC midnight of t's day.
func UsageDayOf(t time.Time) time.Time {
	return t.UTC().Truncate(UsageDay)
}

// KeyOf returns the rollup key a log row (with its final TS) counts under.
func KeyOf(r *LogRow) UsageKey {
	return UsageKey{Day: UsageDayOf(r.TS), Provider: r.Provider, Model: r.Model, KeyID: r.KeyID}
}

// AddRow adds one log row to c.
func (c *UsageCounts) AddRow(r *LogRow) {
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
	lat := max(r.LatencyMS, 0)
	c.LatencyMSSum += lat
	c.Latency[LatencyBucket(lat)]++
}

// Add adds o to c.
func (c *UsageCounts) Add(o *UsageCounts) {
	c.Requests += o.Requests
	c.Errors += o.Errors
	c.ServerErrors += o.ServerErrors
	c.Characters += o.Characters
	c.Credits += o.Credits
	c.Cost += o.Cost
	c.AudioMS += o.AudioMS
	c.CacheHits += o.CacheHits
	c.LatencyMSSum += o.LatencyMSSum
	for i := range c.Latency {
		c.Latency[i] += o.Latency[i]
	}
}

// LatencyPercentile estimates the q-quantile (0 < q <= 1) of the latencies
// in ms from the histogram: linear within the bucket that holds it, which
// is exact to the bucket's width. The open last bucket reports its lower
// bound. Zero without requests.
func (c *UsageCounts) LatencyPercentile(q float64) float64 {
	var total int64
	for _, n := range c.Latency {
		total += n
	}
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	var seen int64
	for i, n := range c.Latency {
		if n == 0 || float64(seen+n) < rank {
			seen += n
			continue
		}
		lo := int64(0)
		if i > 0 {
			lo = LatencyBoundsMS[i-1]
		}
		if i == len(LatencyBoundsMS) {
			return float64(lo)
		}
		hi := LatencyBoundsMS[i]
		return float64(lo) + float64(hi-lo)*(rank-float64(seen))/float64(n)
	}
	return float64(LatencyBoundsMS[len(LatencyBoundsMS)-1])
}

// RollUp aggregates log rows into rollup rows per organization (a row
// with a zero TS counts at now, as AppendLogs stores it), in a stable order (org, then UsageKey order), so that
// backends that lock rollup rows lock them in one order everywhere and
// concurrent batches cannot deadlock.
func RollUp(rows []LogRow, now time.Time) []OrgUsage {
	idx := map[orgUsageKey]int{}
	var out []OrgUsage
	for i := range rows {
		r := &rows[i]
		if !Counted(r) {
			continue
		}
		key := KeyOf(r)
		if r.TS.IsZero() {
			key.Day = UsageDayOf(now)
		}
		k := orgUsageKey{r.OrgID, key}
		j, ok := idx[k]
		if !ok {
			j = len(out)
			idx[k] = j
			out = append(out, OrgUsage{OrgID: r.OrgID, Row: UsageRow{UsageKey: k.key}})
		}
		out[j].Row.AddRow(r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].OrgID != out[j].OrgID {
			return out[i].OrgID < out[j].OrgID
		}
		return out[i].Row.UsageKey.Less(&out[j].Row.UsageKey)
	})
	return out
}

type orgUsageKey struct {
	org string
	key UsageKey
}

// OrgUsage is a rollup row of one organization.
type OrgUsage struct {
	OrgID string
	Row   UsageRow
}

// Less orders keys by day, provider, model, key id.
func (k *UsageKey) Less(o *UsageKey) bool {
	switch {
	case !k.Day.Equal(o.Day):
		return k.Day.Before(o.Day)
	case k.Provider != o.Provider:
		return k.Provider < o.Provider
	case k.Model != o.Model:
		return k.Model < o.Model
	}
	return k.KeyID < o.KeyID
}

// UsageStore reads the usage rollup; AppendLogs writes it.
type UsageStore interface {
	// Usage returns orgID's rollup rows of the days in [since, until),
	// both whole UTC days (else an error), ordered by UsageKey.Less. It
	// reads only the rows of those days, whatever the log's size.
	Usage(ctx context.Context, orgID string, since, until time.Time) ([]UsageRow, error)
}

// CheckUsageWindow validates a Usage window for the backends.
func CheckUsageWindow(since, until time.Time) error {
	if !since.Equal(UsageDayOf(since)) || !until.Equal(UsageDayOf(until)) {
		return fmt.Errorf("usage window %s..%s must start and end at UTC midnight", since, until)
	}
	if !until.After(since) {
		return fmt.Errorf("usage window %s..%s is empty", since, until)
	}
	return nil
}
