"""How an embedder worker claims and retries (`[embedding]`), declared apart from the worker so that reading
the configuration loads neither numpy nor the database driver; `indexer.embedding_queue` re-exports it."""

from __future__ import annotations

from dataclasses import dataclass, field

from indexer.embedding_context import ContextOptions

__all__ = ["QueueOptions"]


@dataclass(frozen=True, slots=True)
class QueueOptions:
    """How a worker claims and retries; a failed item waits `retry_delay_seconds` x attempts to be retried."""

    batch_size: int = 256
    lease_seconds: float = 300.0
    max_attempts: int = 3
    retry_delay_seconds: float = 10.0
    context: ContextOptions = field(default_factory=ContextOptions)
