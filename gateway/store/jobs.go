package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Long-form jobs (POST /v1/audio/jobs) are kept as a Job record and its
// chunks, the job's text cut at paragraph and sentence boundaries when
// the job was made. A worker in every gateway instance leases a job
// (LeaseJob), renders its chunks one after the other, and checkpoints
// each (CheckpointJobChunk) once its audio is safely on disk: a job
// interrupted by a crash resumes at its first chunk not done, on this
// instance at its next start or on another one once the lease has run
// out. Writes of the worker name its lease owner and fail with
// ErrLeaseLost once another instance has taken the job, or once it was
// cancelled, so that a worker that lost its lease cannot overwrite the
// work of the one that took it over ("fencing").
//
// Only the records are in the store: the chunks' audio and the joined
// file are files of the instance (see gateway/jobs), and the job's
// request is an opaque Spec the jobs package encodes.

// Job states.
const (
	JobQueued    = "queued"
	JobRunning   = "running"
	JobSucceeded = "succeeded"
	JobFailed    = "failed"
	JobCancelled = "cancelled"
)

// ErrLeaseLost is returned by the worker's writes of a job whose lease
// the caller no longer holds: another instance took it over after the
// lease ran out, or the job was cancelled or finished meanwhile.
var ErrLeaseLost = errors.New("job lease lost")

// ErrJobLive is returned by DeleteJob for a job that is queued or
// running: it is cancelled first (a worker may be writing its files).
var ErrJobLive = errors.New("job is queued or running")

// JobTerminal reports whether state is final (succeeded, failed,
// cancelled).
func JobTerminal(state string) bool {
	return state == JobSucceeded || state == JobFailed || state == JobCancelled
}

// Job is a long-form job of an organization.
type Job struct {
	// ID is the job's uuid.
	ID string
	// OrgID is the owning organization.
	OrgID string
	// KeyID is the API key that made the job: its budget is charged too.
	KeyID string
	// State is one of the Job* states.
	State string
	// Spec is the job's request as the jobs package encodes it (voices,
	// output format, captions, chapters, webhook); the store keeps it
	// as given. The text is not in it: it is in the chunks.
	Spec []byte
	// ChunksTotal is the number of chunks, ChunksDone those rendered and
	// checkpointed.
	ChunksTotal, ChunksDone int
	// Characters is the length of the job's text, in characters.
	Characters int64
	// Credits and AudioMS add up the checkpointed chunks'.
	Credits, AudioMS int64
	// Fallbacks counts the chunks a fallback voice rendered.
	Fallbacks int
	// ErrorCode and ErrorDetail say why a failed job failed.
	ErrorCode, ErrorDetail string
	// OutputBytes is the size of the finished file (succeeded jobs).
	OutputBytes int64
	// Warnings say where the finished file is not what the job asked
	// for (a loudness target it could not reach), in the API's words;
	// written when the job finishes (JobFinish), nil until then and for
	// a file that is as asked.
	Warnings []string
	// CreatedAt is when the job was made, UpdatedAt its last change,
	// StartedAt its first lease and FinishedAt when it reached a final
	// state (zero until then).
	CreatedAt, UpdatedAt, StartedAt, FinishedAt time.Time
	// LeaseOwner is the worker holding the job until LeaseUntil; Leases
	// counts the times the job was leased (1 for a job that ran without
	// interruption).
	LeaseOwner string
	LeaseUntil time.Time
	Leases     int
	// WebhookDue is when the job's next webhook delivery is due; zero
	// when none is pending.
	WebhookDue time.Time
	// Deliveries are the webhook delivery attempts made, oldest first.
	Deliveries []JobDelivery
}

// JobChunk is one chunk of a job's text and, once done, what rendering
// it produced.
type JobChunk struct {
	// Index is the chunk's place in the job, from 0.
	Index int
	// Chapter is the index of the chapter the chunk belongs to.
	Chapter int
	// Voice names which of the job's voices speaks the chunk (the jobs
	// package's label: "" for the job's voice).
	Voice string
	// Text is what the chunk says.
	Text string
	// Done says the chunk was rendered and its audio is on disk.
	Done bool
	// AudioMS, Credits and Characters are the rendering's.
	AudioMS, Credits, Characters int64
	// Served is the "provider/model" that rendered it, and Fallback
	// whether that was a fallback of the chunk's voice.
	Served   string
	Fallback bool
}

// JobDelivery is one attempt at delivering a job's webhook.
type JobDelivery struct {
	// At is when the attempt was made.
	At time.Time
	// Event is the event delivered (job.succeeded, job.failed).
	Event string
	// Status is the receiver's HTTP status, 0 when none was received.
	Status int
	// Error says why an attempt failed ("" for a 2xx).
	Error string
}

// JobFinish is how a worker ends a job (FinishJob).
type JobFinish struct {
	// State is JobSucceeded or JobFailed.
	State string
	// ErrorCode and ErrorDetail say why a job failed.
	ErrorCode, ErrorDetail string
	// OutputBytes is the size of the finished file.
	OutputBytes int64
	// Warnings say where the finished file is not what the job asked
	// for (Job.Warnings).
	Warnings []string
	// WebhookDue, when set, schedules the job's webhook.
	WebhookDue time.Time
}

// JobStore stores long-form jobs: what the jobs package uses, and part of
// the Backend contract.
type JobStore interface {
	// CreateJob stores a new job, queued, with its chunks (in order,
	// Index 0..n-1), atomically. The caller sets ID, OrgID and Spec; zero
	// CreatedAt means now. A taken ID fails with ErrExists.
	CreateJob(ctx context.Context, j *Job, chunks []JobChunk) error
	// GetJob returns job id of orgID, or ErrNotFound.
	GetJob(ctx context.Context, orgID, id string) (*Job, error)
	// ListJobs returns up to limit jobs of orgID, newest first, strictly
	// after position after (nil: from the newest), as ListVoices does.
	ListJobs(ctx context.Context, orgID string, limit int, after Position) (jobs []Job, next Position, hasMore bool, err error)
	// CancelJob makes a queued or running job of orgID cancelled and
	// returns it; a job in a final state is returned unchanged. An
	// unknown id is ErrNotFound.
	CancelJob(ctx context.Context, orgID, id string) (*Job, error)

	// LeaseJob leases the oldest job that needs a worker to owner for d:
	// a queued job, a running one whose lease has run out (its worker
	// died), or a finished one whose webhook is due and not leased. A job
	// is not taken while its organization has perOrg running jobs with
	// live leases (perOrg <= 0: no bound). A queued job becomes running.
	// ErrNotFound when there is none. Two callers never get the same job
	// while its lease lasts.
	LeaseJob(ctx context.Context, owner string, d time.Duration, perOrg int) (*Job, error)
	// RenewJobLease extends owner's lease of job id to now+d and returns
	// the job, or fails with ErrLeaseLost (cancelled or taken over).
	RenewJobLease(ctx context.Context, id, owner string, d time.Duration) (*Job, error)
	// JobChunks returns up to limit chunks of job id from index from, in
	// order (the worker reads them a page at a time, never all at once).
	// An unknown id is ErrNotFound (the sweep of an instance's own
	// jobs.dir asks it whether a folder's job still exists).
	JobChunks(ctx context.Context, id string, from, limit int) ([]JobChunk, error)
	// CheckpointJobChunk records chunk c.Index of job id done with c's
	// results and adds them to the job's counters, if owner holds the
	// job's lease and it is running (else ErrLeaseLost). A chunk already
	// done is left as it was, and not counted twice.
	CheckpointJobChunk(ctx context.Context, id, owner string, c *JobChunk) error
	// FinishJob ends owner's running job id as f says and releases its
	// lease, or fails with ErrLeaseLost.
	FinishJob(ctx context.Context, id, owner string, f JobFinish) error
	// RecordJobDelivery appends a webhook delivery attempt to job id,
	// whose lease owner holds, sets its next due time (zero: no more) and
	// releases the lease; else ErrLeaseLost.
	RecordJobDelivery(ctx context.Context, id, owner string, d JobDelivery, next time.Time) error

	// DeleteJob deletes job id of orgID and its chunks, atomically, and
	// returns the job as it was (its caller removes its files). Only a
	// job in a final state is deleted: a queued or running one fails
	// with ErrJobLive and is left as it was. An unknown id, or another
	// organization's, is ErrNotFound.
	DeleteJob(ctx context.Context, orgID, id string) (*Job, error)
	// ExpiredJobs returns up to limit jobs of every organization that
	// reached a final state before before, the longest finished first
	// (the retention sweeper deletes them).
	ExpiredJobs(ctx context.Context, before time.Time, limit int) ([]Job, error)
	// LeaseJobSweep gives the deployment's one job-sweeper lease to
	// owner until now+d when no other owner holds it live, and reports
	// whether owner holds it, so that instances sharing a store do not
	// sweep at once. Its holder renews it by leasing again.
	LeaseJobSweep(ctx context.Context, owner string, d time.Duration) (bool, error)
}

// CheckText returns a *TextError naming the first string of j that is not
// valid text, or nil.
func (j *Job) CheckText() error {
	return firstInvalid([]namedText{{"id", &j.ID}, {"org_id", &j.OrgID}, {"key_id", &j.KeyID}})
}

// CheckText returns a *TextError naming the first string of c that is not
// valid text, or nil.
func (c *JobChunk) CheckText() error {
	return firstInvalid([]namedText{{"text", &c.Text}, {"voice", &c.Voice}, {"served", &c.Served}})
}

// CloneJob returns a deep copy of j.
func CloneJob(j *Job) *Job {
	c := *j
	c.Spec = slices.Clone(j.Spec)
	c.Deliveries = slices.Clone(j.Deliveries)
	c.Warnings = slices.Clone(j.Warnings)
	return &c
}

// JobPosition is the list position of a job: its creation time and id,
// the order ListJobs pages in. Every backend uses this encoding.
func JobPosition(j *Job) Position {
	p := make([]byte, 8, 8+len(j.ID))
	binary.BigEndian.PutUint64(p, uint64(max(j.CreatedAt.UnixNano(), 0)))
	return append(p, j.ID...)
}

// ParseJobPosition decodes a JobPosition, or fails with
// ErrInvalidPosition.
func ParseJobPosition(p Position) (created int64, id string, err error) {
	if len(p) < 9 {
		return 0, "", fmt.Errorf("job position: %w", ErrInvalidPosition)
	}
	return int64(binary.BigEndian.Uint64(p)), string(p[8:]), nil
}

// JobBefore reports whether a sorts before b in ListJobs' order (newest
// first; equal times by id, descending).
func JobBefore(aCreated int64, aID string, bCreated int64, bID string) bool {
	if aCreated != bCreated {
		return aCreated > bCreated
	}
	return aID > bID
}

// CheckText returns a *TextError naming the first string of f that is not
// valid text (its error detail, a warning), or nil: what FinishJob checks
// before it writes.
func (f *JobFinish) CheckText() error {
	if err := CheckText("error_detail", f.ErrorDetail); err != nil {
		return err
	}
	for i, w := range f.Warnings {
		if err := CheckText("warnings."+strconv.Itoa(i), w); err != nil {
			return err
		}
	}
	return nil
}

// CheckJobChunks checks chunks before a CreateJob: indexes in order from
// 0, valid text.
func CheckJobChunks(chunks []JobChunk) error {
	for i := range chunks {
		if chunks[i].Index != i {
			return fmt.Errorf("store: job chunk %d has index %d", i, chunks[i].Index)
		}
		if err := chunks[i].CheckText(); err != nil {
			return fmt.Errorf("chunk %d: %w", i, err)
		}
	}
	return nil
}

// The rules below are the contract's, shared by the backends that keep
// jobs as records in memory or in one file (memory, bolt); PostgreSQL says
// the same in SQL.

// JobLeasable reports whether j needs a worker at now: queued, running
// with its lease run out, or finished with its webhook due and no lease.
// work says it needs rendering (bounded per organization), not only its
// webhook.
func JobLeasable(j *Job, now time.Time) (ok, work bool) {
	expired := j.LeaseUntil.Before(now)
	switch {
	case j.State == JobQueued, j.State == JobRunning && expired:
		return true, true
	case JobTerminal(j.State) && !j.WebhookDue.IsZero() && !j.WebhookDue.After(now) && expired:
		return true, false
	}
	return false, false
}

// JobHoldsSlot reports whether j counts against its organization's bound
// of running jobs at now: running under a live lease.
func JobHoldsSlot(j *Job, now time.Time) bool {
	return j.State == JobRunning && !j.LeaseUntil.Before(now)
}

// LeaseJobRecord gives j to owner until now+d.
func LeaseJobRecord(j *Job, owner string, now time.Time, d time.Duration) {
	if j.State == JobQueued {
		j.State = JobRunning
	}
	if j.StartedAt.IsZero() && j.State == JobRunning {
		j.StartedAt = now
	}
	j.LeaseOwner, j.LeaseUntil, j.UpdatedAt = owner, now.Add(d), now
	j.Leases++
}

// HoldsJobLease reports whether owner holds j's lease for work (running).
func HoldsJobLease(j *Job, owner string) bool {
	return j.LeaseOwner == owner && j.State == JobRunning
}

// CountJobChunk adds done chunk c's results to j.
func CountJobChunk(j *Job, c *JobChunk, now time.Time) {
	j.ChunksDone++
	j.Credits += c.Credits
	j.AudioMS += c.AudioMS
	if c.Fallback {
		j.Fallbacks++
	}
	j.UpdatedAt = now
}

// FinishJobRecord ends j as f says and releases its lease.
func FinishJobRecord(j *Job, f JobFinish, now time.Time) {
	j.State, j.ErrorCode, j.ErrorDetail, j.OutputBytes = f.State, f.ErrorCode, f.ErrorDetail, f.OutputBytes
	j.Warnings = slices.Clone(f.Warnings)
	j.WebhookDue = f.WebhookDue
	j.FinishedAt, j.UpdatedAt = now, now
	j.LeaseOwner, j.LeaseUntil = "", time.Time{}
}

// CancelJobRecord cancels j unless it is final; it reports whether j
// changed.
func CancelJobRecord(j *Job, now time.Time) bool {
	if JobTerminal(j.State) {
		return false
	}
	j.State, j.FinishedAt, j.UpdatedAt = JobCancelled, now, now
	j.LeaseOwner, j.LeaseUntil = "", time.Time{}
	return true
}

// JobExpired reports whether j reached a final state before before
// (ExpiredJobs).
func JobExpired(j *Job, before time.Time) bool {
	return JobTerminal(j.State) && !j.FinishedAt.IsZero() && j.FinishedAt.Before(before)
}

// SortExpiredJobs sorts jobs by finish time, then id (ExpiredJobs'
// order), for the backends that collect them unordered.
func SortExpiredJobs(jobs []Job) {
	slices.SortFunc(jobs, func(a, b Job) int {
		if c := a.FinishedAt.Compare(b.FinishedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// SweepLease is the job sweeper's lease (LeaseJobSweep) as the backends
// that keep it as a record hold it.
type SweepLease struct {
	Owner string
	Until time.Time
}

// Take gives l to owner until now+d unless another owner holds it live,
// and reports whether owner holds it.
func (l *SweepLease) Take(owner string, now time.Time, d time.Duration) bool {
	if l.Owner != owner && !l.Until.Before(now) {
		return false
	}
	l.Owner, l.Until = owner, now.Add(d)
	return true
}

// RecordJobDeliveryRecord appends d to j, schedules next and releases the
// lease.
func RecordJobDeliveryRecord(j *Job, d JobDelivery, next, now time.Time) {
	j.Deliveries = append(j.Deliveries, d)
	j.WebhookDue, j.UpdatedAt = next, now
	j.LeaseOwner, j.LeaseUntil = "", time.Time{}
}
