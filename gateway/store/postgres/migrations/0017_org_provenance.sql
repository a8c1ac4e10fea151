-- voxgate schema version 17: an organization's provenance settings.
--
-- What an organization made through the admin API chose of
-- docs/provenance.md: the in-file mark off, consent for cloned voices
-- optional, the signed record off. Each false is the default (marked,
-- consent required, records signed), so existing rows keep it.
ALTER TABLE orgs ADD COLUMN prov_unmarked boolean NOT NULL DEFAULT false;
ALTER TABLE orgs ADD COLUMN prov_consent_optional boolean NOT NULL DEFAULT false;
ALTER TABLE orgs ADD COLUMN prov_no_records boolean NOT NULL DEFAULT false;

-- Fingerprints are purged with the log rows (by their time): the index
-- that finds the old ones.
CREATE INDEX fingerprints_ts ON fingerprints (ts);
