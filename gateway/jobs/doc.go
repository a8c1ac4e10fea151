// Package jobs runs long-form jobs (POST /v1/audio/jobs): a text of up to
// limits.max_job_chars in, one finished file out, surviving restarts and
// the loss of an instance.
//
// A job is a store record with its text cut into chunks when it is made
// (chunk.go, Split): whole paragraphs and sentences within the voice
// model's limit, Markdown headings starting chapters, speaker labels
// switching voices. A worker in every gateway instance (worker.go) leases
// jobs from the store, as many at once as jobs.per_instance and no more
// than jobs.per_org of one organization across instances, and renders
// each chunk through the speech service exactly as a clip request (key
// scope, budget reserved per chunk, moderation, fallbacks, a request-log
// row each), writes its raw PCM to a file under jobs.dir and checkpoints
// it in the store. A chunk is never rendered twice but the one in flight
// when an instance dies: the next worker to lease the job (this instance
// at its next start, or another once the lease ran out) goes on from the
// first chunk not checkpointed.
//
// When every chunk is done the worker joins them (output.go) into one
// file, reading one chunk file at a time: the PCM is joined first, with
// a short fade at each chunk's edges and pauses between paragraphs and
// chapters, and encoded once, so there is no click or encoder gap at a
// boundary; chapters are written where the container has them (ID3 CHAP
// frames in MP3, CHAPTERnnn comments in Ogg Opus, cue points with labels
// in WAV), and captions (WebVTT
// and SRT) laid out from the chunks' word timestamps, shifted to their
// place in the file. Memory does not grow with the job's length.
//
// The job's end is POSTed to its webhook, signed (webhook.go).
//
// The chunk files and the finished file are on the instance's disk:
// instances that share a PostgreSQL store take over each other's jobs,
// and resume one from its checkpoints when they share jobs.dir too (a
// network file system); one that cannot find a checkpointed chunk's file
// renders that chunk again.
package jobs
