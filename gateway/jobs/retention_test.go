package jobs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/voxgate/voxgate/gateway/store"
	"github.com/voxgate/voxgate/gateway/store/bolt"
	"github.com/voxgate/voxgate/gateway/store/memory"
)

// TestSweepHoldsTheLease: two services on one store (two instances)
// sweep; only the one holding the sweep lease deletes, and it deletes the
// expired finished jobs' records and folders, not a live job or one
// finished within the retention.
func TestSweepHoldsTheLease(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	st := memory.New(store.Options{Now: clock})
	dir := t.TempDir()
	newSvc := func(owner string) *Service {
		return New(Options{Dir: dir, Owner: owner, Retention: time.Hour}, Deps{Store: st, Now: clock})
	}
	a, b := newSvc("a"), newSvc("b")
	ctx := context.Background()
	finish := func(id string) {
		t.Helper()
		if err := st.CreateJob(ctx, &store.Job{ID: id, OrgID: "o"}, []store.JobChunk{{Text: "x"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.CancelJob(ctx, "o", id); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(jobDir(dir, id), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	finish("old")
	now = now.Add(90 * time.Minute)
	finish("recent")
	if err := st.CreateJob(ctx, &store.Job{ID: "live", OrgID: "o"}, []store.JobChunk{{Text: "x"}}); err != nil {
		t.Fatal(err)
	}
	if n, err := b.Sweep(ctx, time.Minute); err != nil || n != 1 {
		t.Fatalf("b's sweep: %d deleted, %v; want 1", n, err)
	}
	finish("old2")
	now = now.Add(30 * time.Second)
	if n, err := a.Sweep(ctx, time.Minute); err != nil || n != 0 {
		t.Fatalf("a's sweep while b holds the lease: %d deleted, %v", n, err)
	}
	now = now.Add(2 * time.Hour) // b's lease has run out, and recent and old2 have expired
	if n, err := a.Sweep(ctx, time.Minute); err != nil || n != 2 {
		t.Fatalf("a's sweep once b's lease ran out: %d deleted, %v; want 2 (recent, old2)", n, err)
	}
	for _, id := range []string{"old", "recent", "old2"} {
		if _, err := st.GetJob(ctx, "o", id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: %v, want deleted", id, err)
		}
		if _, err := os.Stat(filepath.Join(dir, id)); !os.IsNotExist(err) {
			t.Errorf("%s's folder: %v", id, err)
		}
	}
	if _, err := st.GetJob(ctx, "o", "live"); err != nil {
		t.Errorf("the live job: %v", err)
	}
}

// TestDeleteDropsTheFingerprint: a deleted job's file leaves the
// identify index with it, whether its organization or the sweeper
// deletes it.
func TestDeleteDropsTheFingerprint(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	st := memory.New(store.Options{Now: clock})
	svc := New(Options{Dir: t.TempDir(), Owner: "a", Retention: time.Hour}, Deps{Store: st, Now: clock})
	ctx := context.Background()
	for _, id := range []string{"deleted", "swept", "kept"} {
		if err := st.CreateJob(ctx, &store.Job{ID: id, OrgID: "o"}, []store.JobChunk{{Text: "x"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.CancelJob(ctx, "o", id); err != nil {
			t.Fatal(err)
		}
		if err := st.PutFingerprint(ctx, &store.Fingerprint{OrgID: "o", RequestID: id, Values: []uint32{1, 2, 3}, Keys: []uint32{1}}); err != nil {
			t.Fatal(err)
		}
		if id == "swept" {
			now = now.Add(2 * time.Hour)
		}
	}
	if _, err := svc.Delete(ctx, "o", "deleted"); err != nil {
		t.Fatal(err)
	}
	if n, err := svc.Sweep(ctx, time.Minute); err != nil || n != 1 {
		t.Fatalf("sweep: %d deleted, %v; want 1 (swept)", n, err)
	}
	var left []string
	if err := st.ForEachFingerprint(ctx, func(f *store.Fingerprint) error { left = append(left, f.RequestID); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0] != "kept" {
		t.Errorf("fingerprints left %v, want only the kept job's", left)
	}
}

// TestSweepLocalRemovesGoneJobsChunks: where instances do not share
// jobs.dir, a failed job's chunk files stay on the instance that
// rendered it (a failed job has no finished file); they go from there
// once its record is gone (the other instance's sweep deleted it), as
// do the chunks of a job another instance took over and finished. A live
// job's folder, a failed job's within the retention, and a folder not
// named by a job id stay.
func TestSweepLocalRemovesGoneJobsChunks(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	st := memory.New(store.Options{Now: clock})
	dirA, dirB := t.TempDir(), t.TempDir()
	a := New(Options{Dir: dirA, Owner: "a", Retention: time.Hour}, Deps{Store: st, Now: clock})
	b := New(Options{Dir: dirB, Owner: "b", Retention: time.Hour}, Deps{Store: st, Now: clock})
	ctx := context.Background()
	chunkFiles := func(dir, id string) {
		t.Helper()
		if err := os.MkdirAll(jobDir(dir, id), 0o700); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"c000000.pcm", "c000000.json"} {
			if err := os.WriteFile(filepath.Join(jobDir(dir, id), f), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	// fail makes job id and has a render it and fail it, its chunk
	// files on a's disk.
	fail := func(id string) {
		t.Helper()
		if err := st.CreateJob(ctx, &store.Job{ID: id, OrgID: "o"}, []store.JobChunk{{Text: "x"}, {Index: 1, Text: "y"}}); err != nil {
			t.Fatal(err)
		}
		if j, err := st.LeaseJob(ctx, "a", time.Minute, 0); err != nil || j.ID != id {
			t.Fatalf("lease %s: %+v, %v", id, j, err)
		}
		chunkFiles(dirA, id)
		if err := st.FinishJob(ctx, id, "a", store.JobFinish{State: store.JobFailed, ErrorCode: "provider_error"}); err != nil {
			t.Fatal(err)
		}
	}
	failedOld, failedNew, takenOver, live := uuid.NewString(), uuid.NewString(), uuid.NewString(), uuid.NewString()
	fail(failedOld)
	// a renders a chunk of takenOver, dies; b takes it over and finishes it.
	if err := st.CreateJob(ctx, &store.Job{ID: takenOver, OrgID: "o"}, []store.JobChunk{{Text: "x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.LeaseJob(ctx, "a", time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	chunkFiles(dirA, takenOver)
	now = now.Add(2 * time.Minute)
	if j, err := st.LeaseJob(ctx, "b", time.Minute, 0); err != nil || j.ID != takenOver {
		t.Fatalf("b's takeover: %+v, %v", j, err)
	}
	if err := st.FinishJob(ctx, takenOver, "b", store.JobFinish{State: store.JobSucceeded}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(90 * time.Minute)
	fail(failedNew)
	if err := st.CreateJob(ctx, &store.Job{ID: live, OrgID: "o"}, []store.JobChunk{{Text: "x"}}); err != nil {
		t.Fatal(err)
	}
	chunkFiles(dirA, live)
	if err := os.MkdirAll(filepath.Join(dirA, "lost+found"), 0o700); err != nil {
		t.Fatal(err)
	}

	// b holds the sweep lease: it deletes the expired records, but its
	// own jobs.dir has none of their files.
	if n, err := b.Sweep(ctx, time.Minute); err != nil || n != 2 {
		t.Fatalf("b's sweep: %d deleted, %v; want 2 (%s, %s)", n, err, failedOld, takenOver)
	}
	a.sweepLocal(ctx)
	for id, kept := range map[string]bool{failedOld: false, takenOver: false, failedNew: true, live: true, "lost+found": true} {
		_, err := os.Stat(filepath.Join(dirA, id))
		if kept && err != nil {
			t.Errorf("%s's folder on a: %v, want kept", id, err)
		}
		if !kept && !os.IsNotExist(err) {
			t.Errorf("%s's folder on a after its record was deleted: %v, want removed", id, err)
		}
	}
}

// TestLocalSweepWithRetentionOff: with jobs.retention off there is no
// retention sweep, yet a job deleted through another instance (its record
// deleted from the store, here directly, as instance A's DELETE does)
// leaves no folder on the instance that rendered it, finished file and
// all: that instance's worker removes it within a local sweep round. The
// folders of jobs that still exist (finished, or running under another
// instance's lease) stay. The store is a real bbolt file.
func TestLocalSweepWithRetentionOff(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "voxgate.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	dir := t.TempDir()
	deleted, finished, running := uuid.NewString(), uuid.NewString(), uuid.NewString()
	for _, id := range []string{deleted, finished, running} {
		if err := st.CreateJob(ctx, &store.Job{ID: id, OrgID: "o"}, []store.JobChunk{{Text: "x"}}); err != nil {
			t.Fatal(err)
		}
		if j, err := st.LeaseJob(ctx, "b", time.Hour, 0); err != nil || j.ID != id {
			t.Fatalf("lease %s: %+v, %v", id, j, err)
		}
		writeFiles(t, dir, id, "c000000.pcm", filepath.Base(OutputPath(dir, id, "mp3")))
		if id != running {
			if err := st.FinishJob(ctx, id, "b", store.JobFinish{State: store.JobSucceeded, OutputBytes: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := st.DeleteJob(ctx, "o", deleted); err != nil {
		t.Fatal(err)
	}

	// Instance b: retention off, its worker running.
	b := New(Options{Dir: dir, Owner: "b2", LocalSweep: 10 * time.Millisecond}, Deps{Store: st})
	rctx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); b.Run(rctx) }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(jobDir(dir, deleted)); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			<-stopped
			t.Fatal("the deleted job's folder is still there with jobs.retention off")
		}
	}
	cancel()
	<-stopped
	for _, id := range []string{finished, running} {
		if _, err := os.Stat(OutputPath(dir, id, "mp3")); err != nil {
			t.Errorf("job %s exists; its file: %v, want kept", id, err)
		}
	}
}

// TestLocalSweepSparesWhatIsRenderedAndIsBounded: a folder of a job this
// instance is rendering stays even when the store no longer holds the
// job (it was cancelled and deleted elsewhere; the worker has not yet
// seen it), and a round looks at a bounded number of folders, the next
// going on where it stopped.
func TestLocalSweepSparesWhatIsRenderedAndIsBounded(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "voxgate.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	dir := t.TempDir()
	s := New(Options{Dir: dir, Owner: "a"}, Deps{Store: st})
	gone := make([]string, localSweepBatch+50)
	for i := range gone {
		gone[i] = uuid.NewString()
		writeFiles(t, dir, gone[i], "c000000.pcm")
	}
	slices.Sort(gone)
	rendered := gone[len(gone)-1] // in the second round
	s.rendering[rendered] = struct{}{}

	if n := s.sweepLocal(ctx); n != localSweepBatch {
		t.Errorf("first round removed %d folders, want %d (one batch)", n, localSweepBatch)
	}
	if n := s.sweepLocal(ctx); n != 49 {
		t.Errorf("second round removed %d folders, want the 49 left but the rendered one", n)
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].Name() != rendered {
		t.Errorf("left %d folders, want only the rendered job's", len(left))
	}
	delete(s.rendering, rendered)
	if n := s.sweepLocal(ctx); n != 1 {
		t.Errorf("once it is no longer rendered: %d removed, want 1", n)
	}
}

// writeFiles writes files into job id's folder under dir.
func writeFiles(t *testing.T, dir, id string, names ...string) {
	t.Helper()
	if err := os.MkdirAll(jobDir(dir, id), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(jobDir(dir, id), n), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
