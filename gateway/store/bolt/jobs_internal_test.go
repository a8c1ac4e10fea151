package bolt

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/voxgate/voxgate/gateway/store"
)

// putJobs writes n jobs straight into s in one transaction, one a second
// from base: job i is final (finished a minute after it was made) unless
// live(i).
func putJobs(t testing.TB, s *Store, base time.Time, from, n int, live func(int) bool) {
	t.Helper()
	err := s.db.Update(func(tx *bbolt.Tx) error {
		for i := from; i < from+n; i++ {
			created := base.Add(time.Duration(i) * time.Second)
			j := &store.Job{ID: fmt.Sprintf("job-%06d", i), OrgID: fmt.Sprintf("org-%d", i%3), State: store.JobRunning, CreatedAt: created}
			if !live(i) {
				j.State, j.FinishedAt = []string{store.JobSucceeded, store.JobFailed, store.JobCancelled}[i%3], created.Add(time.Minute)
			}
			if err := putJob(tx, j); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestExpiredJobsReadsOnlyExpired: the sweeper's read costs what it
// returns, not the jobs the retention keeps: with 3 jobs expired, a file
// of 5,000 jobs allocates about what a file of 10 does (a deeper B+tree
// costs the cursor a few more; the scan it replaced decoded every record,
// some ten allocations each).
func TestExpiredJobsReadsOnlyExpired(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cut := base.Add(time.Minute + 3*time.Second) // jobs 0, 1 and 2 finished before it
	allocs := func(n int) float64 {
		s, err := Open(filepath.Join(t.TempDir(), "jobs.db"), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		putJobs(t, s, base, 0, n, func(i int) bool { return i%7 == 6 })
		got, err := s.ExpiredJobs(ctx, cut, 100)
		if err != nil || len(got) != 3 || got[0].ID != "job-000000" || got[2].ID != "job-000002" {
			t.Fatalf("%d jobs: expired %v (%v), want jobs 0 to 2", n, ids(got), err)
		}
		return testing.AllocsPerRun(20, func() {
			if _, err := s.ExpiredJobs(ctx, cut, 100); err != nil {
				t.Fatal(err)
			}
		})
	}
	small, large := allocs(10), allocs(5_000)
	if large > 2*small {
		t.Errorf("ExpiredJobs allocates %.0f times with 5,000 jobs, %.0f with 10: it reads jobs that have not expired", large, small)
	}
}

// TestUpgradeIndexesFinishedJobs opens a schema-3 file (jobs finished
// before jobs_finished existed), more jobs than one upgrade transaction
// takes, and finds every final one expired, in finish order, afterwards;
// a deleted job leaves the index with its record.
func TestUpgradeIndexesFinishedJobs(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v3.db")
	s, err := Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n := upgradeBatch + 7
	live := func(i int) bool { return i%1000 == 999 }
	putJobs(t, s, base, 0, n, live)
	// Make it a schema-3 file: no finish index, version 3.
	if err := s.db.Update(func(tx *bbolt.Tx) error {
		if err := tx.DeleteBucket([]byte(bucketJobsDone)); err != nil {
			return err
		}
		return tx.Bucket([]byte(bucketMeta)).Put([]byte(metaSchema), binary.BigEndian.AppendUint64(nil, 3))
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.ExpiredJobs(ctx, base.Add(24*time.Hour), 2*n)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range n {
		if !live(i) {
			want = append(want, fmt.Sprintf("job-%06d", i))
		}
	}
	if fmt.Sprint(ids(got)) != fmt.Sprint(want) {
		t.Fatalf("expired after the upgrade: %d jobs, want the %d final ones in finish order", len(got), len(want))
	}
	var version uint64
	_ = s.db.View(func(tx *bbolt.Tx) error {
		version = binary.BigEndian.Uint64(tx.Bucket([]byte(bucketMeta)).Get([]byte(metaSchema)))
		return nil
	})
	if version != schemaVersion {
		t.Errorf("schema version %d after the upgrade, want %d", version, schemaVersion)
	}

	// Every final job has its entry and nothing else has one; a deleted
	// job takes its entry with it.
	entries := func() int {
		var c int
		_ = s.db.View(func(tx *bbolt.Tx) error {
			c = tx.Bucket([]byte(bucketJobsDone)).Stats().KeyN
			return nil
		})
		return c
	}
	if c := entries(); c != len(want) {
		t.Errorf("%d index entries, want %d", c, len(want))
	}
	for _, id := range want[:10] {
		org := got[0].OrgID
		for i := range got {
			if got[i].ID == id {
				org = got[i].OrgID
			}
		}
		if _, err := s.DeleteJob(ctx, org, id); err != nil {
			t.Fatal(err)
		}
	}
	if c := entries(); c != len(want)-10 {
		t.Errorf("%d index entries after 10 deletes, want %d", c, len(want)-10)
	}
	if got, _ := s.ExpiredJobs(ctx, base.Add(24*time.Hour), 1); len(got) != 1 || got[0].ID != want[10] {
		t.Errorf("the first expired job after the deletes: %v, want %s", ids(got), want[10])
	}
}

func ids(jobs []store.Job) []string {
	out := make([]string, len(jobs))
	for i := range jobs {
		out[i] = jobs[i].ID
	}
	return out
}
