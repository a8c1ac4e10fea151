package jobs

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
	"github.com/voxgate/voxgate/internal/pgtest"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestMigrateKeepsJobs moves a bbolt gateway with a finished job and one
// killed in its middle to PostgreSQL, as docs/jobs.md says: `voxgate
// migrate`, then a gateway on PostgreSQL with the same jobs.dir. The
// finished job and its audio are there; the interrupted one is taken over
// by the new gateway's worker at once (its lease is ten minutes: only the
// migration's release of it lets the new worker take it before it runs
// out) and finishes from its checkpoints.
func TestMigrateKeepsJobs(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	fake := openai.New(t, fakeupstream.Options{FixedSeconds: 1, Latency: 40 * time.Millisecond, MaxRecorded: -1})
	dir := t.TempDir()
	yaml := strings.NewReplacer("%FAKE%", fake.BaseURL(), "%KEY%", openai.Key, "%JOBS%", dir+"/jobs", "lease: 3s", "lease: 10m").Replace(cloudConfig)
	p := harness.StartProcess(t, dir, yaml, nil)
	create := func(p *harness.Process, chars int) job {
		t.Helper()
		text, _ := book(chars, 2)
		body, _ := json.Marshal(map[string]any{"text": text, "textFormat": "markdown", "model": "openai/tts-1", "voice": "alloy"})
		return decodeJob(t, p.Do("POST", "/v1/audio/jobs", "acme", body), 202)
	}
	small := create(p, 1_500)
	small = waitJob(t, func() job { return getJob(t, p, small.ID) }, finished)
	if small.State != "succeeded" {
		t.Fatalf("the small job: %+v", small)
	}
	long := create(p, 20_000)
	cur := waitJob(t, func() job { return getJob(t, p, long.ID) }, func(j job) bool { return j.ChunksDone >= 5 || finished(j) })
	if cur.State != "running" {
		t.Fatalf("the long job is %s before the stop", cur.State)
	}
	p.Kill()
	before := renders(fake)

	dsn := pgtest.StartT(t).NewDatabaseT(t)
	out, err := exec.Command(filepath.Join(harness.BinDir(t), "voxgate"), "migrate", "--to", "postgres", "--dsn", dsn, "--config", p.Cfg).CombinedOutput()
	if err != nil {
		t.Fatalf("voxgate migrate: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`(?m)^jobs +2 in the file, 2 verified in postgres$`).Match(out) {
		t.Fatalf("voxgate migrate did not verify both jobs:\n%s", out)
	}

	pgYAML := strings.Replace(yaml, "storage:\n", "storage:\n  driver: postgres\n  dsn: "+dsn+"\n", 1)
	q := harness.StartProcess(t, dir, pgYAML, p.Keys)
	got := getJob(t, q, small.ID)
	if got.State != "succeeded" || got.ChunksDone != small.ChunksDone || got.Credits != small.Credits || got.DurationMS != small.DurationMS {
		t.Errorf("the finished job on PostgreSQL: %+v; on bbolt %+v", got, small)
	}
	if a := q.Do("GET", "/v1/audio/jobs/"+small.ID+"/audio", "acme", nil); a.Status != 200 || len(a.Body) == 0 {
		t.Errorf("the finished job's audio on PostgreSQL: %d", a.Status)
	}
	if resumed := getJob(t, q, long.ID); resumed.ChunksDone < cur.ChunksDone {
		t.Fatalf("the migration lost checkpoints: %d chunks done, %d before", resumed.ChunksDone, cur.ChunksDone)
	}
	harness.WaitFor(t, "the PostgreSQL gateway to take the interrupted job", func() bool { return leased(q, long.ID) > 0 })
	done := waitJob(t, func() job { return getJob(t, q, long.ID) }, finished)
	if done.State != "succeeded" || done.ChunksDone != done.ChunksTotal || done.Leases != 2 {
		t.Fatalf("the interrupted job after the migration: %+v", done)
	}
	// Resumed from its checkpoints, whose files were in the jobs.dir the
	// new gateway uses: at most the chunk in flight at the stop was
	// rendered twice.
	if n := renders(fake); n > small.ChunksTotal+done.ChunksTotal+1 {
		t.Errorf("%d renderings for %d chunks (%d before the stop)", n, small.ChunksTotal+done.ChunksTotal, before)
	}
	if a := q.Do("GET", "/v1/audio/jobs/"+long.ID+"/audio", "acme", nil); a.Status != 200 || len(a.Body) == 0 {
		t.Errorf("the resumed job's audio: %d", a.Status)
	}
}
