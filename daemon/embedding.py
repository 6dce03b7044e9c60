"""The embedder as a service: apscheduler jobs drain the backlog, woken at once by LISTEN/NOTIFY.

Each worker is one interval job with its own connection; the interval is only a safety net (a missed
notification, a lease that ran out), since every insert into the backlog notifies `citeline_backlog` and
the listener wakes all workers. A wake that arrives while a worker is draining sets its flag, so the worker
looks again before it returns: no notification is lost between "backlog empty" and "job done".

`drain_backlog` (`citeline embed --drain`) returns only when the backlog is empty: items leased by another
live worker are waited for, and those of a worker that is gone are taken over at once (see
`indexer.embedding_queue`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import psycopg
import structlog
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler

from daemon.progress import BacklogProgress
from daemon.reconnect import Reconnector
from indexer.embedder import EmbeddingModel, TokenAware, Vectors
from indexer.embedding_queue import (
    BatchResult,
    DrainReport,
    EmbeddingWorker,
    ModelMismatchError,
    QueueOptions,
    pending_items,
)

__all__ = [
    "CHANNEL",
    "SCHEDULER_LOG",
    "EmbedderService",
    "SerializedModel",
    "drain_backlog",
    "embed_scheduler",
]

log = structlog.get_logger(__name__)

CHANNEL = "citeline_backlog"

SCHEDULER_LOG = "daemon.embedding.scheduler"
"""The stdlib logger the embedder's scheduler writes to (not apscheduler's own, which other code may use)."""


class _StillRunning(logging.Filter):
    """apscheduler's "skipped: maximum number of running instances reached" means a worker is still draining
    when its interval comes round again (a long first embed): not a fault. Rewritten as a "still embedding"
    line at debug level, so it reads as what it is and stays off a log at INFO."""

    def filter(self, record: logging.LogRecord) -> bool:
        if "maximum number of running instances reached" not in record.getMessage():
            return True
        record.msg, record.args = "still embedding: a worker's next run is skipped while it drains", ()
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


def embed_scheduler(workers: int) -> BackgroundScheduler:
    """The embedder's scheduler: a thread per worker, one run of a job at a time, and a run skipped while the
    previous one still drains logged at debug level as "still embedding", never as a warning."""
    logger = logging.getLogger(SCHEDULER_LOG)
    if not any(isinstance(f, _StillRunning) for f in logger.filters):
        logger.addFilter(_StillRunning())
    return BackgroundScheduler(
        executors={"default": ThreadPoolExecutor(workers)},
        job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None},
        timezone=UTC,
        logger=logger,
    )


class SerializedModel:
    """One model shared by in-process workers, one encode at a time.

    Hugging Face fast tokenizers refuse concurrent use ("Already borrowed"), and torch already spreads one
    encode over every core; the workers still overlap their database round trips with each other's encodes.
    """

    __slots__ = ("_lock", "_model")

    def __init__(self, model: EmbeddingModel) -> None:
        self._model = model
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self._model.name

    @property
    def dimension(self) -> int:
        return self._model.dimension

    def encode(self, texts: Sequence[str]) -> Vectors:
        with self._lock:
            return self._model.encode(texts)

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        with self._lock:
            if isinstance(self._model, TokenAware):
                return self._model.token_counts(texts)
            return [len(t) // 4 + 2 for t in texts]

    def clip(self, text: str, max_tokens: int) -> str:
        with self._lock:
            if isinstance(self._model, TokenAware):
                return self._model.clip(text, max_tokens)
            return text[: max(0, max_tokens) * 4]


def drain_backlog(
    reconnector: Reconnector,
    model: EmbeddingModel,
    options: QueueOptions,
    workers: int = 1,
    progress: bool = False,
    poll_seconds: float = 0.5,
) -> DrainReport:
    """`citeline embed --drain`: embed with `workers` threads until the backlog is empty, then return.

    When nothing is claimable but items remain (leased by another live worker, or waiting out a retry
    delay), waits and looks again; a dead worker's items are claimable at once. Failed items do not count.
    Returns early only when the reconnector is stopped. `progress` shows a bar or log lines meanwhile.
    """
    shared = SerializedModel(model)
    total = DrainReport()
    tracker: BacklogProgress | None = None
    conn = reconnector.connect()
    if conn is None:
        return total
    with conn:
        if progress:
            tracker = BacklogProgress(lambda: pending_items(conn)[0], label="embedding").start()
        started = time.perf_counter()
        try:
            claimable = 1
            while not reconnector.stop.is_set():
                if claimable:
                    _drain_once(reconnector, shared, options, workers, total, tracker)
                pending, claimable = pending_items(conn)
                if pending == 0:
                    break
                if not claimable:  # all leased to live workers or waiting to be retried
                    waited = time.perf_counter()
                    reconnector.stop.wait(poll_seconds)
                    total.waited_seconds += time.perf_counter() - waited
        finally:
            if tracker is not None:
                tracker.finish()
        total.seconds = time.perf_counter() - started
    return total


def _drain_once(
    reconnector: Reconnector,
    model: SerializedModel,
    options: QueueOptions,
    workers: int,
    total: DrainReport,
    tracker: BacklogProgress | None,
) -> None:
    """One round of `workers` threads draining whatever is claimable; adds their batches to `total`."""
    errors: list[BaseException] = []
    lock = threading.Lock()

    def on_batch(result: BatchResult) -> None:
        with lock:
            total.add(result)
        if tracker is not None:
            tracker.on_batch(result)

    def run() -> None:
        try:
            conn = reconnector.connect()
            if conn is None:
                return
            with conn:
                EmbeddingWorker(conn, model, options).drain(reconnector.stop.is_set, on_batch)
        except BaseException as exc:  # re-raised in the caller's thread below
            errors.append(exc)

    threads = [threading.Thread(target=run, name=f"embed-drain-{i}") for i in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]


class EmbedderService:
    """Scheduled embedder workers plus a LISTEN thread that wakes them."""

    __slots__ = (
        "_busy",
        "_listener",
        "_on_fatal",
        "_progress",
        "_scheduler",
        "_wake_flags",
        "_workers",
        "interval_seconds",
        "model",
        "options",
        "reconnector",
    )

    def __init__(
        self,
        reconnector: Reconnector,
        model: EmbeddingModel,
        options: QueueOptions,
        *,
        workers: int = 1,
        interval_seconds: float = 30.0,
        on_fatal: Callable[[BaseException], None] | None = None,
        progress: bool = False,
    ) -> None:
        """`progress`: show the first drain (a new repository's backlog) as a bar or log lines."""
        self.reconnector = reconnector
        self._progress: BacklogProgress | None = None
        if progress:
            self._progress = BacklogProgress(self._count_pending, label="embedding")
        self.model = SerializedModel(model)
        self.options = options
        self.interval_seconds = interval_seconds
        self._on_fatal = on_fatal
        self._wake_flags = [threading.Event() for _ in range(max(1, workers))]
        self._busy = [False] * len(self._wake_flags)
        self._workers: dict[int, EmbeddingWorker] = {}
        self._scheduler = embed_scheduler(len(self._wake_flags))
        self._listener = threading.Thread(target=self._listen, name="embed-listen", daemon=True)

    def start(self) -> None:
        now = datetime.now(UTC)
        for index in range(len(self._wake_flags)):
            self._scheduler.add_job(
                self._job,
                "interval",
                seconds=self.interval_seconds,
                args=(index,),
                id=f"embed-{index}",
                next_run_time=now,
            )
        self._scheduler.start()
        self._listener.start()
        if self._progress is not None:
            self._progress.start()

    def _count_pending(self) -> int:
        conn = self.reconnector.connect()
        if conn is None:
            return 0
        with conn:
            return pending_items(conn)[0]

    def _on_batch(self, result: BatchResult) -> None:
        if self._progress is not None:
            self._progress.on_batch(result)

    def wake(self) -> None:
        """Run every worker now (or, if it is running, once more before it returns)."""
        now = datetime.now(UTC)
        for index, flag in enumerate(self._wake_flags):
            flag.set()
            if self._busy[index]:  # it checks its flag before returning
                continue
            job = self._scheduler.get_job(f"embed-{index}")
            if job is not None:
                job.modify(next_run_time=now)

    def stop(self) -> None:
        """Let the batches under way finish and write, then close every connection."""
        self.reconnector.stop.set()
        if self._progress is not None:
            self._progress.finish()
        self._scheduler.shutdown(wait=True)
        self._listener.join(timeout=5)
        for worker in self._workers.values():
            worker.conn.close()
        self._workers.clear()

    def _worker(self, index: int) -> EmbeddingWorker | None:
        worker = self._workers.get(index)
        if worker is None or worker.conn.closed:
            conn = self.reconnector.connect()
            if conn is None:
                return None
            worker = self._workers[index] = EmbeddingWorker(conn, self.model, self.options)
        return worker

    def _job(self, index: int) -> None:
        stop = self.reconnector.stop
        flag = self._wake_flags[index]
        self._busy[index] = True
        try:
            while not stop.is_set():
                flag.clear()
                worker = self._worker(index)
                if worker is None:
                    return
                report = worker.drain(stop.is_set, self._on_batch)
                if report.batches:
                    log.info(
                        "embedded",
                        worker=index,
                        sentences=report.embedded,
                        dropped=report.dropped,
                        failed=report.failed,
                        seconds=round(report.seconds, 3),
                    )
                self._busy[index] = False  # before the last look: wake() then reschedules instead
                if not flag.is_set():
                    return
                self._busy[index] = True
        except psycopg.OperationalError as exc:
            log.warning("embedder lost its connection; will reconnect", worker=index, error=str(exc))
            dead = self._workers.pop(index, None)
            if dead is not None:
                dead.conn.close()
        except ModelMismatchError as exc:
            log.error("embedder stopped", worker=index, error=str(exc))
            if self._on_fatal is not None:
                self._on_fatal(exc)
        finally:
            self._busy[index] = False

    def _listen(self) -> None:
        stop = self.reconnector.stop
        while not stop.is_set():
            conn = self.reconnector.connect(autocommit=True)
            if conn is None:
                return
            try:
                with conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    self.wake()  # whatever was enqueued while we were not listening
                    while not stop.is_set():
                        for _ in conn.notifies(timeout=0.5, stop_after=1):
                            self.wake()
            except psycopg.OperationalError as exc:
                log.warning("backlog listener lost its connection; reconnecting", error=str(exc))
