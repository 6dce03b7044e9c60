-- citeline schema, version 1: repositories, documents, sentences with their lexical lane, the embedding
-- backlog and stored answers. Term statistics and the backlog are kept by statement-level triggers, so they
-- change in the same transaction as the sentences, whoever writes them.

CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE repositories (
    id          integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    root        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE documents (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    repository_id   integer NOT NULL REFERENCES repositories ON DELETE CASCADE,
    path            text NOT NULL,
    title           text,
    content_hash    text NOT NULL,
    size_bytes      bigint NOT NULL,
    mtime_ns        bigint NOT NULL,
    git_commit      text,
    sentence_count  integer NOT NULL DEFAULT 0,
    indexed_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (repository_id, path)
);

-- Only the latest state of each sentence is kept. Position columns are not indexed so that a sentence that
-- only moved is rewritten as a HOT update, leaving the GIN index alone.
CREATE TABLE sentences (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    document_id   bigint NOT NULL REFERENCES documents ON DELETE CASCADE,
    ordinal       integer NOT NULL,
    kind          text NOT NULL,
    text          text NOT NULL,
    norm_hash     bytea NOT NULL,
    heading_path  text[] NOT NULL DEFAULT '{}',
    line_start    integer NOT NULL CHECK (line_start >= 1),
    line_end      integer NOT NULL CHECK (line_end >= line_start),
    tsv           tsvector NOT NULL,
    token_count   integer NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
) WITH (fillfactor = 85);
CREATE INDEX sentences_document_idx ON sentences (document_id);
CREATE INDEX sentences_tsv_idx ON sentences USING gin (tsv);

-- BM25 statistics: document frequency per lexeme, corpus size and total length.
CREATE TABLE lexical_terms (
    term  text PRIMARY KEY,
    df    integer NOT NULL
);
CREATE TABLE lexical_stats (
    singleton       boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    sentence_count  bigint NOT NULL,
    token_total     bigint NOT NULL
);
INSERT INTO lexical_stats VALUES (true, 0, 0);

CREATE TABLE embedding_backlog (
    sentence_id  bigint PRIMARY KEY REFERENCES sentences ON DELETE CASCADE,
    enqueued_at  timestamptz NOT NULL DEFAULT now(),
    attempts     integer NOT NULL DEFAULT 0,
    last_error   text,
    failed_at    timestamptz
);
CREATE INDEX embedding_backlog_pending_idx ON embedding_backlog (enqueued_at) WHERE failed_at IS NULL;

CREATE FUNCTION citeline_sentences_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
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

CREATE FUNCTION citeline_sentences_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
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

CREATE TRIGGER sentences_inserted AFTER INSERT ON sentences
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION citeline_sentences_inserted();
CREATE TRIGGER sentences_deleted AFTER DELETE ON sentences
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION citeline_sentences_deleted();

-- Stored answers keep a copy of what they cited; the references go NULL when the sentence or document goes.
CREATE TABLE answers (
    id          uuid PRIMARY KEY,
    question    text NOT NULL,
    status      text NOT NULL,
    body        jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE answer_clauses (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    answer_id   uuid NOT NULL REFERENCES answers ON DELETE CASCADE,
    ordinal     integer NOT NULL,
    clause      text NOT NULL,
    confidence  real NOT NULL,
    UNIQUE (answer_id, ordinal)
);
CREATE TABLE answer_sources (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    clause_id     bigint NOT NULL REFERENCES answer_clauses ON DELETE CASCADE,
    ordinal       integer NOT NULL,
    sentence_id   bigint REFERENCES sentences ON DELETE SET NULL,
    document_id   bigint REFERENCES documents ON DELETE SET NULL,
    cited_text    text NOT NULL,
    cited_hash    bytea NOT NULL,
    path          text NOT NULL,
    line_start    integer NOT NULL,
    line_end      integer NOT NULL,
    UNIQUE (clause_id, ordinal)
);
-- Without these, every sentence delete would scan answer_sources to apply SET NULL.
CREATE INDEX answer_sources_sentence_idx ON answer_sources (sentence_id);
CREATE INDEX answer_sources_document_idx ON answer_sources (document_id);
