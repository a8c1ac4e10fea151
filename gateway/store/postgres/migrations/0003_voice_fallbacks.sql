-- Equivalent voices on other providers a saved voice falls back to, in
-- order (store.VoiceTarget, as JSON). Voices saved before have none.
ALTER TABLE voices ADD COLUMN fallbacks jsonb NOT NULL DEFAULT '[]';
