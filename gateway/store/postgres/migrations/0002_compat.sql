-- voxgate schema version 2: what the hosted service's documented API needs
-- beyond version 1 (docs/compatibility.md).

-- GET /v1/logs/{requestId}: one row by its request id.
CREATE INDEX request_logs_request ON request_logs (org_id, request_id, ts DESC, seq DESC);
