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
time asked, its distinct wordings (most frequent first), its kinds, and its closest section.

Each gap says which kind it is (`engine.gap_kinds`): `not_in_docs` (no passage rated near the relevance
floor), `near_miss`, `missed` (a passage was rated as answering, or the team accepted one) or `unrated`, with
the passage that shows it (the best-rated one, or the one the team accepted); its closest section is that
passage's. Gaps are listed by kind in that order, then most asked first, then most recently asked.

A gap closes when its question is answered after it was last asked: a verified answer (status `answer`)
whose cited sentences are all still there, or a sentence the team accepted for it (live, not stale), whose
question joins the group by the rule above (with the answer's first source, or the accepted sentence, as its
section). A later failed asking opens it again; so does an edit to the closing answer's sources (the answer
no longer stands) or to the accepted sentence (it goes stale). A gap whose closest page changed after it was
last asked says so (`page_changed`): asking it again re-checks it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from engine.gap_evidence import closed_groups, read_askings
from engine.gap_exports import gaps_csv, gaps_markdown
from engine.gap_groups import Asked, GapConfig, Groups, grouped
from engine.gap_kinds import Passage, classify, kind_rank
from engine.inputs import InputError
from indexer.database import Connection
from indexer.gaps import LiveSentence, live_sentences

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
    kind: str = "unrated"
    """`not_in_docs`, `near_miss`, `missed` or `unrated` (`engine.gap_kinds`)."""
    passage: Passage | None = None
    """The passage that shows the kind: the best-rated one, or the one the team accepted."""
    page_changed: bool = False
    """Whether the best-rated passage's page changed (or it went) after the gap was last asked."""

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
            "kind": self.kind,
            "passage": None if self.passage is None else self.passage.to_dict(),
            "page_changed": self.page_changed,
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


def _ordered(gaps: list[Gap]) -> list[Gap]:
    return sorted(gaps, key=lambda g: (kind_rank(g.kind), -g.count, -g.last_asked.timestamp()))


def group_gaps(asked: Iterable[Asked], config: GapConfig | None = None) -> list[Gap]:
    """Group `asked` as the module says, their passages as stored (none is read back from the index, none
    closes a gap); listed by kind, then most asked first."""
    config = config or GapConfig()
    groups = grouped(asked, config)
    return _ordered([_gap(group, [], config, None) for group in groups.members])


def _gap(
    group: list[Asked],
    accepted: list[tuple[Passage, datetime]],
    config: GapConfig,
    now: Mapping[int, LiveSentence] | None,
) -> Gap:
    wordings = Counter(a.question.strip() for a in group)
    read = [(p, a.at) for a in group if a.kind != "stale" for p in a.passages]
    taken = [p for a in reversed(group) if a.kind == "stale" for p in a.passages]
    taken += [p for p, _ in sorted(accepted, key=lambda p_at: p_at[1], reverse=True)]
    verdict = classify(read, taken, any(a.rated for a in group), group[-1].at, config.near_margin, now)
    sections = Counter((a.repository, a.path, a.heading) for a in group if a.path)
    closest = None
    if verdict.passage is not None and verdict.passage.path:
        shown = verdict.passage
        closest = {"repository": shown.repository, "path": shown.path, "heading": shown.heading}
    elif sections:
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
        verdict.kind,
        verdict.passage,
        verdict.page_changed,
    )


def _open_groups(
    conn: Connection,
    scope: Collection[str] | None,
    only: Collection[str] | None,
    since: datetime | None,
    config: GapConfig,
) -> tuple[Groups, list[int]]:
    """The askings grouped, and the indexes of the groups still open (nothing closed them)."""
    groups = grouped(read_askings(conn, scope, only, since, config), config)
    if not groups.members:
        return groups, []
    earliest = min(members[0].at for members in groups.members)
    closed = closed_groups(conn, groups, scope, only, earliest)
    return groups, [i for i, shut in enumerate(closed) if not shut]


def _open_gaps(
    conn: Connection,
    scope: Collection[str] | None,
    only: Collection[str] | None,
    since: datetime | None,
    config: GapConfig,
) -> list[Gap]:
    groups, kept = _open_groups(conn, scope, only, since, config)
    if not kept:
        return []
    ids = {
        p.sentence_id
        for i in kept
        for p in (*(q for a in groups.members[i] for q in a.passages), *(q for q, _ in groups.accepted[i]))
        if p.sentence_id is not None
    }
    now = live_sentences(conn, ids)
    return _ordered([_gap(groups.members[i], groups.accepted[i], config, now) for i in kept])


def find_gaps(
    conn: Connection,
    scope: Collection[str] | None,
    only: Collection[str] | None = None,
    *,
    since: datetime | None = None,
    limit: int = 100,
    config: GapConfig | None = None,
) -> list[Gap]:
    """Up to `limit` open gap groups readable within `scope` (None: all) and tied to `only` (None: any), from
    askings at `since` or later, by kind and then most asked first; each passage read back as it is now.
    Marks stale the accepted answers gone stale on the way."""
    config = config or GapConfig()
    return _open_gaps(conn, scope, only, since, config)[:limit]


def open_gap_count(conn: Connection, config: GapConfig | None = None) -> int:
    """How many open gap groups there are now, over every repository (the `/metrics` gauge): counted without
    reading their passages back or classifying them."""
    return len(_open_groups(conn, None, None, None, config or GapConfig())[1])
