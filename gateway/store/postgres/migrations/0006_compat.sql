-- voxgate schema version 6: what the hosted service's documented API needs
-- beyond version 1 (docs/compatibility.md).

-- GET /v1/logs/{requestId}: one row by its request id.
CREATE INDEX request_logs_request ON request_logs (org_id, request_id, ts DESC, seq DESC);

-- Pronunciation dictionaries and their rules. Names are unique per
-- organization and words per dictionary, compared case-insensitively
-- (name_key and word_key hold the lower-cased forms); rule_count is kept
-- by the gateway in the same transaction as the rules, so the per-
-- dictionary bound holds without counting. Rules go with their dictionary.
CREATE TABLE pronunciation_dictionaries (
    org_id      text NOT NULL,
    id          text COLLATE "C" NOT NULL,
    name        text NOT NULL,
    name_key    text NOT NULL,
    description text NOT NULL,
    is_default  boolean NOT NULL,
    rule_count  integer NOT NULL,
    created_ns  bigint NOT NULL,
    updated_ns  bigint NOT NULL,
    PRIMARY KEY (org_id, id),
    CONSTRAINT pronunciation_dictionaries_name UNIQUE (org_id, name_key)
);
-- One default per organization.
CREATE UNIQUE INDEX pronunciation_dictionaries_default ON pronunciation_dictionaries (org_id) WHERE is_default;
-- The dictionary list: newest first, read from one seek.
CREATE INDEX pronunciation_dictionaries_list ON pronunciation_dictionaries (org_id, created_ns DESC, id DESC);

CREATE TABLE pronunciations (
    org_id         text NOT NULL,
    dictionary_id  text COLLATE "C" NOT NULL,
    id             text COLLATE "C" NOT NULL,
    word           text NOT NULL,
    word_key       text NOT NULL,
    replacement    text NOT NULL,
    case_sensitive boolean NOT NULL,
    created_ns     bigint NOT NULL,
    updated_ns     bigint NOT NULL,
    PRIMARY KEY (org_id, id),
    CONSTRAINT pronunciations_word UNIQUE (org_id, dictionary_id, word_key),
    FOREIGN KEY (org_id, dictionary_id) REFERENCES pronunciation_dictionaries (org_id, id) ON DELETE CASCADE
);
-- A dictionary's rules: listed newest first, and read whole for synthesis.
CREATE INDEX pronunciations_list ON pronunciations (org_id, dictionary_id, created_ns DESC, id DESC);
