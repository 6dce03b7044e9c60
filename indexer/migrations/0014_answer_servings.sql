-- citeline schema, version 14: a stored answer served again from the store (the same question, the index
-- unchanged) counts as an asking. Until now only a recomputed answer added a row, so the history said
-- "asked once" of an answered question asked four times, while each refused one counted.
ALTER TABLE answers ADD COLUMN served integer NOT NULL DEFAULT 1;
