package config

import (
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Jobs configures long-form jobs (POST /v1/audio/jobs) and this
// instance's worker; limits.max_job_chars bounds a job's text.
type Jobs struct {
	// Dir holds the jobs' chunk audio and finished files (default: jobs/
	// beside the storage file). Instances that share a PostgreSQL store
	// resume each other's jobs from their checkpoints when they share
	// this folder too; otherwise the chunks already done are rendered
	// again by the instance that takes a job over.
	Dir string `yaml:"dir"`
	// PerInstance is how many jobs this instance renders at once
	// (default 2); PerOrg how many of one organization run at once
	// across instances (default 1; 0 in the file means the default).
	// Jobs past them wait, queued.
	PerInstance int `yaml:"per_instance"`
	PerOrg      int `yaml:"per_org"`
	// Lease is how long a job stays with an instance that stopped
	// renewing it (it died) before another takes it (default 30s).
	Lease Duration `yaml:"lease"`
	// Poll is how often an idle worker looks for jobs (default 1s).
	Poll Duration `yaml:"poll"`
	// ChunkChars caps a chunk's characters, below the voice model's own
	// limit (default 2000): the work lost at a crash is at most a chunk.
	ChunkChars int `yaml:"chunk_chars"`
	// SampleRate is the rate chunks are rendered and joined at (default
	// 24000).
	SampleRate int `yaml:"sample_rate"`
	// ChunkRetries is how many times a failing chunk is tried again
	// before the job fails (default 3); every try falls back to the
	// voice's fallbacks. RetryBackoff is the first wait (default 2s),
	// doubled each time.
	ChunkRetries *int     `yaml:"chunk_retries"`
	RetryBackoff Duration `yaml:"retry_backoff"`
	// WebhookBackoff is the wait before a failed webhook delivery is
	// tried again (default 30s), doubled each time up to an hour, for
	// WebhookRetryFor after the job ended (default 24h).
	WebhookBackoff  Duration `yaml:"webhook_backoff"`
	WebhookRetryFor Duration `yaml:"webhook_retry_for"`
	// WebhookAllowPrivate lets webhooks reach loopback, private and
	// link-local addresses (off: they could reach services inside the
	// deployment); WebhookAllowHTTP plain http (off: https only).
	WebhookAllowPrivate bool `yaml:"webhook_allow_private"`
	WebhookAllowHTTP    bool `yaml:"webhook_allow_http"`
	// Retention is how long a finished job (succeeded, failed or
	// cancelled) is kept, its record and its files, before a sweeper
	// deletes it (default 30d; "off" keeps jobs until they are deleted
	// with DELETE /v1/audio/jobs/{id}). It may not be shorter than
	// WebhookRetryFor: a job is kept while its webhook is retried.
	// Whatever it says, every instance removes from its own Dir the
	// folders of jobs deleted anywhere (see DirSweep).
	Retention Age `yaml:"retention"`
	// DirSweep is how often each instance sweeps its own Dir (default
	// 1m): a job deleted through another instance, or by the retention
	// sweeper, leaves its files on the disks of the instances that
	// rendered it when they do not share Dir; a round looks at a bounded
	// number of folders.
	DirSweep Duration `yaml:"dir_sweep"`
}

// Age is a duration that may also be given in days ("30d"), or "off"
// (kept for ever: -1).
type Age time.Duration

// UnmarshalYAML parses "off", a number of days ("30d") or a Go duration.
func (a *Age) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	s = strings.TrimSpace(s)
	if s == "off" {
		*a = -1
		return nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		d, err := strconv.ParseFloat(days, 64)
		if err != nil || d <= 0 || d > 36500 {
			return typeError("line %d: %q is not a number of days like 30d", n.Line, s)
		}
		*a = Age(d * float64(24*time.Hour))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		return typeError("line %d: %q is not a positive duration like 30d, 12h or 90s, or off", n.Line, s)
	}
	*a = Age(v)
	return nil
}

// D returns the age as a time.Duration; 0 for off.
func (a Age) D() time.Duration { return max(time.Duration(a), 0) }

func (j *Jobs) defaults() {
	if j.PerInstance == 0 {
		j.PerInstance = 2
	}
	if j.PerOrg == 0 {
		j.PerOrg = 1
	}
	if j.Lease == 0 {
		j.Lease = Duration(30 * time.Second)
	}
	if j.Poll == 0 {
		j.Poll = Duration(time.Second)
	}
	if j.ChunkChars == 0 {
		j.ChunkChars = 2000
	}
	if j.SampleRate == 0 {
		j.SampleRate = 24000
	}
	if j.ChunkRetries == nil {
		n := 3
		j.ChunkRetries = &n
	}
	if j.RetryBackoff == 0 {
		j.RetryBackoff = Duration(2 * time.Second)
	}
	if j.WebhookBackoff == 0 {
		j.WebhookBackoff = Duration(30 * time.Second)
	}
	if j.WebhookRetryFor == 0 {
		j.WebhookRetryFor = Duration(24 * time.Hour)
	}
	if j.Retention == 0 {
		j.Retention = Age(30 * 24 * time.Hour)
	}
	if j.DirSweep == 0 {
		j.DirSweep = Duration(time.Minute)
	}
}

// validateJobs checks the jobs section and limits.max_job_chars.
func (c *Config) validateJobs(bad report) {
	j := &c.Jobs
	if j.PerInstance < 1 || j.PerOrg < 1 {
		bad("jobs", "per_instance and per_org must be positive")
	}
	if j.Lease.D() < 3*time.Second {
		bad("jobs.lease", "must be at least 3s (it is renewed every third of it), got %s", j.Lease.D())
	}
	if j.Poll <= 0 || j.RetryBackoff < 0 || j.WebhookBackoff <= 0 || j.WebhookRetryFor <= 0 || j.DirSweep <= 0 {
		bad("jobs", "poll, retry_backoff, webhook_backoff, webhook_retry_for and dir_sweep must be positive")
	}
	if j.ChunkChars < 100 || j.ChunkChars > 100_000 {
		bad("jobs.chunk_chars", "must be from 100 to 100000, got %d", j.ChunkChars)
	}
	if j.SampleRate < 8000 || j.SampleRate > 48000 {
		bad("jobs.sample_rate", "must be from 8000 to 48000, got %d", j.SampleRate)
	}
	if *j.ChunkRetries < 0 || *j.ChunkRetries > 20 {
		bad("jobs.chunk_retries", "must be from 0 to 20, got %d", *j.ChunkRetries)
	}
	if r := j.Retention; r > 0 && r.D() < time.Second {
		bad("jobs.retention", "must be at least 1s (or off), got %s", r.D())
	} else if r > 0 && j.WebhookRetryFor > 0 && r.D() < j.WebhookRetryFor.D() {
		// The sweeper would delete a finished job, record and files,
		// while its webhook is still being retried; the retries live on
		// the record, so they would stop and a receiver that was down
		// would never be told.
		bad("jobs.retention", "%s is shorter than jobs.webhook_retry_for (%s): a finished job would be deleted, its files swept, while its webhook is still retried; "+
			"keep jobs.retention at least as long as jobs.webhook_retry_for (or off), or shorten jobs.webhook_retry_for", r.D(), j.WebhookRetryFor.D())
	}
	if n := c.Limits.MaxJobChars; n < 1 || n > 50_000_000 {
		bad("limits.max_job_chars", "must be from 1 to 50000000, got %d", n)
	}
}
