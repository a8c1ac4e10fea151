package memory_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/memory"
)

// benchRow is row i of the benchmarks' logs: as store/bolt's benchmarks
// make them, one a second, a mix of providers, statuses and conversation
// children.
func benchRow(base time.Time, i int) store.LogRow {
	r := store.LogRow{
		RequestID:          fmt.Sprintf("0b5c4a4e-7f1d-4c39-9d1e-%012d", i),
		OrgID:              "org-bench",
		TS:                 base.Add(time.Duration(i) * time.Second),
		Path:               "/v1/audio/speech",
		Status:             200,
		Provider:           []string{"espeak", "openai", "eleven", "cartesia"}[i%4],
		Model:              "espeak-ng",
		VoiceID:            "en-us",
		VoiceRef:           "6f1c3e0a-2b7d-4d8e-9a61-0c3f5e7b9d21",
		KeyID:              []string{"k1", "k2"}[i%2],
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

// BenchmarkAppendLogs is one batch of the request-log writer (512 rows,
// its default batch size) appended to a growing log: the rows, their
// indexes and the usage rollup under one lock.
func BenchmarkAppendLogs(b *testing.B) {
	s := memory.New(store.Options{})
	defer s.Close()
	ctx := context.Background()
	rows := make([]store.LogRow, 512)
	base := time.Now()
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		for j := range rows {
			rows[j] = benchRow(base, i)
			i++
		}
		b.StartTimer()
		if err := s.AppendLogs(ctx, rows); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i), "ns/row")
}

// BenchmarkGetVoice is the read a synthesis request naming a saved voice
// makes when the read cache does not hold it: a lookup among 10,000 voices
// and a copy the caller may change.
func BenchmarkGetVoice(b *testing.B) {
	s := memory.New(store.Options{})
	defer s.Close()
	ctx := context.Background()
	for i := range 10_000 {
		v := &store.Voice{ID: fmt.Sprintf("6f1c3e0a-2b7d-4d8e-9a61-%012d", i), OrgID: "org-bench", Title: "Narrator",
			Provider: "espeak", Model: "espeak-ng", VoiceID: "en-us", Tags: []string{"calm", "warm"},
			ProviderOptions: map[string]any{"pitch": 50, "rate": 1.1},
			Fallbacks:       []store.VoiceTarget{{Provider: "openai", Model: "tts-1", VoiceID: "alloy"}}}
		if err := s.CreateVoice(ctx, v); err != nil {
			b.Fatal(err)
		}
	}
	id := fmt.Sprintf("6f1c3e0a-2b7d-4d8e-9a61-%012d", 4321)
	b.ReportAllocs()
	for b.Loop() {
		if v, err := s.GetVoice(ctx, "org-bench", id); err != nil || v.ID != id {
			b.Fatal(v, err)
		}
	}
}

// BenchmarkListLogs is one 50-row page of GET /v1/logs at 10k and 1M rows
// of one organization, first and from the middle, unfiltered and by
// provider: the page time stays flat as the log grows.
func BenchmarkListLogs(b *testing.B) {
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, n := range []int{10_000, 1_000_000} {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			now := base.Add(time.Duration(n)*time.Second + time.Minute)
			s := memory.New(store.Options{Now: func() time.Time { return now }})
			defer s.Close()
			rows := make([]store.LogRow, 0, 10_000)
			for i := range n {
				rows = append(rows, benchRow(base, i))
				if len(rows) == cap(rows) || i == n-1 {
					if err := s.AppendLogs(ctx, rows); err != nil {
						b.Fatal(err)
					}
					rows = rows[:0]
				}
			}
			mid := base.Add(time.Duration(n/2) * time.Second)
			for _, c := range []struct {
				name   string
				filter store.LogFilter
				middle bool
			}{
				{"first", store.LogFilter{}, false},
				{"middle", store.LogFilter{}, true},
				{"provider/middle", store.LogFilter{Provider: "openai"}, true},
				{"provider+status/middle", store.LogFilter{Provider: "openai", Status: 200}, true},
			} {
				var after store.Position
				if c.middle {
					f := c.filter
					f.Until = mid
					_, next, _, err := s.ListLogs(ctx, "org-bench", f, 1, nil)
					if err != nil || next == nil {
						b.Fatalf("middle position: %v", err)
					}
					after = next
				}
				b.Run(c.name, func(b *testing.B) {
					b.ReportAllocs()
					for b.Loop() {
						rows, _, more, err := s.ListLogs(ctx, "org-bench", c.filter, 50, after)
						if err != nil || len(rows) != 50 || !more {
							b.Fatalf("ListLogs: %d rows, more=%v, err=%v", len(rows), more, err)
						}
					}
				})
			}
		})
	}
}
