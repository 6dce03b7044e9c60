"""Prometheus metrics: request latency per route, answer outcomes, and index figures read at scrape time.

Each app gets its own registry (tests build many apps; the process-global one would reject duplicates).
Index figures live in the database, written by the daemon, so they are read when Prometheus scrapes:
backlog size and oldest age per repository as gauges (what the alert rules use), the open gaps in the docs
(`engine.gaps`, over every repository: a count, no question), and ingest latency as a
real histogram fed by the samples written since the last scrape, each observed once, so its counters only
grow as Prometheus expects. A scrape that cannot reach the database reports `citeline_database_up 0`.

Scope: `render(repositories)` drops every sample whose `repository` label is outside the caller's key, for
every series, present and future (a new per-repository series needs no change here to be scoped).
Process-wide series carry no repository label and are shown to every key.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import psycopg_pool
from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from engine.answers import Answer
from engine.gaps import open_gap_count
from indexer.browse import ingest_samples_after
from indexer.database import Connection
from indexer.status import RepositoryStatus, repository_status

__all__ = ["REPOSITORY_LABEL", "ApiMetrics"]

REPOSITORY_LABEL = "repository"
"""The label that names a repository; a scoped key sees only samples whose value is in its scope."""

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_INGEST_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.5, 5.0, 15.0, 60.0)


class _IndexCollector(Collector):
    """Reads the index figures when Prometheus scrapes; never raises (a failed scrape would hide the rest)."""

    def __init__(self, connect: Callable[[], Any], ingest: Histogram) -> None:
        self._connect = connect
        self._ingest = ingest
        self._last_sample = 0
        self._lock = threading.Lock()

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily("citeline_database_up", "Whether the API reached the database at this scrape")
        try:
            with self._connect() as conn:
                statuses = repository_status(conn)
                self._observe_ingest(conn)
                gaps = open_gap_count(conn)
        except (psycopg.Error, psycopg_pool.PoolTimeout):
            up.add_metric([], 0.0)
            yield up
            yield from self._ingest.collect()
            return
        up.add_metric([], 1.0)
        yield up
        yield from self._ingest.collect()
        yield from _status_gauges(statuses)
        open_gaps = GaugeMetricFamily(
            "citeline_open_gaps", "Groups of questions the docs did not answer (gaps)"
        )
        open_gaps.add_metric([], float(gaps))
        yield open_gaps

    def _observe_ingest(self, conn: Connection) -> None:
        with self._lock:
            for sample in ingest_samples_after(conn, self._last_sample):
                self._ingest.labels(sample.repository).observe(sample.latency_seconds)
                self._last_sample = sample.id


def _status_gauges(statuses: list[RepositoryStatus]) -> Iterator[Metric]:
    specs: tuple[tuple[str, str, Callable[[RepositoryStatus], float]], ...] = (
        ("citeline_backlog_size", "Sentences waiting for the embedder", lambda s: s.backlog_size),
        (
            "citeline_backlog_oldest_age_seconds",
            "Age of the oldest sentence waiting for the embedder",
            lambda s: s.backlog_oldest_age_seconds,
        ),
        (
            "citeline_embedded_per_second",
            "Vectors written per second over the last minute",
            lambda s: s.embedded_per_second,
        ),
        ("citeline_failed_embeddings", "Sentences the embedder gave up on", lambda s: s.failed_embeddings),
        ("citeline_sentences", "Indexed sentences", lambda s: s.sentences),
        ("citeline_documents", "Indexed documents", lambda s: s.documents),
        (
            "citeline_skipped_files",
            "Files left at their previous version: unreadable or refused",
            lambda s: s.skipped_files,
        ),
        (
            "citeline_replaced_files",
            "Files indexed with invalid UTF-8 read as U+FFFD: their encoding needs fixing",
            lambda s: s.replaced_files,
        ),
    )
    for name, documentation, value in specs:
        family = GaugeMetricFamily(name, documentation, labels=[REPOSITORY_LABEL])
        for status in statuses:
            family.add_metric([status.repository], float(value(status)))
        yield family


class _ScopedView(Collector):
    """The registry's metrics without the samples of repositories outside `allowed`; families stay listed
    (with their HELP and TYPE) even when every sample is dropped, so dashboards see the series exist."""

    def __init__(self, registry: CollectorRegistry, allowed: frozenset[str]) -> None:
        self._registry = registry
        self._allowed = allowed

    def collect(self) -> Iterator[Metric]:
        for metric in self._registry.collect():
            kept = Metric(metric.name, metric.documentation, metric.type, metric.unit)
            kept.samples = [
                sample
                for sample in metric.samples
                if sample.labels.get(REPOSITORY_LABEL, None) is None
                or sample.labels[REPOSITORY_LABEL] in self._allowed
            ]
            yield kept


class ApiMetrics:
    """The app's registry and the metrics its handlers and middleware record."""

    __slots__ = ("_answers", "_clauses", "_feedback", "_latency", "_rejected", "registry")

    def __init__(self, connect: Callable[[], Any]) -> None:
        self.registry = CollectorRegistry()
        self._latency = Histogram(
            "citeline_http_request_duration_seconds",
            "HTTP request latency by route template, method and status",
            ["route", "method", "status"],
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self._answers = Counter(
            "citeline_answers",
            "Answers served by status and route",
            ["status", "route"],
            registry=self.registry,
        )
        self._clauses = Counter(
            "citeline_clauses_accepted", "Clauses emitted after verification", registry=self.registry
        )
        self._rejected = Counter(
            "citeline_clauses_rejected",
            "Candidate clauses rejected, by verification stage",
            ["stage"],
            registry=self.registry,
        )
        self._feedback = Counter(
            "citeline_feedback",
            "Feedback given on answers, by kind (helpful, unhelpful)",
            ["kind"],
            registry=self.registry,
        )
        ingest = Histogram(
            "citeline_ingest_latency_seconds",
            "File change seen by the watcher to change committed",
            [REPOSITORY_LABEL],
            buckets=_INGEST_BUCKETS,
            registry=None,  # collected by _IndexCollector right after it observes the new samples
        )
        self.registry.register(_IndexCollector(connect, ingest))

    def render(self, repositories: tuple[str, ...] | None = None) -> bytes:
        """The registry in the Prometheus text format; with `repositories`, only their series (and those
        without a repository label)."""
        if repositories is None:
            return generate_latest(self.registry)
        return generate_latest(_ScopedView(self.registry, frozenset(repositories)))

    def record_answer(self, answer: Answer) -> None:
        """Count one answer's outcome; a stored answer served again counts once more as an answer only.
        Rejected clauses are counted by the verification stage that refused them (`engine.answers.Stage`)."""
        self._answers.labels(answer.status.value, answer.route.value).inc()
        if answer.cached:
            return
        self._clauses.inc(len(answer.clauses))
        for round_trace in answer.trace:
            for rejected in round_trace.rejected:
                self._rejected.labels(rejected.stage.value if rejected.stage else "other").inc()

    def record_feedback(self, helpful: bool) -> None:
        """Count one feedback by its kind."""
        self._feedback.labels("helpful" if helpful else "unhelpful").inc()

    def middleware(self, app: ASGIApp) -> ASGIApp:
        """ASGI middleware timing every HTTP request under its route template (not its raw path)."""

        async def timed(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != ScopeType.HTTP:
                await app(scope, receive, send)
                return
            started = time.perf_counter()
            status = 500

            def observe() -> None:
                route = scope.get("path_template") or "unmatched"
                self._latency.labels(route, scope.get("method", ""), str(status)).observe(
                    time.perf_counter() - started
                )

            async def send_wrapper(message: Message) -> None:
                nonlocal status
                if message["type"] == "http.response.start":
                    status = message["status"]
                elif message["type"] == "http.response.body" and not message.get("more_body", False):
                    observe()  # before the last byte leaves, so a client's next scrape already counts it
                await send(message)

            await app(scope, receive, send_wrapper)

        return timed
