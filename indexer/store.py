"""Writes documents and their sentences; one file's change is one transaction.

The sentence rows, the lexical lane (tsvector, term statistics), the embedding backlog and the document
row all change together or not at all, so a crash at any moment leaves each file fully old or fully new.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

import psycopg

from indexer.database import Connection
from indexer.diff import StoredSentence, diff_sentences
from indexer.hashing import sentence_hash
from indexer.markdown import TextUnit

__all__ = [
    "DocumentFile",
    "RepositoryConflictError",
    "StoredDocument",
    "WriteResult",
    "delete_document",
    "documents_under",
    "ensure_repository",
    "note_index_options",
    "refused_rows",
    "rename_document",
    "stored_documents",
    "touch_document",
    "write_document",
]

TEXT_SEARCH_CONFIG = "english"


@dataclass(frozen=True, slots=True)
class DocumentFile:
    """A parsed file, ready to be written."""

    path: str
    title: str | None
    content_hash: str
    size_bytes: int
    mtime_ns: int
    git_commit: str | None
    units: Sequence[TextUnit]
    decode_problem: str | None = None
    """Why the file was not valid UTF-8 (its bytes read as U+FFFD), or None when it was."""


@dataclass(frozen=True, slots=True)
class WriteResult:
    """Rows touched by one document write; `inserted` is what the lexical lane and embedder pay for."""

    document_id: int
    inserted: int
    deleted: int
    moved: int
    unchanged: int
    created: bool


class RepositoryConflictError(ValueError):
    """A repository name already belongs to another folder that still exists."""


def ensure_repository(conn: Connection, name: str, root: str) -> int:
    """The repository's id, creating it, or re-rooting it when its old folder is gone (it moved).

    Two live folders under one name would be indexed as one repository, each walk deleting the other's
    documents; that is refused with a message asking for a distinct name.
    """
    with conn.transaction():
        row = conn.execute("SELECT id, root FROM repositories WHERE name = %s FOR UPDATE", (name,)).fetchone()
        if row is None:
            created = conn.execute(
                "INSERT INTO repositories (name, root) VALUES (%s, %s) RETURNING id", (name, root)
            ).fetchone()
            assert created is not None
            return int(created[0])
        if row[1] != root:
            if Path(row[1]).is_dir():
                raise RepositoryConflictError(
                    f"repository name {name!r} already names {row[1]}; give {root} another name"
                    " ([[repositories]] name = ...)"
                )
            conn.execute("UPDATE repositories SET root = %s WHERE id = %s", (root, row[0]))
    return int(row[0])


def note_index_options(conn: Connection, repository_id: int, options: str) -> bool:
    """Record the parse options the repository is indexed with; when they differ from the recorded ones,
    mark every document of it unread (no hash, no mtime) so the next walk parses each file again. Returns
    whether any document was so marked. Unchanged sentences keep their rows and ids through that re-parse."""
    with conn.transaction():
        row = conn.execute(
            "SELECT index_options FROM repositories WHERE id = %s FOR UPDATE", (repository_id,)
        ).fetchone()
        if row is None or row[0] == options:
            return False
        marked = conn.execute(
            "UPDATE documents SET content_hash = '', mtime_ns = -1 WHERE repository_id = %s", (repository_id,)
        ).rowcount
        conn.execute("UPDATE repositories SET index_options = %s WHERE id = %s", (options, repository_id))
    return marked > 0


def _as_stored(units: Sequence[TextUnit]) -> list[StoredSentence]:
    return [
        StoredSentence(
            id=0,
            norm_hash=sentence_hash(unit.text),
            ordinal=ordinal,
            kind=unit.kind.value,
            text=unit.text,
            heading_path=tuple(unit.heading_path),
            line_start=unit.line_start,
            line_end=unit.line_end,
            intro_ordinal=unit.intro,
        )
        for ordinal, unit in enumerate(units)
    ]


def _load_sentences(conn: Connection, document_id: int) -> list[StoredSentence]:
    rows = conn.execute(
        "SELECT id, norm_hash, ordinal, kind, text, heading_path, line_start, line_end, intro_ordinal"
        " FROM sentences WHERE document_id = %s",
        (document_id,),
    ).fetchall()
    return [StoredSentence(r[0], bytes(r[1]), r[2], r[3], r[4], tuple(r[5]), r[6], r[7], r[8]) for r in rows]


def _record(sentence: StoredSentence) -> dict[str, object]:
    return {
        "ordinal": sentence.ordinal,
        "kind": sentence.kind,
        "text": sentence.text,
        "norm_hash": sentence.norm_hash.hex(),
        "heading_path": list(sentence.heading_path),
        "line_start": sentence.line_start,
        "line_end": sentence.line_end,
        "intro_ordinal": sentence.intro_ordinal,
    }


# What the lexical lane holds for a row `r`: its terms under its heading path (a code unit's compound tokens
# also in parts) and their count, by the SQL functions of migrations 0006 and 0009.
_LEXICAL_OF_ROW = f"""LATERAL (
    SELECT t.tsv, citeline_token_count(t.tsv) AS tokens
    FROM (SELECT to_tsvector('{TEXT_SEARCH_CONFIG}',
                             citeline_unit_lexical_text(r.kind, r.heading_path, r.text)) AS tsv) t
) v"""

_INSERT_SENTENCES = f"""
INSERT INTO sentences (document_id, ordinal, kind, text, norm_hash, heading_path, line_start, line_end,
                       tsv, token_count, intro_ordinal)
SELECT %(document_id)s, r.ordinal, r.kind, r.text, decode(r.norm_hash, 'hex'), r.heading_path,
       r.line_start, r.line_end, v.tsv, v.tokens, r.intro_ordinal
FROM jsonb_to_recordset(%(rows)s::jsonb) AS r(ordinal int, kind text, text text, norm_hash text,
                                             heading_path text[], line_start int, line_end int,
                                             intro_ordinal int),
     {_LEXICAL_OF_ROW}
"""

# A moved sentence keeps its id; its terms are recomputed with it, since a new heading path changes them (the
# update trigger of migration 0006 keeps the statistics in step).
_UPDATE_MOVED = f"""
UPDATE sentences s SET ordinal = r.ordinal, kind = r.kind, text = r.text, heading_path = r.heading_path,
                       line_start = r.line_start, line_end = r.line_end, tsv = v.tsv, token_count = v.tokens,
                       intro_ordinal = r.intro_ordinal
FROM jsonb_to_recordset(%s::jsonb) AS r(id bigint, ordinal int, kind text, text text,
                                        heading_path text[], line_start int, line_end int, intro_ordinal int),
     {_LEXICAL_OF_ROW}
WHERE s.id = r.id
"""

# Kept sentences whose vector was embedded from other inputs than they have now (migration 0007).
_REQUEUE_STALE = """
INSERT INTO embedding_backlog (sentence_id)
SELECT s.id FROM sentences s
JOIN sentence_embeddings e ON e.sentence_id = s.id
JOIN documents d ON d.id = s.document_id
LEFT JOIN sentences p ON p.document_id = s.document_id AND p.ordinal = s.ordinal - 1
WHERE s.document_id = %s
  AND e.context_key IS DISTINCT FROM citeline_context_key(d.title, s.heading_path, p.text)
ON CONFLICT (sentence_id) DO NOTHING
"""


def _file_columns(doc: DocumentFile, sentence_count: int) -> tuple[object, ...]:
    """The document row's file columns in the order both writes list them: title, content hash, size,
    mtime, commit, sentence count, decode problem."""
    return (
        doc.title,
        doc.content_hash,
        doc.size_bytes,
        doc.mtime_ns,
        doc.git_commit,
        sentence_count,
        doc.decode_problem,
    )


def write_document(conn: Connection, repository_id: int, doc: DocumentFile) -> WriteResult:
    """Bring one document's rows to `doc`'s state, writing only new, removed and moved sentences.

    Runs in its own transaction. A sentence whose text is unchanged keeps its id; if what its vector was
    embedded from changed (its heading path, the title, the sentence before it) it is re-enqueued, and the
    embedder encodes it again if its embedded text differs.
    """
    fresh = _as_stored(doc.units)
    with conn.transaction():
        row = conn.execute(
            "SELECT id FROM documents WHERE repository_id = %s AND path = %s FOR UPDATE",
            (repository_id, doc.path),
        ).fetchone()
        created = row is None
        if row is None:
            inserted_row = conn.execute(
                "INSERT INTO documents (repository_id, path, title, content_hash, size_bytes, mtime_ns,"
                " git_commit, sentence_count, decode_problem) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
                " RETURNING id",
                (repository_id, doc.path, *_file_columns(doc, len(fresh))),
            ).fetchone()
            assert inserted_row is not None
            document_id = int(inserted_row[0])
            stored: list[StoredSentence] = []
        else:
            document_id = int(row[0])
            conn.execute(
                "UPDATE documents SET title = %s, content_hash = %s, size_bytes = %s, mtime_ns = %s,"
                " git_commit = %s, sentence_count = %s, decode_problem = %s, indexed_at = now()"
                " WHERE id = %s",
                (*_file_columns(doc, len(fresh)), document_id),
            )
            stored = _load_sentences(conn, document_id)
        diff = diff_sentences(stored, fresh)
        if diff.deleted:
            conn.execute("DELETE FROM sentences WHERE id = ANY(%s)", (diff.deleted,))
        if diff.moved:
            moved = [{"id": m.id, **_record(fresh[m.new_index])} for m in diff.moved]
            conn.execute(_UPDATE_MOVED, (json.dumps(moved),))
        if diff.inserted:
            rows = [_record(fresh[i]) for i in diff.inserted]
            conn.execute(_INSERT_SENTENCES, {"document_id": document_id, "rows": json.dumps(rows)})
        if not created and conn.execute(_REQUEUE_STALE, (document_id,)).rowcount:
            conn.execute("SELECT pg_notify('citeline_backlog', '')")
    return WriteResult(
        document_id, len(diff.inserted), len(diff.deleted), len(diff.moved), diff.unchanged, created
    )


# SQLSTATE classes that say the rows themselves were refused: data exceptions (22: a bad value, a NUL
# character), integrity constraints (23) and program limits (54: a tsvector or an index row too large).
_REFUSED_ROW_CLASSES = frozenset({"22", "23", "54"})


def refused_rows(exc: psycopg.Error, conn: Connection) -> bool:
    """Whether `exc`, raised writing one document, is that document's fault rather than the database's.

    True only while the connection is still usable and the error is a data, constraint or size error: the
    file is then skipped and the next one written. A lost connection, a shutdown or any other server error is
    not a file's doing and must reach the caller (psycopg files "program limit exceeded" under
    OperationalError, beside a lost connection, so the class of the exception cannot decide it).
    """
    if conn.closed or conn.broken:
        return False
    if isinstance(exc, psycopg.DataError) and exc.sqlstate is None:
        return True  # refused by psycopg before it was sent (a NUL character in a parameter)
    return exc.sqlstate is not None and exc.sqlstate[:2] in _REFUSED_ROW_CLASSES


def delete_document(conn: Connection, repository_id: int, path: str) -> bool:
    """Remove a document and its sentences; answers citing them keep their rows with NULL references."""
    with conn.transaction():
        cur = conn.execute(
            "DELETE FROM documents WHERE repository_id = %s AND path = %s", (repository_id, path)
        )
    return cur.rowcount > 0


def rename_document(conn: Connection, repository_id: int, old_path: str, new_path: str) -> bool:
    """Move a document to a new path, keeping its id and every sentence id; False if there was none."""
    with conn.transaction():
        conn.execute(
            "DELETE FROM documents WHERE repository_id = %s AND path = %s AND %s <> %s",
            (repository_id, new_path, old_path, new_path),
        )
        cur = conn.execute(
            "UPDATE documents SET path = %s WHERE repository_id = %s AND path = %s",
            (new_path, repository_id, old_path),
        )
    return cur.rowcount > 0


@dataclass(frozen=True, slots=True)
class StoredDocument:
    """What reconcile compares with a file on disk before reading it."""

    id: int
    content_hash: str
    size_bytes: int
    mtime_ns: int


def stored_documents(
    conn: Connection, repository_id: int, paths: Collection[str] | None = None
) -> dict[str, StoredDocument]:
    """The documents of a repository by path: every one, or those of `paths`."""
    query = "SELECT path, id, content_hash, size_bytes, mtime_ns FROM documents WHERE repository_id = %s"
    if paths is None:
        rows = conn.execute(query, (repository_id,)).fetchall()
    else:
        rows = conn.execute(query + " AND path = ANY(%s)", (repository_id, list(paths))).fetchall()
    return {r[0]: StoredDocument(r[1], r[2], r[3], r[4]) for r in rows}


def documents_under(conn: Connection, repository_id: int, folders: Collection[str]) -> bool:
    """Whether any document of the repository lies below one of `folders` (repository-relative)."""
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM documents d, unnest(%s::text[]) p"
        " WHERE d.repository_id = %s AND starts_with(d.path, p || '/'))",
        (list(folders), repository_id),
    ).fetchone()
    return bool(row and row[0])


def touch_document(conn: Connection, document_id: int, mtime_ns: int, git_commit: str | None) -> None:
    """Record a new mtime for a file whose bytes did not change, so the next walk skips it unread."""
    with conn.transaction():
        conn.execute(
            "UPDATE documents SET mtime_ns = %s, git_commit = %s WHERE id = %s",
            (mtime_ns, git_commit, document_id),
        )
