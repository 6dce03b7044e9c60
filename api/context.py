"""What handlers are given: a connection pool, the retriever, the answering callable, settings and metrics.

The answering callable is injected rather than built here so that `citeline serve` shares one engine (and
its models) with the rest of the process, and tests can pass a fake where the models cannot run.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from psycopg_pool import ConnectionPool

from api.metrics import ApiMetrics
from api.settings import ApiSettings
from engine.answers import Answer
from engine.search import Filters, Retriever
from indexer.database import Connection

__all__ = ["Answering", "PlannerHealth", "Services"]


class Answering(Protocol):
    """`engine.controller.answer` with its engine bound, as the daemon's assembly hands it over."""

    def __call__(self, question: str, budget: str, filters: Filters) -> Answer: ...


class PlannerHealth(Protocol):
    """An LLM planner as readiness reports it: its name, and why its endpoint does not answer (or None)."""

    @property
    def name(self) -> str: ...

    def probe(self) -> str | None: ...


@dataclass(slots=True)
class Services:
    """The per-app collaborators handlers receive as the `services` dependency."""

    pool: ConnectionPool[Connection]
    retriever: Retriever
    answering: Answering | None
    settings: ApiSettings
    metrics: ApiMetrics
    planner: PlannerHealth | None = None
    """The LLM planner, when one is configured (the extractive planner needs no endpoint)."""

    def connection(self) -> AbstractContextManager[Connection]:
        """A pooled autocommit connection, or PoolTimeout (answered 503) when the database is unreachable."""
        return self.pool.connection(timeout=self.settings.database_timeout_seconds)
