"""A heading that search finds stands for the unit under it: the pool holds that unit at the heading's rank
(`EvidencePool.in_place_of_headings`), read from a real index."""

from __future__ import annotations

from pathlib import Path

from engine.contexts import fetch_contexts
from engine.evidence import EvidencePool
from engine.search import Hit, load_hits
from indexer.database import Connection
from indexer.reconcile import Repository, reconcile_repository

PAGE = (
    "# Decimal type\n\n"
    "## What are decimals?\n\n"
    "Decimals are fixed-point numbers that keep exact precision. They suit money.\n\n"
    "## Limits\n\n"
    "### Precision\n\n"
    "Precision goes up to seventy-six digits.\n"
)


def _units(conn: Connection, repo_dir: Path) -> dict[str, Hit]:
    (repo_dir / "decimal.md").write_text(PAGE)
    reconcile_repository(conn, Repository("docs", repo_dir))
    ids = [int(r[0]) for r in conn.execute("SELECT id FROM sentences ORDER BY ordinal")]
    return {hit.text: hit for hit in load_hits(conn, ids)}


def test_a_heading_hit_gives_its_rank_to_the_first_unit_under_it(conn: Connection, repo_dir: Path) -> None:
    units = _units(conn, repo_dir)
    heading, money = units["What are decimals?"], units["They suit money."]
    answer = units["Decimals are fixed-point numbers that keep exact precision."]
    pool = EvidencePool(None)
    pool.contexts.update(fetch_contexts(conn, [money.sentence_id, heading.sentence_id]))
    found = pool.in_place_of_headings(conn, [money, heading, answer])
    assert [h.text for h in found] == [money.text, answer.text]  # the answer once, at the heading's rank
    assert pool.contexts[answer.sentence_id].kind == "sentence"
    assert pool.add(found, 1, 5) == found


def test_a_heading_with_a_sub_heading_right_under_it_is_left_to_be_passed_over(
    conn: Connection, repo_dir: Path
) -> None:
    units = _units(conn, repo_dir)
    limits, precision = units["Limits"], units["Precision"]
    pool = EvidencePool(None)
    pool.contexts.update(fetch_contexts(conn, [limits.sentence_id, precision.sentence_id]))
    found = pool.in_place_of_headings(conn, [limits, precision])
    assert [h.text for h in found] == ["Limits", "Precision goes up to seventy-six digits."]
    assert pool.add(found, 1, 5) == [found[1]]  # a heading is still never held
