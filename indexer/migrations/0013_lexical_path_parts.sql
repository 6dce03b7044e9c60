-- citeline schema, version 13: the lexical lane reads the parts of paths and dotted names in prose too, as it
-- already does in code units (version 9). PostgreSQL's parser takes "/srv/caddy-store/certs" for one file
-- name and "http.handlers.file_server" for one host name, one lexeme each, so "caddy-store", "caddy", "certs"
-- or "handlers" found neither. Each such token is now also read with its "/", ".", ":" and "=" as spaces; a
-- hyphenated part stays whole, so the parser still reads "caddy-store" both whole and as "caddy" and "store".
-- The whole tokens stay, so a path as written still matches.
CREATE FUNCTION citeline_path_terms(body text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN array_to_string(ARRAY(
        SELECT regexp_replace(m[1], '[./:=]+', ' ', 'g')
        FROM regexp_matches(body, '([[:alnum:]_-]+(?:[./:=]+[[:alnum:]_-]+)+)', 'g') AS m
    ), ' ');

CREATE OR REPLACE FUNCTION citeline_unit_lexical_text(kind text, heading_path text[], body text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN citeline_lexical_text(
        heading_path,
        body || ' ' || CASE WHEN kind = 'code' THEN citeline_code_terms(body) ELSE citeline_path_terms(body) END
    );

-- The prose rows that hold such a token get their parts (the update trigger of 0006 keeps the statistics in
-- step, for the rows whose terms changed only).
UPDATE sentences s SET tsv = v.tsv, token_count = citeline_token_count(v.tsv)
FROM (SELECT id, to_tsvector('english', citeline_unit_lexical_text(kind, heading_path, text)) AS tsv
      FROM sentences WHERE kind <> 'code' AND text ~ '[[:alnum:]_-][./:=]+[[:alnum:]_-]') v
WHERE v.id = s.id AND s.tsv IS DISTINCT FROM v.tsv;
