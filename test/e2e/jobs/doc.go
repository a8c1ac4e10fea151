// Package jobs holds the end-to-end tests of long-form jobs (POST
// /v1/audio/jobs, issue 34): a long job on eSpeak checked with ffprobe,
// captions, ranges, cancellation, a signed webhook, bad inputs; a bbolt
// gateway killed with SIGKILL mid-job that resumes at its next start (its
// renderings counted by a fake provider outside the gateway); two
// instances on one PostgreSQL, one killed, the other finishing its job.
package jobs
