package bolt

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/voxgate/voxgate/gateway/store"
)

// Long-form jobs. Layout (top-level buckets, see doc.go):
//
//	jobs          job id -> jobRecord (JSON)
//	jobs_by_org   org id -> bucket of store.JobPosition -> nothing (ListJobs)
//	jobs_active   created ns (8 bytes) + job id -> nothing: the jobs that are
//	              not final or have a webhook due, the only ones LeaseJob
//	              reads, so leasing costs the few live jobs, not the history
//	job_chunks    job id -> bucket of index (4 bytes, big-endian) -> chunkRecord
//	jobs_finished finished ns (8 bytes) + job id -> nothing: the final jobs in
//	              the order they finished, so the retention sweeper
//	              (ExpiredJobs) reads only the expired ones (schema 4)
//
// A job's FinishedAt is set once, when it reaches a final state (a final
// state is never left: FinishJob needs a running job, CancelJob refuses a
// final one), so putJob can key jobs_finished by it without reading the
// record it replaces; DeleteJob removes the entry with the record.
//
// A job's organization is in its record: every org-scoped read checks it,
// so another organization's id is ErrNotFound.
const (
	bucketJobs       = "jobs"
	bucketJobsByOrg  = "jobs_by_org"
	bucketJobsActive = "jobs_active"
	bucketJobChunks  = "job_chunks"
	bucketJobsDone   = "jobs_finished"
)

// jobRecord is the on-disk JSON form of a job; part of the file format.
// Warnings came later without a schema version: a record without them
// reads as a job with none, and an older binary reads a newer record
// (JSON ignores the member), so a file moves back and forth between
// versions losing at most the warnings of a job the older one rewrites.
type jobRecord struct {
	ID          string           `json:"id"`
	OrgID       string           `json:"org_id"`
	KeyID       string           `json:"key_id,omitempty"`
	State       string           `json:"state"`
	Spec        []byte           `json:"spec,omitempty"`
	ChunksTotal int              `json:"chunks_total"`
	ChunksDone  int              `json:"chunks_done"`
	Characters  int64            `json:"characters"`
	Credits     int64            `json:"credits,omitempty"`
	AudioMS     int64            `json:"audio_ms,omitempty"`
	Fallbacks   int              `json:"fallbacks,omitempty"`
	ErrorCode   string           `json:"error_code,omitempty"`
	ErrorDetail string           `json:"error_detail,omitempty"`
	OutputBytes int64            `json:"output_bytes,omitempty"`
	Warnings    []string         `json:"warnings,omitempty"`
	CreatedAt   time.Time        `json:"created_at"`
	UpdatedAt   time.Time        `json:"updated_at"`
	StartedAt   time.Time        `json:"started_at"`
	FinishedAt  time.Time        `json:"finished_at"`
	LeaseOwner  string           `json:"lease_owner,omitempty"`
	LeaseUntil  time.Time        `json:"lease_until"`
	Leases      int              `json:"leases,omitempty"`
	WebhookDue  time.Time        `json:"webhook_due"`
	Deliveries  []deliveryRecord `json:"deliveries,omitempty"`
}

type deliveryRecord struct {
	At     time.Time `json:"at"`
	Event  string    `json:"event"`
	Status int       `json:"status,omitempty"`
	Error  string    `json:"error,omitempty"`
}

type chunkRecord struct {
	Chapter    int    `json:"chapter,omitempty"`
	Voice      string `json:"voice,omitempty"`
	Text       string `json:"text"`
	Done       bool   `json:"done,omitempty"`
	AudioMS    int64  `json:"audio_ms,omitempty"`
	Credits    int64  `json:"credits,omitempty"`
	Characters int64  `json:"characters,omitempty"`
	Served     string `json:"served,omitempty"`
	Fallback   bool   `json:"fallback,omitempty"`
}

func encodeJob(j *store.Job) ([]byte, error) {
	r := jobRecord{ID: j.ID, OrgID: j.OrgID, KeyID: j.KeyID, State: j.State, Spec: j.Spec, ChunksTotal: j.ChunksTotal,
		ChunksDone: j.ChunksDone, Characters: j.Characters, Credits: j.Credits, AudioMS: j.AudioMS, Fallbacks: j.Fallbacks,
		ErrorCode: j.ErrorCode, ErrorDetail: j.ErrorDetail, OutputBytes: j.OutputBytes, Warnings: j.Warnings, CreatedAt: j.CreatedAt.UTC(),
		UpdatedAt: j.UpdatedAt.UTC(), StartedAt: j.StartedAt.UTC(), FinishedAt: j.FinishedAt.UTC(), LeaseOwner: j.LeaseOwner,
		LeaseUntil: j.LeaseUntil.UTC(), Leases: j.Leases, WebhookDue: j.WebhookDue.UTC()}
	for _, d := range j.Deliveries {
		r.Deliveries = append(r.Deliveries, deliveryRecord{At: d.At.UTC(), Event: d.Event, Status: d.Status, Error: d.Error})
	}
	return json.Marshal(r)
}

func decodeJob(data []byte) (*store.Job, error) {
	var r jobRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decode job: %w", err)
	}
	j := &store.Job{ID: r.ID, OrgID: r.OrgID, KeyID: r.KeyID, State: r.State, Spec: r.Spec, ChunksTotal: r.ChunksTotal,
		ChunksDone: r.ChunksDone, Characters: r.Characters, Credits: r.Credits, AudioMS: r.AudioMS, Fallbacks: r.Fallbacks,
		ErrorCode: r.ErrorCode, ErrorDetail: r.ErrorDetail, OutputBytes: r.OutputBytes, Warnings: r.Warnings, CreatedAt: zeroTime(r.CreatedAt),
		UpdatedAt: zeroTime(r.UpdatedAt), StartedAt: zeroTime(r.StartedAt), FinishedAt: zeroTime(r.FinishedAt),
		LeaseOwner: r.LeaseOwner, LeaseUntil: zeroTime(r.LeaseUntil), Leases: r.Leases, WebhookDue: zeroTime(r.WebhookDue)}
	for _, d := range r.Deliveries {
		j.Deliveries = append(j.Deliveries, store.JobDelivery{At: d.At, Event: d.Event, Status: d.Status, Error: d.Error})
	}
	return j, nil
}

// zeroTime keeps a zero time zero (JSON's year 1 in UTC).
func zeroTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t
}

func encodeChunk(c *store.JobChunk) ([]byte, error) {
	return json.Marshal(chunkRecord{Chapter: c.Chapter, Voice: c.Voice, Text: c.Text, Done: c.Done, AudioMS: c.AudioMS,
		Credits: c.Credits, Characters: c.Characters, Served: c.Served, Fallback: c.Fallback})
}

func decodeChunk(index int, data []byte) (store.JobChunk, error) {
	var r chunkRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return store.JobChunk{}, fmt.Errorf("decode job chunk %d: %w", index, err)
	}
	return store.JobChunk{Index: index, Chapter: r.Chapter, Voice: r.Voice, Text: r.Text, Done: r.Done, AudioMS: r.AudioMS,
		Credits: r.Credits, Characters: r.Characters, Served: r.Served, Fallback: r.Fallback}, nil
}

func chunkKey(i int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(i)) }

// activeKey is a job's key in jobs_active: oldest first.
func activeKey(j *store.Job) []byte {
	return append(binary.BigEndian.AppendUint64(nil, unixNanos(j.CreatedAt)), j.ID...)
}

// finishedKey is a final job's key in jobs_finished: first finished
// first, then by id (ExpiredJobs' order).
func finishedKey(j *store.Job) []byte {
	return append(binary.BigEndian.AppendUint64(nil, unixNanos(j.FinishedAt)), j.ID...)
}

// jobFinished reports whether j has its entry in jobs_finished.
func jobFinished(j *store.Job) bool { return store.JobTerminal(j.State) && !j.FinishedAt.IsZero() }

// jobBuckets creates the job buckets (older files lack them; schema 4
// fills jobs_finished: upgrade.go).
func jobBuckets(tx *bbolt.Tx) error {
	for _, name := range []string{bucketJobs, bucketJobsByOrg, bucketJobsActive, bucketJobChunks, bucketJobsDone} {
		if _, err := tx.CreateBucketIfNotExists([]byte(name)); err != nil {
			return fmt.Errorf("create bucket %s: %w", name, err)
		}
	}
	return nil
}

// putJob writes j and keeps jobs_active and jobs_finished in step with
// it.
func putJob(tx *bbolt.Tx, j *store.Job) error {
	data, err := encodeJob(j)
	if err != nil {
		return err
	}
	if err := tx.Bucket([]byte(bucketJobs)).Put([]byte(j.ID), data); err != nil {
		return err
	}
	if jobFinished(j) {
		if err := tx.Bucket([]byte(bucketJobsDone)).Put(finishedKey(j), nil); err != nil {
			return err
		}
	}
	active := tx.Bucket([]byte(bucketJobsActive))
	if store.JobTerminal(j.State) && j.WebhookDue.IsZero() {
		return active.Delete(activeKey(j))
	}
	return active.Put(activeKey(j), nil)
}

// getJob reads job id (any organization), or nil.
func getJob(tx *bbolt.Tx, id string) (*store.Job, error) {
	v := tx.Bucket([]byte(bucketJobs)).Get([]byte(id))
	if v == nil || id == "" {
		return nil, nil
	}
	return decodeJob(v)
}

// CreateJob implements store.JobStore.
func (s *Store) CreateJob(ctx context.Context, j *store.Job, chunks []store.JobChunk) error {
	if j == nil {
		return fmt.Errorf("store: nil job")
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
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		if tx.Bucket([]byte(bucketJobs)).Get([]byte(j.ID)) != nil {
			return fmt.Errorf("job %s: %w", j.ID, store.ErrExists)
		}
		if err := putJob(tx, j); err != nil {
			return err
		}
		byOrg, err := tx.Bucket([]byte(bucketJobsByOrg)).CreateBucketIfNotExists([]byte(j.OrgID))
		if err != nil {
			return err
		}
		if err := byOrg.Put(store.JobPosition(j), nil); err != nil {
			return err
		}
		cb, err := tx.Bucket([]byte(bucketJobChunks)).CreateBucket([]byte(j.ID))
		if err != nil {
			return err
		}
		cb.FillPercent = 0.9 // appended in key order
		for i := range chunks {
			data, err := encodeChunk(&chunks[i])
			if err != nil {
				return err
			}
			if err := cb.Put(chunkKey(i), data); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: create job: %w", err)
	}
	return nil
}

// GetJob implements store.JobStore.
func (s *Store) GetJob(ctx context.Context, orgID, id string) (*store.Job, error) {
	var j *store.Job
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		j, err = getJob(tx, id)
		if err == nil && (j == nil || j.OrgID != orgID) {
			err = store.ErrNotFound
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: get job %s: %w", id, err)
	}
	return j, nil
}

// ListJobs implements store.JobStore: the organization's index holds
// JobPositions, which sort oldest first, so a page walks it backwards.
func (s *Store) ListJobs(ctx context.Context, orgID string, limit int, after store.Position) ([]store.Job, store.Position, bool, error) {
	if limit <= 0 {
		return nil, nil, false, fmt.Errorf("store: list jobs: limit must be positive")
	}
	if after != nil {
		if _, _, err := store.ParseJobPosition(after); err != nil {
			return nil, nil, false, fmt.Errorf("store: list jobs: %w", err)
		}
	}
	out := []store.Job{}
	more := false
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucketJobsByOrg)).Bucket([]byte(orgID))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		var k []byte
		if after == nil {
			k, _ = c.Last()
		} else {
			k, _ = seekBefore(c, after)
		}
		for ; k != nil; k, _ = c.Prev() {
			if len(out) == limit {
				more = true
				return nil
			}
			j, err := getJob(tx, string(k[8:]))
			if err != nil {
				return err
			}
			if j != nil {
				out = append(out, *j)
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, false, fmt.Errorf("store: list jobs: %w", err)
	}
	var next store.Position
	if len(out) > 0 {
		next = store.JobPosition(&out[len(out)-1])
	}
	return out, next, more, nil
}

// CancelJob implements store.JobStore.
func (s *Store) CancelJob(ctx context.Context, orgID, id string) (*store.Job, error) {
	var j *store.Job
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		var err error
		if j, err = getJob(tx, id); err != nil {
			return err
		}
		if j == nil || j.OrgID != orgID {
			return store.ErrNotFound
		}
		if !store.CancelJobRecord(j, s.now().UTC()) {
			return nil
		}
		return putJob(tx, j)
	})
	if err != nil {
		return nil, fmt.Errorf("store: cancel job %s: %w", id, err)
	}
	return j, nil
}

// LeaseJob implements store.JobStore. bbolt has one writer at a time, so
// the write transaction is the lock.
func (s *Store) LeaseJob(ctx context.Context, owner string, d time.Duration, perOrg int) (*store.Job, error) {
	if owner == "" {
		return nil, fmt.Errorf("store: lease job: owner is required")
	}
	var got *store.Job
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		now := s.now().UTC()
		var live []*store.Job
		running := map[string]int{}
		err := tx.Bucket([]byte(bucketJobsActive)).ForEach(func(k, _ []byte) error {
			j, err := getJob(tx, string(k[8:]))
			if err != nil || j == nil {
				return err
			}
			live = append(live, j)
			if store.JobHoldsSlot(j, now) {
				running[j.OrgID]++
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, j := range live { // oldest first
			ok, work := store.JobLeasable(j, now)
			if !ok || (work && perOrg > 0 && running[j.OrgID] >= perOrg) {
				continue
			}
			store.LeaseJobRecord(j, owner, now, d)
			got = j
			return putJob(tx, j)
		}
		return store.ErrNotFound
	})
	if err != nil {
		return nil, fmt.Errorf("store: lease job: %w", err)
	}
	return got, nil
}

// leased runs fn on owner's job id in a write transaction and writes it
// back; ErrLeaseLost unless hold(j) says owner holds it.
func (s *Store) leased(ctx context.Context, id string, hold func(*store.Job) bool, fn func(tx *bbolt.Tx, j *store.Job, now time.Time) error) (*store.Job, error) {
	var j *store.Job
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		var err error
		if j, err = getJob(tx, id); err != nil {
			return err
		}
		if j == nil || !hold(j) {
			return store.ErrLeaseLost
		}
		if err := fn(tx, j, s.now().UTC()); err != nil {
			return err
		}
		return putJob(tx, j)
	})
	return j, err
}

// RenewJobLease implements store.JobStore.
func (s *Store) RenewJobLease(ctx context.Context, id, owner string, d time.Duration) (*store.Job, error) {
	j, err := s.leased(ctx, id, func(j *store.Job) bool { return store.HoldsJobLease(j, owner) }, func(_ *bbolt.Tx, j *store.Job, now time.Time) error {
		j.LeaseUntil, j.UpdatedAt = now.Add(d), now
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: renew job %s: %w", id, err)
	}
	return j, nil
}

// JobChunks implements store.JobStore.
func (s *Store) JobChunks(ctx context.Context, id string, from, limit int) ([]store.JobChunk, error) {
	var out []store.JobChunk
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucketJobChunks)).Bucket([]byte(id))
		if b == nil || id == "" {
			return store.ErrNotFound
		}
		c := b.Cursor()
		for k, v := c.Seek(chunkKey(max(from, 0))); k != nil && len(out) < limit; k, v = c.Next() {
			ch, err := decodeChunk(int(binary.BigEndian.Uint32(k)), v)
			if err != nil {
				return err
			}
			out = append(out, ch)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: job %s chunks: %w", id, err)
	}
	return out, nil
}

// CheckpointJobChunk implements store.JobStore.
func (s *Store) CheckpointJobChunk(ctx context.Context, id, owner string, c *store.JobChunk) error {
	if err := c.CheckText(); err != nil {
		return fmt.Errorf("store: checkpoint job %s: %w", id, err)
	}
	_, err := s.leased(ctx, id, func(j *store.Job) bool { return store.HoldsJobLease(j, owner) }, func(tx *bbolt.Tx, j *store.Job, now time.Time) error {
		b := tx.Bucket([]byte(bucketJobChunks)).Bucket([]byte(id))
		v := b.Get(chunkKey(c.Index))
		if v == nil || c.Index < 0 {
			return fmt.Errorf("chunk %d: %w", c.Index, store.ErrNotFound)
		}
		cur, err := decodeChunk(c.Index, v)
		if err != nil || cur.Done {
			return err
		}
		cur.Done, cur.AudioMS, cur.Credits, cur.Characters, cur.Served, cur.Fallback = true, c.AudioMS, c.Credits, c.Characters, c.Served, c.Fallback
		data, err := encodeChunk(&cur)
		if err != nil {
			return err
		}
		store.CountJobChunk(j, &cur, now)
		return b.Put(chunkKey(c.Index), data)
	})
	if err != nil {
		return fmt.Errorf("store: checkpoint job %s: %w", id, err)
	}
	return nil
}

// FinishJob implements store.JobStore.
func (s *Store) FinishJob(ctx context.Context, id, owner string, f store.JobFinish) error {
	if err := f.CheckText(); err != nil {
		return fmt.Errorf("store: finish job %s: %w", id, err)
	}
	_, err := s.leased(ctx, id, func(j *store.Job) bool { return store.HoldsJobLease(j, owner) }, func(_ *bbolt.Tx, j *store.Job, now time.Time) error {
		store.FinishJobRecord(j, f, now)
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: finish job %s: %w", id, err)
	}
	return nil
}

// RecordJobDelivery implements store.JobStore.
func (s *Store) RecordJobDelivery(ctx context.Context, id, owner string, d store.JobDelivery, next time.Time) error {
	if err := store.CheckText("error", d.Error); err != nil {
		return fmt.Errorf("store: job %s delivery: %w", id, err)
	}
	_, err := s.leased(ctx, id, func(j *store.Job) bool { return j.LeaseOwner == owner }, func(_ *bbolt.Tx, j *store.Job, now time.Time) error {
		store.RecordJobDeliveryRecord(j, d, next, now)
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: job %s delivery: %w", id, err)
	}
	return nil
}

// DeleteJob implements store.JobStore: the record, its index entries and
// its chunks in one transaction.
func (s *Store) DeleteJob(ctx context.Context, orgID, id string) (*store.Job, error) {
	var j *store.Job
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		var err error
		if j, err = getJob(tx, id); err != nil {
			return err
		}
		if j == nil || j.OrgID != orgID {
			return store.ErrNotFound
		}
		if !store.JobTerminal(j.State) {
			return store.ErrJobLive
		}
		if err := tx.Bucket([]byte(bucketJobs)).Delete([]byte(id)); err != nil {
			return err
		}
		if err := tx.Bucket([]byte(bucketJobsActive)).Delete(activeKey(j)); err != nil {
			return err
		}
		if err := tx.Bucket([]byte(bucketJobsDone)).Delete(finishedKey(j)); err != nil {
			return err
		}
		if b := tx.Bucket([]byte(bucketJobsByOrg)).Bucket([]byte(orgID)); b != nil {
			if err := b.Delete(store.JobPosition(j)); err != nil {
				return err
			}
		}
		chunks := tx.Bucket([]byte(bucketJobChunks))
		if chunks.Bucket([]byte(id)) != nil {
			return chunks.DeleteBucket([]byte(id))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: delete job %s: %w", id, err)
	}
	return j, nil
}

// ExpiredJobs implements store.JobStore: a walk of jobs_finished from
// its start to the cut, so the sweeper reads the expired jobs and one key
// past them, however many jobs the retention keeps.
func (s *Store) ExpiredJobs(ctx context.Context, before time.Time, limit int) ([]store.Job, error) {
	out := []store.Job{}
	if limit <= 0 {
		return out, nil
	}
	cut := unixNanos(before)
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		c := tx.Bucket([]byte(bucketJobsDone)).Cursor()
		for k, _ := c.First(); k != nil && len(out) < limit; k, _ = c.Next() {
			if len(k) < 8 || binary.BigEndian.Uint64(k) >= cut {
				return nil
			}
			j, err := getJob(tx, string(k[8:]))
			if err != nil {
				return err
			}
			if j != nil && store.JobExpired(j, before) {
				out = append(out, *j)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: expired jobs: %w", err)
	}
	return out, nil
}

// metaJobSweep is the meta key of the job sweeper's lease: until (8
// bytes, ns) and owner. One process opens a bbolt file, so its sweeper
// always gets it; the record keeps the contract the same as PostgreSQL's.
const metaJobSweep = "job_sweep"

// LeaseJobSweep implements store.JobStore.
func (s *Store) LeaseJobSweep(ctx context.Context, owner string, d time.Duration) (bool, error) {
	if owner == "" {
		return false, fmt.Errorf("store: lease job sweep: owner is required")
	}
	held := false
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		meta := tx.Bucket([]byte(bucketMeta))
		var l store.SweepLease
		if v := meta.Get([]byte(metaJobSweep)); len(v) >= 8 {
			l = store.SweepLease{Owner: string(v[8:]), Until: time.Unix(0, int64(binary.BigEndian.Uint64(v)))}
		}
		if held = l.Take(owner, s.now().UTC(), d); !held {
			return nil
		}
		return meta.Put([]byte(metaJobSweep), append(binary.BigEndian.AppendUint64(nil, unixNanos(l.Until)), owner...))
	})
	if err != nil {
		return false, fmt.Errorf("store: lease job sweep: %w", err)
	}
	return held, nil
}
