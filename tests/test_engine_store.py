"""The answer engine and its answer store, and sources that disagree, on a real PostgreSQL with the real
all-MiniLM-L6-v2 and the embedding worker; the entailment model is the scripted one of
`tests.engine_support` (a premise entails a hypothesis it contains; listed pairs contradict).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from engine.answers import Budget, Status
from engine.controller import AnswerEngine, ConflictPolicy, EngineConfig, answer
from engine.store import count_serving
from indexer.database import Connection
from indexer.embedder import EmbeddingModel
from indexer.embedding_queue import EmbeddingWorker
from indexer.reconcile import Repository, reconcile_repository
from tests.engine_support import ContainmentNLI, index_docs


@pytest.fixture
def indexed(conn: Connection, repo_dir: Path, embedder: EmbeddingModel) -> Path:
    return index_docs(conn, repo_dir, embedder)


@pytest.mark.parametrize("policy", list(ConflictPolicy))
def test_conflicting_sources(
    new_engine: Callable[..., AnswerEngine],
    policy: ConflictPolicy,
    embedder: EmbeddingModel,
    conn: Connection,
    repo_dir: Path,
) -> None:
    old = "The build cache is stored in the target folder."
    new = "The build cache is stored in the home folder."
    (repo_dir / "old.md").write_text(f"# Cache\n\n{old}\n")
    reconcile_repository(conn, Repository("docs", repo_dir))
    (repo_dir / "new.md").write_text(f"# Cache\n\n{new}\n")
    reconcile_repository(conn, Repository("docs", repo_dir))
    EmbeddingWorker(conn, embedder).drain()
    nli = ContainmentNLI([(old, new), (new, old)])
    config = EngineConfig(conflict_policy=policy, store=False)
    engine = new_engine(entailment=nli, config=config)
    result = engine.answer("where is the build cache stored")
    texts = [c.clause for c in result.clauses]
    if policy is ConflictPolicy.BOTH:
        assert sorted(texts) == sorted([old, new])
        assert result.clauses[0].conflicts_with == [1] and result.clauses[1].conflicts_with == [0]
    else:
        assert texts == [new]
    assert any("disagree" in note for note in result.notes)


def test_stored_answer_is_served_while_fresh_and_recomputed_after_an_edit(
    new_engine: Callable[..., AnswerEngine],
    conn: Connection,
    indexed: Path,
) -> None:
    nli = ContainmentNLI()
    engine = new_engine(entailment=nli)
    question = "why does bread dough rise"
    first = answer(question, "low", engine=engine)
    assert first.id is not None and first.status is Status.ANSWER
    calls = nli.calls
    again = answer(question, "low", engine=engine)
    assert again.to_dict()["cached"] is True and again.to_dict()["id"] == first.id
    assert nli.calls == calls  # nothing recomputed
    (indexed / "cooking.md").write_text(
        "# Bread\n\nBread dough rises because yeast makes gas. Bake it hot.\n"
    )
    reconcile_repository(conn, Repository("docs", indexed))
    recomputed = answer(question, "low", engine=engine)
    body = recomputed.to_dict()
    assert body["cached"] is False and recomputed.id != first.id
    assert any("changed or deleted" in n for n in body["notes"])
    assert body["clauses"][0]["clause"] == "Bread dough rises because yeast makes gas."


def test_each_serving_from_the_store_is_counted_and_its_relaxed_commit_stays_in_that_transaction(
    new_engine: Callable[..., AnswerEngine],
    conn: Connection,
    indexed: Path,
) -> None:
    engine = new_engine(entailment=ContainmentNLI())
    first = answer("why does bread dough rise", "low", engine=engine)
    for _ in range(3):
        assert answer("why does bread dough rise", "low", engine=engine).to_dict()["cached"] is True
    served = conn.execute("SELECT served FROM answers WHERE id = %s", (first.id,)).fetchone()
    assert served == (4,), "the first asking and three servings"
    assert first.id is not None
    conn.execute("SET synchronous_commit TO on")  # what a durable server runs with
    count_serving(conn, first.id)
    assert conn.execute("SELECT served FROM answers WHERE id = %s", (first.id,)).fetchone() == (5,)
    assert conn.execute("SHOW synchronous_commit").fetchone() == ("on",), "durable again after"


def test_high_budget_without_an_entailment_model_fails_with_a_reason(
    new_engine: Callable[..., AnswerEngine],
    indexed: Path,
) -> None:
    engine = new_engine(entailment=None)
    result = engine.answer("why does bread dough rise", Budget.HIGH)
    assert result.status is Status.FAIL and "entailment" in (result.reason or "")
    low = engine.answer("why does bread dough rise", Budget.LOW, use_store=False)
    assert low.status is Status.ANSWER  # verbatim clauses verify without an NLI model


def test_high_budget_reverifies_a_stale_stored_answer(
    new_engine: Callable[..., AnswerEngine],
    embedder: EmbeddingModel,
    conn: Connection,
    indexed: Path,
) -> None:
    engine = new_engine(entailment=ContainmentNLI())
    question = "why does bread dough rise"
    first = engine.answer(question, Budget.HIGH)
    clause = first.clauses[0].clause
    assert first.clauses[0].sources[0].path == "cooking.md"
    # The cited sentence moves to another file: its row is deleted, the same words live on elsewhere.
    (indexed / "cooking.md").write_text("# Bread\n\nBake it at 220 degrees.\n")
    (indexed / "baking.md").write_text(f"# Baking\n\n{clause}\n")
    _sync(conn, indexed, embedder)
    again = engine.answer(question, Budget.HIGH)
    assert any("re-verified" in n for n in again.notes)
    assert [c.clause for c in again.clauses] == [clause]
    assert again.clauses[0].sources[0].path == "baking.md"


def test_a_stored_answer_is_recomputed_when_another_file_adds_a_better_answer(
    new_engine: Callable[..., AnswerEngine], embedder: EmbeddingModel, conn: Connection, indexed: Path
) -> None:
    engine, question = new_engine(entailment=ContainmentNLI()), "why does bread dough rise"
    first = engine.answer(question, Budget.LOW)
    assert [s.path for c in first.clauses for s in c.sources] == ["cooking.md"]
    # The cited sentence is untouched; a new page states the answer in the question's own words.
    better = "Bread dough rise happens because yeast ferments sugar in the dough."
    (indexed / "yeast.md").write_text(f"# Why bread dough rises\n\n{better}\n")
    _sync(conn, indexed, embedder)
    again = engine.answer(question, Budget.LOW)
    assert not again.cached and again.id != first.id
    assert any("index changed" in note for note in again.notes)
    assert better in [c.clause for c in again.clauses]
    third = engine.answer(question, Budget.LOW)
    assert third.cached and third.id == again.id  # nothing changed since: served from the store


def _sync(conn: Connection, root: Path, embedder: EmbeddingModel) -> None:
    """Index what changed under `root` and embed it, as the daemon would."""
    reconcile_repository(conn, Repository("docs", root))
    EmbeddingWorker(conn, embedder).drain()
