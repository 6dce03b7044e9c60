"""Backlog progress people can see: a bar with rate and ETA on a terminal, structured log lines otherwise.

`BacklogProgress` counts what the workers report (`on_batch`) and polls the backlog's size, so the total grows
while a first `citeline watch` is still indexing. It finishes the first time the backlog is empty after
having held work (or when told to), prints a last line and stops polling: an idle daemon prints nothing.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

import structlog

from indexer.embedding_queue import BatchResult

__all__ = ["BacklogProgress"]

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
