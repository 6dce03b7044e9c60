"""The gaps as a docs team exports them: CSV and a Markdown table, from their JSON shape (`Gap.to_dict`).

Rows keep the order they are given in (`engine.gaps`: by kind, "not in the docs" first). The CSV's first nine
columns are the original ones, in their order; the kind and the passage that shows it follow, so a reader of
the old columns reads the same file. The Markdown table names the kind in words beside the question.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from typing import Any

from engine.gap_kinds import KIND_LABELS

__all__ = ["gaps_csv", "gaps_markdown", "passage_line"]

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
    "kind",
    "passage_repository",
    "passage_path",
    "passage_line",
    "passage_text",
    "passage_rating",
    "passage_floor",
    "passage_accepted",
    "page_changed",
)


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _row(gap: Mapping[str, Any]) -> list[str]:
    closest = gap.get("closest") or {}
    passage = gap.get("passage") or {}
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
        _text(gap.get("kind")),
        _text(passage.get("repository")),
        _text(passage.get("path")),
        _text(passage.get("line_start")),
        _text(passage.get("text")),
        _text(passage.get("rating")),
        _text(passage.get("floor")),
        "yes" if passage.get("accepted") else ("no" if passage else ""),
        "yes" if gap.get("page_changed") else "no",
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


def passage_line(passage: Mapping[str, Any] | None) -> str:
    """A gap's passage in one line: where it is (`repo/path:line`), what it says, and its rating against the
    floor, or that the team accepted it; empty for none."""
    if not passage:
        return ""
    where = f"{passage.get('repository') or '?'}/{passage.get('path') or '?'}"
    if passage.get("line_start"):
        where += f":{passage['line_start']}"
    if passage.get("accepted"):
        note = "accepted by the team" + (", since changed" if passage.get("stale") else "")
    elif passage.get("rating") is not None:
        note = f"rated {round(passage['rating'], 4):g}, floor {round(passage.get('floor') or 0.0, 4):g}"
    else:
        note = "not rated"
    return f'{where} "{passage.get("text") or ""}" ({note})'


def gaps_markdown(gaps: Iterable[Mapping[str, Any]]) -> str:
    """Gaps in their JSON shape as a Markdown table for the docs team: how often asked, the question, its
    kind, its askings' kinds, when last asked, the closest section, the passage that shows the kind and the
    other wordings."""
    lines = [
        "| Asked | Question | Kind | Kinds | Last asked | Closest section | Passage | Other wordings |",
        "| ---: | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for gap in gaps:
        row = _row(gap)
        where = f"{row[5]}/{row[6]}" if row[6] else ""
        if row[7]:
            where += f" ({row[7]})"
        kind = KIND_LABELS.get(row[9], row[9]) + (" (page changed since)" if gap.get("page_changed") else "")
        others = " · ".join(w for w in gap["wordings"] if w != gap["question"])
        passage = passage_line(gap.get("passage"))
        cells = [row[0], _cell(row[1]), kind, row[2], row[4], _cell(where), _cell(passage), _cell(others)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
