-- citeline schema, version 4: prefix look-ups in the BM25 vocabulary (the lexical lane's prefix stage) use an
-- index instead of scanning every term, whatever the database's collation.
CREATE INDEX lexical_terms_prefix_idx ON lexical_terms (term text_pattern_ops);
