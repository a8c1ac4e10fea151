-- voxgate schema version 5: who made a request, how much audio it sent,
-- whether the response cache answered it, and the usage rollup.
--
-- The new log columns have constant defaults, so adding them rewrites no
-- partition and rows written before read back as "" and 0.

ALTER TABLE request_logs
    ADD COLUMN key_id   text   NOT NULL DEFAULT '',
    ADD COLUMN audio_ms bigint NOT NULL DEFAULT 0,
    ADD COLUMN cache    text   NOT NULL DEFAULT '';

-- Element-wise sum of two histograms (a missing element counts as 0), and
-- the aggregate over it.
CREATE FUNCTION voxgate_hist_add(a bigint[], b bigint[]) RETURNS bigint[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT coalesce(array_agg(coalesce(x, 0) + coalesce(y, 0) ORDER BY i), '{}')
          FROM unnest(a, b) WITH ORDINALITY AS t(x, y, i) $$;
CREATE AGGREGATE voxgate_hist_sum(bigint[]) (
    SFUNC = voxgate_hist_add, STYPE = bigint[], INITCOND = '{}'
);

-- The usage rollup: one row per organization, UTC day (day number since
-- the epoch), provider, model and API key, upserted in the transaction
-- that appends the log rows it counts (top-level rows only). The primary
-- key serves GET /v1/usage: one range scan of the window's days.
-- latency_hist counts latencies per bucket of store.LatencyBoundsMS.
CREATE TABLE usage_daily (
    org_id        text NOT NULL,
    day           integer NOT NULL,
    provider      text COLLATE "C" NOT NULL,
    model         text COLLATE "C" NOT NULL,
    key_id        text COLLATE "C" NOT NULL,
    requests      bigint NOT NULL,
    errors        bigint NOT NULL,
    server_errors bigint NOT NULL,
    characters    bigint NOT NULL,
    credits       bigint NOT NULL,
    audio_ms      bigint NOT NULL,
    cache_hits    bigint NOT NULL,
    latency_sum   bigint NOT NULL,
    latency_hist  bigint[] NOT NULL,
    PRIMARY KEY (org_id, day, provider, model, key_id)
);

-- Backfill from the rows already logged: per group and latency bucket
-- first, then each bucket's count placed at its index.
INSERT INTO usage_daily
SELECT org_id, day, provider, model, key_id,
       sum(n), sum(errors), sum(server_errors), sum(characters), sum(credits),
       sum(audio_ms), sum(cache_hits), sum(latency_sum),
       voxgate_hist_sum(array_fill(0::bigint, ARRAY[bucket]) || ARRAY[n] || array_fill(0::bigint, ARRAY[20 - bucket]))
FROM (
    SELECT org_id, floor(ts / 86400000000000.0)::integer AS day, provider, model, key_id,
           width_bucket(greatest(latency_ms, 0), ARRAY[10,25,50,100,150,200,300,400,500,750,1000,1500,2000,3000,5000,7500,10000,20000,30000,60000]::bigint[]) AS bucket,
           count(*) AS n,
           count(*) FILTER (WHERE status >= 400) AS errors,
           count(*) FILTER (WHERE status >= 500) AS server_errors,
           sum(char_count) AS characters, sum(credits_used) AS credits,
           sum(audio_ms) AS audio_ms, count(*) FILTER (WHERE cache = 'hit') AS cache_hits,
           sum(greatest(latency_ms, 0)) AS latency_sum
    FROM request_logs
    WHERE parent_request_id = ''
    GROUP BY 1, 2, 3, 4, 5, 6
) per_bucket
GROUP BY org_id, day, provider, model, key_id;
