-- voxgate schema version 19: an organization's realtime failover window.
--
-- How much audio (milliseconds) a realtime context of an organization made
-- through the admin API may have sent and still move to a fallback
-- provider mid-utterance (docs/realtime.md); NULL is the gateway's default.
ALTER TABLE orgs ADD COLUMN failover_window_ms integer;
