package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/voxgate/voxgate/gateway/store"
)

// Import support for voxgate migrate: a batch of log rows and the
// migration's progress marker commit together, so a migration that stops
// anywhere resumes without copying a row twice.

// Checkpoint returns the progress marker name holds ("" when none).
func (s *Store) Checkpoint(ctx context.Context, name string) ([]byte, error) {
	var v []byte
	err := s.pool.QueryRow(ctx, "SELECT value FROM voxgate_meta WHERE name = $1", "migrate/"+name).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: read checkpoint %s: %w", name, classify(err))
	}
	return v, nil
}

// ImportLogs appends rows and sets checkpoint name to value in one
// transaction.
func (s *Store) ImportLogs(ctx context.Context, rows []store.LogRow, name string, value []byte) error {
	days := map[int64]struct{}{}
	now := nanos(s.now())
	for i := range rows {
		if rows[i].OrgID == "" {
			return fmt.Errorf("store: import logs: row %d has no org id", i)
		}
		if err := rows[i].CheckText(); err != nil {
			return fmt.Errorf("store: import logs: row %d: %w", i, err)
		}
		ts := now
		if !rows[i].TS.IsZero() {
			ts = nanos(rows[i].TS)
		}
		days[dayOf(ts)] = struct{}{}
	}
	if err := s.ensurePartitions(ctx, days); err != nil {
		return fmt.Errorf("store: import logs: %w", classify(err))
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if len(rows) > 0 {
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"request_logs"}, logColumns, &logSource{rows: rows, now: now, i: -1}); err != nil {
				return err
			}
			if err := addUsage(ctx, tx, store.RollUp(rows, fromNanos(now))); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, "INSERT INTO voxgate_meta (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value", "migrate/"+name, value)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: import logs: %w", classify(err))
	}
	return nil
}
