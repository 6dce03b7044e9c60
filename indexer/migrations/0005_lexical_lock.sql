-- citeline schema, version 5: writers of sentences take one transaction-scoped advisory lock before touching
-- the BM25 term statistics. A write runs the delete trigger and then the insert trigger, each locking its
-- terms in order; two concurrent writers could each lock a term of the other's second pass and deadlock
-- (seen with the watcher and a second indexer writing at once). Writers already queue on the single
-- lexical_stats row, so holding one lock from the first trigger to commit costs no concurrency.

CREATE OR REPLACE FUNCTION citeline_sentences_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(7419052305);  -- citeline: lexical statistics writers
    INSERT INTO lexical_terms AS t (term, df)
        SELECT u.lexeme, count(*) FROM new_rows n, unnest(n.tsv) u GROUP BY u.lexeme ORDER BY u.lexeme
        ON CONFLICT (term) DO UPDATE SET df = t.df + EXCLUDED.df;
    UPDATE lexical_stats SET
        sentence_count = sentence_count + (SELECT count(*) FROM new_rows),
        token_total = token_total + (SELECT coalesce(sum(token_count), 0) FROM new_rows);
    INSERT INTO embedding_backlog (sentence_id) SELECT id FROM new_rows;
    PERFORM pg_notify('citeline_backlog', '');
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION citeline_sentences_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(7419052305);  -- citeline: lexical statistics writers
    UPDATE lexical_terms t SET df = t.df - gone.n
        FROM (SELECT u.lexeme AS term, count(*) AS n FROM old_rows o, unnest(o.tsv) u GROUP BY u.lexeme) gone
        WHERE t.term = gone.term;
    DELETE FROM lexical_terms t
        WHERE t.df <= 0 AND t.term IN (SELECT u.lexeme FROM old_rows o, unnest(o.tsv) u);
    UPDATE lexical_stats SET
        sentence_count = sentence_count - (SELECT count(*) FROM old_rows),
        token_total = token_total - (SELECT coalesce(sum(token_count), 0) FROM old_rows);
    RETURN NULL;
END $$;
