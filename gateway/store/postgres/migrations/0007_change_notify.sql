-- voxgate schema version 7: every change of a record a synthesis request
-- reads is announced to the instances sharing the database.
--
-- Each instance keeps saved voices, pronunciation rules and BYOK secrets in
-- memory (gateway/storecache) and LISTENs on voxgate_changes to drop what
-- changed. Triggers rather than a NOTIFY in each write of the gateway: they
-- also announce the CLI's writes, `voxgate migrate`, and an operator's SQL.
-- The notification goes out when the transaction commits, and identical
-- ones of one transaction are sent once (a dictionary deleted with its
-- thousand rules is one notification).
--
-- Payload: {"k": "voice" | "dictionary" | "secret", "o": org id, "i": id},
-- where id is the voice's id, the dictionary's (for a rule, its
-- dictionary's), or the secret's name.

CREATE FUNCTION voxgate_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r    record;
    kind text;
    id   text;
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
        WHEN 'pronunciation_dictionaries' THEN
            kind := 'dictionary';
            id := r.id;
        WHEN 'pronunciations' THEN
            kind := 'dictionary';
            id := r.dictionary_id;
        WHEN 'secrets' THEN
            kind := 'secret';
            id := r.name;
    END CASE;
    PERFORM pg_notify('voxgate_changes', json_build_object('k', kind, 'o', r.org_id, 'i', id)::text);
    RETURN NULL;
END;
$$;

CREATE TRIGGER voices_notify AFTER INSERT OR UPDATE OR DELETE ON voices
    FOR EACH ROW EXECUTE FUNCTION voxgate_notify_change();
CREATE TRIGGER pronunciation_dictionaries_notify AFTER INSERT OR UPDATE OR DELETE ON pronunciation_dictionaries
    FOR EACH ROW EXECUTE FUNCTION voxgate_notify_change();
CREATE TRIGGER pronunciations_notify AFTER INSERT OR UPDATE OR DELETE ON pronunciations
    FOR EACH ROW EXECUTE FUNCTION voxgate_notify_change();
CREATE TRIGGER secrets_notify AFTER INSERT OR UPDATE OR DELETE ON secrets
    FOR EACH ROW EXECUTE FUNCTION voxgate_notify_change();
