"""Turning a set of changed paths into index writes: per path for small batches, a stat walk for bursts.

watchfiles reports what the kernel saw, not what a document is: a rename arrives as a delete and an add, a
moved folder as one path, a `git checkout` as a thousand. This module decides which stored documents are
gone, which files are new or changed, pairs gone documents with new files of the same content hash as
renames (so sentence ids survive), and hands the rest to the indexer, one transaction per file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pathspec import GitIgnoreSpec

from indexer.database import Connection
from indexer.hashing import content_hash
from indexer.reconcile import IndexOptions, Repository, index_paths
from indexer.skips import forget_skipped, settle_walk
from indexer.sources import PathState, WalkProblems, path_state, walk_markdown
from indexer.store import (
    StoredDocument,
    delete_document,
    ensure_repository,
    note_index_options,
    rename_document,
    stored_documents,
)

__all__ = ["DocumentMatcher", "RepositorySync", "SyncReport"]


@dataclass(slots=True)
class SyncReport:
    """What one batch did to one repository."""

    written: int = 0
    unchanged: int = 0
    deleted: int = 0
    renamed: int = 0
    skipped: int = 0
    full_scan: bool = False

    @property
    def committed(self) -> int:
        """Files whose change reached the index: what the ingest latency is sampled over."""
        return self.written + self.deleted + self.renamed


class DocumentMatcher:
    """Whether one path is a document of the repository, by the same rules as the full walk.

    Include and exclude globs, every `.gitignore` from the root down, no `.git` folder and no symlinked
    folder on the way: a file the walk would not list must not be indexed because it was edited.
    """

    __slots__ = ("_exclude", "_ignores", "_include", "_root")

    def __init__(self, repo: Repository) -> None:
        self._root = repo.root
        self._include, self._exclude = repo.file_filter.spec()
        self._ignores: dict[str, GitIgnoreSpec | None] = {}

    def _spec(self, base: str) -> GitIgnoreSpec | None:
        if base not in self._ignores:
            try:
                text = (self._root / base / ".gitignore").read_text(encoding="utf-8", errors="replace")
                self._ignores[base] = GitIgnoreSpec.from_lines(text.splitlines())
            except OSError:
                self._ignores[base] = None
        return self._ignores[base]

    def _ignored(self, parts: list[str], is_dir: bool) -> bool:
        rel = "/".join(parts)
        probe = rel + "/" if is_dir else rel
        for depth in range(len(parts)):
            base = "/".join(parts[:depth])
            spec = self._spec(base)
            if spec is not None and spec.match_file(probe[len(base) + 1 :] if base else probe):
                return True
        return False

    def matches(self, rel: str) -> bool:
        parts = rel.split("/")
        if not self._include.match_file(rel) or self._exclude.match_file(rel):
            return False
        for depth in range(1, len(parts)):
            if parts[depth - 1] == ".git" or (self._root / "/".join(parts[:depth])).is_symlink():
                return False
            if self._ignored(parts[:depth], True):
                return False
        return not self._ignored(parts, False)


def _same_stat(path: Path, known: StoredDocument) -> bool:
    try:
        stat = path.stat()
    except OSError:
        return False
    return stat.st_size == known.size_bytes and stat.st_mtime_ns == known.mtime_ns


class RepositorySync:
    """Keeps one repository's documents equal to its files, batch by batch."""

    __slots__ = ("full_scan_threshold", "options", "repo", "repository_id")

    def __init__(
        self, conn: Connection, repo: Repository, options: IndexOptions, full_scan_threshold: int = 200
    ) -> None:
        self.repo = repo
        self.options = options
        self.full_scan_threshold = full_scan_threshold
        self.repository_id = ensure_repository(conn, repo.name, str(repo.root))
        note_index_options(conn, self.repository_id, options.parse_fingerprint)

    def catch_up(self, conn: Connection) -> SyncReport:
        """Walk the tree and apply every difference: at start, after a lost connection, and for bursts.

        Files whose size and mtime match their document are not read, so a branch switch costs a stat per
        file plus a read of the files it really changed.
        """
        stored = stored_documents(conn, self.repository_id)
        problems = WalkProblems()
        present = set(walk_markdown(self.repo.root, self.repo.file_filter, problems))
        changed = [
            rel
            for rel in sorted(present)
            if rel not in stored or not _same_stat(self.repo.root / rel, stored[rel])
        ]
        gone, walk_skips = settle_walk(
            conn, self.repository_id, self.repo.name, stored, present, problems, changed
        )
        report = self._apply(conn, stored, changed, set(gone))
        report.skipped += len(walk_skips)
        report.full_scan = True
        return report

    def apply_changes(self, conn: Connection, rels: Iterable[str]) -> SyncReport:
        """Apply a batch of changed repository-relative paths (any mix of edits, adds, deletes, moves)."""
        paths = sorted(set(rels))
        if len(paths) > self.full_scan_threshold or self._structural(conn, paths):
            return self.catch_up(conn)
        matcher = DocumentMatcher(self.repo)
        stored = self._stored(conn, paths)
        changed: list[str] = []
        gone: set[str] = set()
        for rel in paths:
            path = self.repo.root / rel
            # A path the OS will not stat (a folder above it lost its permissions) is read, not deleted:
            # reading it fails and keeps its document.
            state = path_state(path)
            if matcher.matches(rel) and state in (PathState.FILE, PathState.UNKNOWN):
                known = stored.get(rel)
                if known is None or not _same_stat(path, known):
                    changed.append(rel)
            elif rel in stored:
                gone.add(rel)
        # A path that is not (or no longer) a file to index loses its skip note with its document.
        forget_skipped(conn, self.repository_id, sorted(set(paths) - set(changed)))
        return self._apply(conn, stored, changed, gone)

    def _structural(self, conn: Connection, paths: list[str]) -> bool:
        """A change per-path handling cannot see through: folders, ignore rules, a folder moved away."""
        vanished = []
        for rel in paths:
            path = self.repo.root / rel
            if rel.rsplit("/", 1)[-1] == ".gitignore" or path.is_dir():
                return True
            if not os.path.lexists(path):
                vanished.append(rel)
        if not vanished:
            return False
        row = conn.execute(
            "SELECT EXISTS (SELECT 1 FROM documents d, unnest(%s::text[]) p"
            " WHERE d.repository_id = %s AND starts_with(d.path, p || '/'))",
            (vanished, self.repository_id),
        ).fetchone()
        return bool(row and row[0])

    def _stored(self, conn: Connection, paths: list[str]) -> dict[str, StoredDocument]:
        rows = conn.execute(
            "SELECT path, id, content_hash, size_bytes, mtime_ns FROM documents"
            " WHERE repository_id = %s AND path = ANY(%s)",
            (self.repository_id, paths),
        ).fetchall()
        return {r[0]: StoredDocument(r[1], r[2], r[3], r[4]) for r in rows}

    def _apply(
        self, conn: Connection, stored: dict[str, StoredDocument], changed: list[str], gone: set[str]
    ) -> SyncReport:
        report = SyncReport()
        if gone:
            report.renamed = self._pair_renames(conn, stored, [r for r in changed if r not in stored], gone)
        for rel in sorted(gone):
            if delete_document(conn, self.repository_id, rel):
                report.deleted += 1
        if changed:
            indexed = index_paths(conn, self.repo, changed, self.options)
            report.written = indexed.files_written
            report.unchanged = indexed.files_unchanged
            report.skipped = indexed.files_skipped
            report.deleted += indexed.documents_deleted
        return report

    def _pair_renames(
        self, conn: Connection, stored: dict[str, StoredDocument], new: list[str], gone: set[str]
    ) -> int:
        """Move each gone document to a new file with its exact bytes; removes the pairs from `gone`.

        The new file stays in the changed list: indexing it finds the same hash and only records its mtime.
        """
        by_hash: dict[str, list[str]] = {}
        for rel in sorted(gone):
            by_hash.setdefault(stored[rel].content_hash, []).append(rel)
        renamed = 0
        for rel in new:
            path = self.repo.root / rel
            try:
                if path.stat().st_size > self.options.max_file_bytes:
                    continue
                digest = content_hash(path.read_bytes())
            except OSError:
                continue
            candidates = by_hash.get(digest)
            if candidates and rename_document(conn, self.repository_id, (old := candidates.pop(0)), rel):
                gone.discard(old)
                renamed += 1
        return renamed
