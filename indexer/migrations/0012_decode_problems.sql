-- citeline schema, version 12: a document read with invalid UTF-8 (a Latin-1 file, say) is indexed with
-- U+FFFD in place of the bytes it could not read; the row says so, so that `citeline status` and /metrics
-- count and name the files whose encoding needs fixing. NULL: the file was valid UTF-8. A document indexed
-- before this version is flagged when its file next changes.
ALTER TABLE documents ADD COLUMN decode_problem text;
