"""A model as reader and as query rewriter: the two things a small model does well for citeline.

The reader is shown the question and the top-rated candidates, numbered, each under its heading path (a code
block after the sentence that introduces it), and names the numbers of those that answer, or NONE. Its
reply is parsed strictly (`parse_reading`): numbers within the list, or NONE, and nothing else; anything
else is a `PlannerError`, so the round falls back to the extractive planner. Where the endpoint gives the
first token's log-probabilities, the probability that the reply begins with NONE (`Reading.p_none`) is
kept beside the reply.

The rewriter writes the question twice in the words the docs likely use (`parse_rewrites`: at most two
lines, each a new query), shown the headings the first search reached as a hint of the docs' vocabulary.

Both are Protocols (`Reader`, `Rewriter`) with an implementation on an OpenAI-compatible endpoint; every
call ends by the caller's deadline (`ChatClient`), and whatever the reader chooses is still verified.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from engine.evidence import EvidencePool
from engine.llm_client import ChatClient
from engine.planning import PlannerError
from engine.search import Hit

__all__ = [
    "LLMReader",
    "LLMRewriter",
    "Passage",
    "Reader",
    "Reading",
    "Rewriter",
    "p_none",
    "parse_reading",
    "parse_rewrites",
    "passages",
    "reader_messages",
    "rewrite_messages",
]

READ_TOKENS = 16
"""A reading is a few numbers or NONE."""
REWRITE_TOKENS = 64
"""Two short queries."""
ALTERNATIVES = 10
"""First-token alternatives asked for, to read the probability of NONE."""
_TEXT_CHARS = 400
_CODE_CHARS = 600

_READ_SYSTEM = (
    "You read numbered passages from documentation and say which of them answer the question. Reply with "
    "the numbers of the passages that answer it, separated by commas, or NONE when none of them answers it. "
    "Reply with nothing else."
)
_REWRITE_SYSTEM = (
    "You rewrite a user's question as search queries for a documentation site. Write two different queries "
    "in the words the documentation itself would likely use (its terms, commands, option and section "
    "names), one per line, nothing else."
)
_NUMBERS = re.compile(r"\[?\d+\]?(\s*(,|and)\s*\[?\d+\]?)*")
"""Passage numbers, each bare or bracketed as the passages are shown ("[1], [4]")."""
_LISTED = re.compile(r"^\s*(?:[-*]|\d+[.)]|query\s*\d*:)\s*", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Passage:
    """A candidate as the reader sees it: its heading path, its text, and for a code block its intro."""

    sentence_id: int
    heading: tuple[str, ...]
    text: str
    intro: str | None = None


@dataclass(frozen=True, slots=True)
class Reading:
    """What the reader said: the sentence ids it chose, in its order (none: it answered NONE), the
    probability that its reply began with NONE where the endpoint gave it, and the reply itself."""

    chosen: tuple[int, ...]
    p_none: float | None
    reply: str
    shown: tuple[int, ...] = ()
    """The sentence ids it was shown, in their numbered order."""

    @property
    def declined(self) -> bool:
        """It answered NONE."""
        return not self.chosen

    def to_dict(self) -> dict[str, Any]:
        """JSON for the round's trace."""
        p = None if self.p_none is None else round(self.p_none, 4)
        return {"chosen": list(self.chosen), "shown": list(self.shown), "p_none": p, "reply": self.reply}


class Reader(Protocol):
    """Names the passages that answer the question, or none; raises `PlannerError` when it cannot."""

    def read(self, question: str, shown: Sequence[Passage], deadline: float) -> Reading: ...


class Rewriter(Protocol):
    """Rewrites the question in the docs' likely terms; raises `PlannerError` when it cannot."""

    def rewrite(self, question: str, hints: Sequence[str], deadline: float) -> list[str]: ...


def passages(hits: Sequence[Hit], pool: EvidencePool) -> list[Passage]:
    """`hits` as passages: a code block with the sentence before it as its intro (`SentenceContext`)."""
    out = []
    for hit in hits:
        context = pool.contexts.get(hit.sentence_id)
        intro = context.previous if hit.kind == "code" and context is not None else None
        limit = _CODE_CHARS if hit.kind == "code" else _TEXT_CHARS
        out.append(Passage(hit.sentence_id, hit.heading_path, hit.text[:limit], intro))
    return out


def reader_messages(question: str, shown: Sequence[Passage]) -> list[dict[str, str]]:
    """The reader's prompt: the question, then each passage as `[n] (Heading > Path) text`."""
    lines = [f"Question: {question}", "", "Passages:"]
    for number, passage in enumerate(shown, 1):
        where = f"({' > '.join(passage.heading)}) " if passage.heading else ""
        if passage.intro:
            lines.append(f"[{number}] {where}{passage.intro}\n{passage.text}")
        else:
            lines.append(f"[{number}] {where}{passage.text}")
    lines += ["", "Which passages answer the question? Reply with their numbers, or NONE."]
    return [{"role": "system", "content": _READ_SYSTEM}, {"role": "user", "content": "\n".join(lines)}]


def parse_reading(reply: str, count: int) -> tuple[int, ...]:
    """The 1-based passage numbers a reply names, in its order without repeats; () for NONE. Raises
    ValueError on anything else: words, a number outside 1..`count`, an empty reply."""
    text = reply.strip().strip("[]().").strip()
    if text.upper() == "NONE":
        return ()
    if not _NUMBERS.fullmatch(text):
        raise ValueError(f"not passage numbers or NONE: {reply.strip()[:80]!r}")
    numbers = tuple(dict.fromkeys(int(n) for n in re.findall(r"\d+", text)))
    outside = [n for n in numbers if not 1 <= n <= count]
    if outside:
        raise ValueError(f"passage numbers {outside} are not in 1..{count}")
    return numbers


def p_none(first_token: Sequence[tuple[str, float]]) -> float | None:
    """The probability that a reply begins with NONE: the summed probabilities of the first token's
    alternatives that begin spelling it ("N", "NO", "NONE"); None without alternatives."""
    if not first_token:
        return None
    spelled = [
        math.exp(lp) for token, lp in first_token if token.strip() and "NONE".startswith(token.strip())
    ]
    return min(1.0, sum(spelled))


def rewrite_messages(question: str, hints: Sequence[str]) -> list[dict[str, str]]:
    """The rewriter's prompt: the question, and the headings the first search reached as vocabulary."""
    lines = [f"Question: {question}"]
    if hints:
        lines += ["", "Sections of the documentation near it:"] + [f"- {h}" for h in hints]
    lines += ["", "Two search queries, one per line:"]
    return [{"role": "system", "content": _REWRITE_SYSTEM}, {"role": "user", "content": "\n".join(lines)}]


def parse_rewrites(reply: str, question: str) -> list[str]:
    """At most two queries from the reply's lines: list marks and quotes removed, empty lines, the question
    itself and repeats dropped, each at most 200 characters. Raises ValueError when none is left."""
    seen = {" ".join(question.lower().split())}
    out = []
    for line in reply.splitlines():
        query = _LISTED.sub("", line).strip().strip("\"'`").strip()
        key = " ".join(query.lower().split())
        if not key or key in seen or len(query) > 200:
            continue
        seen.add(key)
        out.append(query)
    if not out:
        raise ValueError(f"no rewrite in the reply: {reply.strip()[:80]!r}")
    return out[:2]


class LLMReader:
    """A `Reader` on a chat-completions endpoint: strict parse, the probability of NONE where given."""

    __slots__ = ("_chat",)

    def __init__(self, chat: ChatClient) -> None:
        self._chat = chat

    def read(self, question: str, shown: Sequence[Passage], deadline: float) -> Reading:
        """Ask once; a reply that is not numbers or NONE is a `PlannerError`."""
        reply = self._chat.ask(
            reader_messages(question, shown), deadline, max_tokens=READ_TOKENS, alternatives=ALTERNATIVES
        )
        try:
            numbers = parse_reading(reply.text, len(shown))
        except ValueError as exc:
            raise PlannerError(f"the reader's reply is malformed: {exc}") from exc
        ids = tuple(shown[n - 1].sentence_id for n in numbers)
        return Reading(
            ids, p_none(reply.first_token), reply.text.strip(), tuple(p.sentence_id for p in shown)
        )


class LLMRewriter:
    """A `Rewriter` on a chat-completions endpoint."""

    __slots__ = ("_chat",)

    def __init__(self, chat: ChatClient) -> None:
        self._chat = chat

    def rewrite(self, question: str, hints: Sequence[str], deadline: float) -> list[str]:
        """Ask once; a reply with no usable line is a `PlannerError`."""
        reply = self._chat.ask(rewrite_messages(question, hints), deadline, max_tokens=REWRITE_TOKENS)
        try:
            return parse_rewrites(reply.text, question)
        except ValueError as exc:
            raise PlannerError(f"the rewriter's reply is malformed: {exc}") from exc
