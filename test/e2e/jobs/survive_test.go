package jobs

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/pgtest"
	"github.com/voxgate/voxgate/test/e2e/harness"
)

// processConfig is a `voxgate serve` with eSpeak and small chunks, so a
// job has many; %STORAGE% is its storage block.
const processConfig = `
server:
  listen: %ADDR%
  max_body_bytes: 4000000
storage:
%STORAGE%
  log_batch_size: 8
plugins:
  dir: %BIN%/plugins
providers:
  espeak: {plugin: voxgate-espeak, managed: true, instances: 1}
jobs:
  dir: %JOBS%
  chunk_chars: 400
  lease: 3s
  poll: 100ms
orgs:
  acme:
    dev_key: true
    providers: {espeak: {enabled: true}}
`

func processYAML(storage, jobsDir string) string {
	return strings.NewReplacer("%STORAGE%", storage, "%JOBS%", jobsDir).Replace(processConfig)
}

func getJob(t *testing.T, p *harness.Process, id string) job {
	t.Helper()
	return decodeJob(t, p.Do("GET", "/v1/audio/jobs/"+id, "acme", nil), 200)
}

// renders counts the request-log rows of job id's chunks: one per
// rendering that was logged.
func renders(t *testing.T, p *harness.Process, id string) int {
	t.Helper()
	n, cursor := 0, ""
	for {
		path := "/v1/logs?limit=100"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		var page struct {
			Data []struct {
				Path   string `json:"path"`
				Status int    `json:"status"`
			} `json:"data"`
			NextCursor string `json:"next_cursor"`
			HasMore    bool   `json:"has_more"`
		}
		r := p.Do("GET", path, "acme", nil)
		if err := json.Unmarshal(r.Body, &page); err != nil || r.Status != 200 {
			t.Fatalf("logs: %d %s", r.Status, r.Body)
		}
		for _, row := range page.Data {
			if row.Path == "/v1/audio/jobs/"+id && row.Status == 200 {
				n++
			}
		}
		if !page.HasMore {
			return n
		}
		cursor = page.NextCursor
	}
}

// leased counts p's log lines saying it leased job id.
func leased(p *harness.Process, id string) int {
	n := 0
	for _, line := range strings.Split(p.Log(), "\n") {
		if strings.Contains(line, "job leased") && strings.Contains(line, id) {
			n++
		}
	}
	return n
}

func createBook(t *testing.T, p *harness.Process, chars int) job {
	t.Helper()
	text, _ := book(chars, 3)
	body, _ := json.Marshal(map[string]any{"text": text, "textFormat": "markdown", "model": "espeak/espeak-ng", "voice": "en", "speed": 2.5})
	return decodeJob(t, p.Do("POST", "/v1/audio/jobs", "acme", body), 202)
}

// TestResumesAfterKill9 kills a bbolt gateway (SIGKILL) at a random chunk
// of a job and starts it again on the same files: the job resumes where
// it stopped and succeeds, with at most one chunk rendered twice (the one
// in flight at the kill), counted in the request log.
func TestResumesAfterKill9(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	yaml := processYAML("  path: %DIR%/voxgate.db", dir+"/jobs")
	p := harness.StartProcess(t, dir, yaml, nil)
	j := createBook(t, p, 40_000)
	if j.ChunksTotal < 40 {
		t.Fatalf("%d chunks; the test wants many", j.ChunksTotal)
	}
	at := 5 + rand.IntN(j.ChunksTotal-15)
	cur := waitJob(t, func() job { return getJob(t, p, j.ID) }, func(j job) bool { return j.ChunksDone >= at || finished(j) })
	// The rows of the chunks done are in the store before the kill, so
	// that a chunk rendered again would be counted twice.
	harness.WaitFor(t, "the rows of the chunks done", func() bool { return renders(t, p, j.ID) >= cur.ChunksDone })
	p.Kill()
	t.Logf("killed at chunk %d of %d", cur.ChunksDone, j.ChunksTotal)

	p = harness.StartProcess(t, dir, yaml, p.Keys)
	done := waitJob(t, func() job { return getJob(t, p, j.ID) }, finished)
	if done.State != "succeeded" || done.ChunksDone != done.ChunksTotal || done.Leases != 2 {
		t.Fatalf("after the restart: %+v", done)
	}
	if leased(p, j.ID) != 1 {
		t.Error("the restarted gateway did not log the job's lease")
	}
	harness.WaitFor(t, "every chunk's row", func() bool { return renders(t, p, j.ID) >= done.ChunksTotal })
	time.Sleep(500 * time.Millisecond) // a row past the count would have landed by now
	if n := renders(t, p, j.ID); n > done.ChunksTotal+1 {
		t.Errorf("%d renderings for %d chunks: more than the one in flight at the kill was rendered again", n, done.ChunksTotal)
	}
	if a := p.Do("GET", "/v1/audio/jobs/"+j.ID+"/audio", "acme", nil); a.Status != 200 || len(a.Body) == 0 {
		t.Errorf("audio after the restart: %d", a.Status)
	}
}

// TestSharedQueueOnPostgres runs two instances on one PostgreSQL (and one
// jobs folder); the one that took the job is killed mid-job and the other
// takes it over once the lease has run out, and finishes it.
func TestSharedQueueOnPostgres(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts PostgreSQL")
	}
	pg := pgtest.StartT(t)
	dsn := pg.NewDatabaseT(t)
	jobsDir := t.TempDir()
	yaml := processYAML("  driver: postgres\n  dsn: "+dsn+"\n  path: %DIR%/voxgate.db", jobsDir)
	a := harness.StartProcess(t, t.TempDir(), yaml, nil)
	b := harness.StartProcess(t, t.TempDir(), yaml, a.Keys)
	j := createBook(t, a, 30_000)
	var holder, other *harness.Process
	harness.WaitFor(t, "an instance to take the job", func() bool {
		switch {
		case leased(a, j.ID) > 0:
			holder, other = a, b
		case leased(b, j.ID) > 0:
			holder, other = b, a
		}
		return holder != nil
	})
	cur := waitJob(t, func() job { return getJob(t, other, j.ID) }, func(j job) bool { return j.ChunksDone >= 5 || finished(j) })
	if cur.State != "running" {
		t.Fatalf("the job is %s before the kill", cur.State)
	}
	holder.Kill()
	killed := time.Now()
	harness.WaitFor(t, "the other instance to take the job over", func() bool {
		return leased(other, j.ID) > 0
	})
	if d := time.Since(killed); d > 10*time.Second {
		t.Errorf("taken over after %s; the lease is 3s", d)
	}
	done := waitJob(t, func() job { return getJob(t, other, j.ID) }, finished)
	if done.State != "succeeded" || done.Leases != 2 || done.ChunksDone != done.ChunksTotal {
		t.Fatalf("after the takeover: %+v", done)
	}
	if a := other.Do("GET", "/v1/audio/jobs/"+j.ID+"/audio", "acme", nil); a.Status != 200 {
		t.Errorf("audio from the survivor: %d %s", a.Status, a.Body)
	}
}
