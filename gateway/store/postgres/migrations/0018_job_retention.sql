-- Job deletion and retention (issue 34): DELETE /v1/audio/jobs/{id}, and
-- jobs.retention's sweeper, which deletes the jobs finished longer ago.
--
-- ExpiredJobs reads the finished jobs oldest-finished first.
CREATE INDEX jobs_finished ON jobs (finished_ns, id) WHERE finished_ns > 0;

-- The sweeper's lease: one row, held by one instance at a time (taken
-- when free or run out), so instances sharing the store do not sweep at
-- once.
CREATE TABLE job_sweeper (
    id        smallint PRIMARY KEY CHECK (id = 1),
    owner     text NOT NULL,
    until_ns  bigint NOT NULL
);
