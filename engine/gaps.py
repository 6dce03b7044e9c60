"""The gaps in the docs: what the docs failed to answer, with different wordings of one question grouped.

Three kinds of evidence, each an asking of a question (`Asked`): a stored answer that ended `insufficient` or
`fail`; feedback that an answer was not helpful; an accepted answer gone stale (its sentence changed or was
deleted, `indexer.feedback.mark_stale`), so the team can accept the new sentence.

Grouping is deliberately simple, and stated here so that a reader can predict it: a question's words are its
content-word stems (`engine.words.stems`). Askings are taken oldest first; each joins the group whose first
wording shares the most words with it, measured as overlap (Dice: twice the shared words over the words of
both), when the overlap is at least `GapConfig.min_overlap`, or at least `GapConfig.same_section_overlap`
when both came closest to the same section (path and heading). Otherwise it starts a group. Groups are listed
most asked first, then most recently asked; each names its most frequent wording, its count, first and last
time asked, its distinct wordings (most frequent first), its kinds, and its closest section (the most
frequent one in the group).
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from engine.inputs import InputError
from engine.words import stems
from indexer.database import Connection
from indexer.feedback import accepted_pairs, feedback_rows, mark_stale
from indexer.gaps import failed_questions

__all__ = [
    "MAX_GAPS",
    "SINCE_PATTERN",
    "Asked",
    "Gap",
    "GapConfig",
    "find_gaps",
    "gaps_csv",
    "gaps_markdown",
    "group_gaps",
    "open_gap_count",
    "parse_since",
]

MAX_GAPS = 500
SINCE_PATTERN = r"^([0-9]{1,4}[mhdw]|[1-9][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])|)$"
"""What `since` accepts: a duration back from now, a date, or nothing (no limit)."""
_SINCE = re.compile(
    r"(?P<amount>[0-9]{1,4})(?P<unit>[mhdw])"
    r"|(?P<year>[1-9][0-9]{3})-(?P<month>0[1-9]|1[0-2])-(?P<day>0[1-9]|[12][0-9]|3[01])"
)
_UNITS = {"m": timedelta(minutes=1), "h": timedelta(hours=1), "d": timedelta(days=1), "w": timedelta(weeks=1)}


@dataclass(frozen=True, slots=True)
class GapConfig:
    """How askings are grouped, and how many are read."""

    min_overlap: float = 0.6
    same_section_overlap: float = 0.34
    max_wordings: int = 10
    max_rows: int = 5000
    """The most recent askings of each kind that are read (older ones are left out of the groups)."""


@dataclass(frozen=True, slots=True)
class Asked:
    """One asking of a question the docs did not answer: `kind` is `insufficient`, `fail`, `unhelpful` or
    `stale`; the closest section is where search came closest (or the accepted sentence, for `stale`)."""

    question: str
    kind: str
    at: datetime
    answer_id: str | None = None
    repository: str | None = None
    path: str | None = None
    heading: str | None = None
    detail: str | None = None
    """A comment given with the feedback, or the stale sentence's text."""


@dataclass(slots=True)
class Gap:
    """A group of askings of one question, in other words."""

    question: str
    count: int
    first_asked: datetime
    last_asked: datetime
    wordings: list[str]
    kinds: dict[str, int]
    closest: dict[str, str | None] | None
    answer_ids: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape of one entry of `GET /v1/gaps` and `citeline gaps --json`."""
        return {
            "question": self.question,
            "count": self.count,
            "first_asked": self.first_asked.isoformat(),
            "last_asked": self.last_asked.isoformat(),
            "wordings": list(self.wordings),
            "kinds": dict(self.kinds),
            "stale": self.kinds.get("stale", 0) > 0,
            "closest": dict(self.closest) if self.closest else None,
            "answer_ids": list(self.answer_ids),
            "details": list(self.details),
        }


def parse_since(text: str | None, now: datetime | None = None) -> datetime | None:
    """`30m`, `12h`, `7d` or `2w` (up to 4 digits) before `now`, or a date `YYYY-MM-DD` (UTC midnight; a day
    past the month's end runs on into the next month); None for none given. Anything else is an
    `InputError` saying what is accepted (`SINCE_PATTERN`, the API's schema, says the same)."""
    if text is None or not text.strip():
        return None
    value = text.strip()
    match = _SINCE.fullmatch(value)
    if match is None:
        raise InputError(f"since: {text!r} is neither a duration (30m, 12h, 7d, 2w) nor a date (YYYY-MM-DD)")
    if match["amount"] is not None:
        return (now or datetime.now(UTC)) - int(match["amount"]) * _UNITS[match["unit"]]
    first = datetime(int(match["year"]), int(match["month"]), 1, tzinfo=UTC)
    return first + timedelta(days=int(match["day"]) - 1)


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    return 2 * len(a & b) / (len(a) + len(b))


def _section(item: Asked) -> tuple[str, str] | None:
    return (item.path, item.heading or "") if item.path else None


def group_gaps(asked: Iterable[Asked], config: GapConfig | None = None) -> list[Gap]:
    """Group `asked` as the module says; most asked first."""
    config = config or GapConfig()
    seeds: list[tuple[frozenset[str], tuple[str, str] | None]] = []
    members: list[list[Asked]] = []
    by_word: dict[str, list[int]] = {}  # only groups sharing a word can be joined
    for item in sorted(asked, key=lambda a: a.at):
        words = frozenset(stems(item.question)) or frozenset({item.question.strip().lower()})
        section = _section(item)
        best, best_score = -1, 0.0
        for index in sorted({i for w in words for i in by_word.get(w, ())}):
            seed, seed_section = seeds[index]
            score = _overlap(words, seed)
            needed = (
                config.same_section_overlap if section and section == seed_section else config.min_overlap
            )
            if score >= needed and score > best_score:
                best, best_score = index, score
        if best < 0:
            for word in words:
                by_word.setdefault(word, []).append(len(seeds))
            seeds.append((words, section))
            members.append([item])
        else:
            members[best].append(item)
    gaps = [_gap(group, config) for group in members]
    return sorted(gaps, key=lambda g: (-g.count, -g.last_asked.timestamp()))


def _gap(group: list[Asked], config: GapConfig) -> Gap:
    wordings = Counter(a.question.strip() for a in group)
    sections = Counter((a.repository, a.path, a.heading) for a in group if a.path)
    closest = None
    if sections:
        repository, path, heading = sections.most_common(1)[0][0]
        closest = {"repository": repository, "path": path, "heading": heading or ""}
    answer_ids = list(dict.fromkeys(a.answer_id for a in reversed(group) if a.answer_id))
    details = list(dict.fromkeys(a.detail for a in reversed(group) if a.detail))
    return Gap(
        wordings.most_common(1)[0][0],
        len(group),
        group[0].at,
        group[-1].at,
        [w for w, _ in wordings.most_common(config.max_wordings)],
        dict(Counter(a.kind for a in group)),
        closest,
        answer_ids[:10],
        details[:10],
    )


def _asked(
    conn: Connection,
    scope: Collection[str] | None,
    only: Collection[str] | None,
    since: datetime | None,
    config: GapConfig,
) -> list[Asked]:
    narrowed = only if only is not None else scope
    found = [
        Asked(f.question, f.status, f.asked_at, f.answer_id, f.repository, f.path, f.heading)
        for f in failed_questions(conn, scope, only, since=since, limit=config.max_rows)
    ]
    found += [
        Asked(
            f.question,
            "unhelpful",
            f.created_at,
            f.answer_id,
            None,
            f.closest_path,
            f.closest_heading,
            f.comment,
        )
        for f in feedback_rows(conn, narrowed, since=since, helpful=False, limit=config.max_rows)
    ]
    mark_stale(conn)
    found += [
        Asked(
            p.question, "stale", p.accepted_at, p.answer_id, p.repository, p.path, p.heading, p.sentence_text
        )
        for p in accepted_pairs(conn, narrowed, since=since, stale_only=True, limit=config.max_rows)
    ]
    return found


def find_gaps(
    conn: Connection,
    scope: Collection[str] | None,
    only: Collection[str] | None = None,
    *,
    since: datetime | None = None,
    limit: int = 100,
    config: GapConfig | None = None,
) -> list[Gap]:
    """Up to `limit` gap groups readable within `scope` (None: all) and tied to `only` (None: any), from
    askings at `since` or later, most asked first. Marks stale the accepted answers gone stale on the way."""
    config = config or GapConfig()
    return group_gaps(_asked(conn, scope, only, since, config), config)[:limit]


def open_gap_count(conn: Connection, config: GapConfig | None = None) -> int:
    """How many gap groups there are now, over every repository (the `/metrics` gauge)."""
    config = config or GapConfig()
    return len(group_gaps(_asked(conn, None, None, None, config), config))


_COLUMNS = (
    "count",
    "question",
    "kinds",
    "first_asked",
    "last_asked",
    "repository",
    "path",
    "heading",
    "wordings",
)


def _row(gap: Mapping[str, Any]) -> list[str]:
    closest = gap.get("closest") or {}
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(gap["kinds"].items()))
    return [
        str(gap["count"]),
        gap["question"],
        kinds,
        gap["first_asked"],
        gap["last_asked"],
        closest.get("repository") or "",
        closest.get("path") or "",
        closest.get("heading") or "",
        " | ".join(gap["wordings"]),
    ]


def gaps_csv(gaps: Iterable[Mapping[str, Any]]) -> str:
    """Gaps in their JSON shape (`Gap.to_dict`) as CSV with a header row (`_COLUMNS`); wordings joined by
    " | "."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(_COLUMNS)
    writer.writerows(_row(g) for g in gaps)
    return out.getvalue()


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def gaps_markdown(gaps: Iterable[Mapping[str, Any]]) -> str:
    """Gaps in their JSON shape as a Markdown table for the docs team: how often asked, the question, its
    kinds, when last asked, the closest section and the other wordings."""
    lines = [
        "| Asked | Question | Kinds | Last asked | Closest section | Other wordings |",
        "| ---: | --- | --- | --- | --- | --- |",
    ]
    for gap in gaps:
        row = _row(gap)
        where = f"{row[5]}/{row[6]}" if row[6] else ""
        if row[7]:
            where += f" ({row[7]})"
        others = " · ".join(w for w in gap["wordings"] if w != gap["question"])
        lines.append(
            f"| {row[0]} | {_cell(row[1])} | {row[2]} | {row[4]} | {_cell(where)} | {_cell(others)} |"
        )
    return "\n".join(lines) + "\n"
