"""A collapsible block's title (`<details><summary>Title</summary> ... </details>`) in an HTML block.

Docs FAQs often hide each answer under its question this way (Docusaurus, MkDocs, GitHub): the summary is
the question and the Markdown after it, up to ``</details>``, is the answer. The parser reads a summary as a
heading half a level below the open section, closed again by its ``</details>``, so the answer is read under
its question as under any heading (`indexer.markdown.parse_markdown`).

The block is scanned once for the four tags, which are paired as they come (a summary is the text from an
opener to the next closer, a later opener replacing an unclosed one), and lines are counted as the scan
goes, so hostile input costs linear time.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass

__all__ = ["DetailsEvent", "DetailsTag", "details_events"]

_TAG_RE = re.compile(
    r"<(?P<open>details|summary)(?:\s[^<>]*)?>|</(?P<close>details|summary)\s*>", re.IGNORECASE
)


class DetailsTag(enum.Enum):
    """What a `DetailsEvent` is."""

    OPEN = "open"
    """A ``<details>`` opens."""
    SUMMARY = "summary"
    """A ``<summary>...</summary>`` titles the innermost open ``<details>``."""
    CLOSE = "close"
    """A ``</details>`` closes the innermost open one."""


@dataclass(frozen=True, slots=True)
class DetailsEvent:
    """One tag at `line`, counted from the HTML block's first line (0); a summary's raw title (its inline
    markup still in) in `title`, empty for the others."""

    tag: DetailsTag
    line: int
    title: str = ""


def details_events(html: str) -> list[DetailsEvent]:
    """The ``<details>`` openings, summaries and closings of one HTML block, in source order."""
    events: list[DetailsEvent] = []
    line, counted = 0, 0  # `line` is the line of offset `counted`
    opened: tuple[int, int] | None = None  # an unclosed <summary>: its text's offset and line

    def line_at(offset: int) -> int:
        nonlocal line, counted
        line += html.count("\n", counted, offset)
        counted = offset
        return line

    for tag in _TAG_RE.finditer(html):
        name = (tag.group("open") or tag.group("close")).lower()
        if tag.group("open"):
            if name == "summary":
                opened = (tag.end(), line_at(tag.end()))
            else:
                events.append(DetailsEvent(DetailsTag.OPEN, line_at(tag.start())))
        elif name == "summary":
            if opened is not None:
                events.append(DetailsEvent(DetailsTag.SUMMARY, opened[1], html[opened[0] : tag.start()]))
            opened = None
        else:
            events.append(DetailsEvent(DetailsTag.CLOSE, line_at(tag.start())))
    return events
