"""The embedding backlog against a real PostgreSQL, with a deterministic fake model built here.

The fake model (a hash of the text spread over a few dimensions) stands in for a real encoder: what is under
test is the queue's claiming, leasing, writing and failure rules, not embedding quality.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pytest

from indexer.database import Connection, Database
from indexer.embedder import Vectors
from indexer.embedding_queue import (
    ContextOptions,
    EmbeddingWorker,
    ModelMismatchError,
    PreviousSentence,
    QueueOptions,
    contextual_text,
)
from indexer.reconcile import Repository, reconcile_repository


class FakeModel:
    """Deterministic unit vectors; records every text it encodes; optional hook and failure rule."""

    def __init__(self, name: str = "fake", dimension: int = 8, delay: float = 0.0) -> None:
        self.name = name
        self.dimension = dimension
        self.delay = delay
        self.seen: list[str] = []
        self.hook: Callable[[], None] | None = None
        self.poison = ""
        self.lock = threading.Lock()

    def encode(self, texts: Sequence[str]) -> Vectors:
        if self.hook is not None:
            self.hook()
        if self.poison and any(self.poison in t for t in texts):
            raise ValueError("poisoned input")
        time.sleep(self.delay)
        with self.lock:
            self.seen.extend(texts)
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest()[: self.dimension], np.uint8) for t in texts]
        vectors = np.asarray(rows, dtype=np.float32) + 1.0
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _write_docs(root: Path, files: int, sentences: int, tag: str = "") -> None:
    for f in range(files):
        body = " ".join(
            f"Sentence {tag}{f} number {s} talks about topic {s * 7 + f}." for s in range(sentences)
        )
        (root / f"doc{f}.md").write_text(f"# Doc {f}\n\n## Part\n\n{body}\n", encoding="utf-8")


def _counts(conn: Connection) -> tuple[int, int, int]:
    row = conn.execute(
        "SELECT (SELECT count(*) FROM sentences), (SELECT count(*) FROM sentence_embeddings),"
        " (SELECT count(*) FROM embedding_backlog)"
    ).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


def test_contextual_text_carries_the_heading_and_the_previous_sentence_only_for_a_dependent_one() -> None:
    dependent = contextual_text(
        "It runs.", ["Build", "Stage 0"], "Guide", "Stage 0 is old.", ContextOptions()
    )
    assert dependent == "Build > Stage 0:\nStage 0 is old.\nIt runs."
    standalone = contextual_text("Tests run.", ["Build"], "Guide", "Stage 0 is old.", ContextOptions())
    assert standalone == "Build:\nTests run."
    introduced = contextual_text("cargo test", ["Build"], None, "Run this:", ContextOptions())
    assert introduced == "Build:\nRun this:\ncargo test"
    always = ContextOptions(previous=PreviousSentence.ALWAYS)
    assert contextual_text("Tests run.", ["Build"], None, "Old.", always) == "Build:\nOld.\nTests run."
    bare = ContextOptions(heading=False, previous=PreviousSentence.NEVER)
    assert contextual_text("It runs.", ["Build"], "Guide", "x", bare) == "It runs."
    assert contextual_text("It runs.", [], "Guide", None, ContextOptions()) == "Guide:\nIt runs."


def test_the_context_is_capped_in_tokens_and_the_sentence_never_cut() -> None:
    def words(text: str, n: int) -> str:  # one token a word
        return " ".join(text.split(" ")[:n])

    long_heading = ["word " * 100]
    capped = contextual_text("It runs fine.", long_heading, None, "Before.", ContextOptions(), words)
    context, sentence = capped.rsplit("\n", 1)
    assert len(context.split()) == 64 and sentence == "It runs fine."


def test_a_context_shorter_in_bytes_than_the_cap_is_not_tokenized_and_a_longer_one_is() -> None:
    clipped: list[str] = []

    def one_token_a_char(text: str, n: int) -> str:  # like byte-level BPE on this script: a token a character
        clipped.append(text)
        return text[:n]

    cap = ContextOptions(max_context_tokens=16)
    assert contextual_text("It runs.", ["Build"], None, None, cap, one_token_a_char) == "Build:\nIt runs."
    assert clipped == []  # 6 bytes: at most 6 tokens, whatever the tokenizer
    eight_chars = ["\u8fd0\u884c\u6d4b\u8bd5\u6784\u5efa\u7f13\u5b58"]  # 8 characters, 24 bytes
    assert len(eight_chars[0]) + 1 < 16 < len((eight_chars[0] + ":").encode("utf-8"))
    contextual_text("It runs.", eight_chars, None, None, cap, one_token_a_char)
    assert clipped == [eight_chars[0] + ":"]


def test_drain_embeds_everything_and_keeps_the_text(conn: Connection, repo_dir: Path) -> None:
    _write_docs(repo_dir, 3, 5)
    reconcile_repository(conn, Repository("docs", repo_dir))
    model = FakeModel()
    report = EmbeddingWorker(conn, model, QueueOptions(batch_size=4)).drain()
    total, vectors, backlog = _counts(conn)
    assert (report.embedded, vectors, backlog) == (total, total, 0)
    assert all(t.startswith("Doc ") for t in model.seen)  # the heading path leads the embedded text
    stored = conn.execute("SELECT text FROM sentences WHERE text LIKE 'Sentence %' LIMIT 1").fetchone()
    assert stored is not None and "\n" not in stored[0]


def test_two_workers_drain_one_backlog_without_overlap(clean_database: Database, repo_dir: Path) -> None:
    _write_docs(repo_dir, 8, 20)
    with clean_database.connect() as conn:
        reconcile_repository(conn, Repository("docs", repo_dir))
        total = _counts(conn)[0]
    models = [FakeModel(delay=0.002), FakeModel(delay=0.002)]
    results = []

    def work(model: FakeModel) -> None:
        with clean_database.connect() as wconn:
            results.append(EmbeddingWorker(wconn, model, QueueOptions(batch_size=7)).drain())

    threads = [threading.Thread(target=work, args=(m,)) for m in models]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    first, second = (set(m.seen) for m in models)
    assert first and second, "both workers took part"
    assert not first & second
    assert len(models[0].seen) + len(models[1].seen) == total
    with clean_database.connect() as conn:
        assert _counts(conn) == (total, total, 0)


_STUCK_WORKER = """
import sys, time
from indexer.database import Database
from indexer.embedding_queue import EmbeddingWorker, QueueOptions
class Stuck:
    name, dimension = "fake", 8
    def encode(self, texts):
        print("claimed", len(texts), flush=True)
        time.sleep(600)  # until killed
with Database(sys.argv[1]).connect() as conn:
    EmbeddingWorker(conn, Stuck(), QueueOptions(batch_size=10, lease_seconds=float(sys.argv[2]))).drain()
"""


def kill_a_worker_holding_a_claim(database: Database, lease_seconds: float) -> None:
    """Start a worker process, wait until it holds a lease of `lease_seconds` on 10 items (its model hangs
    meanwhile), and SIGKILL it."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _STUCK_WORKER, database.url, str(lease_seconds)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])},
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("claimed 10")
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)


def test_killing_a_worker_mid_batch_loses_nothing(clean_database: Database, repo_dir: Path) -> None:
    _write_docs(repo_dir, 2, 10)
    with clean_database.connect() as conn:
        reconcile_repository(conn, Repository("docs", repo_dir))
        total = _counts(conn)[0]
        EmbeddingWorker(conn, FakeModel(), QueueOptions())  # records the fake model first
    kill_a_worker_holding_a_claim(clean_database, lease_seconds=1.0)
    with clean_database.connect() as conn:
        claimed = conn.execute(
            "SELECT count(*) FROM embedding_backlog WHERE claimed_by IS NOT NULL"
        ).fetchone()
        assert claimed == (10,)
        assert _counts(conn) == (total, 0, total)
        time.sleep(1.1)  # the dead worker's lease runs out
        report = EmbeddingWorker(conn, FakeModel(), QueueOptions()).drain()
        assert report.embedded == total
        assert _counts(conn) == (total, total, 0)


def test_a_sentence_deleted_while_embedding_is_dropped(conn: Connection, repo_dir: Path) -> None:
    _write_docs(repo_dir, 2, 3)
    reconcile_repository(conn, Repository("docs", repo_dir))
    model = FakeModel()
    other = Database(str(conn.info.dsn))

    def delete_doc0() -> None:
        model.hook = None
        (repo_dir / "doc0.md").unlink()
        with other.connect() as oconn:
            reconcile_repository(oconn, Repository("docs", repo_dir))

    model.hook = delete_doc0
    report = EmbeddingWorker(conn, model, QueueOptions(batch_size=100)).drain()
    total, vectors, backlog = _counts(conn)
    assert report.dropped > 0 and report.failed == 0
    assert (vectors, backlog) == (total, 0)


def test_a_failing_sentence_is_marked_failed_and_stops_blocking(conn: Connection, repo_dir: Path) -> None:
    (repo_dir / "a.md").write_text("# A\n\nGood one here. A poison pill sits here. Another good one.\n")
    reconcile_repository(conn, Repository("docs", repo_dir))
    model = FakeModel()
    model.poison = "poison"
    options = QueueOptions(
        max_attempts=2, retry_delay_seconds=0.2, context=ContextOptions(previous=PreviousSentence.NEVER)
    )
    worker = EmbeddingWorker(conn, model, options)
    first = worker.drain()
    assert first.embedded == 3 and first.failed == 1  # the heading is a unit too
    failed = conn.execute("SELECT attempts, last_error, failed_at FROM embedding_backlog").fetchall()
    assert (
        len(failed) == 1 and failed[0][0] == 1 and "poisoned input" in failed[0][1] and failed[0][2] is None
    )
    assert worker.run_batch().claimed == 0  # not retried before its delay
    time.sleep(0.25)
    worker.drain()
    row = conn.execute("SELECT attempts, failed_at FROM embedding_backlog").fetchone()
    assert row is not None and row[0] == 2 and row[1] is not None
    assert worker.run_batch().claimed == 0  # failed items no longer claimable


def test_changing_the_model_reenqueues_everything(conn: Connection, repo_dir: Path) -> None:
    _write_docs(repo_dir, 2, 4)
    reconcile_repository(conn, Repository("docs", repo_dir))
    old = EmbeddingWorker(conn, FakeModel("fake-a", 8), QueueOptions())
    old.drain()
    total = _counts(conn)[0]
    EmbeddingWorker(conn, FakeModel("fake-b", 4), QueueOptions())
    assert _counts(conn) == (total, 0, total)
    assert conn.execute("SELECT name, dimension FROM embedding_model").fetchone() == ("fake-b", 4)
    with pytest.raises(ModelMismatchError):
        old.run_batch()
    assert _counts(conn) == (total, 0, total)  # the old worker's claim was released, nothing written


def _lose_every_lease(conn: Connection, attempts: int) -> None:
    """Every backlog item as if a worker holding it had died `attempts` times: leased, lease over."""
    conn.execute(
        "UPDATE embedding_backlog SET claimed_by = gen_random_uuid(), claimed_until = now() - interval '1 s',"
        " claimed_worker = NULL, attempts = %s",
        (attempts,),
    )


def test_an_item_on_its_last_attempt_after_a_lost_lease_is_claimed_alone(
    conn: Connection, repo_dir: Path
) -> None:
    _write_docs(repo_dir, 1, 6)
    reconcile_repository(conn, Repository("docs", repo_dir))
    total = _counts(conn)[0]
    worker = EmbeddingWorker(conn, FakeModel(), QueueOptions(max_attempts=3))
    _lose_every_lease(conn, attempts=2)  # the next claim is the last: one at a time
    first = worker.run_batch()
    assert (first.claimed, first.embedded, first.reclaimed) == (1, 1, 1)
    _lose_every_lease(conn, attempts=1)  # one lost lease: the rest are still claimed as one batch
    rest = worker.run_batch()
    assert (rest.claimed, rest.embedded, rest.failed) == (total - 1, total - 1, 0)
    assert _counts(conn) == (total, total, 0)


def test_a_worker_dying_on_a_lone_last_attempt_fails_only_that_item(conn: Connection, repo_dir: Path) -> None:
    _write_docs(repo_dir, 1, 6)
    reconcile_repository(conn, Repository("docs", repo_dir))
    total = _counts(conn)[0]
    model = FakeModel()
    worker = EmbeddingWorker(conn, model, QueueOptions(max_attempts=3))
    _lose_every_lease(conn, attempts=2)  # a batch whose worker was killed twice

    def die() -> None:  # the worker dies while it encodes: nothing is written, the lease stays
        model.hook = None
        raise SystemExit("killed")

    model.hook = die
    with pytest.raises(SystemExit):
        worker.run_batch()
    conn.execute("UPDATE embedding_backlog SET claimed_until = now() - interval '1 s' WHERE attempts = 3")
    report = worker.drain()
    row = conn.execute(
        "SELECT count(*), min(last_error) FROM embedding_backlog WHERE failed_at IS NOT NULL"
    ).fetchone()
    assert row is not None and row[0] == 1 and "lost its lease 3 times" in row[1]
    assert report.embedded == total - 1 and report.failed == 0
    assert _counts(conn) == (total, total - 1, 1)
