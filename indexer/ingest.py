"""Reading, parsing and writing files one by one: the per-file stage under every catch-up and change batch.

A file whose content hash equals its stored document's is not parsed (only its new mtime is recorded); one
whose hash equals a document that is gone from the same pass is that document moved (`renames`), so the
document keeps its id and every sentence id. Each file is read and hashed once and written in its own
transaction; a file that cannot be read or whose rows the database refuses is logged, noted in
`skipped_files`, and leaves its stored document as it was.
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
from indexer.git_head import git_head_commit
from indexer.hashing import content_hash
from indexer.links import record_link_template, repository_link_template
from indexer.markdown import PARSER_VERSION, CodeMode, parse_markdown
from indexer.segment import split_sentences
from indexer.skips import forget_skipped, record_skipped, skipped_paths
from indexer.sources import FileFilter, SkipReason, read_markdown
from indexer.store import (
    DocumentFile,
    StoredDocument,
    delete_document,
    ensure_repository,
    note_index_options,
    refused_rows,
    rename_document,
    touch_document,
    write_document,
)

__all__ = [
    "FileIndexer",
    "IndexOptions",
    "IndexReport",
    "ProgressCallback",
    "Repository",
    "open_repository",
    "unchanged_on_disk",
]

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class Repository:
    """A folder of Markdown to keep indexed, under a stable name."""

    name: str
    root: Path
    file_filter: FileFilter = field(default_factory=FileFilter)
    link: str | None = None
    """The configured forge link template; None derives it from the git remote (`indexer.links`)."""


@dataclass(frozen=True, slots=True)
class IndexOptions:
    """How files are read and split."""

    max_file_bytes: int = 2_000_000
    code_mode: CodeMode = CodeMode.BLOCK

    @property
    def parse_fingerprint(self) -> str:
        """What decides the units a file becomes; a repository indexed under another is parsed again."""
        return f"code={self.code_mode.value};parser={PARSER_VERSION}"


@dataclass(slots=True)
class IndexReport:
    """What one pass did, with time split by stage (seconds)."""

    files_seen: int = 0
    files_written: int = 0
    files_unchanged: int = 0
    files_skipped: int = 0
    documents_deleted: int = 0
    documents_renamed: int = 0
    sentences_inserted: int = 0
    sentences_deleted: int = 0
    sentences_moved: int = 0
    sentences_unchanged: int = 0
    read_seconds: float = 0.0
    parse_seconds: float = 0.0
    segment_seconds: float = 0.0
    database_seconds: float = 0.0
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def committed(self) -> int:
        """Files whose change reached the index: what the watcher samples its ingest latency over."""
        return self.files_written + self.documents_deleted + self.documents_renamed


ProgressCallback = Callable[[str], None]
_PREPARE_AHEAD = 4  # files parsed ahead of the writer: enough to hide parse time, little memory


def _require_autocommit(conn: Connection) -> None:
    if not conn.autocommit:
        raise ValueError("indexing needs an autocommit connection, so that each file commits on its own")


def open_repository(conn: Connection, repo: Repository, options: IndexOptions) -> int:
    """The repository's id (created or re-rooted as needed), with its parse options and link template
    recorded."""
    _require_autocommit(conn)
    repository_id = ensure_repository(conn, repo.name, str(repo.root))
    record_link_template(conn, repository_id, repository_link_template(repo.root, repo.link))
    if note_index_options(conn, repository_id, options.parse_fingerprint):
        log.info("parse options changed; every file is read again", repository=repo.name)
    return repository_id


def unchanged_on_disk(path: Path, known: StoredDocument) -> bool:
    """Whether the file still has its document's size and mtime, so it need not be read."""
    try:
        stat = path.stat()
    except OSError:
        return False
    return stat.st_size == known.size_bytes and stat.st_mtime_ns == known.mtime_ns


@dataclass(frozen=True, slots=True)
class _Prepared:
    """One file after the database-free stage: a document to write, or what to do instead."""

    rel: str
    document: DocumentFile | None = None
    skipped: SkipReason | None = None
    unchanged_mtime_ns: int | None = None
    renamed_from: str | None = None
    detail: str = ""


class FileIndexer:
    """One pass over one repository: holds its id, the stored documents of the paths it handles (`stored`),
    and the gone documents a new file of the same content hash takes over (`renames`: hash to paths).

    Work on a file is split in two: `prepare` reads, hashes, parses and segments without touching the
    database, and `apply` writes. `run` prepares the next file on a worker thread while the current one is
    written (psycopg releases the GIL while PostgreSQL works), so both cores are busy during a cold index.
    """

    __slots__ = (
        "conn",
        "git_commit",
        "noted",
        "options",
        "renames",
        "repo",
        "report",
        "repository_id",
        "stored",
    )

    def __init__(
        self,
        conn: Connection,
        repo: Repository,
        repository_id: int,
        options: IndexOptions,
        stored: dict[str, StoredDocument],
        report: IndexReport,
    ) -> None:
        _require_autocommit(conn)
        # Files are the source of truth and every start reconciles, so losing the last few commits in an OS
        # crash costs only their re-indexing; atomicity per file is unaffected.
        conn.execute("SET synchronous_commit = off")
        self.conn = conn
        self.repo = repo
        self.repository_id = repository_id
        self.options = options
        self.stored = stored
        self.report = report
        self.renames: dict[str, list[str]] = {}
        self.git_commit = git_head_commit(repo.root)
        self.noted = skipped_paths(conn, repository_id)  # notes to drop once their file is indexed

    def pair_renames(self, gone: Iterable[str]) -> None:
        """Offer the `gone` documents to new files with their exact bytes, first path to first file."""
        for rel in sorted(gone):
            self.renames.setdefault(self.stored[rel].content_hash, []).append(rel)

    def prepare(self, rel: str, *, pair: bool = True) -> _Prepared:
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
        if known is None and pair and (candidates := self.renames.get(digest)):
            # Only `prepare` takes from `renames`, and one thread runs it, in the files' order.
            return _Prepared(rel, unchanged_mtime_ns=result.mtime_ns, renamed_from=candidates.pop(0))
        started = time.perf_counter()
        parsed = parse_markdown(result.text, code_mode=self.options.code_mode)
        parsed_at = time.perf_counter()
        units = split_sentences(parsed)
        report.parse_seconds += parsed_at - started
        report.segment_seconds += time.perf_counter() - parsed_at
        problem = result.detail if result.replaced_invalid_utf8 else None
        document = DocumentFile(
            rel, parsed.title, digest, result.size_bytes, result.mtime_ns, self.git_commit, units, problem
        )
        return _Prepared(rel, document=document)

    def apply(self, prepared: _Prepared) -> None:
        report = self.report
        rel = prepared.rel
        if prepared.renamed_from is not None:
            if not rename_document(self.conn, self.repository_id, prepared.renamed_from, rel):
                self.apply(self.prepare(rel, pair=False))  # the document went meanwhile: index the file
                return
            report.documents_renamed += 1
            self.stored[rel] = self.stored.pop(prepared.renamed_from)
        report.files_seen += 1
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
        document = prepared.document
        self.stored[rel] = StoredDocument(
            written.document_id, document.content_hash, document.size_bytes, document.mtime_ns
        )
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
        self.stored.pop(rel, None)
        if delete_document(self.conn, self.repository_id, rel):
            self.report.documents_deleted += 1
        if rel in self.noted:
            forget_skipped(self.conn, self.repository_id, [rel])
            self.noted.discard(rel)
