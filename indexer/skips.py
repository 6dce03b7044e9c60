"""The record of files left out of the index, per repository: what `citeline status` and `/metrics` count.

A skipped file keeps its previous version in the index (or none, if it never had one); its row here says
why, so an operator can alert on it instead of finding out from a missing answer. A row lives exactly as long
as the problem: indexing the file again, or the file being gone, removes it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

import structlog

from indexer.database import Connection
from indexer.sources import SkipReason, WalkProblems

__all__ = [
    "forget_skipped",
    "forget_skipped_except",
    "record_all_skipped",
    "record_skipped",
    "settle_walk",
    "skipped_paths",
]

log = structlog.get_logger(__name__)


def record_skipped(conn: Connection, repository_id: int, path: str, reason: str, detail: str = "") -> None:
    """Note that `path` was skipped for `reason` (replacing an earlier note for it)."""
    record_all_skipped(conn, repository_id, {path: (reason, detail)})


def record_all_skipped(conn: Connection, repository_id: int, notes: Mapping[str, tuple[str, str]]) -> None:
    """Note every path of `notes` (path to reason and detail) in one statement."""
    if not notes:
        return
    reasons = [note[0] for note in notes.values()]
    details = [note[1] for note in notes.values()]
    with conn.transaction():
        conn.execute(
            "INSERT INTO skipped_files (repository_id, path, reason, detail)"
            " SELECT %s, * FROM unnest(%s::text[], %s::text[], %s::text[])"
            " ON CONFLICT (repository_id, md5(path)) DO UPDATE"
            " SET reason = EXCLUDED.reason, detail = EXCLUDED.detail, skipped_at = now()",
            (repository_id, list(notes), reasons, details),
        )


def skipped_paths(conn: Connection, repository_id: int) -> set[str]:
    """The paths of a repository currently noted as skipped."""
    rows = conn.execute("SELECT path FROM skipped_files WHERE repository_id = %s", (repository_id,))
    return {r[0] for r in rows.fetchall()}


def forget_skipped(conn: Connection, repository_id: int, paths: Collection[str]) -> None:
    """Drop the notes of `paths`: they were indexed, or are gone."""
    if paths:
        with conn.transaction():
            conn.execute(
                "DELETE FROM skipped_files WHERE repository_id = %s AND path = ANY(%s)",
                (repository_id, list(paths)),
            )


def forget_skipped_except(conn: Connection, repository_id: int, present: Collection[str]) -> None:
    """After a full walk: drop the notes of every path the walk no longer found."""
    with conn.transaction():
        conn.execute(
            "DELETE FROM skipped_files WHERE repository_id = %s AND NOT path = ANY(%s)",
            (repository_id, list(present)),
        )


def settle_walk(
    conn: Connection,
    repository_id: int,
    repository: str,
    stored: Iterable[str],
    present: set[str],
    problems: WalkProblems,
    pending: Iterable[str],
) -> tuple[list[str], dict[str, str]]:
    """After a full walk: the stored paths that are really gone, and the paths skipped for the walk's sake.

    Every folder the walk could not list and every name that is not UTF-8 is logged; the documents under such
    a folder are spared (a permission glitch or a mount hiccup is not a deletion) and, with those names, noted
    as skipped. Notes of other paths are dropped, except those of `pending` files, which are about to be read.
    """
    for folder, error in problems.unreadable_folders.items():
        log.warning(
            "folder unreadable; its documents are kept",
            repository=repository,
            folder=folder or ".",
            detail=error,
        )
    notes = dict.fromkeys(problems.undecodable, (SkipReason.UNDECODABLE_NAME, "the name is not UTF-8"))
    gone = []
    for rel in sorted(set(stored) - present):
        holder = problems.hiding(rel)
        if holder is None:
            gone.append(rel)
        else:
            refusal = problems.unreadable_folders[holder]
            notes[rel] = (SkipReason.FOLDER_UNREADABLE, f"folder {holder or '.'} unreadable: {refusal}")
    forget_skipped_except(conn, repository_id, [*notes, *pending])
    for path in problems.undecodable:
        log.warning(
            "file skipped",
            repository=repository,
            path=path,
            reason=SkipReason.UNDECODABLE_NAME.value,
            detail="the name is not UTF-8",
        )
    record_all_skipped(
        conn, repository_id, {path: (reason.value, detail) for path, (reason, detail) in notes.items()}
    )
    return gone, {path: reason.value for path, (reason, _detail) in notes.items()}
