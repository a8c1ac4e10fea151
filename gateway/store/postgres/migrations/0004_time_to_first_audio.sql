-- Realtime contexts record their time to first audio (docs/realtime.md);
-- every other row keeps 0. Adding a column with a constant default is a
-- catalog change in PostgreSQL 11 and later: no partition is rewritten.
ALTER TABLE request_logs ADD COLUMN time_to_first_audio_ms bigint NOT NULL DEFAULT 0;
