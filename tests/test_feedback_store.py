"""Feedback and accepted answers on a real PostgreSQL: what is kept, what outlives what, what goes stale."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from engine.answers import Answer, AnswerClause, Budget, ReferenceNeed, Route, Status, Verification
from engine.feedback import FeedbackError, give_feedback, question_key
from engine.inputs import InputError
from engine.store import save_answer
from indexer.database import Connection
from indexer.feedback import accepted_pairs, feedback_rows, mark_stale
from indexer.reconcile import Repository, reconcile_repository
from tests.helpers import hit_of

GUIDE = "# Build\n\nRun the build with make. The cache lives in the target folder.\n"
OTHER = "# Bread\n\nBake the bread at 220 degrees.\n"


def _index(conn: Connection, root: Path, name: str = "docs", text: str = GUIDE) -> None:
    folder = root / name
    folder.mkdir(exist_ok=True)
    (folder / "guide.md").write_text(text)
    reconcile_repository(conn, Repository(name, folder))


def _answer(conn: Connection, cited: str = "Run the build with make.", repos: list[str] | None = None) -> str:
    hit = hit_of(conn, cited)
    clause = AnswerClause(cited, [hit], 0.9, ReferenceNeed.SINGLE, Verification(composite=0.9))
    answer = Answer(
        "How do I build?", Status.ANSWER, Route.FAST, Budget.MID, [clause], filters={"repositories": repos}
    )
    return save_answer(conn, answer)


@pytest.fixture
def indexed(conn: Connection, tmp_path: Path) -> Path:
    _index(conn, tmp_path)
    _index(conn, tmp_path, "kitchen", OTHER)
    return tmp_path


def test_helpful_feedback_accepts_the_named_sentences_with_their_hashes(
    conn: Connection, indexed: Path
) -> None:
    answer_id = _answer(conn)
    cache = hit_of(conn, "The cache lives in the target folder.")
    record = give_feedback(conn, answer_id, True, [cache.sentence_id], "  the cache line says it  ")
    assert record.helpful and record.sentence_ids == (cache.sentence_id,)
    assert record.comment == "the cache line says it"
    assert record.accepted == (cache.sentence_id,) and record.repositories == ("docs",)
    pairs = accepted_pairs(conn)
    assert [(p.question, p.sentence_id, p.helpful, p.stale) for p in pairs] == [
        ("How do I build?", cache.sentence_id, True, False)
    ]
    stored_hash = conn.execute("SELECT sentence_hash FROM feedback_sentences").fetchone()
    live_hash = conn.execute("SELECT norm_hash FROM sentences WHERE id = %s", (cache.sentence_id,)).fetchone()
    assert stored_hash == live_hash


def test_feedback_outlives_a_pruned_answer_store(conn: Connection, indexed: Path) -> None:
    answer_id = _answer(conn)
    give_feedback(conn, answer_id, True, [hit_of(conn, "Run the build with make.").sentence_id])
    conn.execute("DELETE FROM answers")
    assert [row.question for row in feedback_rows(conn)] == ["How do I build?"]
    assert len(accepted_pairs(conn)) == 1


def test_deleting_a_repository_deletes_its_feedback_and_keeps_the_others(
    conn: Connection, indexed: Path
) -> None:
    docs_answer = _answer(conn)
    kitchen_answer = _answer(conn, "Bake the bread at 220 degrees.")
    give_feedback(conn, docs_answer, True, [hit_of(conn, "Run the build with make.").sentence_id])
    give_feedback(conn, kitchen_answer, False)
    conn.execute("DELETE FROM repositories WHERE name = 'docs'")
    assert [row.answer_id for row in feedback_rows(conn)] == [kitchen_answer]
    assert [p.repository for p in accepted_pairs(conn)] == ["kitchen"]


def test_an_accepted_sentence_edited_or_deleted_is_marked_stale(conn: Connection, indexed: Path) -> None:
    answer_id = _answer(conn)
    build = hit_of(conn, "Run the build with make.")
    cache = hit_of(conn, "The cache lives in the target folder.")
    give_feedback(conn, answer_id, True, [build.sentence_id, cache.sentence_id])
    assert mark_stale(conn) == 0
    _index(conn, indexed, text="# Build\n\nRun the build with cargo. The cache lives in the target folder.\n")
    assert mark_stale(conn) == 1
    assert [p.sentence_id for p in accepted_pairs(conn, stale_only=True)] == [build.sentence_id]


def test_unhelpful_feedback_naming_no_sentence_rejects_every_cited_one(
    conn: Connection, indexed: Path
) -> None:
    answer_id = _answer(conn)
    build = hit_of(conn, "Run the build with make.")
    record = give_feedback(conn, answer_id, False)
    assert record.rejected == (build.sentence_id,) and record.accepted == ()
    rows = conn.execute("SELECT question_norm, helpful FROM accepted_answers").fetchall()
    assert rows == [(question_key("how do I BUILD"), False)]


def test_feedback_on_a_missing_answer_is_not_found(conn: Connection, indexed: Path) -> None:
    with pytest.raises(FeedbackError) as caught:
        give_feedback(conn, str(uuid.uuid4()), True)
    assert caught.value.status == 404


def test_a_scoped_caller_may_not_name_another_repositorys_sentence(conn: Connection, indexed: Path) -> None:
    answer_id = _answer(conn, repos=["docs"])
    bread = hit_of(conn, "Bake the bread at 220 degrees.")
    with pytest.raises(FeedbackError) as caught:
        give_feedback(conn, answer_id, True, [bread.sentence_id], repositories=("docs",))
    assert caught.value.status == 403
    assert feedback_rows(conn) == []


def test_a_scoped_caller_sees_no_answer_asked_over_every_repository(conn: Connection, indexed: Path) -> None:
    with pytest.raises(FeedbackError) as caught:
        give_feedback(conn, _answer(conn), True, repositories=("docs",))
    assert caught.value.status == 404


def test_a_sentence_that_does_not_exist_is_not_found(conn: Connection, indexed: Path) -> None:
    with pytest.raises(FeedbackError) as caught:
        give_feedback(conn, _answer(conn), True, [999_999])
    assert caught.value.status == 404


def test_bad_input_is_refused_before_anything_is_stored(conn: Connection, indexed: Path) -> None:
    answer_id = _answer(conn)
    with pytest.raises(InputError, match="at most 50"):
        give_feedback(conn, answer_id, True, list(range(1, 60)))
    with pytest.raises(InputError, match="not a sentence id"):
        give_feedback(conn, answer_id, True, [0])
    with pytest.raises(InputError, match="comment"):
        give_feedback(conn, answer_id, True, [], "x" * 5000)
    assert feedback_rows(conn) == []
