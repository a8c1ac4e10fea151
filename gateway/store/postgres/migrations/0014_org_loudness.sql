-- voxgate schema version 10: an organization's default loudness.
--
-- The EBU R128 target (integrated LUFS, true-peak dBTP) that clips and
-- conversations of an organization made through the admin API get when
-- they ask for none; both NULL is none.
ALTER TABLE orgs ADD COLUMN loudness_integrated double precision;
ALTER TABLE orgs ADD COLUMN loudness_true_peak double precision;
