-- The consent attestation of a voice cloned from uploaded media
-- (store.Voice.Consent: who attests, their relation to the speaker, the
-- statement, when), as JSON; NULL for a voice without one. Nullable
-- without a default: a catalog change, no row is rewritten.
ALTER TABLE voices ADD COLUMN consent jsonb;
