"""Keeping a repository's documents equal to its files: the catch-up walk and batches of changed paths.

`citeline index` and the watcher both come here. A catch-up walks the tree; a batch looks at the paths
watchfiles reported (which are what the kernel saw, not what a document is: a rename arrives as a delete and
an add, a moved folder as one path, a `git checkout` as a thousand), and falls back to a catch-up when it
cannot see through them. Either way the stored documents are looked up once, files whose size and mtime
match their document are not read, each other file is read and hashed once, and a new file with the exact
bytes of a document that is gone takes that document over, so its sentence ids survive the rename. Only a
file that is gone loses its document: one under a folder the walk could not list is not known to be gone.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable
from dataclasses import dataclass

import structlog

from indexer.database import Connection
from indexer.ingest import (
    FileIndexer,
    IndexOptions,
    IndexReport,
    ProgressCallback,
    Repository,
    open_repository,
    unchanged_on_disk,
)
from indexer.skips import forget_skipped, settle_walk
from indexer.sources import (
    DocumentMatcher,
    PathState,
    SkipReason,
    WalkProblems,
    display_path,
    is_undecodable,
    path_state,
    walk_markdown,
)
from indexer.store import StoredDocument, documents_under, stored_documents

__all__ = [
    "IndexOptions",
    "IndexReport",
    "Repository",
    "RepositorySync",
    "SyncReport",
    "index_paths",
    "reconcile_repository",
]

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class SyncReport:
    """What one batch did to one repository, and whether it took a walk of the whole tree."""

    index: IndexReport
    full_scan: bool


class RepositorySync:
    """Keeps one repository's documents equal to its files, walk by walk or batch by batch."""

    __slots__ = ("full_scan_threshold", "options", "repo", "repository_id")

    def __init__(
        self, conn: Connection, repo: Repository, options: IndexOptions, full_scan_threshold: int = 200
    ) -> None:
        self.repo = repo
        self.options = options
        self.full_scan_threshold = full_scan_threshold
        self.repository_id = open_repository(conn, repo, options)

    def catch_up(
        self, conn: Connection, *, progress: ProgressCallback | None = None, report: IndexReport | None = None
    ) -> IndexReport:
        """Walk the tree and apply every difference: at start, after a lost connection, and for bursts.

        Files whose size and mtime match their document are not read, so a branch switch costs a stat per
        file plus a read of the files it really changed.
        """
        report = report if report is not None else IndexReport()
        stored = stored_documents(conn, self.repository_id)
        present = set()
        changed = []
        problems = WalkProblems()
        for rel in walk_markdown(self.repo.root, self.repo.file_filter, problems):
            present.add(rel)
            known = stored.get(rel)
            if known is not None and unchanged_on_disk(self.repo.root / rel, known):
                report.files_seen += 1
                report.files_unchanged += 1
                if progress is not None:
                    progress(rel)
            else:
                changed.append(rel)
        gone, walk_skips = settle_walk(
            conn, self.repository_id, self.repo.name, stored, present, problems, changed
        )
        report.files_skipped += len(walk_skips)
        report.skipped.update(walk_skips)
        self._apply(conn, stored, changed, gone, report, progress)
        return report

    def apply_changes(self, conn: Connection, rels: Iterable[str]) -> SyncReport:
        """Apply a batch of changed repository-relative paths (any mix of edits, adds, deletes, moves)."""
        paths = sorted(set(rels))
        if len(paths) > self.full_scan_threshold or self._structural(conn, paths):
            return SyncReport(self.catch_up(conn), full_scan=True)
        matcher = DocumentMatcher(self.repo.root, self.repo.file_filter)
        stored = stored_documents(conn, self.repository_id, paths)
        changed: list[str] = []
        gone: list[str] = []
        for rel in paths:
            path = self.repo.root / rel
            # A path the OS will not stat (a folder above it lost its permissions) is read, not deleted:
            # reading it fails and keeps its document.
            state = path_state(path)
            if matcher.matches(rel) and state in (PathState.FILE, PathState.UNKNOWN):
                known = stored.get(rel)
                if known is None or not unchanged_on_disk(path, known):
                    changed.append(rel)
            elif rel in stored:
                gone.append(rel)
        # A path that is not (or no longer) a file to index loses its skip note with its document.
        forget_skipped(conn, self.repository_id, sorted(set(paths) - set(changed)))
        report = IndexReport()
        self._apply(conn, stored, changed, gone, report)
        return SyncReport(report, full_scan=False)

    def _structural(self, conn: Connection, paths: list[str]) -> bool:
        """A change per-path handling cannot see through: folders, ignore rules, a folder moved away."""
        vanished = []
        for rel in paths:
            path = self.repo.root / rel
            if rel.rsplit("/", 1)[-1] == ".gitignore" or path.is_dir():
                return True
            if not os.path.lexists(path):
                vanished.append(rel)
        return bool(vanished) and documents_under(conn, self.repository_id, vanished)

    def _apply(
        self,
        conn: Connection,
        stored: dict[str, StoredDocument],
        changed: list[str],
        gone: Collection[str],
        report: IndexReport,
        progress: ProgressCallback | None = None,
    ) -> None:
        """Index the `changed` files, each gone document first offered to them as a rename, then delete the
        gone documents no file took over."""
        if not changed and not gone:
            return
        indexer = FileIndexer(conn, self.repo, self.repository_id, self.options, stored, report)
        indexer.pair_renames(gone)
        indexer.run(_storable(self.repo, changed), progress)
        for rel in sorted(gone):
            if rel in indexer.stored:  # not taken over by a renamed file
                indexer.delete(rel)


def _storable(repo: Repository, rels: Iterable[str]) -> Iterable[str]:
    """The paths whose names can be stored; the others are logged (a full walk notes them as skipped)."""
    for rel in rels:
        if is_undecodable(rel):
            log.warning(
                "file skipped",
                repository=repo.name,
                path=display_path(rel),
                reason=SkipReason.UNDECODABLE_NAME.value,
            )
        else:
            yield rel


def reconcile_repository(
    conn: Connection,
    repo: Repository,
    options: IndexOptions | None = None,
    *,
    progress: ProgressCallback | None = None,
    report: IndexReport | None = None,
) -> IndexReport:
    """Index every changed Markdown file of `repo` (a renamed one keeps its ids); drop gone documents."""
    return RepositorySync(conn, repo, options or IndexOptions()).catch_up(
        conn, progress=progress, report=report
    )


def index_paths(
    conn: Connection, repo: Repository, paths: Iterable[str], options: IndexOptions | None = None
) -> IndexReport:
    """Re-index the given repository-relative paths (changed, created or deleted files), one by one."""
    options = options or IndexOptions()
    report = IndexReport()
    repository_id = open_repository(conn, repo, options)
    rels = list(_storable(repo, paths))
    stored = stored_documents(conn, repository_id, rels)
    indexer = FileIndexer(conn, repo, repository_id, options, stored, report)
    for rel in rels:
        if path_state(repo.root / rel) is PathState.ABSENT:
            indexer.delete(rel)
        else:  # present, or the OS would not say: reading tells (an unreadable file keeps its document)
            indexer.apply(indexer.prepare(rel))
    return report
