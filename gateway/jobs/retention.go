package jobs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/voxgate/voxgate/gateway/store"
)

// Deleting jobs. A finished job (succeeded, failed or cancelled) is
// deleted by its organization (DELETE /v1/audio/jobs/{id}) or, once it
// has been finished for longer than jobs.retention, by the sweeper: the
// record and its chunks go from the store first, in one transaction,
// then its folder (chunk files, finished file, captions, provenance
// record). A queued or running job is refused (409): it is cancelled
// first, since a worker may be writing its files.
//
// One instance sweeps at a time: the sweeper holds the store's sweep
// lease (on PostgreSQL a row every instance competes for), renewed each
// round, so two instances never delete the same jobs at once.
//
// Every instance also sweeps its own jobs.dir (sweepLocal), whatever the
// retention, for what the deleting instance cannot reach where instances
// do not share jobs.dir: the folders whose job the store no longer holds
// (deleted by its organization through another instance, or by the
// sweeper; a failed job's chunks; the chunks an instance rendered of a
// job that another took over and finished), and, with a retention, the
// folders whose finished file is older than it (the instance that
// finished a job holds its file). Any other folder is removed only once
// the store answers that its job does not exist, and none while this
// instance renders the job; a queued or running job's record cannot be
// deleted, and a worker makes a job's folder only once it holds the
// job's lease, so no folder a worker may still use is removed.

// Delete deletes org's finished job id, its record and files, and
// returns it as it was. A queued or running job fails with
// store.ErrJobLive, another organization's with store.ErrNotFound.
func (s *Service) Delete(ctx context.Context, org, id string) (*store.Job, error) {
	j, err := s.store.DeleteJob(ctx, org, id)
	if err != nil {
		return nil, err
	}
	s.removeFiles(ctx, j)
	return j, nil
}

// removeFiles removes deleted job j's folder (its file, captions and
// signed provenance record) and its file's acoustic fingerprint, so
// identify no longer answers a deleted job. A failure leaves files or a
// fingerprint behind, not a record: it is logged; the folder goes at the
// next sweep once its finished file is older than the retention, the
// fingerprint with the request log's retention.
func (s *Service) removeFiles(ctx context.Context, j *store.Job) {
	if err := removeJobDir(s.opts.Dir, j.ID); err != nil {
		s.log.Warn("jobs: remove a deleted job's files", zap.String("job", j.ID), zap.Error(err))
	}
	if fs, ok := s.store.(store.FingerprintStore); ok {
		if err := fs.DeleteFingerprint(ctx, j.OrgID, j.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			s.log.Warn("jobs: remove a deleted job's fingerprint", zap.String("job", j.ID), zap.Error(err))
		}
	}
}

// sweepInterval is how often the sweeper runs: a tenth of the retention,
// from 100ms (tests) to 10 minutes.
func (s *Service) sweepInterval() time.Duration {
	return min(max(s.opts.Retention/10, 100*time.Millisecond), 10*time.Minute)
}

// sweepPage is how many expired jobs one store call returns.
const sweepPage = 100

// runSweeper deletes expired jobs until ctx ends (Retention > 0).
func (s *Service) runSweeper(ctx context.Context) {
	every := s.sweepInterval()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n, err := s.Sweep(ctx, 3*every); err != nil && ctx.Err() == nil {
			s.log.Warn("jobs: retention sweep", zap.Error(err), zap.Int("deleted", n))
		} else if n > 0 {
			s.log.Info("jobs: retention sweep", zap.Int("deleted", n))
		}
	}
}

// runLocalSweeper sweeps this instance's jobs.dir every LocalSweep until
// ctx ends, whether or not jobs have a retention: a job deleted through
// another instance leaves its folder here otherwise.
func (s *Service) runLocalSweeper(ctx context.Context) {
	t := time.NewTicker(s.opts.LocalSweep)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n := s.sweepLocal(ctx); n > 0 {
			s.log.Info("jobs: removed the folders of deleted or expired jobs", zap.Int("folders", n))
		}
	}
}

// Sweep deletes the jobs finished longer than Retention ago, when this
// instance gets the sweep lease (held for lease); it returns how many it
// deleted.
func (s *Service) Sweep(ctx context.Context, lease time.Duration) (int, error) {
	if s.opts.Retention <= 0 {
		return 0, nil
	}
	held, err := s.store.LeaseJobSweep(ctx, s.opts.Owner, lease)
	if err != nil || !held {
		return 0, err
	}
	deleted := 0
	for {
		page, err := s.store.ExpiredJobs(ctx, s.now().Add(-s.opts.Retention), sweepPage)
		if err != nil {
			return deleted, err
		}
		for i := range page {
			j, err := s.store.DeleteJob(ctx, page[i].OrgID, page[i].ID)
			if errors.Is(err, store.ErrNotFound) {
				continue // its organization deleted it meanwhile
			}
			if err != nil {
				return deleted, err
			}
			s.removeFiles(ctx, j)
			deleted++
		}
		if len(page) < sweepPage {
			return deleted, nil
		}
	}
}

// localSweepBatch bounds a local sweep round: the folders it looks at
// (each at most one store lookup), so a jobs.dir of many thousand
// folders is gone through a batch a round, not all at once.
const localSweepBatch = 200

// sweepLocal removes from this instance's jobs.dir the folders of jobs
// that are gone or have expired (see above), looking at up to
// localSweepBatch folders after the last round's, and returns how many
// it removed. A folder not named by a job id (a file system's
// lost+found) is left alone, so is one of a job this instance renders,
// and one whose job the store cannot be asked about now (a later round
// asks again).
func (s *Service) sweepLocal(ctx context.Context) int {
	entries, err := os.ReadDir(s.opts.Dir) // sorted by name
	if err != nil {
		return 0
	}
	var ids []string
	for _, e := range entries {
		if e.IsDir() && uuid.Validate(e.Name()) == nil {
			ids = append(ids, e.Name())
		}
	}
	from, _ := slices.BinarySearch(ids, s.sweptTo)
	if from < len(ids) && ids[from] == s.sweptTo {
		from++
	}
	if from >= len(ids) {
		from = 0 // the end was reached: start again from the first
	}
	batch := ids[from:min(from+localSweepBatch, len(ids))]
	s.sweptTo = ""
	if from+len(batch) < len(ids) {
		s.sweptTo = batch[len(batch)-1]
	}
	cut := s.now().Add(-s.opts.Retention)
	removed := 0
	for _, id := range batch {
		if ctx.Err() != nil {
			break
		}
		if s.isRendering(id) {
			continue
		}
		if s.opts.Retention <= 0 || !finishedBefore(s.opts.Dir, id, cut) {
			// One id lookup per folder: whether its job still exists.
			if _, err := s.store.JobChunks(ctx, id, 0, 1); !errors.Is(err, store.ErrNotFound) {
				continue // its job is still held (or the store did not answer)
			}
		}
		if err := os.RemoveAll(filepath.Join(s.opts.Dir, id)); err != nil {
			s.log.Warn("jobs: remove a deleted or expired job's files", zap.String("job", id), zap.Error(err))
			continue
		}
		removed++
	}
	return removed
}

// isRendering reports whether this instance's worker renders job id now.
func (s *Service) isRendering(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.rendering[id]
	return ok
}

// finishedBefore reports whether job id's folder under root holds a
// finished file older than cut.
func finishedBefore(root, id string, cut time.Time) bool {
	for _, f := range Formats {
		if fi, err := os.Stat(OutputPath(root, id, f)); err == nil && fi.ModTime().Before(cut) {
			return true
		}
	}
	return false
}
