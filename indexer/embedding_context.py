"""What is embedded for a sentence: the sentence, under its heading path, with the sentence before it only
when it depends on it; the stored sentence text is never changed.

The previous sentence is context only for a dependent sentence, one that opens with a pronoun that points
back ("This", "It", "These", "Such", ...) or follows a sentence ending with a colon. Given to every sentence,
the previous one's meaning leaks into the next vector, and a paraphrase of a sentence then ranks the sentence
after it first. The context (heading path, then previous sentence) is capped in tokens, so a long heading or
neighbour never pushes the sentence itself past the model's input length.
"""

from __future__ import annotations

import enum
import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = [
    "ContextOptions",
    "PreviousSentence",
    "context_signature",
    "contextual_text",
    "is_dependent",
    "text_hash",
]

Clip = Callable[[str, int], str]
"""Cuts a text to at most N tokens (the model's tokenizer); the default counts four characters a token."""


class PreviousSentence(enum.Enum):
    """When the sentence before is embedded with a sentence."""

    NEVER = "never"
    DEPENDENT = "dependent"
    """Only when the sentence opens with a back-pointing word or the previous one ends with a colon."""
    ALWAYS = "always"


@dataclass(frozen=True, slots=True)
class ContextOptions:
    """What is embedded with a sentence, and the context's length cap in tokens."""

    heading: bool = True
    previous: PreviousSentence = PreviousSentence.DEPENDENT
    max_context_tokens: int = 64


_DEPENDENT_OPENING = re.compile(r"(this|these|those|it|its|they|their|such|that is|here)\b", re.IGNORECASE)


def is_dependent(text: str, previous: str | None) -> bool:
    """Whether `text` needs `previous` to be understood: it opens with a back-pointing word, or `previous`
    introduces it (ends with a colon)."""
    if not previous:
        return False
    return previous.rstrip().endswith(":") or _DEPENDENT_OPENING.match(text.lstrip()) is not None


def _chars(text: str, max_tokens: int) -> str:
    return text[: max(0, max_tokens) * 4]


def contextual_text(
    text: str,
    heading_path: Sequence[str],
    title: str | None,
    previous: str | None,
    options: ContextOptions,
    clip: Clip = _chars,
) -> str:
    """The text embedded for a sentence: heading path (or title), the previous sentence when `options` say
    so, the sentence; the first two together cut to at most `options.max_context_tokens` tokens by `clip`."""
    parts = []
    if options.heading:
        heading = " > ".join(heading_path) or (title or "")
        if heading:
            parts.append(heading + ":")
    wants_previous = options.previous is PreviousSentence.ALWAYS or (
        options.previous is PreviousSentence.DEPENDENT and is_dependent(text, previous)
    )
    if wants_previous and previous:
        parts.append(previous)
    context = "\n".join(parts)
    if len(context.encode("utf-8")) > options.max_context_tokens:  # no token is shorter than a byte
        context = clip(context, options.max_context_tokens)
    return f"{context}\n{text}" if context else text


def context_signature(options: ContextOptions) -> str:
    """A string naming the context policy, recorded with the vectors: when it changes, every sentence is
    re-enqueued (and only those whose embedded text changed are encoded again)."""
    return f"heading={options.heading};previous={options.previous.value};tokens={options.max_context_tokens}"


def text_hash(text: str) -> bytes:
    """The hash of an embedded text, stored with its vector."""
    return hashlib.sha256(text.encode("utf-8")).digest()
