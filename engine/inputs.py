"""The input contract shared by the CLI and the API: the limits on a question, a search query and a search's
number of hits, and the one message each broken limit gets.

Both front ends check text with `required_text` / `optional_text` and a hit count with `hit_count` before any
work is done: the API answers 400 with the message as the problem's `detail`, the CLI prints it and exits
with status 2. The default limits are stated here once; the API's configured `Limits` may only tighten them.
"""

from __future__ import annotations

__all__ = [
    "HITS",
    "MAX_K",
    "MAX_QUERY_CHARS",
    "MAX_QUESTION_CHARS",
    "QUERY",
    "QUESTION",
    "InputError",
    "hit_count",
    "optional_text",
    "required_text",
]

MAX_QUESTION_CHARS = 1000
"""The longest question answered, in characters."""
MAX_QUERY_CHARS = 500
"""The longest search query (and filter value), in characters."""
QUESTION = "question"
"""The name a question's messages give it (the API's body field)."""
QUERY = "q"
"""The name a search query's messages give it (the API's query parameter)."""
MAX_K = 1000
"""The most hits one search is asked for (`citeline search -k`, `GET /v1/search?k=`). A search ranks the
lanes' candidates only (`[retrieval] lexical_candidates` and `vector_candidates`, 64 each by default), so a
larger k returns no more hits than those hold."""
HITS = "k"
"""The name a hit count's messages give it (the API's query parameter; the CLI's `-k`)."""


class InputError(ValueError):
    """An input breaks the contract; the message names the input and the limit."""


def optional_text(name: str, value: str | None, max_chars: int) -> str | None:
    """`value` stripped, or None when it is missing or blank; an `InputError` when it holds a NUL character
    (PostgreSQL cannot store one) or is longer than `max_chars`."""
    if value is None or not value.strip():
        return None
    if "\x00" in value:
        raise InputError(f"{name} must not contain NUL characters")
    if len(value) > max_chars:
        raise InputError(f"{name} is {len(value)} characters; the limit is {max_chars}")
    return value.strip()


def required_text(name: str, value: str | None, max_chars: int) -> str:
    """Like `optional_text`, and blank is an `InputError` too."""
    text = optional_text(name, value, max_chars)
    if text is None:
        raise InputError(f"{name} must not be empty")
    return text


def hit_count(value: int, limit: int = MAX_K) -> int:
    """`value` when it is a number of hits from 1 to `limit`; else an `InputError` naming the range."""
    if not 1 <= value <= limit:
        raise InputError(f"{HITS} must be between 1 and {limit}, got {value}")
    return value
