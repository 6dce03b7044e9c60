-- citeline schema, version 12: what the docs team said of answers (feedback), and the sentences it accepted
-- as answering a question (or rejected for it), keyed to each sentence's id and its hash at the time.
--
-- Neither table references `answers`: pruning the answer store keeps them (each row copies the question).
-- Sentences are not referenced either: an accepted sentence that is edited or deleted keeps its row, which is
-- then stale (its hash no longer matches a live sentence) and listed among the gaps. Deleting a repository
-- deletes its feedback and its accepted answers.

CREATE TABLE feedback (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    answer_id       uuid NOT NULL,
    question        text NOT NULL,
    answer_status   text NOT NULL,
    helpful         boolean NOT NULL,
    comment         text,
    repository_ids  integer[] NOT NULL DEFAULT '{}',  -- every repository the answer and the sentences involve
    closest_path    text,                             -- the answer's first cited or closest passage, for gaps
    closest_heading text,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX feedback_created_idx ON feedback (created_at DESC);
CREATE INDEX feedback_answer_idx ON feedback (answer_id);

-- The sentences one feedback names, with each one's normalized hash when the feedback was given.
CREATE TABLE feedback_sentences (
    feedback_id    bigint NOT NULL REFERENCES feedback ON DELETE CASCADE,
    ordinal        integer NOT NULL,
    sentence_id    bigint NOT NULL,
    sentence_hash  bytea NOT NULL,
    repository_id  integer NOT NULL REFERENCES repositories ON DELETE CASCADE,
    PRIMARY KEY (feedback_id, ordinal)
);

-- A question -> sentence pair the team accepted (helpful) or rejected (not helpful). `stale` is set once the
-- sentence's hash no longer matches a live sentence; a stale or rejected pair is never served from memory.
-- The question's embedding is filled by the engine's embedder on first use (NULL until then), under the name
-- of the model that made it, so a new embedder re-embeds the questions instead of comparing across models.
CREATE TABLE accepted_answers (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    feedback_id         bigint NOT NULL REFERENCES feedback ON DELETE CASCADE,
    answer_id           uuid NOT NULL,
    question            text NOT NULL,
    question_norm       text NOT NULL,
    helpful             boolean NOT NULL,
    sentence_id         bigint NOT NULL,
    sentence_hash       bytea NOT NULL,
    sentence_text       text NOT NULL,
    path                text NOT NULL,
    heading             text NOT NULL DEFAULT '',
    repository_id       integer NOT NULL REFERENCES repositories ON DELETE CASCADE,
    accepted_at         timestamptz NOT NULL DEFAULT now(),
    stale               boolean NOT NULL DEFAULT false,
    question_embedding  vector,
    embedding_model     text
);
CREATE INDEX accepted_answers_live_idx ON accepted_answers (repository_id) WHERE helpful AND NOT stale;
CREATE INDEX accepted_answers_question_idx ON accepted_answers (question_norm, sentence_id);
CREATE INDEX accepted_answers_sentence_idx ON accepted_answers (sentence_id);
-- The questions the engine has not embedded yet, found without reading the others.
CREATE INDEX accepted_answers_unembedded_idx ON accepted_answers (id) WHERE question_embedding IS NULL;

-- Feedback on an answer over several repositories goes with any one of them.
CREATE FUNCTION citeline_repository_feedback_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM feedback WHERE OLD.id = ANY (repository_ids);
    RETURN OLD;
END $$;
CREATE TRIGGER repositories_feedback_deleted BEFORE DELETE ON repositories
    FOR EACH ROW EXECUTE FUNCTION citeline_repository_feedback_deleted();
