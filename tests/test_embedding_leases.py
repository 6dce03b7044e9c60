"""Leases that name a live worker, a drain that drains, and vectors that follow their embedded text.

Against a real PostgreSQL; the fake model of tests/test_embedding_queue.py stands in for an encoder (what is
under test is the queue's bookkeeping, not embedding quality), and a killed worker is a real process killed
with SIGKILL while it holds a claim.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from daemon.embedding import drain_backlog
from daemon.reconnect import Reconnector
from indexer.database import Connection, Database
from indexer.embedding_context import text_hash
from indexer.embedding_queue import (
    ContextOptions,
    EmbeddingWorker,
    PreviousSentence,
    QueueOptions,
    contextual_text,
)
from indexer.reconcile import Repository, reconcile_repository
from tests.test_embedding_queue import FakeModel, kill_a_worker_holding_a_claim


def _write(root: Path, files: int, sentences: int) -> None:
    for f in range(files):
        body = " ".join(f"Item {f} number {s} covers topic {s * 7 + f}." for s in range(sentences))
        (root / f"doc{f}.md").write_text(f"# Doc {f}\n\n{body}\n", encoding="utf-8")


def _index_for_the_fake_model(database: Database, root: Path, files: int, sentences: int) -> None:
    """Write and index the documents, and record the fake model, so that a worker process can claim."""
    _write(root, files, sentences)
    with database.connect() as conn:
        reconcile_repository(conn, Repository("docs", root))
        EmbeddingWorker(conn, FakeModel(), QueueOptions())  # records the fake model first


def _backlog(conn: Connection) -> int:
    row = conn.execute("SELECT count(*) FROM embedding_backlog").fetchone()
    assert row is not None
    return int(row[0])


def test_drain_takes_over_the_items_of_a_killed_worker_and_ends_with_an_empty_backlog(
    clean_database: Database, repo_dir: Path
) -> None:
    _index_for_the_fake_model(clean_database, repo_dir, 2, 10)
    kill_a_worker_holding_a_claim(clean_database, lease_seconds=300.0)
    with clean_database.connect() as conn:
        leased = conn.execute("SELECT count(*) FROM embedding_backlog WHERE claimed_until > now()").fetchone()
        assert leased == (10,), "the dead worker's lease has not run out"
    report = drain_backlog(Reconnector(clean_database, threading.Event()), FakeModel(), QueueOptions())
    assert report.reclaimed == 10
    with clean_database.connect() as conn:
        assert _backlog(conn) == 0


def test_drain_waits_for_items_a_live_worker_holds(clean_database: Database, repo_dir: Path) -> None:
    _write(repo_dir, 1, 6)
    with clean_database.connect() as conn:
        reconcile_repository(conn, Repository("docs", repo_dir))
    release = threading.Event()
    holder = FakeModel()
    claimed = threading.Event()

    def hold() -> None:
        claimed.set()
        release.wait(30)

    holder.hook = hold

    def live_worker() -> None:
        with clean_database.connect() as conn:
            EmbeddingWorker(conn, holder, QueueOptions(batch_size=100)).run_batch()

    thread = threading.Thread(target=live_worker)
    thread.start()
    assert claimed.wait(30)
    drained: list[int] = []
    draining = threading.Thread(
        target=lambda: drained.append(
            drain_backlog(
                Reconnector(clean_database, threading.Event()), FakeModel(), QueueOptions(), poll_seconds=0.05
            ).embedded
        )
    )
    draining.start()
    draining.join(0.5)
    assert draining.is_alive(), "the drain waits while a live worker holds every item"
    release.set()
    thread.join(30)
    draining.join(30)
    assert drained == [0]
    with clean_database.connect() as conn:
        assert _backlog(conn) == 0


def test_two_workers_and_a_killed_one_embed_every_sentence_exactly_once(
    clean_database: Database, repo_dir: Path
) -> None:
    _index_for_the_fake_model(clean_database, repo_dir, 6, 20)
    with clean_database.connect() as conn:
        total = int(conn.execute("SELECT count(*) FROM sentences").fetchone()[0])  # type: ignore[index]
    kill_a_worker_holding_a_claim(clean_database, lease_seconds=300.0)
    models = [FakeModel(delay=0.002), FakeModel(delay=0.002)]

    def work(model: FakeModel) -> None:
        with clean_database.connect() as wconn:
            EmbeddingWorker(wconn, model, QueueOptions(batch_size=7)).drain()

    threads = [threading.Thread(target=work, args=(m,)) for m in models]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seen = models[0].seen + models[1].seen
    assert len(seen) == len(set(seen)) == total, "every sentence encoded once, by one live worker"
    with clean_database.connect() as conn:
        assert _backlog(conn) == 0
        assert conn.execute("SELECT count(*) FROM sentence_embeddings").fetchone() == (total,)


def _vector_of(conn: Connection, text: str) -> tuple[bytes, np.ndarray]:
    conn_row = conn.execute(
        "SELECT e.text_hash, e.embedding::text FROM sentence_embeddings e JOIN sentences s"
        " ON s.id = e.sentence_id WHERE s.text = %s",
        (text,),
    ).fetchone()
    assert conn_row is not None
    return bytes(conn_row[0]), np.asarray([float(x) for x in conn_row[1].strip("[]").split(",")])


def test_a_sentence_whose_embedded_text_changed_is_embedded_again(conn: Connection, repo_dir: Path) -> None:
    page = repo_dir / "a.md"
    page.write_text("# Cache\n\nThe cache lives in build. It is wiped by clean. Tests run nightly.\n")
    reconcile_repository(conn, Repository("docs", repo_dir))
    model = FakeModel()
    options = QueueOptions(context=ContextOptions(previous=PreviousSentence.DEPENDENT))
    worker = EmbeddingWorker(conn, model, options)
    worker.drain()
    before_hash, before = _vector_of(conn, "It is wiped by clean.")

    page.write_text("# Cache\n\nThe cache lives in target. It is wiped by clean. Tests run nightly.\n")
    reconcile_repository(conn, Repository("docs", repo_dir))
    model.seen.clear()
    report = worker.drain()
    after_hash, after = _vector_of(conn, "It is wiped by clean.")
    expected = contextual_text(
        "It is wiped by clean.", [], "Cache", "The cache lives in target.", options.context
    )
    assert after_hash == text_hash(expected) != before_hash
    assert not np.allclose(before, after)
    assert report.embedded == 2 and report.unchanged == 0  # the new sentence and the one that depends on it
    assert _backlog(conn) == 0

    page.write_text("# Cache\n\nThe cache lives in target. It is wiped by make clean. Tests run nightly.\n")
    reconcile_repository(conn, Repository("docs", repo_dir))
    model.seen.clear()
    report = worker.drain()
    assert report.unchanged == 1, "the sentence after the edit was re-enqueued and its text compared"
    assert not any("Tests run nightly." in t for t in model.seen), "its embedded text did not change"
    assert _backlog(conn) == 0


def test_changing_the_context_policy_reembeds_only_the_texts_it_changes(
    conn: Connection, repo_dir: Path
) -> None:
    (repo_dir / "a.md").write_text("# Cache\n\nThe cache lives in build. It is wiped. Tests run nightly.\n")
    reconcile_repository(conn, Repository("docs", repo_dir))
    always = QueueOptions(context=ContextOptions(previous=PreviousSentence.ALWAYS))
    EmbeddingWorker(conn, FakeModel(), always).drain()
    model = FakeModel()
    report = EmbeddingWorker(conn, model, QueueOptions()).drain()  # the default: dependent sentences only
    # The heading is a unit too: under "always" it was the first sentence's previous one.
    assert sorted(model.seen) == ["Cache:\nTests run nightly.", "Cache:\nThe cache lives in build."]
    assert report.unchanged == 2 and _backlog(conn) == 0  # the heading and the dependent "It is wiped."
