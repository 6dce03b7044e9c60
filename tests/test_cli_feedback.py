"""Feedback from the command line in one step after a plain `citeline ask`: the answer's id and each source's
short id are printed, `citeline feedback ID --helpful` alone accepts what the answer cited, and on an answer
that cites nothing it says so, names the closest passages' ids and exits 1 (the helpful vote is recorded);
a sentence id that is not one is refused in one line with exit status 2, nothing recorded. A clause from the
team's memory is marked. Through a served app with the real engine (lexical lane, scripted NLI) on a real
PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from api.app import create_app
from api.settings import ApiSettings
from daemon.answering import render_answer
from daemon.cli import main
from engine.controller import AnswerEngine, EngineConfig, answer
from engine.passages import NEAREST
from engine.search import Retriever
from engine.store import load_answer
from engine.verdicts import VerifyConfig
from indexer.database import Connection, Database
from tests.api_support import (
    FULL_KEY,
    KEYS,
    VOTE_KEY,
    ContainmentNLI,
    cli_environment,
    client_for,
    index_two_repositories,
    served_for,
)
from tests.helpers import sentence_id_of

QUESTION = "What does stage 0 download?"
TOOLCHAIN = "Stage 0 downloads a prebuilt beta toolchain."
Serve = Callable[[float], AbstractContextManager[None]]
"""A block during which a server answering with a given composite threshold serves the commands."""


@pytest.fixture
def data_dir(clean_database: Database, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    return cli_environment(clean_database, monkeypatch, tmp_path)


def _engine(database: Database, retriever: Retriever, threshold: float) -> AnswerEngine:
    """Without an embedder the similarity stage scores 0: a composite threshold of 0.5 lets the scripted
    NLI's clauses through, one of 0.95 refuses every clause (an insufficient answer with closest passages)."""
    config = EngineConfig(verify=VerifyConfig(threshold=threshold))
    return AnswerEngine(
        database, retriever, None, entailment=ContainmentNLI(), config=config, pool=retriever.pool
    )


@contextmanager
def _server(data_dir: Path, database: Database, retriever: Retriever, threshold: float) -> Iterator[None]:
    app = create_app(
        database, retriever, partial(answer, engine=_engine(database, retriever, threshold)), ApiSettings()
    )
    with served_for(app, data_dir, database):
        yield


@pytest.fixture
def serve(
    data_dir: Path, conn: Connection, tmp_path: Path, clean_database: Database, lexical_retriever: Retriever
) -> Serve:
    """`alpha` and `beta` indexed; then, for a composite threshold (`_engine`), a block during which a
    server answering with it is recorded for the data dir, so that `citeline ask` and `feedback` use it."""
    index_two_repositories(conn, tmp_path)
    return partial(_server, data_dir, clean_database, lexical_retriever)


def _answer_id(printed: str) -> str:
    found = re.findall(r"^answer id: ([0-9a-f-]{36})$", printed, re.MULTILINE)
    assert len(found) == 1, printed
    return str(found[0])


def test_a_plain_ask_prints_the_answer_id_and_feedback_helpful_alone_accepts_its_cited_sentences(
    serve: Serve, conn: Connection, capsys: pytest.CaptureFixture[str]
) -> None:
    toolchain = sentence_id_of(conn, TOOLCHAIN)
    with serve(0.5):
        assert main(["ask", QUESTION]) == 0
        printed = capsys.readouterr().out
        answer_id = _answer_id(printed)
        assert f"     [s{toolchain}] alpha/guide/build.md:3 [Building]" in printed.splitlines()
        assert f"citeline feedback {answer_id} --helpful" in printed
        assert main(["feedback", answer_id, "--helpful"]) == 0
    said = capsys.readouterr().out.splitlines()
    assert said[0].startswith(f"recorded feedback 1 on answer {answer_id}: helpful")
    assert f"  accepted for this question: sentence {toolchain}" in said
    rows = conn.execute("SELECT helpful, sentence_id FROM accepted_answers").fetchall()
    assert rows == [(True, toolchain)], "the cited sentence is accepted for the question"


def test_helpful_feedback_on_an_answer_that_cites_nothing_says_so_and_names_the_closest_passages(
    serve: Serve, conn: Connection, capsys: pytest.CaptureFixture[str]
) -> None:
    with serve(0.95):
        assert main(["ask", QUESTION]) == 1
        printed = capsys.readouterr().out
        answer_id = _answer_id(printed)
        stored = load_answer(conn, answer_id)
        assert stored is not None and stored.status.value == "insufficient"
        nearest = [n.hit.sentence_id for n in stored.nearest]
        assert nearest
        for number, sentence_id in enumerate(nearest[:NEAREST], 1):
            assert re.search(rf"^  {number}\. \[s{sentence_id}\] ", printed, re.MULTILINE), printed
        assert f"citeline feedback {answer_id} --helpful --sentence s{nearest[0]}" in printed
        assert main(["feedback", answer_id, "--helpful"]) == 1
        said = capsys.readouterr().out.splitlines()
        assert said[1] == "  accepted no sentence for this question: the answer cites none"
        offered = ", ".join(f"s{i}" for i in nearest[:NEAREST])
        assert said[2] == f"  its closest passages: {offered}; name the one that answers it:"
        assert said[3] == f"  citeline feedback {answer_id} --helpful --sentence s{nearest[0]}"
        assert conn.execute("SELECT count(*) FROM accepted_answers").fetchone() == (0,)
        assert main(["feedback", answer_id, "--helpful", "--sentence", f"s{nearest[0]}"]) == 0
        assert f"  accepted for this question: sentence {nearest[0]}" in capsys.readouterr().out
    votes = conn.execute("SELECT helpful FROM feedback ORDER BY id").fetchall()
    assert votes == [(True,), (True,)], "the helpful vote that accepted nothing is still counted"
    accepted = conn.execute("SELECT sentence_id FROM accepted_answers").fetchall()
    assert accepted == [(nearest[0],)]


def test_the_api_accepts_the_cited_sentences_or_names_the_closest_passages_the_same_way(
    conn: Connection, tmp_path: Path, clean_database: Database, lexical_retriever: Retriever
) -> None:
    index_two_repositories(conn, tmp_path)
    toolchain = sentence_id_of(conn, TOOLCHAIN)
    for threshold in (0.5, 0.95):
        engine = _engine(clean_database, lexical_retriever, threshold)
        with client_for(clean_database, lexical_retriever, partial(answer, engine=engine)) as client:
            body: dict[str, Any] = client.post("/v1/answers", json={"question": QUESTION}).json()
            response = client.post(f"/v1/answers/{body['id']}/feedback", json={"helpful": True})
        assert response.status_code == 201
        record = response.json()
        if threshold == 0.5:
            assert record["accepted"] == [toolchain] and record["nearest_ids"] == []
        else:
            assert record["accepted"] == [] and record["sentence_ids"] == []
            assert record["nearest_ids"] == [n["sentence_id"] for n in body["nearest"]][:NEAREST]
            assert record["nearest_ids"], "an insufficient answer names what to accept instead"


@pytest.mark.parametrize("bad", ["abc", "s", "s-1", "2.5", "ss12", "", "12s", "x" * 100])
def test_a_sentence_id_that_is_not_one_is_refused_in_one_line_and_nothing_is_recorded(
    bad: str, data_dir: Path, conn: Connection, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["feedback", "3f1c6a52-77c1-4c39-9d5e-7f3d0e9b3a11", "--helpful", "--sentence", bad]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("citeline feedback: sentence_ids: ") and captured.err.count("\n") == 1
    assert "is not a sentence id (a number, or s and a number: s42)" in captured.err
    assert len(captured.err) < 200, "a long argument is shortened"
    assert conn.execute("SELECT count(*) FROM feedback").fetchone() == (0,)


def test_a_clause_from_the_team_s_memory_is_marked_in_plain_output() -> None:
    source = {
        "sentence_id": 42,
        "document_id": 1,
        "repository": "docs",
        "path": "build.md",
        "heading": "Building",
        "line_start": 3,
        "line_end": 3,
        "text": TOOLCHAIN,
        "embedded": True,
        "git_commit": None,
    }
    clause = {
        "clause": TOOLCHAIN,
        "sources": [source],
        "confidence": 0.9,
        "need": "single",
        "verification": {},
    }
    body: dict[str, Any] = {"id": None, "status": "answer", "route": "fast", "trace": [], "clauses": [clause]}
    assert "team" not in render_answer(body)
    remembered = {"question": "which toolchain does stage 0 fetch?", "answer_id": "x", "accepted_at": "t"}
    body["clauses"] = [clause | {"chosen_by": "team", "remembered": remembered}]
    assert render_answer(body).splitlines()[2:4] == [
        '     from the team\'s memory: accepted for "which toolchain does stage 0 fetch?"',
        "     [s42] docs/build.md:3 [Building]",
    ]


def test_a_key_the_server_refuses_to_let_teach_does_not_teach_through_the_local_database(
    data_dir: Path,
    conn: Connection,
    tmp_path: Path,
    clean_database: Database,
    lexical_retriever: Retriever,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    index_two_repositories(conn, tmp_path)
    monkeypatch.setenv("CITELINE_API_KEYS", VOTE_KEY)
    engine = _engine(clean_database, lexical_retriever, 0.5)
    app = create_app(
        clean_database, lexical_retriever, partial(answer, engine=engine), ApiSettings(keys=KEYS)
    )
    toolchain = sentence_id_of(conn, TOOLCHAIN)
    with served_for(app, data_dir, clean_database):
        assert main(["ask", QUESTION]) == 0
        answer_id = _answer_id(capsys.readouterr().out)
        assert main(["feedback", answer_id, "--helpful", "--sentence", str(toolchain)]) == 2
    assert "may not" in capsys.readouterr().err
    assert conn.execute("SELECT count(*) FROM accepted_answers").fetchone() == (0,)


def test_the_command_line_prefers_an_unscoped_teaching_key() -> None:
    from daemon.config import load_config
    from daemon.lookups import token_for

    config = load_config(None)
    keys = f"{VOTE_KEY},{FULL_KEY}:alpha:teach,{FULL_KEY[::-1]}::teach"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CITELINE_API_KEYS", keys)
        assert token_for(config) == FULL_KEY[::-1]
