"""Index figures per repository: what `citeline status` prints, the API exposes and sd_notify reports.

Backlog figures are what operators alert on: the age of the oldest un-embedded sentence says whether the
embedders keep up. The embed rate counts the last minute's vectors and the ingest latency (change seen by
the watcher to change committed) the last 15 minutes' samples, so both describe now, not the process's life.
Skipped files (kept at their previous version because they could not be indexed) are counted per repository:
a count above zero means some document is stale or missing, which an operator should hear about. So are
files indexed with replacement characters (invalid UTF-8 read as U+FFFD), each named: they are searchable,
but their text is damaged until their encoding is fixed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from indexer.database import Connection

__all__ = [
    "NAMED_REPLACED",
    "RATE_WINDOW_SECONDS",
    "RepositoryStatus",
    "StatusTotals",
    "eta_seconds",
    "record_ingest",
    "repository_status",
    "status_line",
    "status_totals",
]

RATE_WINDOW_SECONDS = 60
LATENCY_WINDOW_SECONDS = 900
NAMED_REPLACED = 100
"""How many files read with replacement characters a repository's status names (all are counted)."""


@dataclass(frozen=True, slots=True)
class RepositoryStatus:
    """One repository's documents, sentences and embedding backlog."""

    repository: str
    root: str
    documents: int
    sentences: int
    backlog_size: int
    backlog_oldest_age_seconds: float
    failed_embeddings: int
    last_change: str | None
    embeddings: int = 0
    embedded_per_second: float = 0.0
    ingest_latency_p50_seconds: float | None = None
    ingest_latency_p95_seconds: float | None = None
    ingest_samples: int = 0
    skipped_files: int = 0
    replaced_files: int = 0
    replaced_file_paths: tuple[str, ...] = ()
    """The first `NAMED_REPLACED` of them, by path."""

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class StatusTotals:
    """All repositories together: sums, the oldest age, and the model the vectors come from."""

    documents: int
    sentences: int
    backlog_size: int
    backlog_oldest_age_seconds: float
    failed_embeddings: int
    embeddings: int
    embedded_per_second: float
    ingest_latency_p95_seconds: float | None
    embedding_model: str
    embedding_dimension: int
    skipped_files: int = 0
    replaced_files: int = 0

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


_STATUS_SQL = """
SELECT r.name, r.root,
       (SELECT count(*) FROM documents d WHERE d.repository_id = r.id),
       (SELECT count(*) FROM sentences s JOIN documents d ON d.id = s.document_id
        WHERE d.repository_id = r.id),
       coalesce(b.pending, 0), coalesce(extract(epoch FROM now() - b.oldest), 0), coalesce(b.failed, 0),
       (SELECT max(d.indexed_at) FROM documents d WHERE d.repository_id = r.id),
       coalesce(e.total, 0), coalesce(e.recent, 0),
       l.p50, l.p95, coalesce(l.n, 0),
       (SELECT count(*) FROM skipped_files k WHERE k.repository_id = r.id),
       (SELECT count(*) FROM documents d WHERE d.repository_id = r.id AND d.decode_problem IS NOT NULL),
       ARRAY(SELECT d.path FROM documents d WHERE d.repository_id = r.id AND d.decode_problem IS NOT NULL
             ORDER BY d.path LIMIT %(named)s)
FROM repositories r
LEFT JOIN LATERAL (
    SELECT count(*) FILTER (WHERE q.failed_at IS NULL) AS pending,
           min(q.enqueued_at) FILTER (WHERE q.failed_at IS NULL) AS oldest,
           count(*) FILTER (WHERE q.failed_at IS NOT NULL) AS failed
    FROM embedding_backlog q JOIN sentences s ON s.id = q.sentence_id JOIN documents d ON d.id = s.document_id
    WHERE d.repository_id = r.id
) b ON true
LEFT JOIN LATERAL (
    SELECT count(*) AS total,
           count(*) FILTER (WHERE v.embedded_at > now() - make_interval(secs => %(rate_window)s)) AS recent
    FROM sentence_embeddings v
    JOIN sentences s ON s.id = v.sentence_id JOIN documents d ON d.id = s.document_id
    WHERE d.repository_id = r.id
) e ON true
LEFT JOIN LATERAL (
    SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY i.latency_seconds) AS p50,
           percentile_cont(0.95) WITHIN GROUP (ORDER BY i.latency_seconds) AS p95, count(*) AS n
    FROM ingest_samples i
    WHERE i.repository_id = r.id AND i.committed_at > now() - make_interval(secs => %(latency_window)s)
) l ON true
WHERE %(names)s::text[] IS NULL OR r.name = ANY(%(names)s::text[])
ORDER BY r.name
"""


def repository_status(conn: Connection, names: list[str] | None = None) -> list[RepositoryStatus]:
    """Figures for every repository (or the named ones)."""
    rows = conn.execute(
        _STATUS_SQL,
        {
            "names": names,
            "rate_window": RATE_WINDOW_SECONDS,
            "latency_window": LATENCY_WINDOW_SECONDS,
            "named": NAMED_REPLACED,
        },
    ).fetchall()
    return [
        RepositoryStatus(
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            round(float(r[5]), 3),
            r[6],
            r[7].isoformat() if r[7] else None,
            embeddings=r[8],
            embedded_per_second=round(r[9] / RATE_WINDOW_SECONDS, 3),
            ingest_latency_p50_seconds=_rounded(r[10]),
            ingest_latency_p95_seconds=_rounded(r[11]),
            ingest_samples=r[12],
            skipped_files=r[13],
            replaced_files=r[14],
            replaced_file_paths=tuple(r[15]),
        )
        for r in rows
    ]


def eta_seconds(backlog_size: int, embedded_per_second: float) -> float | None:
    """Seconds until the backlog drains at the last minute's rate: 0 when empty, None when nothing moves."""
    if backlog_size == 0:
        return 0.0
    return round(backlog_size / embedded_per_second, 1) if embedded_per_second > 0 else None


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


def status_totals(conn: Connection, statuses: list[RepositoryStatus]) -> StatusTotals:
    """Totals over `statuses`; the latency p95 is the worst repository's (percentiles do not add up)."""
    model = conn.execute("SELECT name, dimension FROM embedding_model").fetchone()
    p95s = [s.ingest_latency_p95_seconds for s in statuses if s.ingest_latency_p95_seconds is not None]
    return StatusTotals(
        documents=sum(s.documents for s in statuses),
        sentences=sum(s.sentences for s in statuses),
        backlog_size=sum(s.backlog_size for s in statuses),
        backlog_oldest_age_seconds=max((s.backlog_oldest_age_seconds for s in statuses), default=0.0),
        failed_embeddings=sum(s.failed_embeddings for s in statuses),
        embeddings=sum(s.embeddings for s in statuses),
        embedded_per_second=round(sum(s.embedded_per_second for s in statuses), 3),
        ingest_latency_p95_seconds=max(p95s, default=None),
        embedding_model=model[0] if model else "",
        embedding_dimension=model[1] if model else 0,
        skipped_files=sum(s.skipped_files for s in statuses),
        replaced_files=sum(s.replaced_files for s in statuses),
    )


def record_ingest(conn: Connection, repository_id: int, latencies: list[float]) -> None:
    """Store change-seen-to-committed samples for one repository and forget those over an hour old."""
    with conn.transaction():
        conn.execute(
            "INSERT INTO ingest_samples (repository_id, latency_seconds) SELECT %s, unnest(%s::real[])",
            (repository_id, [max(0.0, s) for s in latencies]),
        )
        conn.execute(
            "DELETE FROM ingest_samples"
            " WHERE repository_id = %s AND committed_at < now() - interval '1 hour'",
            (repository_id,),
        )


def status_line(conn: Connection) -> str:
    """One line for sd_notify's STATUS and logs: the backlog figures operators watch."""
    totals = status_totals(conn, repository_status(conn))
    p95 = totals.ingest_latency_p95_seconds
    latency = "-" if p95 is None else f"{p95 * 1000:.0f} ms"
    return (
        f"backlog {totals.backlog_size} (oldest {totals.backlog_oldest_age_seconds:.0f}s), "
        f"{totals.embedded_per_second:.1f} embedded/s, {totals.failed_embeddings} failed, "
        f"ingest p95 {latency}"
    )
