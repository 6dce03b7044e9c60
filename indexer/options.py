"""The indexer's options as the configuration states them: how code blocks are indexed (`[indexing]
code_blocks`) and how an embedder worker claims and retries (`[embedding]`).

They are declared apart from the code that acts on them, so that reading the configuration loads neither the
Markdown parser, numpy nor the database driver; `indexer.markdown` and `indexer.embedding_queue` re-export
them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from indexer.embedding_context import ContextOptions

__all__ = ["CodeMode", "QueueOptions"]


class CodeMode(enum.Enum):
    """Whether code blocks are indexed; code is never split into sentences either way."""

    SKIP = "skip"
    """Drop fenced and indented code, for corpora whose code blocks are noise to their readers."""
    BLOCK = "block"
    """Emit each code block as one CODE unit (the default): a command, a flag or a config snippet is often
    the answer, and the sentence before it ("To reload, send this request:") only points at it."""


@dataclass(frozen=True, slots=True)
class QueueOptions:
    """How a worker claims and retries; a failed item waits `retry_delay_seconds` x attempts to be retried."""

    batch_size: int = 256
    lease_seconds: float = 300.0
    max_attempts: int = 3
    retry_delay_seconds: float = 10.0
    context: ContextOptions = field(default_factory=ContextOptions)
