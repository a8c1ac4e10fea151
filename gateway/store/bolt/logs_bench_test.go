package bolt_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/bolt"
)

// benchBase is the fixed time the benchmark fixtures start at; with a fixed
// clock the cached fixture files stay valid (inside the retention window)
// whatever day the benchmark runs.
var benchBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// benchFixtureVersion changes whenever the fixture's contents or the file
// layout change, so stale cached files are not reused.
const benchFixtureVersion = 1

const benchOrg = "org-bench"

// benchRow returns fixture row i: one row per second, a realistic mix of
// providers, statuses and conversation children.
func benchRow(i int) store.LogRow {
	r := store.LogRow{
		RequestID:          fmt.Sprintf("0b5c4a4e-7f1d-4c39-9d1e-%012d", i),
		OrgID:              benchOrg,
		TS:                 benchBase.Add(time.Duration(i) * time.Second),
		Path:               "/v1/audio/speech",
		Status:             200,
		Provider:           []string{"espeak", "openai", "eleven", "cartesia"}[i%4],
		Model:              "espeak-ng",
		VoiceID:            "en-us",
		VoiceRef:           "6f1c3e0a-2b7d-4d8e-9a61-0c3f5e7b9d21",
		CharCount:          120 + i%500,
		CreditsUsed:        1,
		LatencyMS:          int64(40 + i%300),
		ProviderOptions:    `{"pitch":50}`,
		ModerationDecision: "allow",
	}
	if i%10 == 0 {
		r.Status, r.ErrorCode, r.ErrorDetail = 502, "provider_error", "upstream returned 500"
	}
	if i%5 == 1 {
		r.ParentRequestID = fmt.Sprintf("9a0e2f7c-1d3b-4e5a-8c6d-%012d", i/50)
	}
	return r
}

// benchStore opens the cached fixture with n rows of benchOrg, building it
// first if it is missing. Building a million rows takes a while once; the
// file is kept in the OS temp directory for later runs.
func benchStore(b *testing.B, n int) (*bolt.Store, func() time.Time) {
	b.Helper()
	now := func() time.Time { return benchBase.Add(time.Duration(n)*time.Second + time.Minute) }
	path := filepath.Join(os.TempDir(), fmt.Sprintf("voxgate-bench-logs-v%d-%d.db", benchFixtureVersion, n))
	if _, err := os.Stat(path); err != nil {
		start := time.Now()
		buildBenchFixture(b, path, n, now)
		b.Logf("built %d-row fixture %s in %v", n, path, time.Since(start).Round(time.Millisecond))
	}
	s, err := bolt.Open(path, store.Options{Now: now})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s, now
}

func buildBenchFixture(b *testing.B, path string, n int, now func() time.Time) {
	tmp := path + ".building"
	_ = os.Remove(tmp)
	s, err := bolt.Open(tmp, store.Options{Now: now})
	if err != nil {
		b.Fatal(err)
	}
	// A fixture, not user data: skip fsync and pack pages full.
	bolt.SetNoSyncForTest(s, true)
	bolt.SetLogFillForTest(s, 1.0)
	const batch = 50000
	rows := make([]store.LogRow, 0, batch)
	for i := 0; i < n; i++ {
		rows = append(rows, benchRow(i))
		if len(rows) == batch || i == n-1 {
			if err := s.AppendLogs(context.Background(), rows); err != nil {
				b.Fatal(err)
			}
			rows = rows[:0]
		}
	}
	if err := bolt.SyncForTest(s); err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkListLogs measures one 50-row page of GET /v1/logs at 10k and 1M
// rows of one organization: the first page, a page resumed from a position
// in the middle of the log, and both with a provider filter. The page time
// must stay flat as the log grows (at 1M within 2x of 10k).
func BenchmarkListLogs(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			s, _ := benchStore(b, n)
			mid := benchRow(n / 2).TS
			for _, c := range []struct {
				name   string
				filter store.LogFilter
				middle bool
			}{
				{"first", store.LogFilter{}, false},
				{"middle", store.LogFilter{}, true},
				{"provider/first", store.LogFilter{Provider: "openai"}, false},
				{"provider/middle", store.LogFilter{Provider: "openai"}, true},
				{"provider+status/middle", store.LogFilter{Provider: "openai", Status: 200}, true},
			} {
				var after []byte
				if c.middle {
					// A position in the middle, as a client paging down would hold.
					f := c.filter
					f.Until = mid
					_, next, _, err := s.ListLogs(ctx, benchOrg, f, 1, nil)
					if err != nil || next == nil {
						b.Fatalf("middle position: %v", err)
					}
					after = next
				}
				b.Run(c.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						rows, _, more, err := s.ListLogs(ctx, benchOrg, c.filter, 50, after)
						if err != nil || len(rows) != 50 || !more {
							b.Fatalf("ListLogs: %d rows, more=%v, err=%v", len(rows), more, err)
						}
					}
				})
			}
		})
	}
}

// BenchmarkAppendLogs measures one reqlog-sized batch (512 rows, one
// fsynced transaction) appended to a growing log, with the request ids
// the gateway makes (UUIDv7: time-ordered, so the request-id index grows
// at its end) and with random ones (UUIDv4, as before: every row dirties
// another leaf of that index).
func BenchmarkAppendLogs(b *testing.B) {
	for _, ids := range []struct {
		name string
		make func() string
	}{{"uuid7", func() string { return uuid.Must(uuid.NewV7()).String() }}, {"uuid4", uuid.NewString}} {
		b.Run(ids.name, func(b *testing.B) {
			s, err := bolt.Open(filepath.Join(b.TempDir(), "db"), store.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			rows := make([]store.LogRow, 512)
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				for j := range rows {
					rows[j] = benchRow(i)
					rows[j].RequestID = ids.make()
					rows[j].TS = time.Now()
					i++
				}
				if err := s.AppendLogs(context.Background(), rows); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i), "ns/row")
		})
	}
}
