-- citeline schema, version 7: vectors know what they were embedded from, and leases know their worker.
--
-- A sentence is embedded with its heading path, its document's title and (sometimes) the sentence before it.
-- context_key hashes those inputs as they were when the vector was written; a file write re-enqueues every
-- kept sentence of the document whose inputs changed (a neighbour edited, a heading moved). text_hash is the
-- hash of the exact text that was encoded: a re-enqueued sentence whose embedded text is unchanged under the
-- configured context (its previous sentence changed but is not part of its context) is not encoded again.
-- embedding_model.context names the context policy the vectors were made with; changing it re-enqueues all.
--
-- claimed_worker is the embedder worker holding a lease: each worker holds a session advisory lock on its
-- number (class 1667855461), which PostgreSQL releases when the worker's connection dies, so a dead
-- worker's lease is taken over at once instead of after lease_seconds.

ALTER TABLE sentence_embeddings ADD COLUMN text_hash bytea, ADD COLUMN context_key bytea;
ALTER TABLE embedding_model ADD COLUMN context text NOT NULL DEFAULT '';
ALTER TABLE embedding_backlog ADD COLUMN claimed_worker integer;

CREATE FUNCTION citeline_context_key(title text, heading_path text[], previous text) RETURNS bytea
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN sha256(convert_to(
        coalesce(title, '') || E'\x1f' || coalesce(array_to_string(heading_path, E'\x1e'), '') || E'\x1f'
        || coalesce(previous, ''), 'UTF8'));

UPDATE sentence_embeddings e SET context_key = citeline_context_key(d.title, s.heading_path, p.text)
FROM sentences s
JOIN documents d ON d.id = s.document_id
LEFT JOIN sentences p ON p.document_id = s.document_id AND p.ordinal = s.ordinal - 1
WHERE e.sentence_id = s.id;
