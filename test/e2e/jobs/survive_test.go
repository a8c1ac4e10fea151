package jobs

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/internal/fakeupstream"
	"github.com/voxgate/voxgate/internal/fakeupstream/openai"
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

// cloudConfig is processConfig with OpenAI's plugin pointed at a fake of
// its API (%FAKE%) in place of eSpeak: the fake runs in the test's
// process, so it counts every chunk the gateway sends to be rendered,
// and a kill -9 of the gateway cannot lose that count (it can lose
// request-log rows still queued in the log writer, which is allowed).
const cloudConfig = `
server:
  listen: %ADDR%
  max_body_bytes: 4000000
storage:
  path: %DIR%/voxgate.db
  log_batch_size: 8
plugins:
  dir: %BIN%/plugins
providers:
  openai: {plugin: voxgate-openai, base_url: "%FAKE%", api_key: "%KEY%", managed: true, max_attempts: 1}
jobs:
  dir: %JOBS%
  chunk_chars: 400
  lease: 3s
  poll: 100ms
  retry_backoff: 100ms
orgs:
  acme:
    dev_key: true
    providers: {openai: {enabled: true}}
`

// renders counts the chunks fake rendered: the speech requests it
// received, whether answered or cut off by a kill.
func renders(fake *openai.Server) int { return fake.CallsTo(fake.SpeechURLPath()) }

// TestResumesAfterKill9 kills a bbolt gateway (SIGKILL) at a random chunk
// of a job and starts it again on the same files: the job resumes where
// it stopped and succeeds, with at most one chunk rendered twice (the one
// in flight at the kill). Renderings are counted by the fake provider,
// outside the gateway; the chunks done by the job's own checkpoints.
func TestResumesAfterKill9(t *testing.T) {
	t.Parallel()
	// A second of audio per chunk whatever its text, answered after a
	// short wait, so the job is long enough to be killed in its middle
	// and its joined file stays small.
	fake := openai.New(t, fakeupstream.Options{FixedSeconds: 1, Latency: 40 * time.Millisecond, MaxRecorded: -1})
	dir := t.TempDir()
	yaml := strings.NewReplacer("%FAKE%", fake.BaseURL(), "%KEY%", openai.Key, "%JOBS%", dir+"/jobs").Replace(cloudConfig)
	p := harness.StartProcess(t, dir, yaml, nil)
	text, _ := book(40_000, 3)
	body, _ := json.Marshal(map[string]any{"text": text, "textFormat": "markdown", "model": "openai/tts-1", "voice": "alloy"})
	j := decodeJob(t, p.Do("POST", "/v1/audio/jobs", "acme", body), 202)
	if j.ChunksTotal < 40 {
		t.Fatalf("%d chunks; the test wants many", j.ChunksTotal)
	}
	at := 5 + rand.IntN(j.ChunksTotal-15)
	cur := waitJob(t, func() job { return getJob(t, p, j.ID) }, func(j job) bool { return j.ChunksDone >= at || finished(j) })
	if cur.State != "running" {
		t.Fatalf("the job is %s before the kill", cur.State)
	}
	p.Kill()
	before := renders(fake)
	t.Logf("killed at chunk %d of %d, %d chunks sent to the provider", cur.ChunksDone, j.ChunksTotal, before)
	if before < cur.ChunksDone {
		t.Fatalf("%d chunks checkpointed but only %d rendered", cur.ChunksDone, before)
	}

	p = harness.StartProcess(t, dir, yaml, p.Keys)
	if resumed := getJob(t, p, j.ID); resumed.ChunksDone < cur.ChunksDone {
		t.Fatalf("the restart lost checkpoints: %d chunks done, %d before the kill", resumed.ChunksDone, cur.ChunksDone)
	}
	done := waitJob(t, func() job { return getJob(t, p, j.ID) }, finished)
	if done.State != "succeeded" || done.ChunksDone != done.ChunksTotal || done.Leases != 2 {
		t.Fatalf("after the restart: %+v", done)
	}
	if leased(p, j.ID) != 1 {
		t.Error("the restarted gateway did not log the job's lease")
	}
	// Every chunk was rendered at least once; more than one extra
	// rendering means the resume rendered checkpointed chunks again.
	if n := renders(fake); n < done.ChunksTotal || n > done.ChunksTotal+1 {
		t.Errorf("%d renderings for %d chunks (%d before the kill, %d checkpointed): want %d or %d",
			n, done.ChunksTotal, before, cur.ChunksDone, done.ChunksTotal, done.ChunksTotal+1)
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
	yaml := harness.ShareProvenanceKey(t, processYAML("  driver: postgres\n  dsn: "+dsn+"\n  path: %DIR%/voxgate.db", jobsDir))
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
