"""Why a closest passage was not used, in plain words that never contradict their numbers: each reason names
what happened (not read with its rank, rated below the floor, read as a near miss, not entailed), a passage
rated at or above the floor is never called "not about your question", and `citeline ask` and the page say
the same words (the page's copy, `api/static/reasons.js`, run by Node on the same passages). The engine's
reasons through the real engine (lexical lane, scripted NLI, a fixed rating) on a real PostgreSQL."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from daemon.answering import render_answer
from engine.answers import Answer
from engine.controller import AnswerEngine, EngineConfig
from engine.passages import NearPassage
from engine.reasons import ReasonKind, ordinal, plain_reason
from engine.search import Hit, Retriever
from engine.verdicts import VerifyConfig
from indexer.database import Connection, Database
from indexer.reconcile import Repository, reconcile_repository
from tests.api_support import ContainmentNLI
from tests.engine_support import FixedRating

REASONS_JS = Path(__file__).resolve().parents[1] / "api" / "static" / "reasons.js"
NOT_ABOUT = "not about your question"


def _near(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"stage": None, "measure": None, "score": None, "threshold": None, "reason": ""}
    return base | fields


SAID = [
    (
        _near(measure="relevance", score=0.82, threshold=0.35, reason_kind="not_read", rank=3),
        "not read: ranked 3rd, rated 0.82 (floor 0.35)",
    ),
    (
        _near(measure="relevance", score=0.5, threshold=0.35, reason_kind="not_chosen", rank=1),
        "read, not chosen by the reader: ranked 1st, rated 0.50 (floor 0.35)",
    ),
    (
        _near(measure="relevance", score=0.12, threshold=0.35, reason_kind="below_floor"),
        "rated as not about your question: relevance 0.12 (floor 0.35)",
    ),
    (
        _near(stage="relevance", measure="answer_check", score=0.09, threshold=0.1, reason_kind="near_miss"),
        "read as a near miss: answer check 0.09 (floor 0.10)",
    ),
    (
        _near(
            stage="entailment", measure="entailment", score=0.12, threshold=0.5, reason_kind="not_entailed"
        ),
        "not entailed: entailment 0.12 (needed 0.50)",
    ),
    (
        _near(stage="entailment", reason="fewer than two sources are needed for it"),
        "not entailed: fewer than two sources are needed for it",
    ),
    (
        _near(stage="coverage", measure="coverage", score=0.6, threshold=0.8),
        "failed verification: coverage 0.60 (needed 0.80)",
    ),
    (
        _near(stage="composite", measure="composite", score=0.125, threshold=0.6),
        "failed verification: composite 0.13 (needed 0.60)",
    ),
    (
        _near(stage="contradiction", measure="contradiction", score=0.91, threshold=0.85),
        "contradicted: contradiction 0.91 (limit 0.85)",
    ),
    (
        _near(stage="conflict", reason="a source changed later says otherwise"),
        "contradicted: a source changed later says otherwise",
    ),
    # stored before `reason_kind`: the kind its stage and numbers give, never "not about" above the floor
    (_near(measure="relevance", score=0.82, threshold=0.35), "not read: rated 0.82 (floor 0.35)"),
    (
        _near(measure="relevance", score=0.2, threshold=0.35),
        f"rated as {NOT_ABOUT}: relevance 0.20 (floor 0.35)",
    ),
    (_near(reason="no clause was drawn from it"), "not read"),
    (_near(reason_kind="not_read", rank=12), "not read: ranked 12th"),
    (_near(reason_kind="no_such_kind", rank=22), "not read: ranked 22nd"),
]


@pytest.mark.parametrize(("near", "said"), SAID)
def test_each_reason_names_what_happened_with_its_numbers(near: dict[str, Any], said: str) -> None:
    assert plain_reason(near) == said


def test_a_passage_rated_at_or_above_the_floor_is_never_called_not_about_your_question() -> None:
    for score in (0.35, 0.36, 0.82, 1.0):
        for kind in (None, "not_read", "not_chosen"):
            near = _near(measure="relevance", score=score, threshold=0.35, reason_kind=kind, rank=2)
            assert NOT_ABOUT not in plain_reason(near)
            assert f"rated {score:.2f}" in plain_reason(near), "its rating said as it is"


def test_ordinals_read_as_english() -> None:
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd", "101st", "111th",
    ]  # fmt: skip


def test_the_page_says_the_same_words_as_the_cli() -> None:
    """The page's reasons.js run by Node (the page itself runs it in Chromium: tests/test_page_*_e2e.py)."""
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        pytest.skip("Node.js is not installed: the page's copy of the reasons is not run")
    cases = [near for near, _ in SAID] + [
        _near(measure="relevance", score=s / 1000, threshold=0.35, reason_kind=k, rank=r)
        for s in range(0, 1001, 5)
        for k, r in (("not_read", s % 30 + 1), (None, None), ("not_chosen", 111))
    ]
    script = (
        f"const r = require({json.dumps(str(REASONS_JS))});"
        "const cases = JSON.parse(require('fs').readFileSync(0, 'utf8'));"
        "process.stdout.write(JSON.stringify(cases.map(r.plainReason)));"
    )
    done = subprocess.run(
        [node, "-e", script], input=json.dumps(cases), capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(done.stdout) == [plain_reason(near) for near in cases]


DOC = "# Ports\n\n" + "".join(
    f"The server port {n} is one choice among the ports listed here.\n\n" for n in range(8)
)
QUESTION = "Which server port should I choose?"


def _nearest(database: Database, retriever: Retriever, rating: float) -> list[dict[str, Any]]:
    config = EngineConfig(verify=VerifyConfig(threshold=0.95), store=False, hits_per_subquery=2)
    engine = AnswerEngine(
        database,
        retriever,
        None,
        entailment=ContainmentNLI(),
        relevance=FixedRating(rating),
        config=config,
        pool=retriever.pool,
    )
    result = engine.answer(QUESTION)
    assert result.status.value == "insufficient"
    nearest: list[dict[str, Any]] = result.to_dict()["nearest"]
    assert nearest
    return nearest


def test_the_engine_never_calls_a_passage_rated_above_the_floor_not_about_the_question(
    conn: Connection, repo_dir: Path, clean_database: Database, lexical_retriever: Retriever
) -> None:
    (repo_dir / "ports.md").write_text(DOC)
    reconcile_repository(conn, Repository("docs", repo_dir))
    above = _nearest(clean_database, lexical_retriever, 0.82)
    undrawn = [n for n in above if n["stage"] is None]
    assert undrawn, "some passage no clause was drawn from"
    for near in undrawn:
        assert near["reason_kind"] == "not_read" and near["rating"] >= near["threshold"]
        assert isinstance(near["rank"], int) and near["rank"] >= 1
        assert plain_reason(near).startswith(f"not read: ranked {ordinal(near['rank'])}, rated 0.82")
    for near in above:
        assert NOT_ABOUT not in plain_reason(near)
        assert near["reason_kind"] != "below_floor"
    ranks = sorted(n["rank"] for n in undrawn)
    assert len(set(ranks)) == len(ranks), "each place taken once"
    printed = render_answer(_body(above)).splitlines()
    assert all(NOT_ABOUT not in line for line in printed)
    below = _nearest(clean_database, lexical_retriever, 0.1)
    for near in below:
        assert near["reason_kind"] == "below_floor" and near["rank"] is None
        assert plain_reason(near).startswith(f"rated as {NOT_ABOUT}: relevance 0.10 (floor 0.35)")
    again = Answer.from_dict(_body(above))
    assert [n.to_dict() for n in again.nearest] == above, "the answer store reads the kind and rank back"


def _body(nearest: list[dict[str, Any]]) -> dict[str, Any]:
    return {"question": "q", "status": "insufficient", "route": "fast", "budget": "mid", "clauses": [],
            "trace": [], "nearest": nearest}  # fmt: skip


def test_a_passage_stored_before_its_kind_was_kept_gets_the_kind_its_numbers_give() -> None:
    hit = Hit(7, "Specify server port.", "vite", "server.md", 12, 12, ("Server",), 3, 4, None, True)
    stored = NearPassage(hit, "no clause was drawn from it", None, "relevance", 0.82, 0.35, 0.82).to_dict()
    del stored["reason_kind"], stored["rank"]
    assert NearPassage.from_dict(stored).reason_kind is ReasonKind.NOT_READ
    stored["score"] = 0.2
    assert NearPassage.from_dict(stored).reason_kind is ReasonKind.BELOW_FLOOR
