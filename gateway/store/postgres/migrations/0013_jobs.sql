-- voxgate schema version 10: long-form jobs (POST /v1/audio/jobs).
--
-- A job and its chunks, the job's text cut when it was made. Workers of
-- every instance lease jobs with SELECT ... FOR UPDATE SKIP LOCKED (see
-- jobs.go): a lease runs out unless renewed, so a job whose instance died
-- is taken over by another. Jobs are not announced on voxgate_changes: no
-- instance caches them.
CREATE TABLE jobs (
    id              text COLLATE "C" PRIMARY KEY,
    org_id          text COLLATE "C" NOT NULL,
    key_id          text NOT NULL DEFAULT '',
    state           text NOT NULL,
    spec            bytea NOT NULL DEFAULT '',
    chunks_total    integer NOT NULL,
    chunks_done     integer NOT NULL DEFAULT 0,
    characters      bigint NOT NULL DEFAULT 0,
    credits         bigint NOT NULL DEFAULT 0,
    audio_ms        bigint NOT NULL DEFAULT 0,
    fallbacks       integer NOT NULL DEFAULT 0,
    error_code      text NOT NULL DEFAULT '',
    error_detail    text NOT NULL DEFAULT '',
    output_bytes    bigint NOT NULL DEFAULT 0,
    created_ns      bigint NOT NULL,
    updated_ns      bigint NOT NULL,
    started_ns      bigint NOT NULL DEFAULT 0,
    finished_ns     bigint NOT NULL DEFAULT 0,
    lease_owner     text NOT NULL DEFAULT '',
    lease_until_ns  bigint NOT NULL DEFAULT 0,
    leases          integer NOT NULL DEFAULT 0,
    webhook_due_ns  bigint NOT NULL DEFAULT 0,
    deliveries      jsonb NOT NULL DEFAULT '[]'
);

-- ListJobs: newest first per organization.
CREATE INDEX jobs_org_created ON jobs (org_id, created_ns DESC, id DESC);
-- LeaseJob reads only the jobs that need a worker.
CREATE INDEX jobs_live ON jobs (created_ns, id) WHERE state IN ('queued', 'running') OR webhook_due_ns > 0;

CREATE TABLE job_chunks (
    job_id      text COLLATE "C" NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    idx         integer NOT NULL,
    chapter     integer NOT NULL DEFAULT 0,
    voice       text NOT NULL DEFAULT '',
    text        text NOT NULL,
    done        boolean NOT NULL DEFAULT false,
    audio_ms    bigint NOT NULL DEFAULT 0,
    credits     bigint NOT NULL DEFAULT 0,
    characters  bigint NOT NULL DEFAULT 0,
    served      text NOT NULL DEFAULT '',
    fallback    boolean NOT NULL DEFAULT false,
    PRIMARY KEY (job_id, idx)
);
