package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/voxgate/voxgate/gateway/store"
)

// Deleting jobs, by their organization (DeleteJob) and by the retention
// sweeper (ExpiredJobs, LeaseJobSweep).

// finishJob makes job id of org and brings it to state (a final one).
func finishJob(t *testing.T, s store.Backend, org, id, state string) {
	t.Helper()
	ctx := context.Background()
	if err := s.CreateJob(ctx, &store.Job{ID: id, OrgID: org}, jobChunks(2)); err != nil {
		t.Fatal(err)
	}
	if state == store.JobCancelled {
		if _, err := s.CancelJob(ctx, org, id); err != nil {
			t.Fatal(err)
		}
		return
	}
	j, err := s.LeaseJob(ctx, "w", time.Minute, 0)
	if err != nil || j.ID != id {
		t.Fatalf("lease %s: %+v, %v", id, j, err)
	}
	if err := s.FinishJob(ctx, id, "w", store.JobFinish{State: state}); err != nil {
		t.Fatal(err)
	}
}

func testJobDelete(t *testing.T, open Opener) {
	clk := newClock()
	s := openWith(t, open, clk)
	ctx := context.Background()
	for i, st := range []string{store.JobSucceeded, store.JobFailed, store.JobCancelled} {
		clk.Advance(time.Second)
		finishJob(t, s, "o", fmt.Sprintf("f%d", i), st)
	}
	clk.Advance(time.Second)
	if err := s.CreateJob(ctx, &store.Job{ID: "queued", OrgID: "o"}, jobChunks(2)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if err := s.CreateJob(ctx, &store.Job{ID: "running", OrgID: "o"}, jobChunks(2)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LeaseJob(ctx, "w", time.Minute, 0); err != nil { // queued is the oldest
		t.Fatal(err)
	}
	if _, err := s.LeaseJob(ctx, "w", time.Minute, 0); err != nil {
		t.Fatal(err)
	}

	// Another organization's id, or an unknown one, is not found, and
	// the job stays.
	if _, err := s.DeleteJob(ctx, "other", "f0"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("delete of another organization's job: %v, want ErrNotFound", err)
	}
	if _, err := s.DeleteJob(ctx, "o", "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("delete of an unknown job: %v, want ErrNotFound", err)
	}
	if _, err := s.GetJob(ctx, "o", "f0"); err != nil {
		t.Errorf("a refused delete removed the job: %v", err)
	}
	// A live job is refused and left as it was, chunks and all.
	for _, id := range []string{"queued", "running"} {
		if _, err := s.DeleteJob(ctx, "o", id); !errors.Is(err, store.ErrJobLive) {
			t.Errorf("delete of %s job: %v, want ErrJobLive", id, err)
		}
		if j, err := s.GetJob(ctx, "o", id); err != nil || j.State != store.JobRunning {
			t.Errorf("%s job after a refused delete: %+v, %v", id, j, err)
		}
		if c, err := s.JobChunks(ctx, id, 0, 10); err != nil || len(c) != 2 {
			t.Errorf("%s job's chunks after a refused delete: %d, %v", id, len(c), err)
		}
	}
	// A finished job goes with its chunks, and is returned as it was.
	for i, st := range []string{store.JobSucceeded, store.JobFailed, store.JobCancelled} {
		id := fmt.Sprintf("f%d", i)
		j, err := s.DeleteJob(ctx, "o", id)
		if err != nil || j.ID != id || j.OrgID != "o" || j.State != st {
			t.Fatalf("delete %s: %+v, %v", id, j, err)
		}
		if _, err := s.GetJob(ctx, "o", id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("deleted job %s read back: %v", id, err)
		}
		if _, err := s.JobChunks(ctx, id, 0, 10); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("deleted job %s's chunks: %v, want ErrNotFound", id, err)
		}
		if _, err := s.DeleteJob(ctx, "o", id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("second delete of %s: %v, want ErrNotFound", id, err)
		}
	}
	page, _, more, err := s.ListJobs(ctx, "o", 10, nil)
	if err != nil || more || len(page) != 2 || page[0].ID != "running" || page[1].ID != "queued" {
		t.Errorf("list after deletes: %d jobs %v, more %v, %v; want running, queued", len(page), ids(page), more, err)
	}
	// A deleted id may be used again (the jobs package never does, but
	// nothing of the old job is left to collide with).
	if err := s.CreateJob(ctx, &store.Job{ID: "f0", OrgID: "o"}, jobChunks(1)); err != nil {
		t.Errorf("create with a deleted job's id: %v", err)
	}
	// A deleted job is not leased for work or a webhook.
	clk.Advance(time.Hour)
	for {
		j, err := s.LeaseJob(ctx, "w2", time.Minute, 0)
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if j.ID != "queued" && j.ID != "running" && j.ID != "f0" {
			t.Fatalf("leased %s, a deleted job", j.ID)
		}
	}
}

func ids(jobs []store.Job) []string {
	out := make([]string, len(jobs))
	for i := range jobs {
		out[i] = jobs[i].ID
	}
	return out
}

func testJobRetention(t *testing.T, open Opener) {
	clk := newClock()
	s := openWith(t, open, clk)
	ctx := context.Background()
	start := clk.Now()
	for i, st := range []string{store.JobFailed, store.JobSucceeded, store.JobCancelled} {
		clk.Advance(time.Minute)
		finishJob(t, s, fmt.Sprintf("org%d", i), fmt.Sprintf("old%d", i), st)
	}
	clk.Advance(time.Minute)
	cut := clk.Now()
	clk.Advance(time.Minute)
	finishJob(t, s, "org0", "new", store.JobSucceeded)
	if err := s.CreateJob(ctx, &store.Job{ID: "live", OrgID: "org0"}, jobChunks(1)); err != nil {
		t.Fatal(err)
	}
	got, err := s.ExpiredJobs(ctx, cut, 10)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ids(got)) != "[old0 old1 old2]" {
		t.Errorf("expired before the cut: %v, want old0 old1 old2 (every organization's, oldest first)", ids(got))
	}
	if got, _ := s.ExpiredJobs(ctx, cut, 2); fmt.Sprint(ids(got)) != "[old0 old1]" {
		t.Errorf("expired, limit 2: %v", ids(got))
	}
	if got, _ := s.ExpiredJobs(ctx, start, 10); len(got) != 0 {
		t.Errorf("expired before any job finished: %v", ids(got))
	}
	if got, _ := s.ExpiredJobs(ctx, clk.Now().Add(time.Hour), 10); fmt.Sprint(ids(got)) != "[old0 old1 old2 new]" {
		t.Errorf("expired an hour on: %v, want the four finished jobs and not the live one", ids(got))
	}
	// A deleted job is not expired any more (an index of finish times
	// loses its entry with the record), and jobs that finished at the
	// same instant come in id order.
	if _, err := s.DeleteJob(ctx, "org1", "old1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ExpiredJobs(ctx, cut, 10); fmt.Sprint(ids(got)) != "[old0 old2]" {
		t.Errorf("expired after old1 was deleted: %v, want old0 old2", ids(got))
	}
	finishJob(t, s, "org2", "tie-b", store.JobCancelled)
	finishJob(t, s, "org1", "tie-a", store.JobCancelled)
	if got, _ := s.ExpiredJobs(ctx, clk.Now().Add(time.Hour), 10); fmt.Sprint(ids(got)) != "[old0 old2 new tie-a tie-b]" {
		t.Errorf("expired with two jobs finished at once: %v, want old0 old2 new tie-a tie-b", ids(got))
	}

	// The sweeper's lease: one owner at a time, renewed by its owner,
	// taken over once it has run out.
	const d = time.Minute
	for _, c := range []struct {
		owner   string
		advance time.Duration
		want    bool
	}{
		{"a", 0, true},
		{"b", 0, false},
		{"a", d / 2, true}, // renewed until now+d
		{"b", d / 2, false},
		{"b", d/2 + time.Second, true},
		{"a", 0, false},
		{"b", 0, true},
	} {
		clk.Advance(c.advance)
		held, err := s.LeaseJobSweep(ctx, c.owner, d)
		if err != nil || held != c.want {
			t.Fatalf("sweep lease for %s after %v: %v, %v; want %v", c.owner, c.advance, held, err, c.want)
		}
	}
}
