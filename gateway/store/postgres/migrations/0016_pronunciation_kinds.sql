-- Pronunciation rule kinds (issue 33): a rule is an alias (the text it
-- replaces the word with, as before) or a phoneme rule (the word's
-- pronunciation in IPA or CMU/ARPAbet). Rules stored before keep kind
-- 'alias'.
ALTER TABLE pronunciations ADD COLUMN kind text NOT NULL DEFAULT 'alias';
ALTER TABLE pronunciations ADD COLUMN alphabet text NOT NULL DEFAULT '';
ALTER TABLE pronunciations ADD COLUMN phoneme text NOT NULL DEFAULT '';
