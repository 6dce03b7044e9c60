"""What is embedded for a sentence: the sentence, under its heading path, with the sentence before it only
when it depends on it; the stored sentence text is never changed.

The previous sentence is context only for a dependent sentence (`is_dependent`), one that opens with a word
that points back ("This", "It", "These", "Such", ...) or a connective ("Then", "However", "Also", ...), or
follows a sentence ending with a colon: the one notion of dependence, which the engine also cites, shows and
judges a sentence by (`engine.contexts.leans_on`), there with a fragment too (`is_fragment`). Given to every
sentence, the previous one's meaning leaks into the next vector, and a paraphrase of a sentence then ranks
the sentence after it first. The context (heading path, then previous sentence) is capped in tokens, so a
long heading or neighbour never pushes the sentence itself past the model's input length.
"""

from __future__ import annotations

import enum
import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from indexer.stopwords import STOPWORDS

__all__ = [
    "DEPENDENCE_RULE",
    "FRAGMENT_WORDS",
    "ContextOptions",
    "PreviousSentence",
    "context_signature",
    "contextual_text",
    "is_dependent",
    "is_fragment",
    "text_hash",
]

Clip = Callable[[str, int], str]
"""Cuts a text to at most N tokens (the model's tokenizer); the default counts four characters a token."""


class PreviousSentence(enum.Enum):
    """When the sentence before is embedded with a sentence."""

    NEVER = "never"
    DEPENDENT = "dependent"
    """Only when the sentence depends on it (`is_dependent`)."""
    ALWAYS = "always"


@dataclass(frozen=True, slots=True)
class ContextOptions:
    """What is embedded with a sentence, and the context's length cap in tokens."""

    heading: bool = True
    previous: PreviousSentence = PreviousSentence.DEPENDENT
    max_context_tokens: int = 64


_DEPENDENT_OPENING = re.compile(
    r"(this|these|those|that|it|its|they|their|such|here"
    r"|then|however|also|so|thus|hence|therefore|otherwise|instead|but|likewise|similarly|moreover|furthermore)\b",
    re.IGNORECASE,
)
DEPENDENCE_RULE = 2
"""The version of `is_dependent`'s rule, part of `context_signature`: 2 added "that" and the connectives."""

FRAGMENT_WORDS = 4
"""A unit with fewer content words than this is a fragment ("It just works!", "Then we examine it.")."""
_WORD = re.compile(r"[^\W_][\w'’\-]*")


def is_dependent(text: str, previous: str | None) -> bool:
    """Whether `text` needs `previous` to be understood: it opens with a back-pointing word or a connective
    ("It just works!", "Then we need to examine it.", "However, ..."), or `previous` introduces it (ends with
    a colon)."""
    if not previous:
        return False
    return previous.rstrip().endswith(":") or _DEPENDENT_OPENING.match(text.lstrip()) is not None


def is_fragment(text: str) -> bool:
    """Whether `text` has fewer than `FRAGMENT_WORDS` content words (words that are not stopwords): too short
    to be read, cited or listed without the sentence before it. Not part of `is_dependent`, since the queue
    embeds headings, short by nature, and a short sentence's vector would be its neighbour's."""
    words = (w.lower().strip("'’-") for w in _WORD.findall(text))
    return sum(1 for w in words if w and w not in STOPWORDS) < FRAGMENT_WORDS


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
    signature = (
        f"heading={options.heading};previous={options.previous.value};tokens={options.max_context_tokens}"
    )
    if options.previous is PreviousSentence.DEPENDENT:
        signature += f";rule={DEPENDENCE_RULE}"
    return signature


def text_hash(text: str) -> bytes:
    """The hash of an embedded text, stored with its vector."""
    return hashlib.sha256(text.encode("utf-8")).digest()
