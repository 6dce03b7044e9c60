"""`POST /v1/answers/{id}/feedback` and `GET /v1/gaps`: the docs team's loop over the API.

Handlers check the body, narrow it to the caller's key and call the engine (`engine.feedback`,
`engine.gaps`), which applies the same rules to `citeline feedback` and `citeline gaps`: a scoped key gives
feedback only on answers it may read (else 404) and names only its repositories' sentences (else 403).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from uuid import UUID

import msgspec
from litestar import Request, get, post
from litestar.concurrency import sync_to_thread
from litestar.di import NamedDependency
from litestar.exceptions import NotFoundException, PermissionDeniedException, ValidationException
from litestar.params import FromPath, FromQuery, JSONBody, KwargDefinition, QueryParameter
from litestar.types import ControllerRouterHandler

from api.auth import Access, access_of
from api.context import Services
from api.contract import MAX_ID, NO_NUL, QueryName, problem_responses
from api.scope import checked_scope
from engine.feedback import MAX_COMMENT_CHARS, MAX_FEEDBACK_SENTENCES, FeedbackError, give_feedback
from engine.gaps import MAX_GAPS, SINCE_PATTERN, find_gaps, parse_since
from engine.inputs import InputError, optional_text

__all__ = [
    "FEEDBACK_ROUTES",
    "FeedbackIn",
    "FeedbackOut",
    "GapOut",
    "GapPassageOut",
    "GapsOut",
    "feedback_body",
    "record_feedback",
]

SentenceId = Annotated[int, KwargDefinition(ge=1, le=MAX_ID)]
GapLimit = Annotated[int, QueryParameter(ge=1, le=MAX_GAPS)]
Since = Annotated[str, QueryParameter(max_length=10, pattern=SINCE_PATTERN)]


class FeedbackIn(msgspec.Struct, forbid_unknown_fields=True):
    """Whether the answer helped and, optionally, the sentences that answer its question (its own cited
    sentences, its closest passages, or any sentence search found) and a comment for the docs team."""

    helpful: bool
    sentence_ids: Annotated[list[SentenceId], KwargDefinition(max_items=MAX_FEEDBACK_SENTENCES)] = (
        msgspec.field(default_factory=list)
    )
    comment: Annotated[str, KwargDefinition(max_length=MAX_COMMENT_CHARS, pattern=NO_NUL)] | None = None


class FeedbackOut(msgspec.Struct):
    """The stored feedback (`indexer.feedback.FeedbackRecord.as_dict`): `accepted` lists the sentences now
    accepted as answering the question (helpful feedback naming none accepts the answer's cited sentences),
    `rejected` those never to be served from memory for it; `nearest_ids`, when helpful feedback accepted
    nothing (an insufficient answer cites nothing), the answer's closest passages, to name instead.
    `teaching` is false for a key without the `teach` property: its vote is recorded and counted, and it
    accepted and rejected nothing (naming sentences with such a key is a 403)."""

    id: int
    answer_id: str
    question: str
    helpful: bool
    sentence_ids: list[int]
    comment: str | None
    repositories: list[str]
    created_at: datetime
    accepted: list[int]
    rejected: list[int]
    nearest_ids: list[int] = msgspec.field(default_factory=list)
    teaching: bool = True


def record_feedback(services: Services, access: Access, answer_id: UUID, data: FeedbackIn) -> FeedbackOut:
    """`POST /v1/answers/{id}/feedback` for a caller with `access`, refusing what the route refuses with the
    same message (the MCP tool `give_feedback` runs it too)."""
    try:
        with services.connection() as conn:
            record = give_feedback(
                conn,
                str(answer_id),
                data.helpful,
                data.sentence_ids,
                data.comment,
                access.repositories,
                access.may_teach,
            )
    except InputError as exc:
        raise ValidationException(str(exc)) from exc
    except FeedbackError as exc:
        if exc.status == 403:
            raise PermissionDeniedException(str(exc)) from exc
        raise NotFoundException(str(exc)) from exc
    services.metrics.record_feedback(record.helpful)
    return msgspec.convert(record.as_dict(), FeedbackOut)


def _integral(body: Any) -> Any:
    """`body` with each sentence id written as an integral number (`42.0`, an integer to JSON Schema) read
    as the integer it is; anything else is left for the strict reading to judge."""
    if isinstance(body, dict) and isinstance(body.get("sentence_ids"), list):
        ids = body["sentence_ids"]
        body = {**body, "sentence_ids": [int(i) if type(i) is float and i.is_integer() else i for i in ids]}
    return body


@post(
    "/v1/answers/{answer_id:uuid}/feedback",
    summary="Say whether a stored answer helped, and which sentences answer its question",
    responses=problem_responses(400, 401, 403, 404, 413, 415, 503),
    status_code=201,
)
async def feedback(
    request: Request[Any, Any, Any],
    answer_id: FromPath[UUID],
    data: JSONBody[FeedbackIn],
    services: NamedDependency[Services],
) -> FeedbackOut:
    """Store the feedback; helpful feedback accepts the named sentences (or, naming none, every cited one)
    for the answer's question, feedback that was not helpful keeps them (or, naming none, every cited one)
    from being served from memory for it. The body is read strictly: `"helpful": 0` or `"sentence_ids":
    ["1"]` is a 400, not a guess."""
    strict = feedback_body(await request.json())
    return await sync_to_thread(record_feedback, services, access_of(request), answer_id, strict)


def feedback_body(body: Any) -> FeedbackIn:
    """A decoded feedback body read strictly, as the route reads it, or a 400 saying what is wrong."""
    try:
        return msgspec.convert(_integral(body), FeedbackIn, strict=True)
    except msgspec.ValidationError as exc:
        raise ValidationException(str(exc)) from exc


class GapPassageOut(msgspec.Struct):
    """The passage that shows a gap's kind (`engine.gap_kinds.Passage.to_dict`), where it is now: its rating
    for the question against the relevance floor (null when not rated), and whether the team accepted it
    (`stale`: it has changed since)."""

    sentence_id: int | None
    repository: str | None
    path: str | None
    heading: str
    line_start: int | None
    line_end: int | None
    text: str
    rating: float | None
    floor: float | None
    accepted: bool
    stale: bool


class GapOut(msgspec.Struct):
    """One question the docs did not answer, its wordings grouped (`engine.gaps.Gap.to_dict`): `kinds` counts
    its askings by kind (`insufficient`, `fail`, `unhelpful`, `stale`); `closest` is the section of its
    best-rated passage (repository, path, heading); `details` are feedback comments and stale sentences' old
    text. `kind` says which kind of gap it is (`not_in_docs`, `near_miss`, `missed`, `unrated`), `passage`
    shows it, and `page_changed` says that its closest page changed after it was last asked."""

    question: str
    count: int
    first_asked: datetime
    last_asked: datetime
    wordings: list[str]
    kinds: dict[str, int]
    stale: bool
    closest: dict[str, str | None] | None
    answer_ids: list[str]
    details: list[str]
    kind: str
    passage: GapPassageOut | None
    page_changed: bool


class GapsOut(msgspec.Struct):
    """The open gaps: `not_in_docs` first, then `near_miss`, `missed` and `unrated`; most asked first within
    a kind."""

    gaps: list[GapOut]


@get(
    "/v1/gaps",
    sync_to_thread=True,
    summary="What the docs failed to answer, different wordings of one question grouped",
    responses=problem_responses(400, 401, 403, 503),
)
def gaps(
    request: Request[Any, Any, Any],
    services: NamedDependency[Services],
    since: FromQuery[Since | None] = None,
    repo: FromQuery[tuple[QueryName, ...]] = (),
    limit: GapLimit = 100,
) -> GapsOut:
    """Questions that ended insufficient or failed, answers marked not helpful and accepted answers gone
    stale, grouped, each with its kind and the passage that shows it, until answered or accepted (closed);
    `since` is a duration (`7d`, `12h`) or a date, `repo` narrows to repositories."""
    access = access_of(request)
    max_chars = services.settings.limits.max_query_chars
    try:
        start = parse_since(optional_text("since", since, max_chars))
    except InputError as exc:
        raise ValidationException(str(exc)) from exc
    named = any(r.strip() for r in repo)
    only = checked_scope(services, access, repo, field="repo").repositories if named else None
    with services.connection() as conn:
        found = find_gaps(conn, access.repositories, only, since=start, limit=limit)
    return GapsOut(gaps=[msgspec.convert(g.to_dict(), GapOut) for g in found])


FEEDBACK_ROUTES: list[ControllerRouterHandler] = [feedback, gaps]
