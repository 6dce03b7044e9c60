"""The `/v1` routes: answers, search, sentences, documents and status.

Handlers only check input against the limits, narrow it to the caller's key, call the engine or the store,
and shape the result; every query gets the key's repositories so scoping happens in SQL. Handlers are sync
(psycopg and the models block) and run in Litestar's thread pool.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ParamSpec, TypeVar
from uuid import UUID

import msgspec
from litestar import Request, get, post
from litestar.di import NamedDependency
from litestar.exceptions import NotFoundException, ServiceUnavailableException, ValidationException
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath, FromQuery, JSONBody
from litestar.types import ControllerRouterHandler

from api.auth import Access, access_of
from api.context import Services
from api.contract import (
    MAX_ID,
    MAX_RADIUS,
    DocumentLimit,
    DocumentOffset,
    QueryK,
    QueryName,
    QueryText,
    SentenceRadius,
    problem_responses,
)
from api.linking import linked_answer, linked_hits
from api.models import (
    AnswerOut,
    AskRequest,
    RepositoryStatusOut,
    SearchOut,
    SkippedFileOut,
    StatusOut,
    StatusTotalsOut,
    ThresholdsOut,
)
from api.scope import checked_scope
from engine.inputs import QUERY, QUESTION, InputError, hit_count, optional_text, required_text
from engine.search import SearchMode
from engine.store import load_answer
from indexer.browse import DocumentView, SentenceView, answer_scope, document_view, sentence_view
from indexer.staleness import skipped_files
from indexer.status import RepositoryStatus, StatusTotals, eta_seconds, repository_status, status_totals

__all__ = ["ROUTES", "answer_question", "index_status", "read_sentence", "search_sentences"]

AnyRequest = Request[Any, Any, Any]
StatusShape = TypeVar("StatusShape", RepositoryStatusOut, StatusTotalsOut)
T = TypeVar("T")
P = ParamSpec("P")


def _route(
    method: type[HTTPRouteHandler], path: str, summary: str, *problems: int, **options: Any
) -> HTTPRouteHandler:
    """A handler run in the thread pool, with its summary and the problem statuses it may answer."""
    return method(
        path, sync_to_thread=True, summary=summary, responses=problem_responses(*problems), **options
    )


def _checked(check: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """What the contract's `check` returns (`engine.inputs`), or a 400 with its message as the detail: the CLI
    refuses the same input with the same message."""
    try:
        return check(*args, **kwargs)
    except InputError as exc:
        raise ValidationException(str(exc)) from exc


def _optional(name: str, value: str | None, max_chars: int) -> str | None:
    """A stripped text input (None when blank), or a 400 saying what is wrong with it."""
    return _checked(optional_text, name, value, max_chars)


def _required(name: str, value: str | None, max_chars: int) -> str:
    """Like `_optional`, but blank is a 400 too."""
    return _checked(required_text, name, value, max_chars)


@_route(
    post, "/v1/answers", "Answer a question with cited clauses", 400, 401, 403, 413, 415, 503, status_code=200
)
def ask(request: AnyRequest, data: JSONBody[AskRequest], services: NamedDependency[Services]) -> AnswerOut:
    """Run the engine; the answer is stored (when the engine stores answers) and its id returned."""
    return answer_question(services, access_of(request), data)


def answer_question(services: Services, access: Access, data: AskRequest) -> AnswerOut:
    """`POST /v1/answers` for a caller with `access`: the input checked, the filters narrowed to the key, the
    engine run. Refusals are Litestar's HTTP exceptions (the API's 4xx), which the MCP tools report too."""
    limits = services.settings.limits
    question = _required(QUESTION, data.question, limits.max_question_chars)
    filters = data.filters
    checked = checked_scope(
        services, access, filters.repositories if filters else None, filters.path_prefix if filters else None
    )
    if services.answering is None:
        raise ServiceUnavailableException("this process runs no answer engine")
    result = services.answering(question, data.budget, checked)
    services.metrics.record_answer(result)
    with services.connection() as conn:
        return msgspec.convert(linked_answer(conn, result.to_dict()), AnswerOut)


@_route(get, "/v1/answers/{answer_id:uuid}", "A stored answer with its sources' states", 401, 404, 503)
def stored_answer(
    request: AnyRequest, answer_id: FromPath[UUID], services: NamedDependency[Services]
) -> AnswerOut:
    """Each source is marked live, changed or deleted against the index as it is now."""
    repositories = access_of(request).repositories
    with services.connection() as conn:
        scope = answer_scope(conn, str(answer_id))
        stored = load_answer(conn, str(answer_id)) if scope and scope.within(repositories) else None
        if stored is None:
            raise NotFoundException(f"no answer {answer_id}")
        return msgspec.convert(linked_answer(conn, stored.to_dict()), AnswerOut)


@_route(get, "/v1/search", "Hybrid search over indexed sentences", 400, 401, 403, 503)
def search(
    request: AnyRequest,
    services: NamedDependency[Services],
    q: QueryText,
    k: QueryK = 10,
    lane: FromQuery[SearchMode] = SearchMode.HYBRID,
    repo: FromQuery[tuple[QueryName, ...]] = (),
    path_prefix: FromQuery[QueryName | None] = None,
    context: FromQuery[bool] = False,
) -> SearchOut:
    """The top `k` sentences; `lane` picks hybrid (fused and reranked), lexical or vector. Each hit links to
    its forge when the repository has a link template; `context=true` adds the sentences either side."""
    return search_sentences(services, access_of(request), q, k, lane, repo, path_prefix, context)


def search_sentences(
    services: Services,
    access: Access,
    q: str,
    k: int,
    lane: SearchMode,
    repo: Sequence[str],
    path_prefix: str | None,
    context: bool,
) -> SearchOut:
    """`GET /v1/search` for a caller with `access`, refusing what the route refuses with the same message."""
    limits = services.settings.limits
    query = _required(QUERY, q, limits.max_query_chars)
    _checked(hit_count, k, limits.max_k)
    checked = checked_scope(services, access, repo, path_prefix)
    hits = services.retriever.search(query, k, mode=lane, filters=checked)
    with services.connection() as conn:
        return SearchOut(query=query, lane=lane.value, hits=linked_hits(conn, hits, context))


@_route(get, "/v1/sentences/{sentence_id:int}", "A sentence among its neighbours", 400, 401, 404, 503)
def sentence(
    request: AnyRequest,
    sentence_id: FromPath[int],
    services: NamedDependency[Services],
    radius: SentenceRadius = 2,
) -> SentenceView:
    """The sentence's text, file, heading, lines and commit, with `radius` sentences either side (two
    unless asked)."""
    return read_sentence(services, access_of(request), sentence_id, radius)


def read_sentence(services: Services, access: Access, sentence_id: int, radius: int = 2) -> SentenceView:
    """`GET /v1/sentences/{id}` for a caller with `access`: a 404 for a sentence it may not read, as for one
    that does not exist, so a key learns nothing of other repositories."""
    if not 0 <= radius <= MAX_RADIUS:
        raise ValidationException(f"radius must be between 0 and {MAX_RADIUS}, got {radius}")
    view = None
    if 0 < sentence_id <= MAX_ID:
        with services.connection() as conn:
            view = sentence_view(conn, sentence_id, access.repositories, radius)
    if view is None:
        raise NotFoundException(f"no sentence {sentence_id}")
    return view


@_route(get, "/v1/documents", "A document's sentences with their embedding state", 400, 401, 403, 404, 503)
def document(
    request: AnyRequest,
    services: NamedDependency[Services],
    repo: QueryText,
    path: QueryText,
    offset: DocumentOffset = 0,
    limit: DocumentLimit = 500,
) -> DocumentView:
    """One page of the document's sentences in order; `sentence_count` says how many there are."""
    limits = services.settings.limits
    name = _required("repo", repo, limits.max_query_chars)
    rel = _required("path", path, limits.max_query_chars)
    if limit > limits.max_document_sentences:
        raise ValidationException(f"limit must be at most {limits.max_document_sentences}, got {limit}")
    with services.connection() as conn:
        view = document_view(conn, name, rel, access_of(request).repositories, offset=offset, limit=limit)
    if view is None:
        raise NotFoundException(f"no document {rel} in repository {name}")
    return view


def _status_out(figures: RepositoryStatus | StatusTotals, shape: type[StatusShape]) -> StatusShape:
    """The figures in the API's shape, with the embedded share and the backlog's drain time added."""
    share = round(figures.embeddings / figures.sentences, 4) if figures.sentences else 1.0
    eta = eta_seconds(figures.backlog_size, figures.embedded_per_second)
    return msgspec.convert({**figures.as_dict(), "embedded_share": share, "backlog_eta_seconds": eta}, shape)


@_route(get, "/v1/status", "Index and backlog figures per repository", 401, 503)
def status(request: AnyRequest, services: NamedDependency[Services]) -> StatusOut:
    """Documents, sentences, backlog size and oldest age, embedded share, skipped files and last change per
    repository, and the skipped files themselves."""
    return index_status(services, access_of(request))


def index_status(services: Services, access: Access) -> StatusOut:
    """`GET /v1/status` for a caller with `access`: only the repositories its key may read."""
    scope = access.repositories
    with services.connection() as conn:
        statuses = repository_status(conn, None if scope is None else list(scope))
        totals = status_totals(conn, statuses)
        skipped = skipped_files(conn, None if scope is None else list(scope))
    rows = [_status_out(s, RepositoryStatusOut) for s in statuses]
    settings = services.settings
    thresholds = ThresholdsOut(settings.warn_backlog_age_seconds, settings.ready_max_backlog_age_seconds)
    return StatusOut(
        repositories=rows,
        total=_status_out(totals, StatusTotalsOut),
        thresholds=thresholds,
        skipped=[SkippedFileOut(k.repository, k.path, k.reason, k.detail) for k in skipped],
    )


ROUTES: list[ControllerRouterHandler] = [ask, stored_answer, search, sentence, document, status]
