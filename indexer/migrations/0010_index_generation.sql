-- citeline schema, version 10: the index generation, so that a stored answer is served again only while the
-- index it was computed from is unchanged.
--
-- A stored answer whose cited sentences are all unchanged can still be out of date: an edit elsewhere may have
-- added the sentence that answers the question better, or the one it could not find before. Every transaction
-- that writes sentences or vectors takes a new value of this sequence as it commits (a deferred trigger, once
-- per transaction), so an answer that began before a change records an older value than the change's. An
-- answer records the value it began at; when the value has moved since, the answer is recomputed.
CREATE SEQUENCE citeline_index_generation;

ALTER TABLE answers ADD COLUMN generation bigint;  -- NULL: stored before this version, never served again

CREATE FUNCTION citeline_next_generation() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('citeline.generation_xact', true) IS DISTINCT FROM pg_current_xact_id()::text THEN
        PERFORM nextval('citeline_index_generation');
        PERFORM set_config('citeline.generation_xact', pg_current_xact_id()::text, true);
    END IF;
    RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER sentences_generation AFTER INSERT OR UPDATE OR DELETE ON sentences
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION citeline_next_generation();
CREATE CONSTRAINT TRIGGER sentence_embeddings_generation AFTER INSERT OR UPDATE OR DELETE ON sentence_embeddings
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION citeline_next_generation();
-- TRUNCATE fires no row trigger (a new embedding model empties the vectors this way).
CREATE TRIGGER sentence_embeddings_truncated_generation AFTER TRUNCATE ON sentence_embeddings
    FOR EACH STATEMENT EXECUTE FUNCTION citeline_next_generation();
CREATE TRIGGER sentences_truncated_generation AFTER TRUNCATE ON sentences
    FOR EACH STATEMENT EXECUTE FUNCTION citeline_next_generation();
