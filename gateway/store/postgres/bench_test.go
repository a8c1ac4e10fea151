package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
)

// BenchmarkAppendLogs is one batch of the request-log writer (512 rows,
// the default batch size) going into PostgreSQL: the COPY and the usage
// rollup's upserts in one transaction. Rows per second are reported.
func BenchmarkAppendLogs(b *testing.B) {
	s := open(b, server.NewDatabaseT(b), store.Options{})
	ctx := context.Background()
	rows := make([]store.LogRow, 512)
	now := time.Now().UTC()
	for i := range rows {
		rows[i] = store.LogRow{
			RequestID: fmt.Sprintf("r%d", i), OrgID: "o", TS: now, Path: "/v1/audio/speech", Status: 200,
			Provider: []string{"espeak", "openai", "elevenlabs", "cartesia"}[i%4], Model: "m", KeyID: []string{"k1", "k2"}[i%2],
			CharCount: 120, CreditsUsed: 1, LatencyMS: int64(40 + i%300), AudioMS: 2500,
		}
	}
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		if err := s.AppendLogs(ctx, rows); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(rows))/time.Since(start).Seconds(), "rows/s")
}
