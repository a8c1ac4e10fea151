package metrics

import "github.com/prometheus/client_golang/prometheus"

// JobMetrics are the long-form jobs' series (gateway/jobs), counted by
// the instance whose worker did the work.
type JobMetrics struct {
	// ChunksRendered counts chunks rendered and checkpointed.
	ChunksRendered prometheus.Counter
	// ChunkRetries counts tries of a chunk after a failed one.
	ChunkRetries prometheus.Counter
	// ChunkFallbacks counts chunks a fallback of their voice rendered.
	ChunkFallbacks prometheus.Counter
	// Finished counts jobs this instance ended, by state (succeeded,
	// failed, cancelled).
	Finished *prometheus.CounterVec
	// Duration observes a finished job's time from creation to its end,
	// by state.
	Duration *prometheus.HistogramVec
}

// Jobs registers the job series; running reads how many jobs this
// instance renders at each scrape (voxgate_jobs_running).
func (m *Metrics) Jobs(running func() int) *JobMetrics {
	j := &JobMetrics{
		ChunksRendered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "voxgate_job_chunks_rendered_total", Help: "Chunks of long-form jobs rendered and checkpointed by this instance.",
		}),
		ChunkRetries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "voxgate_job_chunk_retries_total", Help: "Tries of a long-form job's chunk after a failed try.",
		}),
		ChunkFallbacks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "voxgate_job_chunk_fallbacks_total", Help: "Chunks of long-form jobs that a fallback of their voice rendered.",
		}),
		Finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "voxgate_jobs_finished_total", Help: "Long-form jobs this instance ended, by state (succeeded, failed, cancelled).",
		}, []string{"state"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "voxgate_job_duration_seconds", Help: "Time from a long-form job's creation to its end, by state.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 10), // 1 s to about 3 days
		}, []string{"state"}),
	}
	m.Registry.MustRegister(j.ChunksRendered, j.ChunkRetries, j.ChunkFallbacks, j.Finished, j.Duration,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "voxgate_jobs_running", Help: "Long-form jobs this instance is rendering.",
		}, func() float64 { return float64(running()) }))
	return j
}
