package postgres_test

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voxgate/voxgate/gateway/store"
)

// TestVersion1DatabaseGetsItsUsageRollup builds a database as schema
// version 1 left it, with log rows of the old shape, and checks that
// migration 2 keeps the rows readable and builds the same rollup that
// AppendLogs would have.
func TestVersion1DatabaseGetsItsUsageRollup(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var rows []store.LogRow
	for i := range 300 {
		rows = append(rows, store.LogRow{
			RequestID: fmt.Sprintf("r%d", i), OrgID: []string{"a", "b"}[i%2], TS: now.Add(-time.Duration(i) * 17 * time.Minute),
			Provider: []string{"espeak", "openai"}[i%3%2], Model: "m", Status: []int{200, 502, 422}[i%3],
			CharCount: i, CreditsUsed: i % 4, LatencyMS: int64(i * 213), ParentRequestID: []string{"", "", "", "p"}[i%4],
		})
	}
	// The reference: the same rows appended through the current code.
	ref := open(t, server.NewDatabaseT(t), store.Options{Now: func() time.Time { return now }})
	if err := ref.AppendLogs(ctx, rows); err != nil {
		t.Fatal(err)
	}

	dsn := server.NewDatabaseT(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	v1, err := os.ReadFile("migrations/0001_initial.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		"CREATE TABLE voxgate_schema_version (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())",
		string(v1),
		"INSERT INTO voxgate_schema_version (version) VALUES (1)",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	for d := -10; d <= 0; d++ {
		day := now.Truncate(store.UsageDay).Add(time.Duration(d) * store.UsageDay)
		sql := fmt.Sprintf("CREATE TABLE request_logs_%s PARTITION OF request_logs FOR VALUES FROM (%d) TO (%d)",
			day.Format("20060102"), day.UnixNano(), day.Add(store.UsageDay).UnixNano())
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range rows {
		_, err := conn.Exec(ctx, `INSERT INTO request_logs (org_id, ts, request_id, parent_request_id, path, status, provider, model,
			voice_id, voice_ref, char_count, credits_used, latency_ms, error_code, error_detail, provider_options,
			moderation_decision, moderation_reason_type, moderation_reason_detail, moderation_confidence, moderation_latency_ms)
			VALUES ($1, $2, $3, $4, '', $5, $6, $7, '', '', $8, $9, $10, '', '', '', '', '', '', 0, 0)`,
			r.OrgID, r.TS.UnixNano(), r.RequestID, r.ParentRequestID, r.Status, r.Provider, r.Model, r.CharCount, r.CreditsUsed, r.LatencyMS)
		if err != nil {
			t.Fatal(err)
		}
	}

	s := open(t, dsn, store.Options{Now: func() time.Time { return now }})
	since, until := now.Truncate(store.UsageDay).Add(-10*store.UsageDay), now.Truncate(store.UsageDay).Add(store.UsageDay)
	for _, org := range []string{"a", "b"} {
		want, err := ref.Usage(ctx, org, since, until)
		if err != nil || len(want) == 0 {
			t.Fatalf("reference usage of %s: %d rows, %v", org, len(want), err)
		}
		got, err := s.Usage(ctx, org, since, until)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("usage of %s after migration 2 (%v):\n got %+v\nwant %+v", org, err, got, want)
		}
		logs, _, _, err := s.ListLogs(ctx, org, store.LogFilter{}, 200, nil)
		if err != nil || len(logs) != 150 || logs[0].KeyID != "" || logs[0].AudioMS != 0 {
			t.Fatalf("old rows after migration 2: %d rows, %v", len(logs), err)
		}
	}
}
