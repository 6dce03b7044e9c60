"""Text rules for docs_faq rows: cutting a question's section from its page, and whether a unit's text is a
mined sentence or part of its paragraph. Shared by the training mix and the docs bench."""

from __future__ import annotations

import re

from training.data import norm_key

__all__ = ["cut_section", "in_paragraph", "same_key", "same_text"]

_ATX = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_BOLD = re.compile(r"^\s*(\*\*|__)(.+?)(\*\*|__)\s*$")


def cut_section(text: str, question: str) -> str | None:
    """`text` without the section whose heading (or bold line) is `question`: from that line to the next
    heading of the same or a higher level (for a bold line, to the next heading or bold line); None when
    the page has no such line outside code."""
    lines = text.split("\n")
    key = norm_key(question)
    fence = ""
    start, level = -1, 0
    end = len(lines)
    for i, line in enumerate(lines):
        opened = _FENCE.match(line)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = ""
            continue
        if opened:
            fence = opened.group(1)
            continue
        heading = _ATX.match(line)
        bold = _BOLD.match(line)
        if start < 0:
            if heading and norm_key(heading.group(2)) == key:
                start, level = i, len(heading.group(1))
            elif bold and norm_key(bold.group(2)) == key:
                start, level = i, 7
            continue
        if (heading and len(heading.group(1)) <= level) or (level == 7 and (heading or bold)):
            end = i
            break
    if start < 0:
        return None
    return "\n".join(lines[:start] + lines[end:])


def same_text(unit: str, mined: str) -> bool:
    """A unit holds the mined sentence: the same normalised text, or one starts the other (a mined positive
    may be two sentences, and the miner strips markup a little differently)."""
    return same_key(norm_key(unit), norm_key(mined))


def same_key(a: str, b: str) -> bool:
    """`same_text` on texts already normalised with `norm_key`."""
    if not a or not b:
        return False
    return a == b or (len(a) >= 12 and b.startswith(a)) or (len(b) >= 12 and a.startswith(b))


def in_paragraph(unit: str, context: str) -> bool:
    """The unit is a sentence of the mined paragraph (or the list it introduces)."""
    a = norm_key(unit)
    return len(a) >= 12 and a in norm_key(context)
