-- citeline schema, version 6: the lexical lane reads a sentence under its heading path, as the vector lane
-- already embeds it. "It lives in the target folder." under "Build cache" is then found by "build cache", and a
-- page's later sentences ("He is best known for ...") by the name its title gives. On HotpotQA questions
-- 70-110 one-step recall@10 went from 0.671 to 0.731.
--
-- One SQL function states what the lexical lane indexes, so the writer, the heading-move update and this
-- migration cannot drift apart. A heading's path holds its ancestors only, so a heading is read under them.

CREATE FUNCTION citeline_lexical_text(heading_path text[], body text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN normalize(array_to_string(heading_path || body, ' '), NFKC);

-- The length BM25 normalises by: every position of every lexeme.
CREATE FUNCTION citeline_token_count(terms tsvector) RETURNS integer
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (SELECT coalesce(sum(coalesce(array_length(u.positions, 1), 1)), 0) FROM unnest(terms) u);

-- One pass, so each row is written once ('english' is indexer.store.TEXT_SEARCH_CONFIG).
UPDATE sentences s SET tsv = v.tsv, token_count = citeline_token_count(v.tsv)
FROM (SELECT id, to_tsvector('english', citeline_lexical_text(heading_path, text)) AS tsv FROM sentences) v
WHERE v.id = s.id;

-- The statistics are rebuilt from the rows rather than patched: every sentence's terms changed at once.
DO $$
BEGIN
    PERFORM pg_advisory_xact_lock(7419052305);  -- citeline: lexical statistics writers
    DELETE FROM lexical_terms;
    INSERT INTO lexical_terms (term, df)
        SELECT u.lexeme, count(*) FROM sentences s, unnest(s.tsv) u GROUP BY u.lexeme;
    UPDATE lexical_stats SET
        sentence_count = (SELECT count(*) FROM sentences),
        token_total = (SELECT coalesce(sum(token_count), 0) FROM sentences);
END $$;

-- A sentence whose heading moved keeps its id and is updated in place, and its terms change with the heading:
-- the statistics follow, for the rows whose terms changed only.
CREATE FUNCTION citeline_sentences_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM old_rows o JOIN new_rows n USING (id) WHERE o.tsv IS DISTINCT FROM n.tsv) THEN
        RETURN NULL;
    END IF;
    PERFORM pg_advisory_xact_lock(7419052305);  -- citeline: lexical statistics writers
    WITH changed AS (
        SELECT o.tsv AS old_tsv, n.tsv AS new_tsv
        FROM old_rows o JOIN new_rows n USING (id) WHERE o.tsv IS DISTINCT FROM n.tsv
    ), delta AS (
        SELECT term, sum(n)::integer AS n FROM (
            SELECT u.lexeme AS term, 1 AS n FROM changed c, unnest(c.new_tsv) u
            UNION ALL
            SELECT u.lexeme, -1 FROM changed c, unnest(c.old_tsv) u
        ) x GROUP BY term HAVING sum(n) <> 0 ORDER BY term
    )
    INSERT INTO lexical_terms AS t (term, df) SELECT term, n FROM delta
        ON CONFLICT (term) DO UPDATE SET df = t.df + EXCLUDED.df;
    DELETE FROM lexical_terms t
        WHERE t.df <= 0
          AND t.term IN (SELECT u.lexeme FROM old_rows o JOIN new_rows n USING (id), unnest(o.tsv) u
                         WHERE o.tsv IS DISTINCT FROM n.tsv);
    UPDATE lexical_stats SET token_total = token_total + (
        SELECT coalesce(sum(n.token_count - o.token_count), 0)
        FROM old_rows o JOIN new_rows n USING (id) WHERE o.tsv IS DISTINCT FROM n.tsv
    );
    RETURN NULL;
END $$;

CREATE TRIGGER sentences_updated AFTER UPDATE ON sentences
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION citeline_sentences_updated();
