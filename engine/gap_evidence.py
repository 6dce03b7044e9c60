"""What the gaps are made of, read from the stores: the askings (`engine.gaps.Asked`) and what closes them.

Askings: stored answers that ended `insufficient` or `fail` (with their near passages, rated or not), feedback
that an answer was not helpful, and accepted sentences gone stale. Closers: verified answers whose cited
sentences are all still there, and live sentences the team accepted, each matched to the group its question
would join (`engine.gap_groups.Groups.best`); one that came after the group's last asking closes it.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from engine.gap_groups import Asked, GapConfig, Groups, question_words, section_of
from engine.gap_kinds import Passage, near_passages
from indexer.database import Connection
from indexer.feedback import AcceptedPair, accepted_pairs, feedback_rows, mark_stale
from indexer.gaps import ANSWERED, FAILED, live_sentences, stored_questions

__all__ = ["closed_groups", "read_askings"]


def read_askings(
    conn: Connection,
    scope: Collection[str] | None,
    only: Collection[str] | None,
    since: datetime | None,
    config: GapConfig,
) -> list[Asked]:
    """Every asking at `since` or later readable within `scope` and tied to `only` (`engine.gaps.find_gaps`),
    up to `config.max_rows` of each kind; marks stale the accepted sentences gone stale on the way."""
    narrowed = only if only is not None else scope
    found: list[Asked] = []
    for f in stored_questions(conn, FAILED, scope, only, since=since, limit=config.max_rows):
        read = f.status == "insufficient"  # a failed asking rated nothing, whatever it held
        passages, rated = near_passages(f.nearest, config.floor) if read else ((), False)
        found.append(
            Asked(
                f.question,
                f.status,
                f.asked_at,
                f.answer_id,
                f.repository,
                f.path,
                f.heading,
                None,
                passages,
                rated,
            )
        )
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
            p.question,
            "stale",
            p.accepted_at,
            p.answer_id,
            p.repository,
            p.path,
            p.heading,
            p.sentence_text,
            (_accepted(p, stale=True),),
        )
        for p in accepted_pairs(conn, narrowed, since=since, stale_only=True, limit=config.max_rows)
    ]
    return found


def _accepted(pair: AcceptedPair, *, stale: bool = False) -> Passage:
    return Passage(
        pair.sentence_id,
        pair.repository,
        pair.path,
        pair.heading,
        None,
        None,
        pair.sentence_text,
        accepted=True,
        stale=stale,
    )


def closed_groups(
    conn: Connection,
    groups: Groups,
    scope: Collection[str] | None,
    only: Collection[str] | None,
    since: datetime,
) -> list[bool]:
    """Which groups are closed (the module says when), noting each live accepted sentence that came before a
    group's last asking in `groups.accepted`."""
    last = [members[-1].at for members in groups.members]
    closed = [False] * len(last)
    limit = groups.config.max_rows
    answered = stored_questions(conn, ANSWERED, scope, only, since=since, limit=limit)
    live = live_sentences(conn, {i for a in answered for i in a.cited})
    for answer in answered:
        if answer.cited and all(i in live for i in answer.cited):
            index = groups.best(question_words(answer.question), section_of(answer.path, answer.heading))
            if index >= 0 and answer.asked_at > last[index]:
                closed[index] = True
    narrowed = only if only is not None else scope
    for pair in accepted_pairs(conn, narrowed, since=since):  # the team's own acts: all of them
        if not pair.helpful or pair.stale:
            continue
        index = groups.best(question_words(pair.question), section_of(pair.path, pair.heading))
        if index < 0:
            continue
        if pair.accepted_at > last[index]:
            closed[index] = True
        else:
            groups.accepted[index].append((_accepted(pair), pair.accepted_at))
    return closed
