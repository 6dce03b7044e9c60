"""Gaps a writer can act on: each says whether the docs lack the answer (`not_in_docs`), came near it
(`near_miss`) or had it and citeline missed it (`missed`), with the best-rated passage (not the first search
hit); "not in the docs" first in the API, the CLI and the exports. A gap closes when a later verified answer
or the team's acceptance answers it, opens again when that answer no longer stands, and says so when its
closest page changes after it was asked."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from api.settings import ApiSettings
from daemon.cli import main
from engine.answers import Answer, AnswerClause, Budget, ReferenceNeed, Route, Status, Verification
from engine.feedback import give_feedback
from engine.gap_kinds import Passage, near_passages
from engine.gaps import Asked, GapConfig, find_gaps, group_gaps
from engine.passages import NearPassage
from engine.search import Retriever
from engine.store import save_answer
from indexer.database import Connection, Database
from indexer.reconcile import Repository, reconcile_repository
from tests.api_support import FULL_KEY, KEYS, client_for, index_two_repositories
from tests.helpers import hit_of

FULL = {"Authorization": f"Bearer {FULL_KEY}"}
NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)
SKIP = "How do I skip a UI test?"
STAGE = "What does stage 0 download?"
OVEN = "How hot should the oven be?"
STAGE_0 = "Stage 0 downloads a prebuilt beta toolchain."
_FILTERS = {"repositories": None, "path_prefix": None}


def _passage(rating: float | None, floor: float | None = 0.35, text: str = "A sentence.") -> Passage:
    return Passage(1, "docs", "a.md", "A", 3, 3, text, rating, floor)


def _asked(question: str, minute: int, *passages: Passage, kind: str = "insufficient") -> Asked:
    rated = any(p.rating is not None for p in passages) or (kind == "insufficient" and not passages)
    return Asked(question, kind, NOW + timedelta(minutes=minute), passages=passages, rated=rated)


def test_a_gap_is_not_in_the_docs_only_when_no_passage_is_rated_near_the_floor() -> None:
    config = GapConfig(floor=0.35, near_margin=0.1)
    cases = {
        "How do I bake bread?": (_passage(0.2499),),
        "How do I change the port?": (_passage(0.25),),
        "Where is the cache?": (_passage(0.1), _passage(0.35, text="The cache is in target.")),
        "Which flags exist?": (),
    }
    gaps = group_gaps([_asked(q, i, *p) for i, (q, p) in enumerate(cases.items())], config)
    kinds = {g.question: g.kind for g in gaps}
    assert kinds == {
        "How do I bake bread?": "not_in_docs",
        "Which flags exist?": "not_in_docs",
        "How do I change the port?": "near_miss",
        "Where is the cache?": "missed",
    }
    cache = next(g for g in gaps if g.kind == "missed")
    assert cache.passage is not None and cache.passage.text == "The cache is in target."


def test_not_in_the_docs_comes_first_however_often_the_others_were_asked() -> None:
    asked = [_asked("Where is the cache?", i, _passage(0.9)) for i in range(5)]
    asked += [_asked("How do I bake bread?", 9, _passage(0.05))]
    asked += [_asked("Why did it fail?", 10, kind="fail")]
    assert [(g.kind, g.count) for g in group_gaps(asked)] == [
        ("not_in_docs", 1),
        ("missed", 5),
        ("unrated", 1),
    ]


def test_passages_without_a_relevance_model_are_unrated_and_a_stored_floor_wins() -> None:
    plain = [{"sentence_id": 1, "text": "x", "rating": 0.0, "measure": None, "threshold": None}]
    assert near_passages(plain, 0.35) == ((Passage(1, None, None, "", None, None, "x"),), False)
    measured = [
        {
            "sentence_id": 2,
            "text": "y",
            "rating": 0.45,
            "measure": "relevance",
            "threshold": 0.5,
            "stage": None,
        }
    ]
    passages, rated = near_passages(measured, 0.35)
    assert rated and (passages[0].rating, passages[0].floor) == (0.45, 0.5)
    assert near_passages([], 0.35) == ((), True), "a search that found nothing rated nothing near"


def _refused(conn: Connection, question: str, *rated: tuple[str, float]) -> str:
    """An insufficient answer whose near passages were rated as given, in the order given (search order)."""
    nearest = [
        NearPassage(hit_of(conn, t), "no clause was drawn from it", None, "relevance", rating, 0.35, rating)
        for t, rating in rated
    ]
    answer = Answer(question, Status.INSUFFICIENT, Route.FAST, Budget.MID, filters=_FILTERS, nearest=nearest)
    return save_answer(conn, answer)


def _verified(conn: Connection, question: str, text: str) -> str:
    clause = AnswerClause(text, [hit_of(conn, text)], 0.9, ReferenceNeed.SINGLE, Verification(composite=0.9))
    return save_answer(
        conn, Answer(question, Status.ANSWER, Route.FAST, Budget.MID, [clause], filters=_FILTERS)
    )


@pytest.fixture
def asked(conn: Connection, tmp_path: Path) -> Path:
    """Three gaps: one the docs lack, one they nearly answer, one they answer (asked most, by the second
    passage search found)."""
    index_two_repositories(conn, tmp_path)
    for question in (SKIP, "how to skip ui tests"):
        _refused(conn, question, ("Run them with the test command.", 0.1))
    _refused(conn, OVEN, ("Bake the bread at 220 degrees.", 0.3))
    for _ in range(3):
        _refused(conn, STAGE, ("Stage 1 builds the compiler from source.", 0.2), (STAGE_0, 0.8))
    return tmp_path


def _gap(conn: Connection, question: str) -> dict[str, Any] | None:
    return next((g.to_dict() for g in find_gaps(conn, None) if g.question == question), None)


@pytest.fixture
def client(asked: Path, clean_database: Database, lexical_retriever: Retriever) -> Iterator[TestClient]:  # type: ignore[type-arg]
    with client_for(clean_database, lexical_retriever, None, ApiSettings(keys=KEYS)) as test_client:
        yield test_client


def test_the_api_lists_not_in_the_docs_first_with_the_best_rated_passage(
    client: TestClient,  # type: ignore[type-arg]
) -> None:
    gaps = client.get("/v1/gaps", headers=FULL).json()["gaps"]
    assert [(g["question"], g["kind"], g["count"]) for g in gaps] == [
        (SKIP, "not_in_docs", 2),
        (OVEN, "near_miss", 1),
        (STAGE, "missed", 3),
    ]
    missed = gaps[2]
    assert missed["passage"]["text"] == STAGE_0 and missed["passage"]["rating"] == 0.8
    assert missed["passage"]["floor"] == 0.35 and missed["passage"]["line_start"] == 3
    assert missed["closest"] == {"repository": "alpha", "path": "guide/build.md", "heading": "Building"}
    assert not missed["passage"]["accepted"] and missed["page_changed"] is False


def test_the_cli_and_the_exports_show_the_kind_and_the_passage_in_the_same_order(
    asked: Path,
    clean_database: Database,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("CITELINE_DATABASE_URL", clean_database.url)
    monkeypatch.setenv("CITELINE_DATA_DIR", str(asked / "data"))
    monkeypatch.delenv("CITELINE_CONFIG", raising=False)
    monkeypatch.delenv("CITELINE_API_KEYS", raising=False)
    assert main(["gaps", "--json"]) == 0
    gaps = json.loads(capsys.readouterr().out)["gaps"]
    assert [g["kind"] for g in gaps] == ["not_in_docs", "near_miss", "missed"]
    assert (
        gaps[0]["passage"]["text"] == "Run them with the test command."
        and gaps[0]["passage"]["rating"] == 0.1
    )
    assert main(["gaps", "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [(r["question"], r["kind"]) for r in rows] == [
        (SKIP, "not_in_docs"),
        (OVEN, "near_miss"),
        (STAGE, "missed"),
    ]
    assert rows[2]["passage_text"] == STAGE_0 and rows[2]["passage_rating"] == "0.8"
    assert main(["gaps", "--format", "markdown"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert "| Kind |" in table[0]
    assert table[2].startswith(f"| 2 | {SKIP} | not in the docs |")
    assert table[4].startswith(f"| 3 | {STAGE} | missed |") and STAGE_0 in table[4]
    assert main(["gaps"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].startswith(f"   2x  {SKIP}")
    assert text[1] == (
        "       not in the docs: alpha/guide/tests.md:5"
        ' "Run them with the test command." (rated 0.1, floor 0.35)'
    )
    assert any(line.startswith("       missed: alpha/guide/build.md:3") for line in text)


def test_a_later_verified_answer_closes_a_gap_until_its_source_changes(conn: Connection, asked: Path) -> None:
    _verified(conn, "what does stage 0 download", STAGE_0)
    assert _gap(conn, STAGE) is None
    page = asked / "alpha" / "guide" / "build.md"
    page.write_text(page.read_text().replace("prebuilt beta", "prebuilt nightly"))
    reconcile_repository(conn, Repository("alpha", asked / "alpha"))
    reopened = _gap(conn, STAGE)
    assert reopened is not None, "an answer whose source changed no longer closes the gap"
    assert reopened["page_changed"] is True and reopened["kind"] == "unrated", "its best passage went"


def test_a_verified_answer_before_the_last_asking_does_not_close_it(conn: Connection, asked: Path) -> None:
    _verified(conn, STAGE, STAGE_0)
    _refused(conn, STAGE, (STAGE_0, 0.8))
    gap = _gap(conn, STAGE)
    assert gap is not None and gap["count"] == 4


def test_the_teams_acceptance_closes_a_gap_and_a_later_refusal_shows_the_accepted_passage(
    conn: Connection, asked: Path
) -> None:
    skip = _refused(conn, SKIP, ("Run them with the test command.", 0.1))
    give_feedback(conn, skip, True, [hit_of(conn, "Run them with the test command.").sentence_id])
    assert _gap(conn, SKIP) is None
    _refused(
        conn, "Skipping a UI test?", ("UI tests compare the compiler output with reference files.", 0.05)
    )
    gap = _gap(conn, SKIP)
    assert gap is not None and gap["kind"] == "missed"
    assert gap["passage"]["text"] == "Run them with the test command." and gap["passage"]["accepted"] is True


def test_a_gap_says_when_its_closest_page_changed_after_it_was_asked(conn: Connection, asked: Path) -> None:
    before = _gap(conn, SKIP)
    assert before is not None and before["page_changed"] is False
    page = asked / "alpha" / "guide" / "tests.md"
    page.write_text(page.read_text() + "\nSkip a UI test with the ignore directive.\n")
    reconcile_repository(conn, Repository("alpha", asked / "alpha"))
    changed = _gap(conn, SKIP)
    assert changed is not None and changed["page_changed"] is True and changed["kind"] == "not_in_docs"
    _verified(conn, SKIP, "Skip a UI test with the ignore directive.")
    assert _gap(conn, SKIP) is None, "asked again after the edit, it is answered and closed"


def test_an_insufficient_answer_rated_nothing_is_unrated_not_missing_from_the_docs(
    conn: Connection, asked: Path
) -> None:
    hit = hit_of(conn, "Bread dough rises because yeast produces carbon dioxide.")
    nearest = [NearPassage(hit, "not entailed")]
    dough = Answer("Why does dough rise?", Status.INSUFFICIENT, Route.FAST, Budget.MID, filters=_FILTERS)
    dough.nearest = nearest
    save_answer(conn, dough)
    gap = _gap(conn, "Why does dough rise?")
    assert gap is not None and gap["kind"] == "unrated" and gap["passage"]["rating"] is None
