package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voxgate/voxgate/gateway/store"
)

const day = 24 * time.Hour

// logColumns are the columns COPY fills; seq comes from its sequence.
var logColumns = []string{
	"org_id", "ts", "request_id", "parent_request_id", "path", "status", "provider", "model",
	"voice_id", "voice_ref", "char_count", "credits_used", "latency_ms", "error_code",
	"error_detail", "provider_options", "moderation_decision", "moderation_reason_type",
	"moderation_reason_detail", "moderation_confidence", "moderation_latency_ms", "time_to_first_audio_ms",
	"key_id", "audio_ms", "cache", "transcoded", "sanitized", "provenance",
	"cost", "currency", "cost_estimate", "text_wait_ms",
}

const logSelect = `SELECT ts, seq, request_id, parent_request_id, path, status, provider, model,
	voice_id, voice_ref, char_count, credits_used, latency_ms, error_code, error_detail,
	provider_options, moderation_decision, moderation_reason_type, moderation_reason_detail,
	moderation_confidence, moderation_latency_ms, time_to_first_audio_ms, key_id, audio_ms, cache,
	transcoded, sanitized, provenance, cost, currency, cost_estimate, text_wait_ms FROM request_logs`

// scanLogRow reads one row of logSelect into r, of organization orgID,
// and returns its ts and seq (the row's position, for cursors).
func scanLogRow(row pgx.Row, r *store.LogRow, orgID string) (ts, seq int64, err error) {
	var status, chars, credits int32
	if err := row.Scan(&ts, &seq, &r.RequestID, &r.ParentRequestID, &r.Path, &status, &r.Provider, &r.Model,
		&r.VoiceID, &r.VoiceRef, &chars, &credits, &r.LatencyMS, &r.ErrorCode, &r.ErrorDetail,
		&r.ProviderOptions, &r.ModerationDecision, &r.ModerationReasonType, &r.ModerationReasonDetail,
		&r.ModerationConfidence, &r.ModerationLatencyMS, &r.TimeToFirstAudioMS, &r.KeyID, &r.AudioMS, &r.Cache,
		&r.Transcoded, &r.Sanitized, &r.Provenance, &r.Cost, &r.Currency, &r.CostEstimate, &r.TextWaitMS); err != nil {
		return 0, 0, err
	}
	r.OrgID, r.TS = orgID, fromNanos(ts)
	r.Status, r.CharCount, r.CreditsUsed = int(status), int(chars), int(credits)
	return ts, seq, nil
}

// partitions remembers which day partitions exist, so a batch checks the
// database only for a day it has not seen (once a day per instance).
type partitions struct {
	mu   sync.Mutex
	days map[int64]bool // day number since the epoch -> exists
}

func newPartitions() *partitions { return &partitions{days: map[int64]bool{}} }

func dayOf(tsNS int64) int64 {
	d := tsNS / int64(day)
	if tsNS < 0 && tsNS%int64(day) != 0 {
		d--
	}
	return d
}

func partitionName(d int64) string {
	return "request_logs_" + time.Unix(d*int64(day/time.Second), 0).UTC().Format("20060102")
}

// ensurePartitions creates the day partitions the given days need, under
// an advisory lock so instances creating the same day do not collide.
func (s *Store) ensurePartitions(ctx context.Context, days map[int64]struct{}) error {
	s.parts.mu.Lock()
	var missing []int64
	for d := range days {
		if !s.parts.days[d] {
			missing = append(missing, d)
		}
	}
	s.parts.mu.Unlock()
	if len(missing) == 0 {
		return nil
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrateLock+1); err != nil {
			return err
		}
		for _, d := range missing {
			lo, hi := d*int64(day), (d+1)*int64(day)
			// Names and bounds are computed here from integers, never
			// from input, so building the DDL as text is safe.
			sql := fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s PARTITION OF request_logs FOR VALUES FROM (%d) TO (%d)", partitionName(d), lo, hi)
			if _, err := tx.Exec(ctx, sql); err != nil {
				return fmt.Errorf("create partition %s: %w", partitionName(d), err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.parts.mu.Lock()
	for _, d := range missing {
		s.parts.days[d] = true
	}
	s.parts.mu.Unlock()
	return nil
}

// AppendLogs implements store.LogStore: the batch goes in with COPY, in
// one transaction, after its days' partitions exist.
func (s *Store) AppendLogs(ctx context.Context, rows []store.LogRow) error {
	if len(rows) == 0 {
		return nil
	}
	for i := range rows {
		if rows[i].OrgID == "" {
			return fmt.Errorf("store: append logs: row %d (request %q) has no org id", i, rows[i].RequestID)
		}
		if err := rows[i].CheckText(); err != nil {
			return fmt.Errorf("store: append logs: row %d: %w", i, err)
		}
	}
	now := nanos(s.now())
	days := map[int64]struct{}{}
	for i := range rows {
		ts := now
		if !rows[i].TS.IsZero() {
			ts = nanos(rows[i].TS)
		}
		days[dayOf(ts)] = struct{}{}
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	if err := s.ensurePartitions(ctx, days); err != nil {
		return fmt.Errorf("store: append %d log rows: %w", len(rows), classify(err))
	}
	src := &logSource{rows: rows, now: now, i: -1}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"request_logs"}, logColumns, src); err != nil {
			return err
		}
		return addUsage(ctx, tx, store.RollUp(rows, fromNanos(now)))
	})
	if err != nil {
		// A partition dropped by another instance's purge since we cached
		// it: forget the cache so the next batch recreates it.
		s.parts.mu.Lock()
		clear(s.parts.days)
		s.parts.mu.Unlock()
		return fmt.Errorf("store: append %d log rows: %w", len(rows), classify(err))
	}
	return nil
}

// logSource feeds COPY from the batch without building [][]any up front.
type logSource struct {
	rows []store.LogRow
	now  int64
	i    int
	vals [32]any
}

func (l *logSource) Next() bool { l.i++; return l.i < len(l.rows) }

func (l *logSource) Values() ([]any, error) {
	r := &l.rows[l.i]
	ts := l.now
	if !r.TS.IsZero() {
		ts = nanos(r.TS)
	}
	l.vals = [32]any{
		r.OrgID, ts, r.RequestID, r.ParentRequestID, r.Path, int32(r.Status), r.Provider, r.Model,
		r.VoiceID, r.VoiceRef, int32(r.CharCount), int32(r.CreditsUsed), r.LatencyMS, r.ErrorCode,
		r.ErrorDetail, r.ProviderOptions, r.ModerationDecision, r.ModerationReasonType,
		r.ModerationReasonDetail, r.ModerationConfidence, r.ModerationLatencyMS, r.TimeToFirstAudioMS,
		r.KeyID, r.AudioMS, r.Cache, r.Transcoded, r.Sanitized, r.Provenance,
		r.Cost, r.Currency, r.CostEstimate, r.TextWaitMS,
	}
	return l.vals[:], nil
}

func (l *logSource) Err() error { return nil }

// ListLogs implements store.LogStore. Every equality filter is a column of
// one of the indexes, and the time range and position are bounds on its
// (ts, seq) suffix, so the page is one index range scan.
func (s *Store) ListLogs(ctx context.Context, orgID string, f store.LogFilter, limit int, after store.Position) ([]store.LogRow, store.Position, bool, error) {
	if limit < 1 {
		return nil, nil, false, fmt.Errorf("store: list logs: limit %d must be positive", limit)
	}
	since := s.now().Add(-s.retention)
	if f.Since.After(since) {
		since = f.Since
	}
	if !f.Until.IsZero() && !f.Until.After(since) {
		return nil, nil, false, nil
	}
	var q strings.Builder
	q.WriteString(logSelect)
	q.WriteString(" WHERE org_id = $1 AND ts >= $2")
	args := []any{orgID, nanos(since)}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if f.Provider != "" {
		q.WriteString(" AND provider = " + arg(f.Provider))
	}
	if f.Status != 0 {
		q.WriteString(" AND status = " + arg(int32(f.Status)))
	}
	if f.ParentRequestID != "" {
		q.WriteString(" AND parent_request_id = " + arg(f.ParentRequestID) + " AND parent_request_id <> ''")
	}
	if !f.Until.IsZero() {
		q.WriteString(" AND ts < " + arg(nanos(f.Until)))
	}
	if after != nil {
		ts, seq, err := decodeLogPosition(after)
		if err != nil {
			return nil, nil, false, fmt.Errorf("store: list logs: %w", err)
		}
		q.WriteString(" AND (ts, seq) < (" + arg(ts) + ", " + arg(seq) + ")")
	}
	q.WriteString(" ORDER BY ts DESC, seq DESC LIMIT " + arg(limit+1))

	ctx, cancel := s.op(ctx)
	defer cancel()
	rs, err := s.pool.Query(ctx, q.String(), args...)
	if err != nil {
		return nil, nil, false, fmt.Errorf("store: list logs: %w", classify(err))
	}
	defer rs.Close()
	rows := make([]store.LogRow, 0, min(limit, 256))
	var lastTS, lastSeq int64
	more := false
	for rs.Next() {
		if len(rows) == limit {
			more = true
			break
		}
		var r store.LogRow
		ts, seq, err := scanLogRow(rs, &r, orgID)
		if err != nil {
			return nil, nil, false, fmt.Errorf("store: list logs: %w", classify(err))
		}
		rows = append(rows, r)
		lastTS, lastSeq = ts, seq
	}
	if err := rs.Err(); err != nil {
		return nil, nil, false, fmt.Errorf("store: list logs: %w", classify(err))
	}
	if len(rows) == 0 {
		return nil, nil, false, nil
	}
	return rows, encodeLogPosition(lastTS, lastSeq), more, nil
}

// PurgeLogs implements store.LogStore. Partitions wholly older than the
// cutoff are dropped (no row-by-row delete, no vacuum debt); the one
// partition the cutoff falls inside loses its old rows with a DELETE.
func (s *Store) PurgeLogs(ctx context.Context, olderThan time.Time) (int, error) {
	if err := s.purgeUsage(ctx, s.now().Add(-store.UsageRetention)); err != nil {
		return 0, err
	}
	cut := nanos(olderThan)
	if err := s.purgeFingerprints(ctx, cut); err != nil {
		return 0, err
	}
	cutDay := dayOf(cut)
	rows, err := s.pool.Query(ctx, `SELECT c.relname FROM pg_inherits i
		JOIN pg_class c ON c.oid = i.inhrelid
		JOIN pg_class p ON p.oid = i.inhparent
		WHERE p.relname = 'request_logs' AND c.relnamespace = p.relnamespace`)
	if err != nil {
		return 0, fmt.Errorf("store: purge logs: %w", classify(err))
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("store: purge logs: %w", classify(err))
	}
	total := 0
	for _, name := range names {
		t, err := time.Parse("20060102", strings.TrimPrefix(name, "request_logs_"))
		if err != nil {
			continue // Not one of ours.
		}
		d := dayOf(t.UnixNano())
		switch {
		case d < cutDay:
			n, err := s.dropPartition(ctx, name, d)
			total += n
			if err != nil {
				return total, err
			}
		case d == cutDay:
			octx, cancel := s.op(ctx)
			tag, err := s.pool.Exec(octx, "DELETE FROM "+pgx.Identifier{name}.Sanitize()+" WHERE ts < $1", cut)
			cancel()
			if err != nil {
				return total, fmt.Errorf("store: purge logs of %s: %w", name, classify(err))
			}
			total += int(tag.RowsAffected())
		}
	}
	return total, nil
}

// dropPartition counts and drops one day's partition in a transaction.
func (s *Store) dropPartition(ctx context.Context, name string, d int64) (int, error) {
	octx, cancel := s.op(ctx)
	defer cancel()
	n := 0
	err := pgx.BeginFunc(octx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(octx, "SELECT pg_advisory_xact_lock($1)", migrateLock+1); err != nil {
			return err
		}
		if err := tx.QueryRow(octx, "SELECT count(*) FROM "+pgx.Identifier{name}.Sanitize()).Scan(&n); err != nil {
			return err
		}
		_, err := tx.Exec(octx, "DROP TABLE "+pgx.Identifier{name}.Sanitize())
		return err
	})
	if err != nil {
		var noTable interface{ SQLState() string }
		if errors.As(err, &noTable) && noTable.SQLState() == "42P01" {
			return 0, nil // Another instance dropped it first.
		}
		return 0, fmt.Errorf("store: purge logs, drop %s: %w", name, classify(err))
	}
	s.parts.mu.Lock()
	delete(s.parts.days, d)
	s.parts.mu.Unlock()
	return n, nil
}
