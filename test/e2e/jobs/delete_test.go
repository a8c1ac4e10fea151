package jobs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/voxgate/voxgate/internal/pgtest"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestDelete: a finished job is deleted with its record and files; a
// running one is refused until cancelled; another organization's is not
// found and stays.
func TestDelete(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, jobsConfig)
	get := func(id string) *harness.Response { return tg.Do("GET", "/v1/audio/jobs/"+id, "acme", nil) }
	small, _ := book(1_500, 2)
	done := decodeJob(t, tg.Do("POST", "/v1/audio/jobs", "acme", map[string]any{
		"text": small, "textFormat": "markdown", "model": "espeak/espeak-ng", "voice": "en", "speed": 2.5, "captions": true,
	}), 202)
	done = waitJob(t, func() job { return decodeJob(t, get(done.ID), 200) }, finished)
	if done.State != "succeeded" {
		t.Fatalf("finished %+v", done)
	}
	dir := filepath.Join(tg.Dir, "jobs", done.ID)
	if _, err := os.Stat(filepath.Join(dir, "output.mp3")); err != nil {
		t.Fatalf("the finished file: %v", err)
	}

	// Another organization's id: 404, and the job and its file stay.
	tg.Do("DELETE", "/v1/audio/jobs/"+done.ID, "globex", nil).Problem(t, 404, "not_found")
	if r := tg.Do("GET", done.AudioURL, "acme", nil); r.Status != 200 {
		t.Fatalf("after another organization's delete: audio %d", r.Status)
	}

	// A running job: 409, naming the cancel; cancelled, it is deleted.
	long, _ := book(60_000, 2)
	run := decodeJob(t, tg.Do("POST", "/v1/audio/jobs", "acme", map[string]any{"text": long, "textFormat": "markdown", "model": "espeak/espeak-ng", "voice": "en"}), 202)
	waitJob(t, func() job { return decodeJob(t, get(run.ID), 200) }, func(j job) bool { return j.ChunksDone >= 1 || finished(j) })
	p := tg.Do("DELETE", "/v1/audio/jobs/"+run.ID, "acme", nil).Problem(t, 409, "conflict")
	if !strings.Contains(p.Detail, "/cancel") {
		t.Errorf("409 detail %q does not say to cancel first", p.Detail)
	}
	if j := decodeJob(t, get(run.ID), 200); j.State != "running" {
		t.Errorf("a refused delete changed the job: %+v", j)
	}
	decodeJob(t, tg.Do("POST", "/v1/audio/jobs/"+run.ID+"/cancel", "acme", nil), 200)
	if r := tg.Do("DELETE", "/v1/audio/jobs/"+run.ID, "acme", nil); r.Status != 204 {
		t.Fatalf("delete of the cancelled job: %d %s", r.Status, r.Body)
	}
	get(run.ID).Problem(t, 404, "not_found")
	harness.WaitFor(t, "the cancelled, deleted job's files to go", func() bool {
		_, err := os.Stat(filepath.Join(tg.Dir, "jobs", run.ID))
		return os.IsNotExist(err)
	})

	// The finished job: 204, then it, its file, captions and provenance
	// record are gone.
	if r := tg.Do("DELETE", "/v1/audio/jobs/"+done.ID, "acme", nil); r.Status != 204 || len(r.Body) != 0 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	get(done.ID).Problem(t, 404, "not_found")
	tg.Do("GET", done.AudioURL, "acme", nil).Problem(t, 404, "not_found")
	tg.Do("GET", "/v1/audio/jobs/"+done.ID+"/captions", "acme", nil).Problem(t, 404, "not_found")
	if r := tg.Do("GET", "/v1/provenance/"+done.ID, "acme", nil); r.Status != 404 {
		t.Errorf("provenance of a deleted job: %d", r.Status)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the deleted job's folder: %v", err)
	}
	tg.Do("DELETE", "/v1/audio/jobs/"+done.ID, "acme", nil).Problem(t, 404, "not_found")
	var list struct{ Data []job }
	tg.Do("GET", "/v1/audio/jobs", "acme", nil).JSON(t, &list)
	if len(list.Data) != 0 {
		t.Errorf("list after the deletes: %+v", list.Data)
	}
}

// TestRetention: with a short jobs.retention (and webhook retries no
// longer, which the config asks), a finished job is deleted,
// record and files, by the sweeper; one finished later is still there.
func TestRetention(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, strings.Replace(jobsConfig, "jobs:\n", "jobs:\n  retention: 3s\n  webhook_retry_for: 3s\n", 1))
	get := func(id string) *harness.Response { return tg.Do("GET", "/v1/audio/jobs/"+id, "acme", nil) }
	text, _ := book(1_500, 2)
	finish := func() job {
		j := decodeJob(t, tg.Do("POST", "/v1/audio/jobs", "acme", map[string]any{
			"text": text, "textFormat": "markdown", "model": "espeak/espeak-ng", "voice": "en", "speed": 2.5,
		}), 202)
		j = waitJob(t, func() job { return decodeJob(t, get(j.ID), 200) }, finished)
		if j.State != "succeeded" {
			t.Fatalf("finished %+v", j)
		}
		return j
	}
	old := finish()
	if _, err := os.Stat(filepath.Join(tg.Dir, "jobs", old.ID, "output.mp3")); err != nil {
		t.Fatalf("the finished file: %v", err)
	}
	harness.WaitFor(t, "the expired job to be deleted", func() bool { return get(old.ID).Status == 404 })
	fresh := finish()
	if _, err := os.Stat(filepath.Join(tg.Dir, "jobs", old.ID)); !os.IsNotExist(err) {
		t.Errorf("the expired job's folder: %v", err)
	}
	if r := get(fresh.ID); r.Status != 200 {
		t.Errorf("a job finished just now was deleted: %d", r.Status)
	}
}

// TestDeletedElsewhereLeavesNoFiles: two instances on one PostgreSQL,
// each with its own jobs.dir, jobs.retention off. A job deleted through
// the instance that did not render it leaves no folder on the one that
// did: that instance's jobs.dir sweep removes it. A job that is not
// deleted keeps its file there.
func TestDeletedElsewhereLeavesNoFiles(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	pg := pgtest.StartT(t)
	dsn := pg.NewDatabaseT(t)
	cfg := strings.Replace(processYAML("  driver: postgres\n  dsn: "+dsn+"\n  path: %DIR%/voxgate.db", "%DIR%/jobs"),
		"jobs:\n", "jobs:\n  retention: off\n  dir_sweep: 200ms\n", 1)
	yaml := harness.ShareProvenanceKey(t, cfg)
	a := harness.StartProcess(t, t.TempDir(), yaml, nil)
	b := harness.StartProcess(t, t.TempDir(), yaml, a.Keys)
	folder := func(p *harness.Process, id string) string { return filepath.Join(p.Dir, "jobs", id) }
	var made []job
	for range 2 {
		j := createBook(t, a, 1_500)
		made = append(made, waitJob(t, func() job { return getJob(t, a, j.ID) }, finished))
	}
	for _, j := range made {
		if j.State != "succeeded" {
			t.Fatalf("job %s: %+v", j.ID, j)
		}
	}
	deleted, kept := made[0], made[1]
	// rendered returns the instance whose jobs.dir holds job id's file,
	// and the other.
	rendered := func(id string) (holder, other *harness.Process) {
		t.Helper()
		_, errA := os.Stat(filepath.Join(folder(a, id), "output.mp3"))
		_, errB := os.Stat(filepath.Join(folder(b, id), "output.mp3"))
		switch {
		case errA == nil && errB != nil:
			return a, b
		case errB == nil && errA != nil:
			return b, a
		}
		t.Fatalf("job %s's file: on a %v, on b %v; want it on one instance", id, errA, errB)
		return nil, nil
	}
	// The job's file is on the instance that rendered it; delete it
	// through the other.
	holder, other := rendered(deleted.ID)
	if r := other.Do("DELETE", "/v1/audio/jobs/"+deleted.ID, "acme", nil); r.Status != 204 {
		t.Fatalf("delete through the other instance: %d %s", r.Status, r.Body)
	}
	harness.WaitFor(t, "the deleted job's folder to go from the instance that rendered it", func() bool {
		_, err := os.Stat(folder(holder, deleted.ID))
		return os.IsNotExist(err)
	})
	keptOn, _ := rendered(kept.ID) // the job not deleted keeps its file
	if r := keptOn.Do("GET", "/v1/audio/jobs/"+kept.ID+"/audio", "acme", nil); r.Status != 200 {
		t.Errorf("the kept job's audio: %d", r.Status)
	}
}
