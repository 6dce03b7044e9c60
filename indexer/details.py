"""A collapsible block's title (`<details><summary>Title</summary> ... </details>`) in an HTML block.

Docs FAQs often hide each answer under its question this way (Docusaurus, MkDocs, GitHub): the summary is
the question and the Markdown after it, up to ``</details>``, is the answer. The parser reads a summary as a
heading one level below the open section, closed again by its ``</details>``, so the answer is read under
its question as under any heading (`indexer.markdown.parse_markdown`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["DetailsEvent", "details_events"]

_EVENT_RE = re.compile(
    r"<summary(?:\s[^<>]*)?>(?P<title>.*?)</summary\s*>|(?P<close></details\s*>)",
    re.IGNORECASE | re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class DetailsEvent:
    """A summary's raw title (its inline markup still in), or a closing ``</details>`` (`title` None), at
    `line`, counted from the HTML block's first line (0)."""

    line: int
    title: str | None


def details_events(html: str) -> list[DetailsEvent]:
    """The summaries and ``</details>`` closings of one HTML block, in source order."""
    return [
        DetailsEvent(html.count("\n", 0, m.start()), None if m.group("close") else m.group("title"))
        for m in _EVENT_RE.finditer(html)
    ]
