"""Backlog progress people can see: a bar with rate and ETA on a terminal, structured log lines otherwise.

`BacklogProgress` counts what the workers report (`on_batch`) and polls the backlog's size, so the total grows
while a first `citeline watch` is still indexing. It finishes the first time the backlog is empty after
having held work (or when told to), prints a last line and stops polling: an idle daemon prints nothing.
Its last line and `drain_summary` (what `citeline embed --drain` prints) both count the backlog when the
drain ended, so they agree.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

import structlog

from indexer.embedding_queue import BatchResult, DrainReport

__all__ = ["BacklogProgress", "drain_summary"]

log = structlog.get_logger(__name__)


class BacklogProgress:
    """Progress of one drain; thread-safe `on_batch`, one polling thread between `start` and `finish`."""

    __slots__ = (
        "_bar",
        "_count",
        "_done",
        "_finished",
        "_lock",
        "_pending",
        "_started",
        "_stream",
        "_thread",
        "idle_seconds",
        "interval_seconds",
        "label",
    )

    def __init__(
        self,
        count_pending: Callable[[], int],
        *,
        label: str = "embedding",
        stream: TextIO | None = None,
        interval_seconds: float | None = None,
        idle_seconds: float = 60.0,
    ) -> None:
        """`count_pending` returns the backlog's size (it may raise; a failed poll is skipped); with no work
        seen within `idle_seconds`, it finishes quietly."""
        self.idle_seconds = idle_seconds
        self._count = count_pending
        self._stream = stream or sys.stderr
        self.label = label
        tty = self._stream.isatty()
        self.interval_seconds = interval_seconds or (0.5 if tty else 10.0)
        self._bar: Any = None
        if tty:
            from tqdm import tqdm

            self._bar = tqdm(total=0, desc=label, unit="sentence", file=self._stream, dynamic_ncols=True)
        self._lock = threading.Lock()
        self._done = 0
        self._pending = 0
        self._started = time.monotonic()
        self._finished = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="embed-progress", daemon=True)

    @property
    def done(self) -> int:
        """Sentences embedded (or confirmed unchanged) so far."""
        return self._done

    def start(self) -> BacklogProgress:
        """Start polling the backlog; returns self."""
        self._thread.start()
        return self

    def on_batch(self, result: BatchResult) -> None:
        """Count one batch a worker wrote (ignored once finished)."""
        if self._finished.is_set():
            return
        with self._lock:
            self._done += result.embedded + result.unchanged
            if self._bar is not None:
                self._bar.update(result.embedded + result.unchanged)

    def finish(self) -> None:
        """Stop polling, print the last figures, close the bar."""
        if self._finished.is_set():
            return
        self._finished.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)
        try:  # the last line states the backlog as it is now, not at the last poll
            pending = self._count()
        except Exception:  # a lost connection: the last poll's figure stands
            pending = self._pending
        with self._lock:
            self._pending = pending
        self._show(final=True)
        if self._bar is not None:
            self._bar.close()

    def _show(self, *, final: bool = False) -> None:
        if final and self._done == 0:
            return
        with self._lock:
            done, pending = self._done, self._pending
            if self._bar is not None:
                self._bar.total = done + pending
                self._bar.refresh()
                return
        elapsed = max(time.monotonic() - self._started, 1e-9)
        rate = done / elapsed
        log.info(
            f"{self.label} finished" if final else self.label,
            embedded=done,
            backlog=pending,
            per_second=round(rate, 1),
            eta_seconds=round(pending / rate) if rate > 0 and pending else None,
        )

    def _poll(self) -> None:
        held_work = False
        idle_until = time.monotonic() + self.idle_seconds
        while not self._finished.wait(self.interval_seconds):
            try:
                pending = self._count()
            except Exception:  # a lost connection: the next poll tries again
                continue
            with self._lock:
                self._pending = pending
            held_work = held_work or pending > 0 or self._done > 0
            if (held_work and pending == 0) or (not held_work and time.monotonic() > idle_until):
                break
            if held_work:
                self._show()
        self.finish()


def drain_summary(report: DrainReport, backlog: int, *, as_json: bool) -> str:
    """`citeline embed --drain`'s report, with `backlog` the items left once it ended (failed ones aside):
    JSON (`"backlog"` beside the report's figures) or one line for a person."""
    if as_json:
        return json.dumps(
            {**{name: getattr(report, name) for name in report.__slots__}, "backlog": backlog}, indent=2
        )
    rate = report.embedded / report.seconds if report.seconds else 0.0
    notes = [f"dropped {report.dropped}, failed {report.failed}"]
    if report.unchanged:
        notes.append(f"{report.unchanged} re-enqueued with their embedded text unchanged")
    if report.reclaimed:
        notes.append(f"took over {report.reclaimed} items leased by workers that are gone")
    if report.waited_seconds >= 0.05:
        notes.append(f"waited {report.waited_seconds:.1f}s for items leased by other workers")
    notes.append("backlog empty" if backlog == 0 else f"backlog {backlog} left")
    return f"embedded {report.embedded} sentences in {report.seconds:.1f}s ({rate:.0f}/s), " + "; ".join(
        notes
    )
