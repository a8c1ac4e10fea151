package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voxgate/voxgate/gateway/store"
)

// usageUpsert adds one rolled-up group to usage_daily.
const usageUpsert = `INSERT INTO usage_daily AS u (org_id, day, provider, model, key_id, requests, errors,
	server_errors, characters, credits, audio_ms, cache_hits, latency_sum, latency_hist, cost)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
ON CONFLICT (org_id, day, provider, model, key_id) DO UPDATE SET
	requests = u.requests + excluded.requests,
	errors = u.errors + excluded.errors,
	server_errors = u.server_errors + excluded.server_errors,
	characters = u.characters + excluded.characters,
	credits = u.credits + excluded.credits,
	audio_ms = u.audio_ms + excluded.audio_ms,
	cache_hits = u.cache_hits + excluded.cache_hits,
	latency_sum = u.latency_sum + excluded.latency_sum,
	latency_hist = voxgate_hist_add(u.latency_hist, excluded.latency_hist),
	cost = u.cost + excluded.cost`

// addUsage upserts a batch's rollup in tx, one round trip for the batch.
// The groups come sorted (store.RollUp), so every instance locks rollup
// rows in the same order and concurrent batches cannot deadlock.
func addUsage(ctx context.Context, tx pgx.Tx, rows []store.OrgUsage) error {
	if len(rows) == 0 {
		return nil
	}
	var b pgx.Batch
	for i := range rows {
		u := &rows[i]
		c := &u.Row.UsageCounts
		b.Queue(usageUpsert, u.OrgID, dayNumber(u.Row.Day), u.Row.Provider, u.Row.Model, u.Row.KeyID,
			c.Requests, c.Errors, c.ServerErrors, c.Characters, c.Credits, c.AudioMS, c.CacheHits,
			c.LatencyMSSum, c.Latency[:], c.Cost)
	}
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return fmt.Errorf("usage rollup: %w", err)
	}
	return nil
}

// dayNumber is a UTC midnight as days since the epoch.
func dayNumber(t time.Time) int32 { return int32(t.Unix() / 86400) }

// Usage implements store.UsageStore: one range scan of usage_daily's
// primary key.
func (s *Store) Usage(ctx context.Context, orgID string, since, until time.Time) ([]store.UsageRow, error) {
	if err := store.CheckUsageWindow(since, until); err != nil {
		return nil, fmt.Errorf("store: usage: %w", err)
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	rs, err := s.pool.Query(ctx, `SELECT day, provider, model, key_id, requests, errors, server_errors,
		characters, credits, audio_ms, cache_hits, latency_sum, latency_hist, cost
		FROM usage_daily WHERE org_id = $1 AND day >= $2 AND day < $3
		ORDER BY day, provider, model, key_id`, orgID, dayNumber(since), dayNumber(until))
	if err != nil {
		return nil, fmt.Errorf("store: usage: %w", classify(err))
	}
	defer rs.Close()
	var out []store.UsageRow
	for rs.Next() {
		var r store.UsageRow
		var day int32
		var hist []int64
		c := &r.UsageCounts
		if err := rs.Scan(&day, &r.Provider, &r.Model, &r.KeyID, &c.Requests, &c.Errors, &c.ServerErrors,
			&c.Characters, &c.Credits, &c.AudioMS, &c.CacheHits, &c.LatencyMSSum, &hist, &c.Cost); err != nil {
			return nil, fmt.Errorf("store: usage: %w", classify(err))
		}
		r.Day = time.Unix(int64(day)*86400, 0).UTC()
		copy(c.Latency[:], hist)
		out = append(out, r)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("store: usage: %w", classify(err))
	}
	return out, nil
}

// purgeUsage deletes the rollup rows of days before cutoff.
func (s *Store) purgeUsage(ctx context.Context, cutoff time.Time) error {
	ctx, cancel := s.op(ctx)
	defer cancel()
	if _, err := s.pool.Exec(ctx, "DELETE FROM usage_daily WHERE day < $1", dayNumber(store.UsageDayOf(cutoff))); err != nil {
		return fmt.Errorf("store: purge usage: %w", classify(err))
	}
	return nil
}
