"""Why an answer may be weak although nothing failed: warnings an answer carries as notes.

Each warning is a note that begins with `WARNING` ("warning: "), so a script, the CLI and the page can tell
them from the engine's other notes: sentences in the question's scope that are not embedded yet (only the
lexical lane finds them), and, when no watcher keeps the index current, indexed files that changed on disk
since they were indexed. They describe the index when the answer was given: a stored answer served again
gets them anew (`replace_caveats`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from indexer.staleness import changed_on_disk, unembedded_in_scope

if TYPE_CHECKING:  # annotations only: printing an answer's warnings needs no database driver
    from engine.search import Filters
    from indexer.database import Connection

__all__ = ["DRAIN_HINT", "WARNING", "caveats", "replace_caveats"]

WARNING = "warning: "
"""The prefix of every note that is a warning."""
DRAIN_HINT = "`citeline embed --drain` embeds them now (a running `citeline serve` does it on its own)"
REINDEX_HINT = "`citeline index` catches up (a running `citeline serve` or `watch` does it on its own)"


def _plural(count: int, one: str, many: str) -> str:
    return f"{count:,} {one if count == 1 else many}"


def caveats(conn: Connection, filters: Filters, *, compare_disk: bool) -> list[str]:
    """The warnings for an answer under `filters`: the un-embedded sentences in scope and, with
    `compare_disk` (no watcher runs), the indexed files changed on disk since; empty when neither applies."""
    scope = (filters.repositories, filters.path_prefix)
    notes = []
    pending = unembedded_in_scope(conn, *scope)
    if pending:
        waiting = _plural(pending, "sentence is", "sentences are")
        notes.append(f"{WARNING}{waiting} not yet searchable by meaning; {DRAIN_HINT}")
    if compare_disk:
        changed = changed_on_disk(conn, *scope)
        if changed:
            files = _plural(changed, "indexed file has", "indexed files have")
            notes.append(f"{WARNING}{files} changed on disk since indexed; {REINDEX_HINT}")
    return notes


def replace_caveats(notes: list[str], fresh: list[str]) -> list[str]:
    """`notes` without their warnings, then `fresh` ones."""
    return [n for n in notes if not n.startswith(WARNING)] + fresh
