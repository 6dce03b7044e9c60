"""Bringing a repository's documents in line with its files: the catch-up walk and single-file updates.

Unchanged files are skipped by size and mtime without being read, then by content hash without being parsed.
Each file is written in its own transaction; a file that cannot be read is logged and leaves its stored
document as it was, except a file that is gone, whose document is deleted.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import structlog

from indexer.database import Connection
from indexer.hashing import content_hash
from indexer.markdown import CodeMode, parse_markdown
from indexer.segment import split_sentences
from indexer.sources import FileFilter, SkipReason, git_head_commit, read_markdown, walk_markdown
from indexer.store import (
    DocumentFile,
    StoredDocument,
    delete_document,
    ensure_repository,
    note_index_options,
    stored_documents,
    touch_document,
    write_document,
)

__all__ = ["IndexOptions", "IndexReport", "Repository", "index_paths", "reconcile_repository"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Repository:
    """A folder of Markdown to keep indexed, under a stable name."""

    name: str
    root: Path
    file_filter: FileFilter = field(default_factory=FileFilter)


@dataclass(frozen=True, slots=True)
class IndexOptions:
    """How files are read and split."""

    max_file_bytes: int = 2_000_000
    code_mode: CodeMode = CodeMode.BLOCK

    @property
    def parse_fingerprint(self) -> str:
        """What decides the units a file becomes; a repository indexed under another is parsed again."""
        return f"code={self.code_mode.value}"


@dataclass(slots=True)
class IndexReport:
    """What one pass did, with time split by stage (seconds)."""

    files_seen: int = 0
    files_written: int = 0
    files_unchanged: int = 0
    files_skipped: int = 0
    documents_deleted: int = 0
    sentences_inserted: int = 0
    sentences_deleted: int = 0
    sentences_moved: int = 0
    sentences_unchanged: int = 0
    read_seconds: float = 0.0
    parse_seconds: float = 0.0
    segment_seconds: float = 0.0
    database_seconds: float = 0.0
    skipped: dict[str, str] = field(default_factory=dict)


ProgressCallback = Callable[[str], None]
_PREPARE_AHEAD = 4  # files parsed ahead of the writer: enough to hide parse time, little memory


@dataclass(frozen=True, slots=True)
class _Prepared:
    """One file after the database-free stage: a document to write, or what to do instead."""

    rel: str
    document: DocumentFile | None = None
    skipped: SkipReason | None = None
    unchanged_mtime_ns: int | None = None


class _Indexer:
    """One pass over one repository: holds the repository id and the stored document table.

    Work on a file is split in two: `prepare` reads, hashes, parses and segments without touching the
    database, and `apply` writes. `run` prepares the next file on a worker thread while the current one is
    written (psycopg releases the GIL while PostgreSQL works), so both cores are busy during a cold index.
    """

    __slots__ = ("conn", "git_commit", "options", "repo", "report", "repository_id", "stored")

    def __init__(self, conn: Connection, repo: Repository, options: IndexOptions, report: IndexReport):
        if not conn.autocommit:
            raise ValueError("indexing needs an autocommit connection, so that each file commits on its own")
        # Files are the source of truth and every start reconciles, so losing the last few commits in an OS
        # crash costs only their re-indexing; atomicity per file is unaffected.
        conn.execute("SET synchronous_commit = off")
        self.conn = conn
        self.repo = repo
        self.options = options
        self.report = report
        self.repository_id = ensure_repository(conn, repo.name, str(repo.root))
        if note_index_options(conn, self.repository_id, options.parse_fingerprint):
            log.info("parse options changed; every file is read again", repository=repo.name)
        self.stored: dict[str, StoredDocument] = {}
        self.git_commit = git_head_commit(repo.root)

    def prepare(self, rel: str) -> _Prepared:
        report = self.report
        started = time.perf_counter()
        result = read_markdown(self.repo.root / rel, self.repo.root, self.options.max_file_bytes)
        report.read_seconds += time.perf_counter() - started
        if result.skipped is not None:
            if result.skipped is not SkipReason.VANISHED:
                log.warning(
                    "file skipped",
                    repository=self.repo.name,
                    path=rel,
                    reason=result.skipped.value,
                    detail=result.detail,
                )
            return _Prepared(rel, skipped=result.skipped)
        assert result.text is not None and result.raw is not None
        if result.replaced_invalid_utf8:
            log.warning("invalid UTF-8 replaced", repository=self.repo.name, path=rel)
        digest = content_hash(result.raw)
        known = self.stored.get(rel)
        if known is not None and known.content_hash == digest:
            return _Prepared(rel, unchanged_mtime_ns=result.mtime_ns)
        started = time.perf_counter()
        parsed = parse_markdown(result.text, code_mode=self.options.code_mode)
        parsed_at = time.perf_counter()
        units = split_sentences(parsed)
        report.parse_seconds += parsed_at - started
        report.segment_seconds += time.perf_counter() - parsed_at
        document = DocumentFile(
            rel, parsed.title, digest, result.size_bytes, result.mtime_ns, self.git_commit, units
        )
        return _Prepared(rel, document=document)

    def apply(self, prepared: _Prepared) -> None:
        report = self.report
        report.files_seen += 1
        rel = prepared.rel
        if prepared.skipped is not None:
            report.files_skipped += 1
            report.skipped[rel] = prepared.skipped.value
            if prepared.skipped is SkipReason.VANISHED:
                self.delete(rel)
            return
        if prepared.document is None:
            report.files_unchanged += 1
            known = self.stored[rel]
            if prepared.unchanged_mtime_ns is not None and known.mtime_ns != prepared.unchanged_mtime_ns:
                touch_document(self.conn, known.id, prepared.unchanged_mtime_ns, self.git_commit)
            return
        started = time.perf_counter()
        written = write_document(self.conn, self.repository_id, prepared.document)
        report.database_seconds += time.perf_counter() - started
        report.files_written += 1
        report.sentences_inserted += written.inserted
        report.sentences_deleted += written.deleted
        report.sentences_moved += written.moved
        report.sentences_unchanged += written.unchanged

    def run(self, rels: Iterable[str], progress: ProgressCallback | None = None) -> None:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="citeline-prepare") as pool:
            pending: deque[Future[_Prepared]] = deque()
            for rel in rels:
                pending.append(pool.submit(self.prepare, rel))
                if len(pending) > _PREPARE_AHEAD:
                    self._apply_next(pending, progress)
            while pending:
                self._apply_next(pending, progress)

    def _apply_next(self, pending: deque[Future[_Prepared]], progress: ProgressCallback | None) -> None:
        prepared = pending.popleft().result()
        self.apply(prepared)
        if progress is not None:
            progress(prepared.rel)

    def delete(self, rel: str) -> None:
        if delete_document(self.conn, self.repository_id, rel):
            self.report.documents_deleted += 1


def reconcile_repository(
    conn: Connection,
    repo: Repository,
    options: IndexOptions | None = None,
    *,
    progress: ProgressCallback | None = None,
    report: IndexReport | None = None,
) -> IndexReport:
    """Index every changed Markdown file of `repo` and delete documents whose files are gone."""
    report = report if report is not None else IndexReport()
    indexer = _Indexer(conn, repo, options or IndexOptions(), report)
    indexer.stored = stored_documents(conn, indexer.repository_id)
    present = set()
    changed = []
    for rel in walk_markdown(repo.root, repo.file_filter):
        present.add(rel)
        known = indexer.stored.get(rel)
        if known is not None and _unchanged_on_disk(repo.root / rel, known):
            report.files_seen += 1
            report.files_unchanged += 1
            if progress is not None:
                progress(rel)
        else:
            changed.append(rel)
    indexer.run(changed, progress)
    for rel in sorted(set(indexer.stored) - present):
        indexer.delete(rel)
    return report


def index_paths(
    conn: Connection, repo: Repository, paths: Iterable[str], options: IndexOptions | None = None
) -> IndexReport:
    """Re-index the given repository-relative paths (changed, created or deleted files), one by one."""
    report = IndexReport()
    indexer = _Indexer(conn, repo, options or IndexOptions(), report)
    for rel in paths:
        indexer.stored = stored_documents_for(conn, indexer.repository_id, rel)
        if (repo.root / rel).exists() or (repo.root / rel).is_symlink():
            indexer.apply(indexer.prepare(rel))
        else:
            indexer.delete(rel)
    return report


def stored_documents_for(conn: Connection, repository_id: int, rel: str) -> dict[str, StoredDocument]:
    """The stored row of one path, as the one-entry table `_Indexer` compares with."""
    row = conn.execute(
        "SELECT id, content_hash, size_bytes, mtime_ns FROM documents WHERE repository_id = %s AND path = %s",
        (repository_id, rel),
    ).fetchone()
    return {} if row is None else {rel: StoredDocument(row[0], row[1], row[2], row[3])}


def _unchanged_on_disk(path: Path, known: StoredDocument) -> bool:
    try:
        stat = path.stat()
    except OSError:
        return False
    return stat.st_size == known.size_bytes and stat.st_mtime_ns == known.mtime_ns
