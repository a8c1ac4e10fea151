package jobs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
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
