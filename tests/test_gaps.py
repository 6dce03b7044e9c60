"""The gaps in the docs and the feedback export: wordings of one question grouped, most asked first, scoped
like answers, exported as CSV and Markdown, counted in `/metrics`; accepted and rejected pairs exported as
JSON lines that the training recipes read as relevance rows."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from litestar.testing import TestClient

from api.settings import ApiSettings
from daemon.cli import main
from engine.answers import Answer, Budget, Route, Status
from engine.feedback import give_feedback
from engine.gaps import Asked, find_gaps, group_gaps, parse_since
from engine.inputs import InputError
from engine.passages import NearPassage
from engine.search import Retriever
from engine.store import save_answer
from indexer.database import Connection, Database
from indexer.reconcile import Repository, reconcile_repository
from tests.api_support import ALPHA_KEY, FULL_KEY, KEYS, cli_environment, client_for, index_two_repositories
from tests.helpers import hit_of
from training.data import load_relevance

FULL = {"Authorization": f"Bearer {FULL_KEY}"}
ALPHA = {"Authorization": f"Bearer {ALPHA_KEY}"}
NOW = datetime(2026, 11, 1, 12, tzinfo=UTC)


def _at(minutes: int) -> datetime:
    return NOW + timedelta(minutes=minutes)


def test_wordings_of_one_question_are_one_group_most_asked_first() -> None:
    asked = [
        Asked("How do I change the port?", "insufficient", _at(0)),
        Asked("How do I bake bread?", "insufficient", _at(1)),
        Asked("how to change the port", "unhelpful", _at(2)),
        Asked("Changing the port number?", "insufficient", _at(3)),
        Asked("How do I change the port?", "fail", _at(4)),
    ]
    gaps = group_gaps(asked)
    assert [g.count for g in gaps] == [4, 1]
    port = gaps[0]
    assert port.question == "How do I change the port?"
    assert port.wordings == [
        "How do I change the port?",
        "how to change the port",
        "Changing the port number?",
    ]
    assert port.kinds == {"insufficient": 2, "unhelpful": 1, "fail": 1}
    assert (port.first_asked, port.last_asked) == (_at(0), _at(4))


def test_a_question_on_the_same_topic_asking_something_else_is_its_own_gap() -> None:
    gaps = group_gaps(
        [
            Asked("How do I change the port of the admin API?", "insufficient", _at(0)),
            Asked("How do I disable the admin API?", "insufficient", _at(1)),
        ]
    )
    assert len(gaps) == 2


def test_the_same_closest_section_joins_wordings_that_share_fewer_words() -> None:
    here = {"repository": "docs", "path": "net.md", "heading": "Ports"}
    a = Asked("Which port does it listen on?", "insufficient", _at(0), None, **here)
    b = Asked("Which port does the server take?", "insufficient", _at(1), None, **here)
    elsewhere = Asked("Which port does the server take?", "insufficient", _at(2), None, "docs", "x.md")
    assert [g.count for g in group_gaps([a, b])] == [2]
    assert len(group_gaps([a, elsewhere])) == 2


def test_since_reads_durations_and_dates_and_refuses_anything_else() -> None:
    assert parse_since("7d", NOW) == NOW - timedelta(days=7)
    assert parse_since("12h", NOW) == NOW - timedelta(hours=12)
    assert parse_since("2026-10-01") == datetime(2026, 10, 1, tzinfo=UTC)
    assert parse_since("2026-02-30") == datetime(2026, 3, 2, tzinfo=UTC)
    assert parse_since(None) is None and parse_since("  ") is None
    for bad in ("last week", "99999w", "2026-13-01", "0000-01-01", "7d and more"):
        with pytest.raises(InputError, match="since"):
            parse_since(bad)


def _near(conn: Connection, text: str) -> NearPassage:
    return NearPassage(hit_of(conn, text), "not entailed")


def _insufficient(conn: Connection, question: str, near: str, repositories: list[str] | None = None) -> str:
    answer = Answer(
        question,
        Status.INSUFFICIENT,
        Route.FAST,
        Budget.MID,
        filters={"repositories": repositories, "path_prefix": None},
        nearest=[_near(conn, near)],
    )
    return save_answer(conn, answer)


@pytest.fixture
def asked(conn: Connection, tmp_path: Path) -> Path:
    index_two_repositories(conn, tmp_path)
    for question in ("How do I skip a UI test?", "how to skip ui tests", "Skipping a UI test"):
        _insufficient(conn, question, "Run them with the test command.")
    _insufficient(conn, "What flour is best?", "Bake the bread at 220 degrees.", ["beta"])
    return tmp_path


@pytest.fixture
def client(asked: Path, clean_database: Database, lexical_retriever: Retriever) -> Iterator[TestClient]:  # type: ignore[type-arg]
    with client_for(clean_database, lexical_retriever, None, ApiSettings(keys=KEYS)) as test_client:
        yield test_client


def test_the_gaps_route_lists_groups_most_asked_first_with_the_closest_section(
    client: TestClient,  # type: ignore[type-arg]
) -> None:
    response = client.get("/v1/gaps", headers=FULL)
    assert response.status_code == 200
    gaps = response.json()["gaps"]
    assert [(g["question"], g["count"]) for g in gaps] == [
        ("How do I skip a UI test?", 3),
        ("What flour is best?", 1),
    ]
    assert gaps[0]["closest"] == {
        "repository": "alpha",
        "path": "guide/tests.md",
        "heading": "Testing > UI tests",
    }
    assert gaps[0]["kinds"] == {"insufficient": 3} and len(gaps[0]["answer_ids"]) == 3
    narrowed = client.get("/v1/gaps", params={"repo": "beta", "limit": 5}, headers=FULL).json()["gaps"]
    assert [g["question"] for g in narrowed] == ["What flour is best?"]
    metrics = client.get("/metrics", headers=FULL).text
    assert "citeline_open_gaps 2.0" in metrics


def test_a_scoped_key_sees_only_gaps_asked_within_its_repositories(
    client: TestClient,  # type: ignore[type-arg]
) -> None:
    assert client.get("/v1/gaps", headers=ALPHA).json()["gaps"] == []
    assert client.get("/v1/gaps", params={"repo": "beta"}, headers=ALPHA).status_code == 403


@pytest.mark.parametrize(
    "params", [{"since": "yesterday"}, {"limit": "0"}, {"limit": "501"}, {"repo": "a\x00"}]
)
def test_bad_gap_parameters_are_a_clear_400(
    client: TestClient,  # type: ignore[type-arg]
    params: dict[str, str],
) -> None:
    response = client.get("/v1/gaps", params=params, headers=FULL)
    assert response.status_code == 400 and response.json()["detail"]


def test_unhelpful_answers_and_stale_accepted_ones_are_gaps(conn: Connection, asked: Path) -> None:
    bread = _insufficient(conn, "How hot is the oven for bread?", "Bake the bread at 220 degrees.", ["beta"])
    sentence = conn.execute(
        "SELECT id FROM sentences WHERE text = 'Bake the bread at 220 degrees.'"
    ).fetchone()
    assert sentence is not None
    give_feedback(conn, bread, True, [sentence[0]])
    give_feedback(conn, bread, False, [], "it should say the temperature")
    assert [g.kinds for g in find_gaps(conn, None, ["beta"]) if "oven" in g.question] == [
        {"insufficient": 1, "unhelpful": 1}
    ]
    page = asked / "beta" / "recipes" / "bread.md"
    page.write_text(page.read_text().replace("220 degrees", "230 degrees"))
    reconcile_repository(conn, Repository("beta", asked / "beta"))
    oven = next(g for g in find_gaps(conn, None) if "oven" in g.question)
    assert oven.kinds == {"insufficient": 1, "unhelpful": 1, "stale": 1} and oven.to_dict()["stale"] is True
    assert "Bake the bread at 220 degrees." in oven.details
    assert "it should say the temperature" in oven.details
    assert find_gaps(conn, None, since=datetime.now(UTC) + timedelta(hours=1)) == []


@pytest.fixture
def data_dir(clean_database: Database, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    return cli_environment(clean_database, monkeypatch, tmp_path)


def test_the_cli_lists_and_exports_the_gaps(
    asked: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["gaps", "--json", "--since", "7d"]) == 0
    gaps = json.loads(capsys.readouterr().out)["gaps"]
    assert [g["count"] for g in gaps] == [3, 1]
    assert main(["gaps", "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows[0]["question"] == "How do I skip a UI test?" and rows[0]["count"] == "3"
    assert rows[0]["path"] == "guide/tests.md" and "how to skip ui tests" in rows[0]["wordings"]
    assert main(["gaps", "--format", "markdown"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].startswith("| Asked | Question") and table[2].startswith(
        "| 3 | How do I skip a UI test? |"
    )
    assert main(["gaps"]) == 0
    assert capsys.readouterr().out.startswith("   3x  How do I skip a UI test?")
    assert main(["gaps", "--since", "soon"]) == 2
    assert capsys.readouterr().err.startswith("citeline gaps: since:")


def test_exported_feedback_reads_back_as_relevance_rows(
    conn: Connection, asked: Path, data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = _insufficient(
        conn, "What does stage 0 download?", "Stage 0 downloads a prebuilt beta toolchain."
    )
    ids = dict(conn.execute("SELECT text, id FROM sentences").fetchall())
    give_feedback(conn, answer, True, [ids["Stage 0 downloads a prebuilt beta toolchain."]])
    give_feedback(conn, answer, False, [ids["Stage 1 builds the compiler from source."]])
    out = tmp_path / "feedback.jsonl"
    assert main(["export-feedback", "--out", str(out)]) == 0
    assert "wrote 2 rows" in capsys.readouterr().out
    first = json.loads(out.read_text().splitlines()[0])
    assert first["repository"] == "alpha" and first["path"] == "guide/build.md" and first["helpful"] is True
    rows = load_relevance(out)
    assert [(r.query, r.passage, r.label) for r in rows] == [
        ("What does stage 0 download?", "Stage 0 downloads a prebuilt beta toolchain.", 1),
        ("What does stage 0 download?", "Stage 1 builds the compiler from source.", 0),
    ]
    assert len({r.group for r in rows}) == 1
