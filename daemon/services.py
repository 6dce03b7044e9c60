"""Building the daemon's services from the configuration: shared by `watch`, `embed` and `serve`. The models
they run come from `daemon.assembly`.

The embedder runs either as threads of the daemon (`watch`'s default) or, with `[embedding]
separate_process` (`serve`'s default), as a child `citeline embed` at a lower CPU priority: under load the
OS then gives the watcher and the API the cores first, and the child's model and GIL are its own. Under
`serve`, `[watch] separate_process` (on by default) does the same for the watcher (a child `citeline watch
--no-embed`), so indexing never waits for the API's threads to release the GIL.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import structlog

from daemon.assembly import load_embedder
from daemon.config import Config
from daemon.embedding import EmbedderService
from daemon.reconnect import Reconnector
from daemon.watch import Watcher
from indexer.embedding_queue import ContextOptions, PreviousSentence, QueueOptions
from indexer.reconcile import IndexOptions, Repository

__all__ = ["ChildProcess", "embedder_builder", "queue_options", "watcher"]

log = structlog.get_logger(__name__)

_PR_SET_PDEATHSIG = 1
_CHILD_STOP_SECONDS = 60.0


def queue_options(config: Config) -> QueueOptions:
    """The `[embedding]` section as the queue's options."""
    emb = config.embedding
    previous = emb.context_previous
    if emb.context_previous_sentence is not None:
        previous = PreviousSentence.ALWAYS if emb.context_previous_sentence else PreviousSentence.NEVER
    return QueueOptions(
        batch_size=emb.batch_size,
        lease_seconds=emb.lease_seconds,
        max_attempts=emb.max_attempts,
        context=ContextOptions(emb.context_heading, previous, emb.max_context_tokens),
    )


def watcher(config: Config, reconnector: Reconnector, repos: Sequence[Repository]) -> Watcher:
    """The watcher service for `repos`, batching as `[watch]` says."""
    return Watcher(
        reconnector,
        repos,
        IndexOptions(config.indexing.max_file_bytes, config.indexing.code_blocks),
        step_ms=config.watch.step_ms,
        max_batch_ms=config.watch.max_batch_ms,
        full_scan_threshold=config.watch.full_scan_threshold,
    )


def embedder_builder(
    config: Config, reconnector: Reconnector, workers: int | None = None, *, progress: bool = False
) -> Callable[[Callable[[BaseException], None]], EmbedderService]:
    """A factory the runtime calls off the event loop, since loading the model takes seconds; `progress`
    shows the first drain."""

    def build(on_fatal: Callable[[BaseException], None]) -> EmbedderService:
        return EmbedderService(
            reconnector,
            load_embedder(config),
            queue_options(config),
            workers=workers or config.embedding.workers,
            interval_seconds=config.embedding.interval_seconds,
            on_fatal=on_fatal,
            progress=progress,
        )

    return build


class ChildProcess:
    """A daemon part run as a child `citeline` command (`embed`, `watch --no-embed`), stopped with the daemon.

    The child gets SIGTERM when the daemon stops (it finishes the transaction or batch it is in, as the
    command does on its own) and, on Linux, when the daemon dies without stopping it (a parent-death
    signal), so it never outlives it. A child that exits on its own stops the daemon with an error, as a
    failed service thread does. `nice` lowers the child's CPU priority; `env` adds to the daemon's
    environment.
    """

    __slots__ = ("_command", "_env", "_name", "_nice")

    def __init__(
        self,
        name: str,
        arguments: Sequence[str],
        config_path: Path | None,
        nice: int = 0,
        env: Mapping[str, str] | None = None,
    ) -> None:
        config = ["--config", str(config_path)] if config_path is not None else []
        self._command = [sys.executable, "-m", "daemon.cli", *config, *arguments]
        self._name = name
        self._nice = nice
        self._env = dict(env or {})

    @property
    def name(self) -> str:
        return self._name

    def _in_child(self) -> None:
        os.nice(self._nice)
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)

    async def run(self, stop: asyncio.Event, ready: Callable[[], None]) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC")}
        env.update(self._env)
        child = await asyncio.create_subprocess_exec(*self._command, env=env, preexec_fn=self._in_child)
        log.info("child process started", service=self._name, pid=child.pid, nice=self._nice)
        ready()
        exited = asyncio.ensure_future(child.wait())
        stopped = asyncio.ensure_future(stop.wait())
        try:
            await asyncio.wait([exited, stopped], return_when=asyncio.FIRST_COMPLETED)
            if exited.done() and not stop.is_set():
                raise RuntimeError(f"the {self._name} process exited with status {exited.result()}")
        finally:
            stopped.cancel()
            if child.returncode is None:
                child.send_signal(signal.SIGTERM)
                try:
                    await asyncio.wait_for(asyncio.shield(exited), _CHILD_STOP_SECONDS)
                except TimeoutError:
                    child.kill()
                    await exited
