-- voxgate schema version 1.
--
-- Times are bigint nanoseconds since the epoch (UTC): Go times keep
-- nanoseconds and timestamptz keeps microseconds, and list positions must
-- round-trip exactly, so the ordering columns stay integers. Ids and names
-- that order or page a list use the "C" collation: byte order, the same on
-- every server whatever its locale.

CREATE TABLE voxgate_meta (
    name  text PRIMARY KEY,
    value bytea NOT NULL
);

CREATE TABLE api_keys (
    id         text COLLATE "C" PRIMARY KEY,
    org_id     text NOT NULL,
    name       text NOT NULL,
    prefix     text NOT NULL,
    hash       bytea NOT NULL UNIQUE,
    created_ns bigint NOT NULL,
    revoked_ns bigint            -- NULL while the key is active
);
CREATE INDEX api_keys_org ON api_keys (org_id, created_ns, id);

CREATE TABLE voices (
    org_id           text NOT NULL,
    id               text COLLATE "C" NOT NULL,
    title            text NOT NULL,
    provider         text NOT NULL,
    model            text NOT NULL,
    voice_id         text NOT NULL,
    tags             jsonb NOT NULL,
    gender           text NOT NULL,
    description      text NOT NULL,
    provider_options jsonb NOT NULL,
    media_id         text NOT NULL,
    created_ns       bigint NOT NULL,
    updated_ns       bigint NOT NULL,
    PRIMARY KEY (org_id, id)
);
-- The voice list: newest first, the id breaking ties, read from one seek.
CREATE INDEX voices_list ON voices (org_id, created_ns DESC, id DESC);

CREATE TABLE media (
    org_id      text NOT NULL,
    id          text NOT NULL,
    filename    text NOT NULL,
    media_type  text NOT NULL,
    bytes       bigint NOT NULL,
    duration_ms bigint NOT NULL,
    sha256      text NOT NULL,
    created_ns  bigint NOT NULL,
    data        bytea NOT NULL,
    PRIMARY KEY (org_id, id)
);

CREATE TABLE secrets (
    org_id text NOT NULL,
    name   text COLLATE "C" NOT NULL,
    value  bytea NOT NULL,
    PRIMARY KEY (org_id, name)
);

-- Request logs, partitioned by UTC day of ts (partitions are created on
-- demand by the gateway and dropped whole by retention). seq orders rows
-- of equal ts in write order across every instance.
CREATE SEQUENCE request_logs_seq;
CREATE TABLE request_logs (
    org_id                   text NOT NULL,
    ts                       bigint NOT NULL,
    seq                      bigint NOT NULL DEFAULT nextval('request_logs_seq'),
    request_id               text NOT NULL,
    parent_request_id        text NOT NULL,
    path                     text NOT NULL,
    status                   integer NOT NULL,
    provider                 text NOT NULL,
    model                    text NOT NULL,
    voice_id                 text NOT NULL,
    voice_ref                text NOT NULL,
    char_count               integer NOT NULL,
    credits_used             integer NOT NULL,
    latency_ms               bigint NOT NULL,
    error_code               text NOT NULL,
    error_detail             text NOT NULL,
    provider_options         text NOT NULL,
    moderation_decision      text NOT NULL,
    moderation_reason_type   text NOT NULL,
    moderation_reason_detail text NOT NULL,
    moderation_confidence    double precision NOT NULL,
    moderation_latency_ms    bigint NOT NULL
) PARTITION BY RANGE (ts);

-- One index per filter of GET /v1/logs, each ending in (ts, seq) so a page
-- is one descending range scan from the position, stopping after limit
-- rows: O(limit) at any table size.
CREATE INDEX request_logs_org ON request_logs (org_id, ts DESC, seq DESC);
CREATE INDEX request_logs_provider ON request_logs (org_id, provider, ts DESC, seq DESC);
CREATE INDEX request_logs_provider_status ON request_logs (org_id, provider, status, ts DESC, seq DESC);
CREATE INDEX request_logs_status ON request_logs (org_id, status, ts DESC, seq DESC);
CREATE INDEX request_logs_parent ON request_logs (org_id, parent_request_id, ts DESC, seq DESC) WHERE parent_request_id <> '';
