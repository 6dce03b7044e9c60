-- citeline schema, version 2: sentence vectors, the model that made them, backlog leases and ingest metrics.
--
-- Vectors live in their own table so that writing one never rewrites (or bloats) a sentence row, and the
-- HNSW index is the only index a vector write touches. halfvec halves the index size for MiniLM-class models
-- at no measurable recall cost. The column's dimension follows the recorded model: changing the model empties
-- the table, retypes the column and re-enqueues every sentence (indexer/embedding_queue.py does that).

CREATE TABLE embedding_model (
    singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    name        text NOT NULL,
    dimension   integer NOT NULL CHECK (dimension > 0),
    changed_at  timestamptz NOT NULL DEFAULT now()
);
-- '' means no embedder has run yet; the first one records itself without re-enqueueing anything.
INSERT INTO embedding_model (name, dimension) VALUES ('', 384);

CREATE TABLE sentence_embeddings (
    sentence_id  bigint PRIMARY KEY REFERENCES sentences ON DELETE CASCADE,
    embedding    halfvec(384) NOT NULL,
    embedded_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sentence_embeddings_hnsw_idx ON sentence_embeddings USING hnsw (embedding halfvec_cosine_ops);
-- The embed-rate figure counts the last minute's vectors.
CREATE INDEX sentence_embeddings_recent_idx ON sentence_embeddings (embedded_at);

-- A claimed item is leased to one worker until claimed_until; a worker killed mid-batch loses nothing, its
-- lease simply runs out and another worker takes the items again.
ALTER TABLE embedding_backlog ADD COLUMN claimed_by uuid, ADD COLUMN claimed_until timestamptz;

-- Change seen by the watcher to change committed, one row per written or deleted file; kept for an hour.
CREATE TABLE ingest_samples (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    repository_id    integer NOT NULL REFERENCES repositories ON DELETE CASCADE,
    committed_at     timestamptz NOT NULL DEFAULT now(),
    latency_seconds  real NOT NULL CHECK (latency_seconds >= 0)
);
CREATE INDEX ingest_samples_recent_idx ON ingest_samples (repository_id, committed_at);
