-- citeline schema, version 11: each repository's forge link template (NULL: no link), so that every API
-- replica can link a citation to its file at the cited commit without reading the repository's folder; and
-- the stored answers by age, for the history the page lists.
ALTER TABLE repositories ADD COLUMN link_template text;

-- The page lists the latest stored answers.
CREATE INDEX answers_created_idx ON answers (created_at DESC);
