"""Building the daemon's parts from the configuration: shared by `watch`, `embed` and, later, `serve`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from daemon.config import Config
from daemon.embedding import EmbedderService
from daemon.models import load_embedder
from daemon.reconnect import Reconnector
from daemon.watch import Watcher
from indexer.embedding_queue import ContextOptions, PreviousSentence, QueueOptions
from indexer.reconcile import IndexOptions, Repository

__all__ = ["embedder_builder", "queue_options", "watcher"]


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
