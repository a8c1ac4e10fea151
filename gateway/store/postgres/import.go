package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/voxgate/voxgate/gateway/store"
)

// Import support for voxgate migrate: a batch of log rows and the
// migration's progress marker commit together, so a migration that stops
// anywhere resumes without copying a row twice; a job and its chunks go
// in one transaction, skipped when the job is there.

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

// ImportJob stores job j and its chunks as they are, in one transaction:
// every field is kept (state, counters, times, lease, webhook state,
// deliveries and warnings), where CreateJob makes a new queued job. A
// taken id fails with store.ErrExists and changes nothing, so a migration
// run again skips the jobs it copied, and never overwrites what a gateway
// on this database has done with them since.
func (s *Store) ImportJob(ctx context.Context, j *store.Job, chunks []store.JobChunk) error {
	if j == nil {
		return errors.New("store: import job: nil job")
	}
	if err := requireIDs("job id", j.ID, "org id", j.OrgID); err != nil {
		return err
	}
	if err := j.CheckText(); err != nil {
		return fmt.Errorf("store: import job %s: %w", j.ID, err)
	}
	if err := (&store.JobFinish{ErrorDetail: j.ErrorDetail, Warnings: j.Warnings}).CheckText(); err != nil {
		return fmt.Errorf("store: import job %s: %w", j.ID, err)
	}
	if err := store.CheckJobChunks(chunks); err != nil {
		return fmt.Errorf("store: import job %s: %w", j.ID, err)
	}
	if len(chunks) != j.ChunksTotal {
		return fmt.Errorf("store: import job %s: %d chunks, the job says %d", j.ID, len(chunks), j.ChunksTotal)
	}
	ds := make([]deliveryRecord, 0, len(j.Deliveries))
	for _, d := range j.Deliveries {
		if err := store.CheckText("error", d.Error); err != nil {
			return fmt.Errorf("store: import job %s: delivery: %w", j.ID, err)
		}
		ds = append(ds, deliveryRecord{AtNS: nanos(d.At), Event: d.Event, Status: d.Status, Error: d.Error})
	}
	deliveries, err := json.Marshal(ds)
	if err != nil {
		return fmt.Errorf("store: import job %s: %w", j.ID, err)
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO jobs (`+jobColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24)
			ON CONFLICT (id) DO NOTHING`,
			j.ID, j.OrgID, j.KeyID, j.State, nonNilBytes(j.Spec), j.ChunksTotal, j.ChunksDone, j.Characters, j.Credits,
			j.AudioMS, j.Fallbacks, j.ErrorCode, j.ErrorDetail, j.OutputBytes, nanos(j.CreatedAt), nanos(j.UpdatedAt),
			optNanos(j.StartedAt), optNanos(j.FinishedAt), j.LeaseOwner, optNanos(j.LeaseUntil), j.Leases,
			optNanos(j.WebhookDue), deliveries, nonNilStrings(j.Warnings))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return store.ErrExists
		}
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"job_chunks"},
			[]string{"job_id", "idx", "chapter", "voice", "text", "done", "audio_ms", "credits", "characters", "served", "fallback"},
			pgx.CopyFromSlice(len(chunks), func(i int) ([]any, error) {
				c := &chunks[i]
				return []any{j.ID, c.Index, c.Chapter, c.Voice, c.Text, c.Done, c.AudioMS, c.Credits, c.Characters, c.Served, c.Fallback}, nil
			}))
		return err
	})
	if errors.Is(err, store.ErrExists) {
		return fmt.Errorf("store: import job %s: %w", j.ID, err)
	}
	if err != nil {
		return fmt.Errorf("store: import job %s: %w", j.ID, classify(err))
	}
	return nil
}
