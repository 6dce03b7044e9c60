"""Metrics count each rejected clause by the stage its verdict names, on answers the real engine gives.

The engine runs on a real PostgreSQL with the real all-MiniLM-L6-v2; its entailment model is the scripted
one of test_engine_controller.py (a conflict needs a contradiction the shipped NLI model may not see).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from api.metrics import ApiMetrics
from engine.answers import Stage
from engine.controller import AnswerEngine, ConflictPolicy, EngineConfig
from indexer.database import Connection, Database
from indexer.embedder import EmbeddingModel
from indexer.embedding_queue import EmbeddingWorker
from indexer.reconcile import Repository, reconcile_repository
from tests.engine_support import ContainmentNLI

OLD = "The build cache is stored in the target folder."
NEW = "The build cache is stored in the home folder."


def _sample(metrics: ApiMetrics, prefix: str) -> float:
    """The sum of the samples whose line starts with `prefix` (0 when there is none)."""
    lines = [line for line in metrics.render().decode().splitlines() if line.startswith(prefix)]
    return sum(float(line.rsplit(" ", 1)[1]) for line in lines)


def test_a_clause_that_loses_to_a_more_recent_source_is_counted_as_a_conflict(
    new_engine: Callable[..., AnswerEngine],
    clean_database: Database,
    embedder: EmbeddingModel,
    conn: Connection,
    repo_dir: Path,
) -> None:
    (repo_dir / "old.md").write_text(f"# Cache\n\n{OLD}\n")
    reconcile_repository(conn, Repository("docs", repo_dir))
    (repo_dir / "new.md").write_text(f"# Cache\n\n{NEW}\n")
    reconcile_repository(conn, Repository("docs", repo_dir))
    EmbeddingWorker(conn, embedder).drain()
    config = EngineConfig(conflict_policy=ConflictPolicy.MOST_RECENT, store=False)
    nli = ContainmentNLI([(OLD, NEW), (NEW, OLD)])
    engine = new_engine(entailment=nli, config=config)
    result = engine.answer("where is the target folder build cache stored")
    rejected = [r for t in result.trace for r in t.rejected]
    assert [r.stage for r in rejected if r.clause == OLD] == [Stage.CONFLICT]
    metrics = ApiMetrics(clean_database.connect)
    metrics.record_answer(result)
    assert _sample(metrics, 'citeline_clauses_rejected_total{stage="conflict"} ') == 1.0


def test_an_answer_served_again_from_the_store_counts_as_an_answer_only(
    new_engine: Callable[..., AnswerEngine],
    clean_database: Database,
    embedder: EmbeddingModel,
    conn: Connection,
    repo_dir: Path,
) -> None:
    (repo_dir / "new.md").write_text(f"# Cache\n\n{NEW}\n")
    reconcile_repository(conn, Repository("docs", repo_dir))
    EmbeddingWorker(conn, embedder).drain()
    engine = new_engine(entailment=ContainmentNLI())
    first = engine.answer("where is the build cache stored")
    again = engine.answer("where is the build cache stored")
    assert first.clauses and not first.cached and again.cached
    metrics = ApiMetrics(clean_database.connect)
    metrics.record_answer(first)
    metrics.record_answer(again)
    assert _sample(metrics, 'citeline_answers_total{route="') == 2.0
    assert _sample(metrics, "citeline_clauses_accepted_total") == len(first.clauses)
