-- What an API key may do beyond authenticating its organization: expiry,
-- allowed providers and models, its own credit budget (store.KeyScope, as
-- JSON). Keys issued before have none.
ALTER TABLE api_keys ADD COLUMN scope jsonb NOT NULL DEFAULT '{}';
