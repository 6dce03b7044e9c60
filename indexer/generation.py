"""The index generation: a number that moves whenever what answers are computed from changes.

Every transaction that writes sentences or their vectors (inserts, updates, deletes, a truncate) takes a new
value as it commits (migration 0010's triggers, so it holds whoever writes). A reader that notes the
generation before it reads the index, and finds the same value later, missed no change since, but for one
whose commit was under way at that very moment: the value is taken inside the commit, just before the change
becomes visible.
"""

from __future__ import annotations

from indexer.database import Connection

__all__ = ["index_generation"]

_SQL = "SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM citeline_index_generation"


def index_generation(conn: Connection) -> int:
    """The current generation (0 before the first change)."""
    row = conn.execute(_SQL).fetchone()
    assert row is not None, "migration 0010 creates the sequence"
    return int(row[0])
