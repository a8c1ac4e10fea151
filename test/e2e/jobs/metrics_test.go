package jobs

import (
	"testing"

	"github.com/voxgate/voxgate/test/e2e/harness"
)

// TestMetrics checks the job series after one job succeeded and one was
// cancelled: chunks rendered, jobs finished by state with their
// duration, and none running.
func TestMetrics(t *testing.T) {
	t.Parallel()
	tg := harness.Start(t, jobsConfig)
	text, _ := book(1_500, 2)
	body := map[string]any{"text": text, "textFormat": "markdown", "model": "espeak/espeak-ng", "voice": "en", "speed": 2.5}
	j := decodeJob(t, tg.Do("POST", "/v1/audio/jobs", "acme", body), 202)
	j = waitJob(t, func() job { return decodeJob(t, tg.Do("GET", "/v1/audio/jobs/"+j.ID, "acme", nil), 200) }, finished)
	if j.State != "succeeded" {
		t.Fatalf("finished %+v", j)
	}
	if got := tg.MetricValue("voxgate_job_chunks_rendered_total"); got != float64(j.ChunksTotal) {
		t.Errorf("voxgate_job_chunks_rendered_total %g, want %d", got, j.ChunksTotal)
	}
	if got := tg.MetricValue("voxgate_jobs_finished_total", "state", "succeeded"); got != 1 {
		t.Errorf("voxgate_jobs_finished_total{state=succeeded} %g, want 1", got)
	}
	if got := tg.MetricValue("voxgate_job_duration_seconds_count", "state", "succeeded"); got != 1 {
		t.Errorf("voxgate_job_duration_seconds_count{state=succeeded} %g, want 1", got)
	}
	if got := tg.MetricValue("voxgate_jobs_running"); got != 0 {
		t.Errorf("voxgate_jobs_running %g after the job ended", got)
	}
	if got := tg.MetricValue("voxgate_job_chunk_retries_total"); got != 0 {
		t.Errorf("voxgate_job_chunk_retries_total %g without a failure", got)
	}
}
