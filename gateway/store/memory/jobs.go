package memory

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
)

// jobEntry is a job and its chunks.
type jobEntry struct {
	job    *store.Job
	chunks []store.JobChunk
}

// CreateJob implements store.JobStore.
func (s *Store) CreateJob(ctx context.Context, j *store.Job, chunks []store.JobChunk) error {
	if err := s.enter(ctx, mCreateJob); err != nil {
		return err
	}
	if j == nil {
		return fmt.Errorf("memory store: nil job")
	}
	if err := requireIDs("job id", j.ID, "org id", j.OrgID); err != nil {
		return err
	}
	if err := j.CheckText(); err != nil {
		return fmt.Errorf("memory store: create job: %w", err)
	}
	if err := store.CheckJobChunks(chunks); err != nil {
		return fmt.Errorf("memory store: create job: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jobs[j.ID] != nil {
		return fmt.Errorf("memory store: create job %s: %w", j.ID, store.ErrExists)
	}
	s.defaultTimes(&j.CreatedAt, &j.UpdatedAt)
	j.State, j.ChunksTotal = store.JobQueued, len(chunks)
	s.jobs[j.ID] = &jobEntry{job: store.CloneJob(j), chunks: slices.Clone(chunks)}
	return nil
}

// jobOf returns orgID's job id; callers hold mu.
func (s *Store) jobOf(orgID, id string) *jobEntry {
	e := s.jobs[id]
	if e == nil || e.job.OrgID != orgID {
		return nil
	}
	return e
}

// GetJob implements store.JobStore.
func (s *Store) GetJob(ctx context.Context, orgID, id string) (*store.Job, error) {
	if err := s.enter(ctx, mGetJob); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.jobOf(orgID, id)
	if e == nil {
		return nil, fmt.Errorf("memory store: get job %s: %w", id, store.ErrNotFound)
	}
	return store.CloneJob(e.job), nil
}

// ListJobs implements store.JobStore. It sorts the organization's jobs:
// the memory store holds few.
func (s *Store) ListJobs(ctx context.Context, orgID string, limit int, after store.Position) ([]store.Job, store.Position, bool, error) {
	if err := s.enter(ctx, mListJobs); err != nil {
		return nil, nil, false, err
	}
	if limit <= 0 {
		return nil, nil, false, fmt.Errorf("memory store: list jobs: limit must be positive")
	}
	var ac int64
	var aid string
	if after != nil {
		var err error
		if ac, aid, err = store.ParseJobPosition(after); err != nil {
			return nil, nil, false, fmt.Errorf("memory store: list jobs: %w", err)
		}
	}
	s.mu.RLock()
	var all []*store.Job
	for _, e := range s.jobs {
		if e.job.OrgID != orgID {
			continue
		}
		if after != nil && !store.JobBefore(ac, aid, e.job.CreatedAt.UnixNano(), e.job.ID) {
			continue
		}
		all = append(all, store.CloneJob(e.job))
	}
	s.mu.RUnlock()
	slices.SortFunc(all, func(a, b *store.Job) int {
		if store.JobBefore(a.CreatedAt.UnixNano(), a.ID, b.CreatedAt.UnixNano(), b.ID) {
			return -1
		}
		return 1
	})
	more := len(all) > limit
	if more {
		all = all[:limit]
	}
	out := make([]store.Job, len(all))
	for i, j := range all {
		out[i] = *j
	}
	var next store.Position
	if len(out) > 0 {
		next = store.JobPosition(&out[len(out)-1])
	}
	return out, next, more, nil
}

// CancelJob implements store.JobStore.
func (s *Store) CancelJob(ctx context.Context, orgID, id string) (*store.Job, error) {
	if err := s.enter(ctx, mCancelJob); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.jobOf(orgID, id)
	if e == nil {
		return nil, fmt.Errorf("memory store: cancel job %s: %w", id, store.ErrNotFound)
	}
	store.CancelJobRecord(e.job, s.utcNow())
	return store.CloneJob(e.job), nil
}

// LeaseJob implements store.JobStore.
func (s *Store) LeaseJob(ctx context.Context, owner string, d time.Duration, perOrg int) (*store.Job, error) {
	if err := s.enter(ctx, mLeaseJob); err != nil {
		return nil, err
	}
	if owner == "" {
		return nil, fmt.Errorf("memory store: lease job: owner is required")
	}
	now := s.utcNow()
	s.mu.Lock()
	defer s.mu.Unlock()
	running := map[string]int{}
	for _, e := range s.jobs {
		if store.JobHoldsSlot(e.job, now) {
			running[e.job.OrgID]++
		}
	}
	var best *store.Job
	for _, e := range s.jobs {
		ok, work := store.JobLeasable(e.job, now)
		if !ok || (work && perOrg > 0 && running[e.job.OrgID] >= perOrg) {
			continue
		}
		if best == nil || store.JobBefore(best.CreatedAt.UnixNano(), best.ID, e.job.CreatedAt.UnixNano(), e.job.ID) {
			best = e.job
		}
	}
	if best == nil {
		return nil, fmt.Errorf("memory store: lease job: %w", store.ErrNotFound)
	}
	store.LeaseJobRecord(best, owner, now, d)
	return store.CloneJob(best), nil
}

// RenewJobLease implements store.JobStore.
func (s *Store) RenewJobLease(ctx context.Context, id, owner string, d time.Duration) (*store.Job, error) {
	if err := s.enter(ctx, mRenewJobLease); err != nil {
		return nil, err
	}
	now := s.utcNow()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.jobs[id]
	if e == nil || !store.HoldsJobLease(e.job, owner) {
		return nil, fmt.Errorf("memory store: renew job %s: %w", id, store.ErrLeaseLost)
	}
	e.job.LeaseUntil, e.job.UpdatedAt = now.Add(d), now
	return store.CloneJob(e.job), nil
}

// JobChunks implements store.JobStore.
func (s *Store) JobChunks(ctx context.Context, id string, from, limit int) ([]store.JobChunk, error) {
	if err := s.enter(ctx, mJobChunks); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	e := s.jobs[id]
	if e == nil {
		return nil, fmt.Errorf("memory store: job %s chunks: %w", id, store.ErrNotFound)
	}
	from = min(max(from, 0), len(e.chunks))
	return slices.Clone(e.chunks[from:min(from+max(limit, 0), len(e.chunks))]), nil
}

// CheckpointJobChunk implements store.JobStore.
func (s *Store) CheckpointJobChunk(ctx context.Context, id, owner string, c *store.JobChunk) error {
	if err := s.enter(ctx, mCheckpointJobChunk); err != nil {
		return err
	}
	if err := c.CheckText(); err != nil {
		return fmt.Errorf("memory store: checkpoint job %s: %w", id, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.jobs[id]
	if e == nil || !store.HoldsJobLease(e.job, owner) {
		return fmt.Errorf("memory store: checkpoint job %s: %w", id, store.ErrLeaseLost)
	}
	if c.Index < 0 || c.Index >= len(e.chunks) {
		return fmt.Errorf("memory store: checkpoint job %s chunk %d: %w", id, c.Index, store.ErrNotFound)
	}
	cur := &e.chunks[c.Index]
	if cur.Done {
		return nil
	}
	cur.Done, cur.AudioMS, cur.Credits, cur.Characters, cur.Served, cur.Fallback = true, c.AudioMS, c.Credits, c.Characters, c.Served, c.Fallback
	store.CountJobChunk(e.job, cur, s.utcNow())
	return nil
}

// FinishJob implements store.JobStore.
func (s *Store) FinishJob(ctx context.Context, id, owner string, f store.JobFinish) error {
	if err := s.enter(ctx, mFinishJob); err != nil {
		return err
	}
	if err := f.CheckText(); err != nil {
		return fmt.Errorf("memory store: finish job %s: %w", id, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.jobs[id]
	if e == nil || !store.HoldsJobLease(e.job, owner) {
		return fmt.Errorf("memory store: finish job %s: %w", id, store.ErrLeaseLost)
	}
	store.FinishJobRecord(e.job, f, s.utcNow())
	return nil
}

// RecordJobDelivery implements store.JobStore.
func (s *Store) RecordJobDelivery(ctx context.Context, id, owner string, d store.JobDelivery, next time.Time) error {
	if err := s.enter(ctx, mRecordJobDelivery); err != nil {
		return err
	}
	if err := store.CheckText("error", d.Error); err != nil {
		return fmt.Errorf("memory store: job %s delivery: %w", id, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.jobs[id]
	if e == nil || e.job.LeaseOwner != owner {
		return fmt.Errorf("memory store: job %s delivery: %w", id, store.ErrLeaseLost)
	}
	store.RecordJobDeliveryRecord(e.job, d, next, s.utcNow())
	return nil
}

// DeleteJob implements store.JobStore.
func (s *Store) DeleteJob(ctx context.Context, orgID, id string) (*store.Job, error) {
	if err := s.enter(ctx, mDeleteJob); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.jobOf(orgID, id)
	if e == nil {
		return nil, fmt.Errorf("memory store: delete job %s: %w", id, store.ErrNotFound)
	}
	if !store.JobTerminal(e.job.State) {
		return nil, fmt.Errorf("memory store: delete job %s: %w", id, store.ErrJobLive)
	}
	delete(s.jobs, id)
	return e.job, nil
}

// ExpiredJobs implements store.JobStore.
func (s *Store) ExpiredJobs(ctx context.Context, before time.Time, limit int) ([]store.Job, error) {
	if err := s.enter(ctx, mExpiredJobs); err != nil {
		return nil, err
	}
	s.mu.RLock()
	var out []store.Job
	for _, e := range s.jobs {
		if store.JobExpired(e.job, before) {
			out = append(out, *store.CloneJob(e.job))
		}
	}
	s.mu.RUnlock()
	store.SortExpiredJobs(out)
	return out[:min(len(out), max(limit, 0))], nil
}

// LeaseJobSweep implements store.JobStore.
func (s *Store) LeaseJobSweep(ctx context.Context, owner string, d time.Duration) (bool, error) {
	if err := s.enter(ctx, mLeaseJobSweep); err != nil {
		return false, err
	}
	if owner == "" {
		return false, fmt.Errorf("memory store: lease job sweep: owner is required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sweep.Take(owner, s.utcNow(), d), nil
}
