-- The answer's signed provenance record (store.LogRow.Provenance, JSON of
-- provenance.Signed), kept with the row it attests so that
-- GET /v1/provenance/{requestId} is the row's own index lookup. A
-- constant default: a catalog change, no partition is rewritten (as in
-- 0004).
ALTER TABLE request_logs ADD COLUMN provenance text NOT NULL DEFAULT '';
