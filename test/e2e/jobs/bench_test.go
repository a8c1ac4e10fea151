package jobs

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/voxgate/voxgate/test/e2e/harness"
)

// benchConfig is a `voxgate serve` with eSpeak, the default chunk size
// and room for the largest job the defaults allow.
const benchConfig = `
server:
  listen: %ADDR%
  max_body_bytes: 8000000
  request_timeout: 600s
storage:
  path: %DIR%/voxgate.db
plugins:
  dir: %BIN%/plugins
providers:
  espeak: {plugin: voxgate-espeak, managed: true, instances: 1}
jobs:
  per_instance: 1
  poll: 100ms
orgs:
  acme:
    dev_key: true
    providers: {espeak: {enabled: true}}
`

// vmHWM is the peak resident set of process pid, in KiB (Linux).
func vmHWM(b *testing.B, pid int) int64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Skip("no /proc:", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	b.Fatal("no VmHWM")
	return 0
}

// BenchmarkJobThroughput is the jobs' figure of `make bench`, as a go
// test benchmark (cmd/voxbench does not run jobs yet): characters per
// second of a text rendered on eSpeak through a job (chunks, checkpoints,
// the join and the MP3 encoding included) against the same text sent as
// plain speech requests of a chunk's size, one after the other as the
// job's worker sends them; and the gateway process's peak resident memory
// during a job of JOB_CHARS characters (default 2,000,000, its request
// included) against its peak before the job (the job runs first).
//
//	VOXGATE_BIN_DIR=$PWD/bin go test -run '^$' -bench JobThroughput -benchtime 1x -timeout 30m ./test/e2e/jobs/
func BenchmarkJobThroughput(b *testing.B) {
	chars := 2_000_000
	if v, err := strconv.Atoi(os.Getenv("JOB_CHARS")); err == nil && v > 0 {
		chars = v
	}
	text, _ := book(chars*99/100, 40) // the headings and paragraph breaks come on top
	chars = len(text)                 // ASCII
	p := harness.StartProcess(b, b.TempDir(), benchConfig, nil)
	before := vmHWM(b, p.PID())
	for range b.N {
		body, _ := json.Marshal(map[string]any{"text": text, "textFormat": "markdown", "model": "espeak/espeak-ng", "voice": "en", "output": "mp3"})
		start := time.Now()
		r := p.Do("POST", "/v1/audio/jobs", "acme", body)
		if r.Status != 202 {
			b.Fatalf("job: %d %s", r.Status, r.Body)
		}
		var env struct{ Data job }
		_ = json.Unmarshal(r.Body, &env)
		var j job
		for {
			_ = json.Unmarshal(p.Do("GET", "/v1/audio/jobs/"+env.Data.ID, "acme", nil).Body, &env)
			if j = env.Data; finished(j) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		through := time.Since(start)
		if j.State != "succeeded" {
			b.Fatalf("job %+v", j)
		}
		peak := vmHWM(b, p.PID()) // before the plain requests, whose peak may be higher

		// Plain requests: the text's chunks as the job cuts them (2,000
		// characters at most, at paragraph ends), one at a time.
		var pieces []string
		var cur strings.Builder
		for _, para := range strings.Split(text, "\n\n") {
			if cur.Len()+len(para) > 2000 && cur.Len() > 0 {
				pieces = append(pieces, cur.String())
				cur.Reset()
			}
			cur.WriteString(para + "\n\n")
		}
		pieces = append(pieces, cur.String())
		start = time.Now()
		for _, piece := range pieces {
			body, _ := json.Marshal(map[string]any{"text": piece, "model": "espeak/espeak-ng", "voice": "en", "output": map[string]any{"format": "pcm", "sampleRate": 24000}})
			if r := p.Do("POST", "/v1/audio/speech", "acme", body); r.Status != 200 {
				b.Fatalf("speech: %d %s", r.Status, r.Body)
			}
		}
		plain := time.Since(start)
		afterPlain := vmHWM(b, p.PID())

		b.ReportMetric(float64(chars)/plain.Seconds(), "chars/s-plain")
		b.ReportMetric(float64(chars)/through.Seconds(), "chars/s-job")
		b.ReportMetric(float64(before)/1024, "MiB-peak-before")
		b.ReportMetric(float64(afterPlain)/1024, "MiB-peak-plain")
		b.ReportMetric(float64(peak)/1024, "MiB-peak-job")
		b.Logf("%d characters, %d chunks, %.0f s of audio: job %s, plain requests %s; gateway peak RSS %d MiB before, %d after the job, %d after the plain requests",
			chars, j.ChunksTotal, float64(j.DurationMS)/1000, through.Round(time.Millisecond), plain.Round(time.Millisecond), before/1024, peak/1024, afterPlain/1024)
	}
}
