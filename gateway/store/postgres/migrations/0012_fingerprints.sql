-- Acoustic fingerprints of answers (store.FingerprintStore): the raw
-- Chromaprint values (little-endian uint32s) and the index keys derived
-- from them, and one row per key and request for the candidate lookup of
-- POST /v1/provenance/identify, which reads (org_id, key) ranges only.
CREATE TABLE fingerprints (
    org_id     text   NOT NULL,
    request_id text   NOT NULL,
    ts         bigint NOT NULL,
    fp_values  bytea  NOT NULL,
    fp_keys    bigint[] NOT NULL,
    PRIMARY KEY (org_id, request_id)
);
CREATE TABLE fingerprint_keys (
    org_id     text   NOT NULL,
    key        bigint NOT NULL,
    request_id text   NOT NULL,
    PRIMARY KEY (org_id, key, request_id)
);
