-- voxgate schema version 19: realtime settings and turn timings.
--
-- An organization's realtime failover window: how much audio
-- (milliseconds) a realtime context of an organization made
-- through the admin API may have sent and still move to a fallback
-- provider mid-utterance (docs/realtime.md); NULL is the gateway's default.
ALTER TABLE orgs ADD COLUMN failover_window_ms integer;

-- And a realtime context's text wait on its request-log row: the time
-- from its first text until its input aggregation cut the first segment
-- (the dashboard's turn timings beside time_to_first_audio_ms).
ALTER TABLE request_logs ADD COLUMN text_wait_ms bigint NOT NULL DEFAULT 0;
