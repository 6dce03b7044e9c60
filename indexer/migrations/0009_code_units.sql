-- citeline schema, version 9: code blocks are units of their own by default ([indexing] code_blocks = "block").
--
-- A code unit knows the sentence that introduces it ("To reload the configuration, send this request:") by
-- that sentence's ordinal in the same document: the parser knows it, it needs no extra write, and it moves with
-- the rows the way ordinals already do (a changed ordinal is a moved row, rewritten in the same transaction).
ALTER TABLE sentences ADD COLUMN intro_ordinal integer;

-- The parse options each repository was indexed with. When they change (a new default, an edited
-- configuration), every document of the repository is marked unread, so the next walk parses all files again;
-- the sentence diff keeps every unchanged row and id. '' is "unknown": indexes from before this version.
ALTER TABLE repositories ADD COLUMN index_options text NOT NULL DEFAULT '';

-- The lexical lane reads a code unit's compound tokens also in their parts. PostgreSQL's parser takes
-- "web.enable" and "storage.tsdb.retention.time" for host names, one lexeme each, so "enable lifecycle" or
-- "retention time" would not find "--web.enable-lifecycle" or "--storage.tsdb.retention.time=15d". The whole
-- tokens stay, so the flag as written still matches.
CREATE FUNCTION citeline_code_terms(body text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN array_to_string(ARRAY(
        SELECT regexp_replace(m[1], '[./:=-]+', ' ', 'g')
        FROM regexp_matches(body, '([[:alnum:]]+(?:[./:=-]+[[:alnum:]]+)+)', 'g') AS m
    ), ' ');

-- What the lexical lane indexes for a unit of any kind: `citeline_lexical_text` plus a code unit's parts.
CREATE FUNCTION citeline_unit_lexical_text(kind text, heading_path text[], body text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN citeline_lexical_text(
        heading_path, CASE WHEN kind = 'code' THEN body || ' ' || citeline_code_terms(body) ELSE body END
    );

-- Code units written by the "block" mode before this version get their parts (the update trigger of 0006
-- keeps the statistics in step).
UPDATE sentences s SET tsv = v.tsv, token_count = citeline_token_count(v.tsv)
FROM (SELECT id, to_tsvector('english', citeline_unit_lexical_text(kind, heading_path, text)) AS tsv
      FROM sentences WHERE kind = 'code') v
WHERE v.id = s.id;
