-- voxgate schema version 20: a job's warnings.
--
-- What the worker found, when it finished a job, to be not as the job
-- asked (a lossy file that ends quieter than its loudness target), in
-- the API's words: GET /v1/audio/jobs/{id} shows them as warnings.
-- Existing jobs have none.
ALTER TABLE jobs ADD COLUMN warnings text[] NOT NULL DEFAULT '{}';
