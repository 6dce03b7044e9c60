"""Stored answers on a real PostgreSQL: round trip, and each source marked live, changed or deleted."""

from __future__ import annotations

import uuid
from pathlib import Path

from engine.answers import (
    Answer,
    AnswerClause,
    Budget,
    ReferenceNeed,
    RejectedClause,
    RoundTrace,
    Route,
    SourceState,
    Stage,
    Status,
    Verification,
)
from engine.search import Hit
from engine.store import find_answer, load_answer, save_answer
from indexer.database import Connection
from indexer.reconcile import Repository, reconcile_repository

GUIDE = "# Build\n\nRun the build with make. The cache lives in the target folder.\n"


def _hits(conn: Connection) -> dict[str, Hit]:
    rows = conn.execute(
        "SELECT s.id, s.text, d.path, s.line_start, s.line_end, s.heading_path, d.id, s.ordinal, d.git_commit"
        " FROM sentences s JOIN documents d ON d.id = s.document_id WHERE s.kind = 'sentence'"
    ).fetchall()
    return {
        r[1]: Hit(r[0], r[1], "docs", r[2], r[3], r[4], tuple(r[5]), r[6], r[7], r[8], False) for r in rows
    }


def _answer(conn: Connection, question: str = "how do I build") -> Answer:
    hits = _hits(conn)
    clauses = [  # one clause the answer check read, one it did not: the store keeps both readings
        AnswerClause(
            text, [hits[text]], 0.9, ReferenceNeed.SINGLE, Verification(composite=0.9, answer_check=check)
        )
        for text, check in (
            ("Run the build with make.", 0.42),
            ("The cache lives in the target folder.", None),
        )
    ]
    return Answer(question, Status.ANSWER, Route.FAST, Budget.MID, clauses, filters={"path_prefix": None})


def _index(conn: Connection, root: Path, text: str = GUIDE) -> None:
    (root / "build.md").write_text(text)
    reconcile_repository(conn, Repository("docs", root))


def test_round_trip_keeps_the_json_and_marks_sources_live(conn: Connection, repo_dir: Path) -> None:
    _index(conn, repo_dir)
    answer = _answer(conn)
    body = answer.to_dict()
    answer_id = save_answer(conn, answer)
    stored = load_answer(conn, answer_id)
    assert stored is not None and stored.fresh
    assert stored.question == "how do I build" and stored.status is Status.ANSWER
    out = stored.to_dict()
    assert out["id"] == answer_id and out["fresh"] is True
    assert [c["clause"] for c in out["clauses"]] == [c["clause"] for c in body["clauses"]]
    assert out["clauses"][1]["sources"][0]["state"] == "live"
    assert out["clauses"][1]["sources"][0]["text"] == "The cache lives in the target folder."
    row = conn.execute("SELECT count(*) FROM answer_sources WHERE sentence_id IS NOT NULL").fetchone()
    assert row == (2,)


def test_edited_sentence_is_changed_and_moved_sentence_stays_live(conn: Connection, repo_dir: Path) -> None:
    _index(conn, repo_dir)
    answer_id = save_answer(conn, _answer(conn))
    _index(
        conn,
        repo_dir,
        "# Build\n\nIntro line.\n\nRun the build with make. The cache lives in the home folder.\n",
    )
    stored = load_answer(conn, answer_id)
    assert stored is not None and not stored.fresh
    states = {c.clause: c.checks[0].state for c in stored.clauses}
    assert states == {
        "Run the build with make.": SourceState.LIVE,
        "The cache lives in the target folder.": SourceState.CHANGED,  # its file is still indexed
    }
    moved = stored.clauses[0].checks[0]
    assert moved.current_lines == (5, 5) and moved.cited_lines == (3, 3)
    assert stored.to_dict()["clauses"][0]["sources"][0]["current_line_start"] == 5
    assert stored.clauses[1].sources[0].text == "The cache lives in the target folder."


def test_changed_hash_and_deleted_file(conn: Connection, repo_dir: Path) -> None:
    _index(conn, repo_dir)
    answer_id = save_answer(conn, _answer(conn))
    conn.execute("UPDATE sentences SET norm_hash = '\\x00'::bytea WHERE text = 'Run the build with make.'")
    stored = load_answer(conn, answer_id)
    assert stored is not None
    assert [c.checks[0].state for c in stored.clauses] == [SourceState.CHANGED, SourceState.LIVE]
    (repo_dir / "build.md").unlink()
    reconcile_repository(conn, Repository("docs", repo_dir))
    stored = load_answer(conn, answer_id)
    assert stored is not None
    assert [c.checks[0].state for c in stored.clauses] == [SourceState.DELETED, SourceState.DELETED]
    assert stored.clauses[0].checks[0].document_id is None


def test_find_answer_serves_only_answers_under_the_same_filters(conn: Connection, repo_dir: Path) -> None:
    _index(conn, repo_dir)
    answer = _answer(conn)
    first = save_answer(conn, answer)
    second = save_answer(conn, answer)
    assert find_answer(conn, "how do I build", {"path_prefix": None}) == second != first
    assert find_answer(conn, "how do I build", {"path_prefix": "guide/"}) is None
    save_answer(
        conn, Answer("nothing", Status.INSUFFICIENT, Route.FAST, Budget.MID, filters={"path_prefix": None})
    )
    assert find_answer(conn, "nothing", {"path_prefix": None}) is None


def test_unknown_or_malformed_ids_load_nothing(conn: Connection) -> None:
    assert load_answer(conn, str(uuid.uuid4())) is None
    assert load_answer(conn, "not-a-uuid") is None


def test_the_store_gives_back_the_answer_it_was_given(conn: Connection, repo_dir: Path) -> None:
    _index(conn, repo_dir)
    answer = _answer(conn)
    answer.clauses[0].conflicts_with, answer.clauses[1].conflicts_with = [1], [0]
    answer.notes = ["route fast: confident first retrieval (top 0.91)", "planner extractive"]
    refused = RejectedClause(
        "The cache is tiny.", "key terms not in its sources (coverage 0.50)", Stage.COVERAGE
    )
    search = {"query": "build cache", "reason": "no new evidence"}
    answer.trace = [
        RoundTrace(1, ["how do I build"], [1, 2], ["Run the build with make."], [refused], [search])
    ]
    answer.timings_ms = {"total": 12.345}
    answer_id = save_answer(conn, answer)
    stored = load_answer(conn, answer_id)
    assert stored is not None and stored.fresh and not stored.cached
    out = stored.to_dict()
    assert out.pop("fresh") is True
    assert [s.pop("state") for c in out["clauses"] for s in c["sources"]] == ["live", "live"]
    assert out == {**answer.to_dict(), "id": answer_id}
    assert stored.trace[0].rejected[0].stage is Stage.COVERAGE  # so cached answers count by stage too


def test_a_trace_written_before_stages_were_kept_reads_back_without_one() -> None:
    was = {"clause": "The cache is tiny.", "reason": "key terms not in its sources"}
    (refused,) = RoundTrace.from_dict({"round": 1, "rejected": [was]}).rejected
    assert refused.stage is None and refused.to_dict() == was
