"""The `/v1` routes: answers, search, sentences, documents and status.

Handlers only check input against the limits, narrow it to the caller's key, call the engine or the store,
and shape the result; every query gets the key's repositories so scoping happens in SQL. Handlers are sync
(psycopg and the models block) and run in Litestar's thread pool.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

import msgspec
from litestar import Request, get, post
from litestar.di import NamedDependency
from litestar.exceptions import NotFoundException, ServiceUnavailableException, ValidationException
from litestar.params import FromPath, FromQuery, JSONBody
from litestar.types import ControllerRouterHandler

from api.auth import access_of
from api.context import Services
from api.contract import (
    MAX_ID,
    DocumentLimit,
    DocumentOffset,
    QueryK,
    QueryName,
    QueryText,
    problem_responses,
)
from api.models import (
    AnswerOut,
    AskRequest,
    DocumentOut,
    DocumentSentenceOut,
    NeighbourOut,
    RepositoryStatusOut,
    SearchHitOut,
    SearchOut,
    SentenceOut,
    StatusOut,
    StatusTotalsOut,
)
from engine.retrieval import Filters, SearchMode
from engine.store import load_answer
from indexer.browse import answer_scope, document_view, sentence_view
from indexer.status import eta_seconds, repository_status

__all__ = ["ROUTES"]

AnyRequest = Request[Any, Any, Any]


def _optional(name: str, value: str | None, max_chars: int) -> str | None:
    """A stripped text input (None when blank), or a 400 saying what is wrong with it."""
    if value is None or not value.strip():
        return None
    if "\x00" in value:
        raise ValidationException(f"{name} must not contain NUL characters")
    if len(value) > max_chars:
        raise ValidationException(f"{name} is {len(value)} characters; the limit is {max_chars}")
    return value.strip()


def _required(name: str, value: str | None, max_chars: int) -> str:
    """Like `_optional`, but blank is a 400 too."""
    text = _optional(name, value, max_chars)
    if text is None:
        raise ValidationException(f"{name} must not be empty")
    return text


def _repositories(names: Sequence[str] | None, max_chars: int) -> tuple[str, ...] | None:
    if not names:
        return None
    return tuple(n for n in (_optional("repository", name, max_chars) for name in names) if n)


@post(
    "/v1/answers",
    sync_to_thread=True,
    status_code=200,
    summary="Answer a question with cited clauses",
    responses=problem_responses(400, 401, 403, 413, 503),
)
def ask(request: AnyRequest, data: JSONBody[AskRequest], services: NamedDependency[Services]) -> AnswerOut:
    """Run the engine; the answer is stored (when the engine stores answers) and its id returned."""
    limits = services.settings.limits
    question = _required("question", data.question, limits.max_question_chars)
    filters = data.filters
    requested = _repositories(filters.repositories if filters else None, limits.max_query_chars)
    prefix = _optional("path_prefix", filters.path_prefix if filters else None, limits.max_query_chars)
    scope = access_of(request).restrict(requested)
    if services.answering is None:
        raise ServiceUnavailableException("this process runs no answer engine")
    result = services.answering(question, data.budget, Filters(scope, prefix))
    services.metrics.record_answer(result)
    return msgspec.convert(result.to_dict(), AnswerOut)


@get(
    "/v1/answers/{answer_id:uuid}",
    sync_to_thread=True,
    summary="A stored answer with its sources' states",
    responses=problem_responses(401, 404, 503),
)
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
    return msgspec.convert(stored.to_dict(), AnswerOut)


@get(
    "/v1/search",
    sync_to_thread=True,
    summary="Hybrid search over indexed sentences",
    responses=problem_responses(400, 401, 403, 503),
)
def search(
    request: AnyRequest,
    services: NamedDependency[Services],
    q: QueryText,
    k: QueryK = 10,
    lane: FromQuery[SearchMode] = SearchMode.HYBRID,
    repo: FromQuery[tuple[QueryName, ...]] = (),
    path_prefix: FromQuery[QueryName | None] = None,
) -> SearchOut:
    """The top `k` sentences; `lane` picks hybrid (fused and reranked), lexical or vector."""
    limits = services.settings.limits
    query = _required("q", q, limits.max_query_chars)
    if not 1 <= k <= limits.max_k:
        raise ValidationException(f"k must be between 1 and {limits.max_k}, got {k}")
    scope = access_of(request).restrict(_repositories(repo, limits.max_query_chars))
    prefix = _optional("path_prefix", path_prefix, limits.max_query_chars)
    hits = services.retriever.search(query, k, mode=lane, filters=Filters(scope, prefix))
    return SearchOut(
        query=query,
        lane=lane.value,
        hits=[SearchHitOut(**h.to_dict()) for h in hits],
    )


@get(
    "/v1/sentences/{sentence_id:int}",
    sync_to_thread=True,
    summary="A sentence among its neighbours",
    responses=problem_responses(401, 404, 503),
)
def sentence(
    request: AnyRequest, sentence_id: FromPath[int], services: NamedDependency[Services]
) -> SentenceOut:
    """The sentence's text, file, heading, lines and commit, with two sentences either side."""
    view = None
    if 0 < sentence_id <= MAX_ID:
        with services.connection() as conn:
            view = sentence_view(conn, sentence_id, access_of(request).repositories)
    if view is None:
        raise NotFoundException(f"no sentence {sentence_id}")
    return SentenceOut(
        id=view.id,
        text=view.text,
        repository=view.repository,
        path=view.path,
        document_id=view.document_id,
        ordinal=view.ordinal,
        heading=" > ".join(view.heading_path),
        heading_path=list(view.heading_path),
        line_start=view.line_start,
        line_end=view.line_end,
        git_commit=view.git_commit,
        embedded=view.embedded,
        before=[NeighbourOut(*n) for n in view.before],
        after=[NeighbourOut(*n) for n in view.after],
    )


@get(
    "/v1/documents",
    sync_to_thread=True,
    summary="A document's sentences with their embedding state",
    responses=problem_responses(400, 401, 403, 404, 503),
)
def document(
    request: AnyRequest,
    services: NamedDependency[Services],
    repo: QueryText,
    path: QueryText,
    offset: DocumentOffset = 0,
    limit: DocumentLimit = 500,
) -> DocumentOut:
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
    return DocumentOut(
        id=view.id,
        repository=view.repository,
        path=view.path,
        title=view.title,
        git_commit=view.git_commit,
        indexed_at=view.indexed_at,
        sentence_count=view.sentence_count,
        offset=offset,
        sentences=[
            DocumentSentenceOut(
                s.id,
                s.ordinal,
                s.kind,
                s.text,
                list(s.heading_path),
                s.line_start,
                s.line_end,
                s.embedding.value,
            )
            for s in view.sentences
        ],
    )


def _share(embedded: int, sentences: int) -> float:
    return round(embedded / sentences, 4) if sentences else 1.0


@get(
    "/v1/status",
    sync_to_thread=True,
    summary="Index and backlog figures per repository",
    responses=problem_responses(401, 503),
)
def status(request: AnyRequest, services: NamedDependency[Services]) -> StatusOut:
    """Documents, sentences, backlog size and oldest age, embedded share and last change per repository."""
    scope = access_of(request).repositories
    with services.connection() as conn:
        statuses = repository_status(conn, None if scope is None else list(scope))
    rows = [
        RepositoryStatusOut(
            repository=s.repository,
            documents=s.documents,
            sentences=s.sentences,
            backlog_size=s.backlog_size,
            backlog_oldest_age_seconds=s.backlog_oldest_age_seconds,
            failed_embeddings=s.failed_embeddings,
            embeddings=s.embeddings,
            embedded_share=_share(s.embeddings, s.sentences),
            embedded_per_second=s.embedded_per_second,
            last_change=s.last_change,
            ingest_latency_p50_seconds=s.ingest_latency_p50_seconds,
            ingest_latency_p95_seconds=s.ingest_latency_p95_seconds,
            backlog_eta_seconds=eta_seconds(s.backlog_size, s.embedded_per_second),
        )
        for s in statuses
    ]
    rate = round(sum(r.embedded_per_second for r in rows), 3)
    backlog = sum(r.backlog_size for r in rows)
    total = StatusTotalsOut(
        documents=sum(r.documents for r in rows),
        sentences=sum(r.sentences for r in rows),
        backlog_size=backlog,
        backlog_oldest_age_seconds=max((r.backlog_oldest_age_seconds for r in rows), default=0.0),
        failed_embeddings=sum(r.failed_embeddings for r in rows),
        embedded_share=_share(sum(r.embeddings for r in rows), sum(r.sentences for r in rows)),
        embedded_per_second=rate,
        backlog_eta_seconds=eta_seconds(backlog, rate),
    )
    return StatusOut(repositories=rows, total=total)


ROUTES: list[ControllerRouterHandler] = [ask, stored_answer, search, sentence, document, status]
