-- citeline schema, version 11: each repository's forge link template (NULL: no link), so that every API
-- replica can link a citation to its file at the cited commit without reading the repository's folder.
ALTER TABLE repositories ADD COLUMN link_template text;
