package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/voxgate/voxgate/gateway/store"
)

// Long-form jobs (migrations/0013_jobs.sql). LeaseJob takes the oldest job
// that needs a worker with SELECT ... FOR UPDATE SKIP LOCKED: instances
// leasing at the same moment skip each other's candidate rows instead of
// waiting on them, and the row lock held until the UPDATE commits means
// two never get the same job. A dedicated queue library (river, for one)
// would bring its own tables, workers and migrations for what is here one
// statement, and would not know the chunk checkpoints; so it is plain SQL.

const jobColumns = "id, org_id, key_id, state, spec, chunks_total, chunks_done, characters, credits, audio_ms, fallbacks, " +
	"error_code, error_detail, output_bytes, created_ns, updated_ns, started_ns, finished_ns, lease_owner, lease_until_ns, " +
	"leases, webhook_due_ns, deliveries, warnings"

type deliveryRecord struct {
	AtNS   int64  `json:"at_ns"`
	Event  string `json:"event"`
	Status int    `json:"status,omitempty"`
	Error  string `json:"error,omitempty"`
}

// optNanos is t in nanoseconds, 0 for the zero time.
func optNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// optTime is the time of n nanoseconds, zero for 0.
func optTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return fromNanos(n)
}

func scanJob(row pgx.Row) (*store.Job, error) {
	var j store.Job
	var created, updated, started, finished, leaseUntil, webhookDue int64
	var deliveries []byte
	err := row.Scan(&j.ID, &j.OrgID, &j.KeyID, &j.State, &j.Spec, &j.ChunksTotal, &j.ChunksDone, &j.Characters, &j.Credits,
		&j.AudioMS, &j.Fallbacks, &j.ErrorCode, &j.ErrorDetail, &j.OutputBytes, &created, &updated, &started, &finished,
		&j.LeaseOwner, &leaseUntil, &j.Leases, &webhookDue, &deliveries, &j.Warnings)
	if err != nil {
		return nil, err
	}
	if len(j.Warnings) == 0 {
		j.Warnings = nil // none, as the other drivers read it
	}
	j.CreatedAt, j.UpdatedAt, j.StartedAt, j.FinishedAt = fromNanos(created), fromNanos(updated), optTime(started), optTime(finished)
	j.LeaseUntil, j.WebhookDue = optTime(leaseUntil), optTime(webhookDue)
	var ds []deliveryRecord
	if err := json.Unmarshal(deliveries, &ds); err != nil {
		return nil, fmt.Errorf("job %s deliveries: %w", j.ID, err)
	}
	for _, d := range ds {
		j.Deliveries = append(j.Deliveries, store.JobDelivery{At: fromNanos(d.AtNS), Event: d.Event, Status: d.Status, Error: d.Error})
	}
	if len(j.Spec) == 0 {
		j.Spec = nil
	}
	return &j, nil
}

// CreateJob implements store.JobStore: the job and its chunks in one
// transaction, the chunks copied in (COPY), so a job of thousands of
// chunks is one round trip for them.
func (s *Store) CreateJob(ctx context.Context, j *store.Job, chunks []store.JobChunk) error {
	if j == nil {
		return errors.New("store: nil job")
	}
	if err := requireIDs("job id", j.ID, "org id", j.OrgID); err != nil {
		return err
	}
	if err := j.CheckText(); err != nil {
		return fmt.Errorf("store: create job: %w", err)
	}
	if err := store.CheckJobChunks(chunks); err != nil {
		return fmt.Errorf("store: create job: %w", err)
	}
	if j.CreatedAt.IsZero() {
		j.CreatedAt = s.now().UTC()
	}
	if j.UpdatedAt.IsZero() {
		j.UpdatedAt = j.CreatedAt
	}
	j.State, j.ChunksTotal = store.JobQueued, len(chunks)
	ctx, cancel := s.op(ctx)
	defer cancel()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO jobs (id, org_id, key_id, state, spec, chunks_total, characters, created_ns, updated_ns)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			j.ID, j.OrgID, j.KeyID, j.State, nonNilBytes(j.Spec), j.ChunksTotal, j.Characters, nanos(j.CreatedAt), nanos(j.UpdatedAt))
		if err != nil {
			return err
		}
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"job_chunks"}, []string{"job_id", "idx", "chapter", "voice", "text"},
			pgx.CopyFromSlice(len(chunks), func(i int) ([]any, error) {
				c := &chunks[i]
				return []any{j.ID, c.Index, c.Chapter, c.Voice, c.Text}, nil
			}))
		return err
	})
	if err != nil {
		return fmt.Errorf("store: create job %s: %w", j.ID, classify(err))
	}
	return nil
}

// nonNilStrings is ss, or an empty array for none: pgx sends a nil slice
// as NULL, which a NOT NULL array column refuses.
func nonNilStrings(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}

func nonNilBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// GetJob implements store.JobStore.
func (s *Store) GetJob(ctx context.Context, orgID, id string) (*store.Job, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	j, err := scanJob(s.pool.QueryRow(ctx, `SELECT `+jobColumns+` FROM jobs WHERE org_id = $1 AND id = $2`, orgID, id))
	if err != nil {
		return nil, fmt.Errorf("store: get job %s: %w", id, noRows(err))
	}
	return j, nil
}

// ListJobs implements store.JobStore (index jobs_org_created).
func (s *Store) ListJobs(ctx context.Context, orgID string, limit int, after store.Position) ([]store.Job, store.Position, bool, error) {
	if limit <= 0 {
		return nil, nil, false, errors.New("store: list jobs: limit must be positive")
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	var rows pgx.Rows
	var err error
	if after == nil {
		rows, err = s.pool.Query(ctx, `SELECT `+jobColumns+` FROM jobs WHERE org_id = $1 ORDER BY created_ns DESC, id DESC LIMIT $2`, orgID, limit+1)
	} else {
		created, id, perr := store.ParseJobPosition(after)
		if perr != nil {
			return nil, nil, false, fmt.Errorf("store: list jobs: %w", perr)
		}
		rows, err = s.pool.Query(ctx, `SELECT `+jobColumns+` FROM jobs WHERE org_id = $1 AND (created_ns, id) < ($2, $3)
			ORDER BY created_ns DESC, id DESC LIMIT $4`, orgID, created, id, limit+1)
	}
	if err != nil {
		return nil, nil, false, fmt.Errorf("store: list jobs: %w", classify(err))
	}
	defer rows.Close()
	out := []store.Job{}
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, nil, false, fmt.Errorf("store: list jobs: %w", classify(err))
		}
		out = append(out, *j)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, false, fmt.Errorf("store: list jobs: %w", classify(err))
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	var next store.Position
	if len(out) > 0 {
		next = store.JobPosition(&out[len(out)-1])
	}
	return out, next, more, nil
}

// CancelJob implements store.JobStore.
func (s *Store) CancelJob(ctx context.Context, orgID, id string) (*store.Job, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	now := nanos(s.now())
	_, err := s.pool.Exec(ctx, `UPDATE jobs SET state = 'cancelled', finished_ns = $3, updated_ns = $3, lease_owner = '', lease_until_ns = 0
		WHERE org_id = $1 AND id = $2 AND state IN ('queued', 'running')`, orgID, id, now)
	if err != nil {
		return nil, fmt.Errorf("store: cancel job %s: %w", id, classify(err))
	}
	return s.GetJob(ctx, orgID, id)
}

// LeaseJob implements store.JobStore. The candidate is locked with SKIP
// LOCKED; the bound per organization counts the organization's running
// jobs with live leases at the moment of the statement, so instances
// leasing for one organization at the very same instant may each take
// one job past it (it bounds steady load, not a race of a few
// milliseconds).
func (s *Store) LeaseJob(ctx context.Context, owner string, d time.Duration, perOrg int) (*store.Job, error) {
	if owner == "" {
		return nil, errors.New("store: lease job: owner is required")
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	now := nanos(s.now())
	j, err := scanJob(s.pool.QueryRow(ctx, `WITH c AS (
			SELECT j.id FROM jobs j
			WHERE ((j.state = 'queued' OR (j.state = 'running' AND j.lease_until_ns < $1))
			       AND ($3 <= 0 OR (SELECT count(*) FROM jobs r WHERE r.org_id = j.org_id AND r.state = 'running' AND r.lease_until_ns >= $1) < $3))
			   OR (j.state IN ('succeeded', 'failed', 'cancelled') AND j.webhook_due_ns > 0 AND j.webhook_due_ns <= $1 AND j.lease_until_ns < $1)
			ORDER BY j.created_ns, j.id
			LIMIT 1
			FOR UPDATE OF j SKIP LOCKED)
		UPDATE jobs SET
			state = CASE WHEN jobs.state = 'queued' THEN 'running' ELSE jobs.state END,
			started_ns = CASE WHEN jobs.started_ns = 0 AND jobs.state IN ('queued', 'running') THEN $1 ELSE jobs.started_ns END,
			lease_owner = $2, lease_until_ns = $1::bigint + $4::bigint, updated_ns = $1, leases = jobs.leases + 1
		FROM c WHERE jobs.id = c.id
		RETURNING `+prefixed("jobs.", jobColumns), now, owner, perOrg, int64(d)))
	if err != nil {
		return nil, fmt.Errorf("store: lease job: %w", noRows(err))
	}
	return j, nil
}

// noRows is classify, with no row found ErrNotFound.
func noRows(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ErrNotFound
	}
	return classify(err)
}

// prefixed qualifies every column of a column list with p.
func prefixed(p, cols string) string {
	out := p
	for i := 0; i < len(cols); i++ {
		out += string(cols[i])
		if cols[i] == ' ' && i > 0 && cols[i-1] == ',' {
			out += p
		}
	}
	return out
}

// RenewJobLease implements store.JobStore.
func (s *Store) RenewJobLease(ctx context.Context, id, owner string, d time.Duration) (*store.Job, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	now := nanos(s.now())
	j, err := scanJob(s.pool.QueryRow(ctx, `UPDATE jobs SET lease_until_ns = $3::bigint + $4::bigint, updated_ns = $3
		WHERE id = $1 AND lease_owner = $2 AND state = 'running' RETURNING `+jobColumns, id, owner, now, int64(d)))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("store: renew job %s: %w", id, store.ErrLeaseLost)
	}
	if err != nil {
		return nil, fmt.Errorf("store: renew job %s: %w", id, classify(err))
	}
	return j, nil
}

// JobChunks implements store.JobStore.
func (s *Store) JobChunks(ctx context.Context, id string, from, limit int) ([]store.JobChunk, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM jobs WHERE id = $1)`, id).Scan(&exists); err != nil {
		return nil, fmt.Errorf("store: job %s chunks: %w", id, classify(err))
	}
	if !exists {
		return nil, fmt.Errorf("store: job %s chunks: %w", id, store.ErrNotFound)
	}
	rows, err := s.pool.Query(ctx, `SELECT idx, chapter, voice, text, done, audio_ms, credits, characters, served, fallback
		FROM job_chunks WHERE job_id = $1 AND idx >= $2 ORDER BY idx LIMIT $3`, id, max(from, 0), max(limit, 0))
	if err != nil {
		return nil, fmt.Errorf("store: job %s chunks: %w", id, classify(err))
	}
	defer rows.Close()
	var out []store.JobChunk
	for rows.Next() {
		var c store.JobChunk
		if err := rows.Scan(&c.Index, &c.Chapter, &c.Voice, &c.Text, &c.Done, &c.AudioMS, &c.Credits, &c.Characters, &c.Served, &c.Fallback); err != nil {
			return nil, fmt.Errorf("store: job %s chunks: %w", id, classify(err))
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: job %s chunks: %w", id, classify(err))
	}
	return out, nil
}

// CheckpointJobChunk implements store.JobStore: the chunk and the job's
// counters in one transaction, the job's row locked first so that the
// lease is checked and held while the chunk is written.
func (s *Store) CheckpointJobChunk(ctx context.Context, id, owner string, c *store.JobChunk) error {
	if err := c.CheckText(); err != nil {
		return fmt.Errorf("store: checkpoint job %s: %w", id, err)
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var held bool
		err := tx.QueryRow(ctx, `SELECT lease_owner = $2 AND state = 'running' FROM jobs WHERE id = $1 FOR UPDATE`, id, owner).Scan(&held)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && !held) {
			return store.ErrLeaseLost
		}
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE job_chunks SET done = true, audio_ms = $3, credits = $4, characters = $5, served = $6, fallback = $7
			WHERE job_id = $1 AND idx = $2 AND NOT done`, id, c.Index, c.AudioMS, c.Credits, c.Characters, c.Served, c.Fallback)
		if err != nil || tag.RowsAffected() == 0 {
			return err // done already (or no such chunk): nothing to count
		}
		fb := 0
		if c.Fallback {
			fb = 1
		}
		_, err = tx.Exec(ctx, `UPDATE jobs SET chunks_done = chunks_done + 1, credits = credits + $2, audio_ms = audio_ms + $3,
			fallbacks = fallbacks + $4, updated_ns = $5 WHERE id = $1`, id, c.Credits, c.AudioMS, fb, nanos(s.now()))
		return err
	})
	if err != nil {
		if errors.Is(err, store.ErrLeaseLost) {
			return fmt.Errorf("store: checkpoint job %s: %w", id, err)
		}
		return fmt.Errorf("store: checkpoint job %s: %w", id, classify(err))
	}
	return nil
}

// FinishJob implements store.JobStore.
func (s *Store) FinishJob(ctx context.Context, id, owner string, f store.JobFinish) error {
	if err := f.CheckText(); err != nil {
		return fmt.Errorf("store: finish job %s: %w", id, err)
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	now := nanos(s.now())
	tag, err := s.pool.Exec(ctx, `UPDATE jobs SET state = $3, error_code = $4, error_detail = $5, output_bytes = $6, webhook_due_ns = $7,
		finished_ns = $8, updated_ns = $8, lease_owner = '', lease_until_ns = 0, warnings = $9
		WHERE id = $1 AND lease_owner = $2 AND state = 'running'`, id, owner, f.State, f.ErrorCode, f.ErrorDetail, f.OutputBytes,
		optNanos(f.WebhookDue), now, nonNilStrings(f.Warnings))
	if err != nil {
		return fmt.Errorf("store: finish job %s: %w", id, classify(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("store: finish job %s: %w", id, store.ErrLeaseLost)
	}
	return nil
}

// RecordJobDelivery implements store.JobStore.
func (s *Store) RecordJobDelivery(ctx context.Context, id, owner string, d store.JobDelivery, next time.Time) error {
	if err := store.CheckText("error", d.Error); err != nil {
		return fmt.Errorf("store: job %s delivery: %w", id, err)
	}
	rec, err := json.Marshal([]deliveryRecord{{AtNS: nanos(d.At), Event: d.Event, Status: d.Status, Error: d.Error}})
	if err != nil {
		return err
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	tag, err := s.pool.Exec(ctx, `UPDATE jobs SET deliveries = deliveries || $3::jsonb, webhook_due_ns = $4, updated_ns = $5,
		lease_owner = '', lease_until_ns = 0 WHERE id = $1 AND lease_owner = $2`, id, owner, rec, optNanos(next), nanos(s.now()))
	if err != nil {
		return fmt.Errorf("store: job %s delivery: %w", id, classify(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("store: job %s delivery: %w", id, store.ErrLeaseLost)
	}
	return nil
}

// DeleteJob implements store.JobStore: one statement, so a job that
// another instance finishes or leases meanwhile is seen as it is; its
// chunks go with it (ON DELETE CASCADE).
func (s *Store) DeleteJob(ctx context.Context, orgID, id string) (*store.Job, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	j, err := scanJob(s.pool.QueryRow(ctx, `DELETE FROM jobs WHERE org_id = $1 AND id = $2
		AND state IN ('succeeded', 'failed', 'cancelled') RETURNING `+jobColumns, orgID, id))
	if err == nil {
		return j, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("store: delete job %s: %w", id, classify(err))
	}
	// Nothing deleted: no such job, or it is live.
	if _, gerr := s.GetJob(ctx, orgID, id); gerr != nil {
		return nil, fmt.Errorf("store: delete job %s: %w", id, store.ErrNotFound)
	}
	return nil, fmt.Errorf("store: delete job %s: %w", id, store.ErrJobLive)
}

// ExpiredJobs implements store.JobStore (index jobs_finished).
func (s *Store) ExpiredJobs(ctx context.Context, before time.Time, limit int) ([]store.Job, error) {
	ctx, cancel := s.op(ctx)
	defer cancel()
	rows, err := s.pool.Query(ctx, `SELECT `+jobColumns+` FROM jobs WHERE finished_ns > 0 AND finished_ns < $1
		AND state IN ('succeeded', 'failed', 'cancelled') ORDER BY finished_ns, id LIMIT $2`, nanos(before), max(limit, 0))
	if err != nil {
		return nil, fmt.Errorf("store: expired jobs: %w", classify(err))
	}
	defer rows.Close()
	out := []store.Job{}
	for rows.Next() {
		j, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("store: expired jobs: %w", classify(err))
		}
		out = append(out, *j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: expired jobs: %w", classify(err))
	}
	return out, nil
}

// LeaseJobSweep implements store.JobStore: one upsert of the lease row
// (migrations/0018_job_retention.sql), which takes it only when it is
// owner's or has run out; the row lock makes two instances' upserts
// one after the other.
func (s *Store) LeaseJobSweep(ctx context.Context, owner string, d time.Duration) (bool, error) {
	if owner == "" {
		return false, errors.New("store: lease job sweep: owner is required")
	}
	ctx, cancel := s.op(ctx)
	defer cancel()
	now := nanos(s.now())
	tag, err := s.pool.Exec(ctx, `INSERT INTO job_sweeper (id, owner, until_ns) VALUES (1, $1, $2::bigint + $3::bigint)
		ON CONFLICT (id) DO UPDATE SET owner = excluded.owner, until_ns = excluded.until_ns
		WHERE job_sweeper.owner = excluded.owner OR job_sweeper.until_ns < $2`, owner, now, int64(d))
	if err != nil {
		return false, fmt.Errorf("store: lease job sweep: %w", classify(err))
	}
	return tag.RowsAffected() == 1, nil
}
