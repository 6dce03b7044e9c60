-- citeline schema, version 8: files left out of the index are recorded, and no sentence can overflow a tsvector.
--
-- A file the indexer could not take (unreadable, too large, binary, a name that is not UTF-8, rows the
-- database refused) keeps its previous version in the index; this table says so, per repository, for
-- `citeline status` and `/metrics`. A row goes when the file is indexed again or is gone.
CREATE TABLE skipped_files (
    repository_id bigint NOT NULL REFERENCES repositories (id) ON DELETE CASCADE,
    path          text NOT NULL,
    reason        text NOT NULL,
    detail        text NOT NULL DEFAULT '',
    skipped_at    timestamptz NOT NULL DEFAULT now()
);
-- Keyed by the path's hash: a path too long for a B-tree entry is exactly what may have to be noted here.
CREATE UNIQUE INDEX skipped_files_path_idx ON skipped_files (repository_id, md5(path));

-- The lexical lane reads at most the first 50,000 characters of a sentence under its headings. PostgreSQL
-- refuses a tsvector over 1 MB ("string is too long for tsvector"), and the densest text found (two-character
-- hyphenated words of 4-byte characters) needs about 9.2 bytes of tsvector per character, so a single line
-- of distinct words can no longer make a file's rows unwritable. The whole sentence stays stored and cited.
CREATE OR REPLACE FUNCTION citeline_lexical_text(heading_path text[], body text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN left(normalize(array_to_string(heading_path || body, ' '), NFKC), 50000);

-- Rows whose text reaches the cap get their terms recomputed (the update trigger keeps the statistics); NFKC
-- expands a character to at most 18, so shorter rows cannot be affected.
UPDATE sentences s SET tsv = v.tsv, token_count = citeline_token_count(v.tsv)
FROM (SELECT id, to_tsvector('english', citeline_lexical_text(heading_path, text)) AS tsv FROM sentences
      WHERE length(array_to_string(heading_path || text, ' ')) > 2700) v
WHERE v.id = s.id AND s.tsv IS DISTINCT FROM v.tsv;
