"""An answer no clause could be verified for still helps: its closest passages, each with why it was refused,
and warnings that say why the index may not hold the answer yet (un-embedded sentences, files changed on
disk since indexed). Through the real engine (lexical lane, scripted NLI) on a real PostgreSQL."""

from __future__ import annotations

import os
from pathlib import Path

from engine.answers import Answer
from engine.caveats import WARNING
from engine.controller import AnswerEngine, EngineConfig
from engine.nearest import NEAREST
from engine.search import Filters, Retriever
from engine.verdicts import VerifyConfig
from indexer.database import Connection, Database
from indexer.reconcile import Repository, reconcile_repository
from indexer.staleness import changed_on_disk, unembedded_in_scope
from tests.api_support import ContainmentNLI

DOC = (
    "# Server options\n\n## server.port\n\n"
    "Specify server port. Note if the port is already being used, Vite will try the next port.\n\n"
    "## server.host\n\nSpecify which IP addresses the server should listen on.\n"
)


def _engine(database: Database, retriever: Retriever, threshold: float, **kwargs: bool) -> AnswerEngine:
    config = EngineConfig(verify=VerifyConfig(threshold=threshold), store=False)
    return AnswerEngine(
        database, retriever, None, entailment=ContainmentNLI(), config=config, pool=retriever.pool, **kwargs
    )


def _index(conn: Connection, repo_dir: Path) -> Repository:
    (repo_dir / "server.md").write_text(DOC)
    repo = Repository("docs", repo_dir)
    reconcile_repository(conn, repo)
    return repo


def test_an_insufficient_answer_lists_its_closest_passages_with_why_each_was_refused(
    conn: Connection, repo_dir: Path, clean_database: Database, lexical_retriever: Retriever
) -> None:
    _index(conn, repo_dir)
    # Without an embedder the similarity stage scores 0, so no composite reaches 0.95: every pick is refused.
    engine = _engine(clean_database, lexical_retriever, 0.95)
    result = engine.answer("How do I change the port of the server?")
    assert result.status.value == "insufficient" and not result.clauses
    body = result.to_dict()
    nearest = body["nearest"]
    assert 1 <= len(nearest) <= 10
    texts = [n["text"] for n in nearest]
    assert any(t.startswith("Specify server port.") for t in texts)
    assert len(set(texts)) == len(texts)
    refused = [n for n in nearest if n["stage"] is not None]
    assert refused, "the planner's refused picks are among the nearest"
    for near in refused:
        assert near["stage"] == "composite" and near["measure"] == "composite"
        assert near["score"] < near["threshold"] == 0.95
        assert near["reason"].startswith("composite ")
    for near in nearest:
        assert near["path"] == "server.md" and near["line_start"] >= 1
        assert near["heading"].startswith("Server options")
    again = Answer.from_dict(body)  # what the answer store reads back
    assert [n.to_dict() for n in again.nearest] == nearest


def test_an_answer_with_a_verified_clause_carries_no_nearest(
    conn: Connection, repo_dir: Path, clean_database: Database, lexical_retriever: Retriever
) -> None:
    _index(conn, repo_dir)
    result = _engine(clean_database, lexical_retriever, 0.5).answer("How do I change the port of the server?")
    assert result.status.value == "answer" and result.clauses
    assert result.nearest == [] and "nearest" not in result.to_dict()


def test_un_embedded_sentences_in_scope_are_a_warning_with_how_to_drain_them(
    conn: Connection, repo_dir: Path, clean_database: Database, lexical_retriever: Retriever
) -> None:
    _index(conn, repo_dir)
    pending = unembedded_in_scope(conn)
    assert pending > 0
    assert unembedded_in_scope(conn, ("other",)) == 0
    assert unembedded_in_scope(conn, ("docs",)) == pending, "unscoped = all repositories"
    assert unembedded_in_scope(conn, None, "nowhere/") == 0
    result = _engine(clean_database, lexical_retriever, 0.5).answer("Which port does the server use?")
    warnings = [n for n in result.notes if n.startswith(WARNING)]
    assert warnings == [
        f"{WARNING}{pending} sentences are not yet searchable by meaning; "
        "`citeline embed --drain` embeds them now (a running `citeline serve` does it on its own)"
    ]
    scoped = _engine(clean_database, lexical_retriever, 0.5).answer(
        "Which port does the server use?", filters=Filters(("other",))
    )
    assert not [n for n in scoped.notes if n.startswith(WARNING)]
    conn.execute("DELETE FROM embedding_backlog")
    drained = _engine(clean_database, lexical_retriever, 0.5).answer("Which port does the server use?")
    assert not [n for n in drained.notes if n.startswith(WARNING)]


def test_files_changed_on_disk_since_indexed_are_counted_when_no_watcher_runs(
    conn: Connection, repo_dir: Path, clean_database: Database, lexical_retriever: Retriever
) -> None:
    repo = _index(conn, repo_dir)
    (repo_dir / "other.md").write_text("# Other\n\nAnother page.\n")
    reconcile_repository(conn, repo)
    conn.execute("DELETE FROM embedding_backlog")
    assert changed_on_disk(conn) == 0
    (repo_dir / "server.md").write_text(DOC.replace("next port", "next free port"))
    os.utime(repo_dir / "other.md", ns=(1, 1))
    assert changed_on_disk(conn) == 2
    assert changed_on_disk(conn, None, "other") == 1
    watched = _engine(clean_database, lexical_retriever, 0.5).answer("Which port does the server use?")
    assert not [n for n in watched.notes if n.startswith(WARNING)]
    unwatched = _engine(clean_database, lexical_retriever, 0.5, compare_disk=True)
    notes = [n for n in unwatched.answer("Which port does the server use?").notes if n.startswith(WARNING)]
    assert notes == [
        f"{WARNING}2 indexed files have changed on disk since indexed; "
        "`citeline index` catches up (a running `citeline serve` or `watch` does it on its own)"
    ]
    (repo_dir / "other.md").unlink()
    reconcile_repository(conn, repo)
    assert changed_on_disk(conn) == 0


def test_the_question_s_own_retrieval_leads_the_nearest_even_beyond_what_a_round_holds(
    conn: Connection, repo_dir: Path, clean_database: Database, lexical_retriever: Retriever
) -> None:
    (repo_dir / "ports.md").write_text(
        "# Ports\n\n"
        + "".join(f"The server port {n} is one choice among the ports listed here.\n\n" for n in range(8))
    )
    reconcile_repository(conn, Repository("docs", repo_dir))
    config = EngineConfig(verify=VerifyConfig(threshold=0.95), store=False, hits_per_subquery=2)
    engine = AnswerEngine(
        clean_database,
        lexical_retriever,
        None,
        entailment=ContainmentNLI(),
        config=config,
        pool=lexical_retriever.pool,
    )
    question = "Which server port should I choose?"
    first = [h.sentence_id for h in lexical_retriever.search(question, 10) if h.kind != "heading"]
    result = engine.answer(question)
    assert result.status.value == "insufficient"
    shown = [n.hit.sentence_id for n in result.nearest]
    assert len(first) == 8 > NEAREST > config.hits_per_subquery
    assert shown == first, "the whole first retrieval, in its order when no model rates it"
