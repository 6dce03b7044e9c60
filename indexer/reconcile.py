"""Bringing a repository's documents in line with its files: the catch-up walk and single-file updates.

Unchanged files are skipped by size and mtime without being read, then by content hash without being parsed.
Each file is written in its own transaction; a file that cannot be read, whose name is not UTF-8, or whose
rows the database refuses is logged, noted in `skipped_files`, and leaves its stored document as it was. Only
a file that is gone loses its document: one under a folder the walk could not list is not known to be gone.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import psycopg
import structlog

from indexer.database import Connection
from indexer.hashing import content_hash
from indexer.markdown import CodeMode, parse_markdown
from indexer.segment import split_sentences
from indexer.skips import forget_skipped, record_skipped, settle_walk, skipped_paths
from indexer.sources import (
    FileFilter,
    PathState,
    SkipReason,
    WalkProblems,
    display_path,
    git_head_commit,
    is_undecodable,
    path_state,
    read_markdown,
    walk_markdown,
)
from indexer.store import (
    DocumentFile,
    StoredDocument,
    delete_document,
    ensure_repository,
    note_index_options,
    refused_rows,
    stored_documents,
    stored_documents_for,
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
    detail: str = ""


class _Indexer:
    """One pass over one repository: holds the repository id and the stored document table.

    Work on a file is split in two: `prepare` reads, hashes, parses and segments without touching the
    database, and `apply` writes. `run` prepares the next file on a worker thread while the current one is
    written (psycopg releases the GIL while PostgreSQL works), so both cores are busy during a cold index.
    """

    __slots__ = ("conn", "git_commit", "noted", "options", "repo", "report", "repository_id", "stored")

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
        self.noted = skipped_paths(conn, self.repository_id)  # notes to drop once their file is indexed

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
            return _Prepared(rel, skipped=result.skipped, detail=result.detail)
        assert result.text is not None and result.raw is not None
        if result.replaced_invalid_utf8:
            log.warning("invalid UTF-8 replaced", repository=self.repo.name, path=rel, detail=result.detail)
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
            self._skip(rel, prepared.skipped, prepared.detail)
            return
        if rel in self.noted:
            forget_skipped(self.conn, self.repository_id, [rel])
            self.noted.discard(rel)
        if prepared.document is None:
            report.files_unchanged += 1
            known = self.stored[rel]
            if prepared.unchanged_mtime_ns is not None and known.mtime_ns != prepared.unchanged_mtime_ns:
                touch_document(self.conn, known.id, prepared.unchanged_mtime_ns, self.git_commit)
            return
        started = time.perf_counter()
        try:
            written = write_document(self.conn, self.repository_id, prepared.document)
        except psycopg.Error as exc:
            if not refused_rows(exc, self.conn):
                raise  # a lost connection or a server fault: not this file's doing
            report.database_seconds += time.perf_counter() - started
            detail = f"{type(exc).__name__}: {(str(exc) or str(exc.sqlstate)).splitlines()[0]}"
            log.warning(
                "file skipped",
                repository=self.repo.name,
                path=rel,
                reason=SkipReason.REJECTED.value,
                detail=detail,
            )
            self._skip(rel, SkipReason.REJECTED, detail)
            return
        report.database_seconds += time.perf_counter() - started
        report.files_written += 1
        report.sentences_inserted += written.inserted
        report.sentences_deleted += written.deleted
        report.sentences_moved += written.moved
        report.sentences_unchanged += written.unchanged

    def _skip(self, rel: str, reason: SkipReason, detail: str) -> None:
        """Count a skipped file and note it, keeping its document; a vanished file is gone instead."""
        self.report.files_skipped += 1
        self.report.skipped[rel] = reason.value
        if reason is SkipReason.VANISHED:
            self.delete(rel)
        else:
            record_skipped(self.conn, self.repository_id, rel, reason.value, detail)
            self.noted.add(rel)

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
        if rel in self.noted:
            forget_skipped(self.conn, self.repository_id, [rel])
            self.noted.discard(rel)


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
    problems = WalkProblems()
    for rel in walk_markdown(repo.root, repo.file_filter, problems):
        present.add(rel)
        known = indexer.stored.get(rel)
        if known is not None and _unchanged_on_disk(repo.root / rel, known):
            report.files_seen += 1
            report.files_unchanged += 1
            if progress is not None:
                progress(rel)
        else:
            changed.append(rel)
    gone, walk_skips = settle_walk(
        conn, indexer.repository_id, repo.name, indexer.stored, present, problems, changed
    )
    indexer.noted = skipped_paths(conn, indexer.repository_id)
    report.files_skipped += len(walk_skips)
    report.skipped.update(walk_skips)
    indexer.run(changed, progress)
    for rel in gone:
        indexer.delete(rel)
    return report


def index_paths(
    conn: Connection, repo: Repository, paths: Iterable[str], options: IndexOptions | None = None
) -> IndexReport:
    """Re-index the given repository-relative paths (changed, created or deleted files), one by one."""
    report = IndexReport()
    indexer = _Indexer(conn, repo, options or IndexOptions(), report)
    for rel in paths:
        if is_undecodable(rel):  # never stored, so nothing to keep; a full walk notes it
            log.warning(
                "file skipped",
                repository=repo.name,
                path=display_path(rel),
                reason=SkipReason.UNDECODABLE_NAME.value,
            )
            continue
        indexer.stored = stored_documents_for(conn, indexer.repository_id, rel)
        if path_state(repo.root / rel) is PathState.ABSENT:
            indexer.delete(rel)
        else:  # present, or the OS would not say: reading tells (an unreadable file keeps its document)
            indexer.apply(indexer.prepare(rel))
    return report


def _unchanged_on_disk(path: Path, known: StoredDocument) -> bool:
    try:
        stat = path.stat()
    except OSError:
        return False
    return stat.st_size == known.size_bytes and stat.st_mtime_ns == known.mtime_ns
