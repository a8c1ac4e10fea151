package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
)

// Long-form jobs: records, chunk checkpoints, leases and their fencing,
// webhook scheduling, organization isolation and paging.

func jobChunks(n int) []store.JobChunk {
	out := make([]store.JobChunk, n)
	for i := range out {
		out[i] = store.JobChunk{Index: i, Chapter: i / 2, Text: fmt.Sprintf("Chunk %d says «%d».", i, i)}
	}
	return out
}

func testJobRecords(t *testing.T, open Opener) {
	clk := newClock()
	s := openWith(t, open, clk)
	ctx := context.Background()
	j := &store.Job{ID: "j1", OrgID: "o", KeyID: "k", Spec: []byte(`{"voice":"x"}`), Characters: 99}
	if err := s.CreateJob(ctx, j, jobChunks(5)); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateJob(ctx, &store.Job{ID: "j1", OrgID: "o"}, jobChunks(1)); !errors.Is(err, store.ErrExists) {
		t.Errorf("taken id: %v, want ErrExists", err)
	}
	if err := s.CreateJob(ctx, &store.Job{ID: "bad", OrgID: "o"}, []store.JobChunk{{Index: 0, Text: "a\x00b"}}); !errors.Is(err, store.ErrInvalidText) {
		t.Errorf("NUL in a chunk: %v, want ErrInvalidText", err)
	}
	if _, err := s.GetJob(ctx, "o", "bad"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused job was written: %v", err)
	}
	got, err := s.GetJob(ctx, "o", "j1")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != store.JobQueued || got.ChunksTotal != 5 || got.ChunksDone != 0 || string(got.Spec) != `{"voice":"x"}` ||
		got.KeyID != "k" || got.Characters != 99 || !got.CreatedAt.Equal(clk.Now()) || got.Leases != 0 || got.LeaseOwner != "" {
		t.Errorf("read back %+v", got)
	}
	if _, err := s.GetJob(ctx, "other", "j1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another organization's job: %v, want ErrNotFound", err)
	}
	if _, err := s.CancelJob(ctx, "other", "j1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("cancel of another organization's job: %v, want ErrNotFound", err)
	}
	var all []store.JobChunk
	for from := 0; ; from += 2 {
		page, err := s.JobChunks(ctx, "j1", from, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		all = append(all, page...)
	}
	want := jobChunks(5)
	if len(all) != len(want) {
		t.Fatalf("%d chunks read back, want %d", len(all), len(want))
	}
	for i := range want {
		if all[i] != want[i] {
			t.Errorf("chunk %d = %+v, want %+v", i, all[i], want[i])
		}
	}
	if _, err := s.JobChunks(ctx, "nope", 0, 10); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("chunks of an unknown job: %v, want ErrNotFound", err)
	}

	// Paging: newest first, no repeats or skips while jobs are added.
	for i := 2; i <= 7; i++ {
		clk.Advance(time.Second)
		if err := s.CreateJob(ctx, &store.Job{ID: fmt.Sprintf("j%d", i), OrgID: "o"}, jobChunks(1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CreateJob(ctx, &store.Job{ID: "theirs", OrgID: "other"}, jobChunks(1)); err != nil {
		t.Fatal(err)
	}
	var ids []string
	var after store.Position
	for {
		page, next, more, err := s.ListJobs(ctx, "o", 3, after)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range page {
			ids = append(ids, j.ID)
		}
		if after == nil {
			clk.Advance(time.Second)
			if err := s.CreateJob(ctx, &store.Job{ID: "j8", OrgID: "o"}, jobChunks(1)); err != nil {
				t.Fatal(err)
			}
		}
		if !more {
			break
		}
		after = next
	}
	if fmt.Sprint(ids) != "[j7 j6 j5 j4 j3 j2 j1]" {
		t.Errorf("paged %v, want j7..j1 (newest first, no other organization's)", ids)
	}
	if _, _, _, err := s.ListJobs(ctx, "o", 10, store.Position{1, 2}); !errors.Is(err, store.ErrInvalidPosition) {
		t.Errorf("short position: %v, want ErrInvalidPosition", err)
	}
	if _, _, _, err := s.ListJobs(ctx, "o", 0, nil); err == nil {
		t.Error("limit 0 accepted")
	}
}

func testJobLeases(t *testing.T, open Opener) {
	clk := newClock()
	s := openWith(t, open, clk)
	ctx := context.Background()
	const lease = time.Minute
	if _, err := s.LeaseJob(ctx, "w1", lease, 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("lease with no jobs: %v, want ErrNotFound", err)
	}
	for i, org := range []string{"a", "a", "b"} {
		clk.Advance(time.Second)
		if err := s.CreateJob(ctx, &store.Job{ID: fmt.Sprintf("%s%d", org, i), OrgID: org}, jobChunks(3)); err != nil {
			t.Fatal(err)
		}
	}
	// One running job per organization: a0, then b2 (a1 waits for a0).
	first, err := s.LeaseJob(ctx, "w1", lease, 1)
	if err != nil || first.ID != "a0" || first.State != store.JobRunning || first.LeaseOwner != "w1" || first.Leases != 1 || first.StartedAt.IsZero() {
		t.Fatalf("first lease: %+v, %v; want a0 running for w1", first, err)
	}
	second, err := s.LeaseJob(ctx, "w2", lease, 1)
	if err != nil || second.ID != "b2" {
		t.Fatalf("second lease: %+v, %v; want b2 (a is at its bound)", second, err)
	}
	if _, err := s.LeaseJob(ctx, "w2", lease, 1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("third lease at the bound: %v, want ErrNotFound", err)
	}

	// Checkpoints: counted once, fenced by the lease.
	c := store.JobChunk{Index: 1, Done: true, AudioMS: 1500, Credits: 7, Characters: 20, Served: "espeak/espeak-ng", Fallback: true}
	for range 2 {
		if err := s.CheckpointJobChunk(ctx, "a0", "w1", &c); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.CheckpointJobChunk(ctx, "a0", "w2", &store.JobChunk{Index: 0}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("checkpoint by a worker without the lease: %v, want ErrLeaseLost", err)
	}
	j, _ := s.GetJob(ctx, "a", "a0")
	if j.ChunksDone != 1 || j.Credits != 7 || j.AudioMS != 1500 || j.Fallbacks != 1 {
		t.Errorf("after one chunk checkpointed twice: %+v", j)
	}
	chunks, _ := s.JobChunks(ctx, "a0", 1, 1)
	if len(chunks) != 1 || !chunks[0].Done || chunks[0].Served != c.Served || !chunks[0].Fallback || chunks[0].Credits != 7 || chunks[0].Text != jobChunks(3)[1].Text {
		t.Errorf("checkpointed chunk read back %+v", chunks)
	}

	// A lease renewed holds; one left to run out is taken over, and the
	// worker that lost it is fenced off.
	clk.Advance(lease / 2)
	if _, err := s.RenewJobLease(ctx, "a0", "w1", lease); err != nil {
		t.Fatal(err)
	}
	clk.Advance(lease/2 + time.Second)
	if j, err := s.LeaseJob(ctx, "w3", lease, 1); err != nil || j.ID != "b2" || j.Leases != 2 || j.LeaseOwner != "w3" {
		t.Fatalf("lease after b2's ran out: %+v, %v; want b2 taken over", j, err)
	}
	if _, err := s.RenewJobLease(ctx, "b2", "w2", lease); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("renewal by the worker that lost the lease: %v, want ErrLeaseLost", err)
	}
	if err := s.FinishJob(ctx, "b2", "w2", store.JobFinish{State: store.JobSucceeded}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("finish by the worker that lost the lease: %v, want ErrLeaseLost", err)
	}

	// Cancel: the worker's next write is refused.
	cj, err := s.CancelJob(ctx, "a", "a0")
	if err != nil || cj.State != store.JobCancelled || cj.FinishedAt.IsZero() {
		t.Fatalf("cancel: %+v, %v", cj, err)
	}
	if _, err := s.RenewJobLease(ctx, "a0", "w1", lease); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("renewal of a cancelled job: %v, want ErrLeaseLost", err)
	}
	if err := s.CheckpointJobChunk(ctx, "a0", "w1", &store.JobChunk{Index: 2}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("checkpoint of a cancelled job: %v, want ErrLeaseLost", err)
	}
	if again, err := s.CancelJob(ctx, "a", "a0"); err != nil || !again.FinishedAt.Equal(cj.FinishedAt) {
		t.Errorf("second cancel: %+v, %v; want unchanged", again, err)
	}
	// a1 may run now that a0 is over.
	if j, err := s.LeaseJob(ctx, "w1", lease, 1); err != nil || j.ID != "a1" {
		t.Fatalf("lease after a0 was cancelled: %+v, %v; want a1", j, err)
	}
	if _, err := s.CancelJob(ctx, "a", "a1"); err != nil {
		t.Fatal(err)
	}

	// Finish with a webhook due in a minute: leased for it only then,
	// and a delivery releases it. The finish writes the job's warnings,
	// read back in order; a job finished without any has none.
	due := clk.Now().Add(time.Minute)
	warnings := []string{"The file could not reach -14 LUFS under a true peak of -1 dBTP; it is at -16.2 LUFS, quieter than asked.", "Ünïcode ✓"}
	if err := s.FinishJob(ctx, "b2", "w3", store.JobFinish{State: store.JobSucceeded, OutputBytes: 1234, WebhookDue: due,
		Warnings: []string{"bad \x00 text"}}); err == nil {
		t.Error("FinishJob took a warning that is not valid text")
	}
	if err := s.FinishJob(ctx, "b2", "w3", store.JobFinish{State: store.JobSucceeded, OutputBytes: 1234, WebhookDue: due, Warnings: warnings}); err != nil {
		t.Fatal(err)
	}
	done, _ := s.GetJob(ctx, "b", "b2")
	if done.State != store.JobSucceeded || done.OutputBytes != 1234 || done.LeaseOwner != "" || !done.WebhookDue.Equal(due) || done.FinishedAt.IsZero() {
		t.Errorf("finished job %+v", done)
	}
	if !equalStrings(done.Warnings, warnings) {
		t.Errorf("finished job's warnings %q, want %q", done.Warnings, warnings)
	}
	if cj, _ := s.GetJob(ctx, "a", "a0"); len(cj.Warnings) != 0 {
		t.Errorf("a job finished without warnings has %q", cj.Warnings)
	}
	if j, err := s.LeaseJob(ctx, "w4", lease, 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("lease before the webhook is due: %+v, %v; want ErrNotFound", j, err)
	}
	clk.Advance(time.Minute)
	wj, err := s.LeaseJob(ctx, "w4", lease, 0)
	if err != nil || wj.ID != "b2" || wj.State != store.JobSucceeded || wj.LeaseOwner != "w4" {
		t.Fatalf("lease of a due webhook: %+v, %v; want b2, still succeeded", wj, err)
	}
	if _, err := s.LeaseJob(ctx, "w5", lease, 0); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a leased webhook leased again: %v", err)
	}
	at := clk.Now()
	if err := s.RecordJobDelivery(ctx, "b2", "w5", store.JobDelivery{At: at, Event: "job.succeeded"}, time.Time{}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("delivery recorded without the lease: %v", err)
	}
	if err := s.RecordJobDelivery(ctx, "b2", "w4", store.JobDelivery{At: at, Event: "job.succeeded", Status: 500, Error: "HTTP 500"}, at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	if _, err := s.LeaseJob(ctx, "w4", lease, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordJobDelivery(ctx, "b2", "w4", store.JobDelivery{At: clk.Now(), Event: "job.succeeded", Status: 204}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	done, _ = s.GetJob(ctx, "b", "b2")
	if len(done.Deliveries) != 2 || done.Deliveries[0].Status != 500 || done.Deliveries[0].Error != "HTTP 500" || !done.Deliveries[0].At.Equal(at) ||
		done.Deliveries[1].Status != 204 || !done.WebhookDue.IsZero() || done.State != store.JobSucceeded {
		t.Errorf("deliveries %+v, due %v", done.Deliveries, done.WebhookDue)
	}
	if !equalStrings(done.Warnings, warnings) {
		t.Errorf("warnings after the deliveries %q, want %q", done.Warnings, warnings)
	}
	clk.Advance(time.Hour)
	if j, err := s.LeaseJob(ctx, "w4", lease, 0); err == nil && j.ID == "b2" {
		t.Error("a delivered webhook was leased again")
	}
}

func testJobLeasesConcurrent(t *testing.T, open Opener) {
	s := openWith(t, open, nil)
	ctx := context.Background()
	const jobs, workers = 20, 6
	for i := range jobs {
		if err := s.CreateJob(ctx, &store.Job{ID: fmt.Sprintf("j%02d", i), OrgID: fmt.Sprintf("o%d", i%3)}, jobChunks(1)); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	got := map[string]string{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("w%d", w)
			for {
				j, err := s.LeaseJob(ctx, owner, time.Hour, 0)
				if errors.Is(err, store.ErrNotFound) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if prev, ok := got[j.ID]; ok {
					t.Errorf("job %s leased by %s and %s", j.ID, prev, owner)
				}
				got[j.ID] = owner
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(got) != jobs {
		t.Errorf("%d jobs leased, want %d", len(got), jobs)
	}
}
