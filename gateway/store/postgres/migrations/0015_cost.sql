-- voxgate schema version 15: what a request cost in money.
--
-- cost and cost_estimate are nano-units of currency (see package
-- pricing): integers, so sums over months stay exact. The defaults are
-- constants, so adding the columns rewrites no partition; rows written
-- before read back as 0 and "".
ALTER TABLE request_logs
    ADD COLUMN cost          bigint NOT NULL DEFAULT 0,
    ADD COLUMN currency      text   NOT NULL DEFAULT '',
    ADD COLUMN cost_estimate bigint NOT NULL DEFAULT 0;

-- A budget in money for organizations made through the admin API (API
-- keys keep theirs in the scope's JSON).
ALTER TABLE orgs ADD COLUMN budget_cost bigint NOT NULL DEFAULT 0;

-- The usage rollup's sum of cost, in the gateway's currency.
ALTER TABLE usage_daily ADD COLUMN cost bigint NOT NULL DEFAULT 0;
