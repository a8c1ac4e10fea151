-- voxgate schema version 9: the admin API's records.
--
-- Organizations made through the admin API (those of gateway.yaml are not
-- stored), announced on voxgate_changes like the other records a request
-- reads ({"k": "org", "o": id, "i": id}), so every instance applies them
-- within a second. Their provider access is a small JSON object
-- ({provider: {enabled, byok, managed}}), read and written whole.
CREATE TABLE orgs (
    id             text COLLATE "C" PRIMARY KEY,
    name           text NOT NULL,
    disabled       boolean NOT NULL DEFAULT false,
    budget         bigint NOT NULL DEFAULT 0,
    budget_period  text NOT NULL DEFAULT '',
    rate_per_min   integer NOT NULL DEFAULT 0,
    providers      jsonb NOT NULL DEFAULT '{}',
    created_ns     bigint NOT NULL,
    updated_ns     bigint NOT NULL
);

-- Admin keys authenticate the admin API only; they belong to no
-- organization (org_id '*admin').
ALTER TABLE api_keys ADD COLUMN admin boolean NOT NULL DEFAULT false;

CREATE OR REPLACE FUNCTION voxgate_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r    record;
    kind text;
    id   text;
    org  text;
BEGIN
    IF TG_OP = 'DELETE' THEN
        r := OLD;
    ELSE
        r := NEW;
    END IF;
    CASE TG_TABLE_NAME
        WHEN 'voices' THEN
            kind := 'voice';
            id := r.id;
            org := r.org_id;
        WHEN 'pronunciation_dictionaries' THEN
            kind := 'dictionary';
            id := r.id;
            org := r.org_id;
        WHEN 'pronunciations' THEN
            kind := 'dictionary';
            id := r.dictionary_id;
            org := r.org_id;
        WHEN 'secrets' THEN
            kind := 'secret';
            id := r.name;
            org := r.org_id;
        WHEN 'orgs' THEN
            kind := 'org';
            id := r.id;
            org := r.id;
    END CASE;
    PERFORM pg_notify('voxgate_changes', json_build_object('k', kind, 'o', org, 'i', id)::text);
    RETURN NULL;
END;
$$;

CREATE TRIGGER orgs_notify AFTER INSERT OR UPDATE OR DELETE ON orgs
    FOR EACH ROW EXECUTE FUNCTION voxgate_notify_change();
