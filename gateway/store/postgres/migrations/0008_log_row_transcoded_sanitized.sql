-- Two request-log fields (store.LogRow): what the gateway converted the
-- provider's audio from and to ('' when it passed through untouched), and
-- whether the row was written with its unstorable text replaced after the
-- database refused it as it was. Constant defaults: a catalog change, no
-- partition is rewritten (as in 0004).
ALTER TABLE request_logs ADD COLUMN transcoded text NOT NULL DEFAULT '';
ALTER TABLE request_logs ADD COLUMN sanitized boolean NOT NULL DEFAULT false;
