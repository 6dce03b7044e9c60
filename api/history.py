"""`GET /v1/history`: the latest stored answers the caller may read, each with how its sources stand now.

The store says whether each cited sentence is live, changed or deleted (`engine.store.load_answer`); this
route only counts the states and names the worst of them, so the page can mark an answer fresh or stale
without loading each one.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec
from litestar import Request, get
from litestar.di import NamedDependency
from litestar.params import QueryParameter
from litestar.types import ControllerRouterHandler

from api.auth import access_of
from api.context import Services
from api.contract import problem_responses
from engine.store import load_answer
from indexer.history import recent_answers

__all__ = ["HISTORY_ROUTES", "AnswerSummaryOut", "HistoryOut"]

MAX_HISTORY = 100
HistoryLimit = Annotated[int, QueryParameter(ge=1, le=MAX_HISTORY)]
Freshness = Literal["fresh", "changed", "deleted"]


class AnswerSummaryOut(msgspec.Struct):
    """A question's latest stored answer at a glance: `freshness` is `deleted` when any cited sentence's
    file is gone, else `changed` when any says something else now (or its file was edited and the sentence
    is gone), else `fresh`; `sources` counts the sources by state; `times` is how often the question was
    asked (under the same filters), `first_asked_at` when it first was."""

    id: str
    question: str
    status: Literal["answer", "insufficient", "fail"]
    created_at: datetime
    budget: str | None
    filters: dict[str, Any]
    clauses: int
    sources: dict[str, int]
    freshness: Freshness
    times: int = 1
    first_asked_at: datetime | None = None


class HistoryOut(msgspec.Struct):
    """Stored answers, newest first."""

    answers: list[AnswerSummaryOut]


def _freshness(states: Counter[str]) -> Freshness:
    if states["deleted"]:
        return "deleted"
    return "changed" if states["changed"] else "fresh"


@get(
    "/v1/history",
    sync_to_thread=True,
    summary="The latest stored answers, each marked fresh or stale",
    responses=problem_responses(400, 401, 503),
)
def history(
    request: Request[Any, Any, Any], services: NamedDependency[Services], limit: HistoryLimit = 20
) -> HistoryOut:
    """Up to `limit` questions, each once with its latest stored answer, newest first, scoped like
    `GET /v1/answers/{id}`."""
    out = []
    with services.connection() as conn:
        for row in recent_answers(conn, access_of(request).repositories, limit):
            answer = load_answer(conn, row.id)
            if answer is None:  # deleted between the two queries
                continue
            body = answer.to_dict()
            states = Counter(s.get("state") or "live" for c in body["clauses"] for s in c["sources"])
            out.append(
                AnswerSummaryOut(
                    id=row.id,
                    question=row.question,
                    status=body["status"],
                    created_at=row.created_at,
                    budget=body.get("budget"),
                    filters=body.get("filters") or {},
                    clauses=len(body["clauses"]),
                    sources={state: states[state] for state in ("live", "changed", "deleted")},
                    freshness=_freshness(states),
                    times=row.times,
                    first_asked_at=row.first_at,
                )
            )
    return HistoryOut(answers=out)


HISTORY_ROUTES: list[ControllerRouterHandler] = [history]
