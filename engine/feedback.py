"""Feedback on a stored answer: the checks every caller applies, and the (question, sentence) pairs it keeps.

`give_feedback` is what `POST /v1/answers/{id}/feedback` and `citeline feedback` both run, so they refuse the
same input with the same message (`FeedbackError.status` is the HTTP status). A caller limited to some
repositories gives feedback only on the answers it may read (else: no such answer, 404) and names only
sentences of its repositories (else 403); a sentence that does not exist is a 404.

What it records: helpful feedback accepts each named sentence as answering the answer's question (the pairs
`engine.memory` may serve again for the same question in other words), or, when it names none, every sentence
the answer cited; feedback that was not helpful rejects the named sentences for that question, or, when it
names none, every sentence the answer cited, so none of them is served from memory for it again. Helpful
feedback that accepts nothing (an `insufficient` answer cites nothing) is still recorded, and its record
names the answer's closest passages (`nearest_ids`) as the sentences to name instead. The pairs are keyed
by `question_key`, the question's content-word stems, so an unhelpful verdict holds for the question however
it is capitalised or punctuated.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import replace

from engine.inputs import InputError, optional_text
from engine.passages import NEAREST
from engine.store import load_answer
from engine.words import stems
from indexer.browse import answer_scope
from indexer.database import Connection
from indexer.feedback import (
    FeedbackRecord,
    NewFeedback,
    SentenceRef,
    repository_ids,
    save_feedback,
    sentence_refs,
)

__all__ = [
    "MAX_COMMENT_CHARS",
    "MAX_FEEDBACK_SENTENCES",
    "FeedbackError",
    "checked_feedback",
    "give_feedback",
    "parse_sentence_id",
    "question_key",
]

MAX_COMMENT_CHARS = 2000
_NOT_TEACHING = (
    "this API key may not accept or reject sentences for everyone (it lacks the teach property):"
    " send helpful or not helpful without sentence_ids to vote, or use a key with the teach property"
)
MAX_FEEDBACK_SENTENCES = 50
_MAX_ID = 2**63 - 1


class FeedbackError(Exception):
    """Feedback that cannot be recorded: `status` is the HTTP status that says why (403, 404)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def question_key(question: str) -> str:
    """The question's content-word stems, sorted: two wordings that differ only in case, punctuation, word
    order or stopwords share a key."""
    return " ".join(sorted(stems(question)))


def checked_feedback(sentence_ids: Sequence[int], comment: str | None) -> tuple[tuple[int, ...], str | None]:
    """The sentence ids (duplicates dropped, order kept) and the stripped comment (None when blank), or an
    `InputError` saying what is wrong: the API answers it 400, the CLI exits 2 with the same message."""
    if len(sentence_ids) > MAX_FEEDBACK_SENTENCES:
        raise InputError(f"sentence_ids: at most {MAX_FEEDBACK_SENTENCES} sentences, got {len(sentence_ids)}")
    for sentence_id in sentence_ids:
        if isinstance(sentence_id, bool) or not 0 < sentence_id <= _MAX_ID:
            raise InputError(f"sentence_ids: {sentence_id} is not a sentence id (1 to {_MAX_ID})")
    return tuple(dict.fromkeys(sentence_ids)), optional_text("comment", comment, MAX_COMMENT_CHARS)


_SHORT_ID = re.compile(r"[sS]?(\d{1,19})")


def parse_sentence_id(text: str) -> int:
    """A sentence id as a person types it: `2736`, or the short id `citeline ask` prints, `s2736`; an
    `InputError` for anything else (the range is `checked_feedback`'s to judge)."""
    match = _SHORT_ID.fullmatch(text.strip())
    if match is None:
        shown = text if len(text) <= 40 else text[:40] + "..."
        raise InputError(f"sentence_ids: {shown!r} is not a sentence id (a number, or s and a number: s42)")
    return int(match.group(1))


def give_feedback(
    conn: Connection,
    answer_id: str,
    helpful: bool,
    sentence_ids: Sequence[int] = (),
    comment: str | None = None,
    repositories: tuple[str, ...] | None = None,
    may_teach: bool = True,
) -> FeedbackRecord:
    """Record feedback on the stored answer `answer_id` for a caller limited to `repositories` (None: all);
    the stored record. Raises `InputError` for bad input and `FeedbackError` (404, 403) as the module says.

    A caller that may not teach (`may_teach` false: an API key without the `teach` property) only votes: its
    feedback is recorded and counted, but it accepts and rejects no sentence for everyone, not even the cited
    ones its verdict would take (the record says `teaching: false`); naming sentences is a 403."""
    ids, text = checked_feedback(sentence_ids, comment)
    try:
        key = str(uuid.UUID(str(answer_id)))
    except ValueError:
        raise FeedbackError(404, f"no answer {answer_id}") from None
    scope = answer_scope(conn, key)
    answer = load_answer(conn, key) if scope is not None and scope.within(repositories) else None
    if scope is None or answer is None:
        raise FeedbackError(404, f"no answer {answer_id}")
    refs = sentence_refs(conn, ids)
    for sentence_id in ids:
        ref = refs.get(sentence_id)
        if ref is None:
            raise FeedbackError(404, f"no sentence {sentence_id}")
        if repositories is not None and ref.repository not in repositories:
            raise FeedbackError(403, f"sentence {sentence_id} is outside this key's repositories")
    named = [refs[i] for i in ids]
    body = answer.to_dict()
    cited = [s for c in body["clauses"] for s in c["sources"]]
    nearest = body.get("nearest") or []
    pairs: list[SentenceRef] = named
    if not named:  # the verdict is on what the answer cited
        cited_ids = [s["sentence_id"] for s in cited if s.get("sentence_id") is not None]
        live = sentence_refs(conn, cited_ids)
        pairs = [live[i] for i in dict.fromkeys(cited_ids) if i in live]
    if not may_teach:  # the last word on which sentences a feedback accepts or rejects for everyone
        if named:
            raise FeedbackError(403, _NOT_TEACHING)
        pairs = []
    involved = {*scope.filter_repositories, *scope.source_repositories}
    involved |= {n["repository"] for n in nearest if n.get("repository")}
    fallback = [{"path": r.path, "heading": r.heading} for r in named[:1]]
    closest = (cited or nearest or fallback or [{}])[0]
    new = NewFeedback(
        key,
        answer.question,
        answer.status.value,
        helpful,
        named,
        text,
        repository_ids(conn, involved),
        pairs,
        closest.get("path"),
        closest.get("heading") or None,
    )
    record = save_feedback(conn, new, question_key(answer.question))
    if not may_teach:
        return replace(record, teaching=False)
    if helpful and not record.accepted:  # nothing learnt: the closest passages are what to name instead
        offered = [n["sentence_id"] for n in nearest if n.get("sentence_id") is not None]
        record = replace(record, nearest_ids=tuple(dict.fromkeys(offered))[:NEAREST])
    return record
