"""Typed request and response bodies (msgspec Structs): they are the OpenAPI schema clients code against.

Response models mirror the stable JSON shapes of the CLI (`citeline search --json`, `citeline status --json`,
the engine's `Answer.to_dict()`), so one client can read both. Request models forbid unknown fields: a typo
in a filter name is a 400, not a silently unfiltered answer. A sentence and a document page are served as the
indexer's own records (`indexer.browse.SentenceView`, `DocumentView`), declared once there.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from api.contract import BodyName, BodyQuestion

__all__ = [
    "AnswerClauseOut",
    "AnswerOut",
    "AnswerSourceOut",
    "AskRequest",
    "FiltersIn",
    "HealthOut",
    "NearPassageOut",
    "ReadyOut",
    "RememberedOut",
    "RepositoryStatusOut",
    "SearchHitOut",
    "SearchOut",
    "SkippedFileOut",
    "StatusOut",
    "StatusTotalsOut",
    "ThresholdsOut",
]

BudgetName = Literal["low", "mid", "high"]


class FiltersIn(msgspec.Struct, forbid_unknown_fields=True):
    """Restrict an answer to repositories and a path prefix."""

    repositories: list[BodyName] | None = None
    path_prefix: BodyName | None = None


class AskRequest(msgspec.Struct, forbid_unknown_fields=True):
    """A question, how much work it may cost, and where to look."""

    question: BodyQuestion
    budget: BudgetName = "mid"
    filters: FiltersIn | None = None


class SentenceOut(msgspec.Struct, kw_only=True):
    """An indexed sentence as the API shows it: where it is and what it says (`engine.passages.source_dict`);
    declared once for a cited source and a near passage."""

    path: str
    line_start: int
    line_end: int
    text: str
    sentence_id: int | None = None
    document_id: int | None = None
    repository: str | None = None
    heading: str = ""
    embedded: bool | None = None
    git_commit: str | None = None
    kind: str = "sentence"
    """`sentence`, `heading`, `table_row` or `code` (a whole code block, its line breaks kept in `text`)."""


class AnswerSourceOut(SentenceOut, kw_only=True):
    """A cited sentence; `state` is set on stored answers (live, changed or deleted)."""

    state: Literal["live", "changed", "deleted"] | None = None
    current_line_start: int | None = None
    current_line_end: int | None = None
    link: str | None = None
    """The cited lines on the repository's forge at the cited commit; null when no forge is known."""


class RememberedOut(msgspec.Struct):
    """Where a remembered clause came from: the question the team accepted its sentence for."""

    question: str
    answer_id: str
    accepted_at: str


class AnswerClauseOut(msgspec.Struct):
    """One verified clause with its sources and the score of each verification stage."""

    clause: str
    confidence: float
    sources: list[AnswerSourceOut] = msgspec.field(default_factory=list)
    need: str | None = None
    verification: dict[str, float] = msgspec.field(default_factory=dict)
    conflicts_with: list[int] = msgspec.field(default_factory=list)
    round: int = 1
    remembered: RememberedOut | None = None
    """For a sentence the team accepted for an earlier question: that question, its answer and when."""
    chosen_by: str | None = None
    """`team` for a clause proposed from what the team accepted (`remembered`); null otherwise."""


class NearPassageOut(SentenceOut, kw_only=True):
    """A passage that came close to answering an answer with no verified clause, and why it was not used
    (`engine.passages`): not verified, never an answer. `stage` is null when no clause was drawn from it;
    `measure`, `score` and `threshold` say which score refused it and the value it had to reach (for
    `contradiction`, stay below)."""

    reason: str
    stage: str | None = None
    measure: str | None = None
    score: float | None = None
    threshold: float | None = None
    rating: float = 0.0
    link: str | None = None
    """The passage's lines on the repository's forge at its indexed commit; null when no forge is known."""
    context: SentenceOut | None = None
    """The unit before it that it cannot be read without, shown with it; null when it stands alone."""
    reason_kind: str | None = None
    """What happened to it (`engine.reasons.ReasonKind`): `not_read`, `not_chosen`, `below_floor`,
    `near_miss`, `not_entailed`, `not_verified` or `contradicted`; the CLI and the page put it in the same
    plain words."""
    rank: int | None = None
    """For one not read or not chosen: its place among the listed passages by rating (1: the best rated)."""


class AnswerOut(msgspec.Struct):
    """The engine's answer: clauses, the route and rounds taken, and its id in the answer store."""

    question: str
    status: Literal["answer", "insufficient", "fail"]
    id: str | None = None
    reason: str | None = None
    route: str | None = None
    budget: str | None = None
    filters: dict[str, Any] = msgspec.field(default_factory=dict)
    clauses: list[AnswerClauseOut] = msgspec.field(default_factory=list)
    notes: list[str] = msgspec.field(default_factory=list)
    trace: list[dict[str, Any]] = msgspec.field(default_factory=list)
    timings_ms: dict[str, float] = msgspec.field(default_factory=dict)
    cached: bool = False
    fresh: bool | None = None
    read_as: str | None = None
    nearest: list[NearPassageOut] = msgspec.field(default_factory=list)
    """Only for an answer with no verified clause: the passages that came closest, best first."""


class SearchHitOut(msgspec.Struct):
    """A retrieved sentence, as `citeline search --json` prints it."""

    sentence_id: int
    text: str
    repository: str
    path: str
    line_start: int
    line_end: int
    heading: str
    heading_path: list[str]
    score: float
    scores: dict[str, float]
    document_id: int
    git_commit: str | None
    embedded: bool
    lanes: list[str]
    lexical_stage: str | None
    kind: str = "sentence"
    intro_sentence_id: int | None = None
    link: str | None = None
    """The sentence's lines on the repository's forge at its indexed commit; null when no forge is known."""
    before: str | None = None
    """With `context=true`: the sentence before it in its document (null at the start)."""
    after: str | None = None
    """With `context=true`: the sentence after it in its document (null at the end)."""


class SearchOut(msgspec.Struct):
    """Search hits, best first."""

    query: str
    lane: str
    hits: list[SearchHitOut]


class RepositoryStatusOut(msgspec.Struct):
    """One repository's index and backlog figures."""

    repository: str
    documents: int
    sentences: int
    backlog_size: int
    backlog_oldest_age_seconds: float
    failed_embeddings: int
    embeddings: int
    embedded_share: float
    embedded_per_second: float
    last_change: str | None
    ingest_latency_p50_seconds: float | None
    ingest_latency_p95_seconds: float | None
    backlog_eta_seconds: float | None = None
    """Seconds until the backlog drains at the last minute's rate (0 when empty, null when nothing moves)."""
    skipped_files: int = 0
    """Files left at their previous version (or out of the index) because they could not be indexed."""
    replaced_files: int = 0
    """Files indexed with invalid UTF-8 read as U+FFFD: searchable, but their encoding needs fixing."""
    replaced_file_paths: list[str] = msgspec.field(default_factory=list)
    """The first 100 of them by path."""


class StatusTotalsOut(msgspec.Struct):
    """All visible repositories together."""

    documents: int
    sentences: int
    backlog_size: int
    backlog_oldest_age_seconds: float
    failed_embeddings: int
    embedded_share: float
    embedded_per_second: float = 0.0
    backlog_eta_seconds: float | None = None
    skipped_files: int = 0
    replaced_files: int = 0


class ThresholdsOut(msgspec.Struct):
    """The oldest backlog ages at which freshness warns (amber) and pages (red, `/readyz` 503), named as the
    configuration's `[thresholds]` keys are."""

    warn_backlog_age_seconds: float
    ready_max_backlog_age_seconds: float


class SkippedFileOut(msgspec.Struct):
    """A file left out of the index (or at its previous version), and why."""

    repository: str
    path: str
    reason: str
    detail: str = ""


class StatusOut(msgspec.Struct):
    """Per-repository figures and their totals, limited to what the caller's key may see, and the backlog
    age thresholds a reader should judge them by."""

    repositories: list[RepositoryStatusOut]
    total: StatusTotalsOut
    thresholds: ThresholdsOut | None = None
    skipped: list[SkippedFileOut] = msgspec.field(default_factory=list)
    """The skipped files themselves (the first 100 by repository and path); `skipped_files` counts them."""


class HealthOut(msgspec.Struct):
    """Liveness: the process answers."""

    status: Literal["ok"] = "ok"


class ReadyOut(msgspec.Struct):
    """Readiness: the database answers and the embedders keep up. The planner is reported, not required:
    with its endpoint down answers still come, from the extractive planner, so `planner_degraded` says why
    and readiness stays true."""

    ready: bool
    backlog_oldest_age_seconds: float
    max_backlog_age_seconds: float
    planner: str = "extractive"
    planner_degraded: str | None = None
