"""MkDocs admonitions (`!!! note "Title"`, and the collapsible `??? tip` / `???+ tip`) as the prose they hold.

Python-Markdown's admonition extension, which MkDocs sites use everywhere, writes a box's body indented by
four spaces under its marker line. CommonMark reads that body as an indented code block, so a note's
sentences were indexed as code: never read as prose, never a sentence to cite. `unfold_admonitions`
rewrites the source before parsing: each marker line becomes blank (the box's type and title are its
label, as a custom container's fence line is) and its body loses the four spaces, so it parses as the
Markdown it is, nested boxes included. Only leading spaces go and no line is added or removed, so every
line still maps to the source. Fenced code is left alone, inside a box or not.
"""

from __future__ import annotations

import re

__all__ = ["unfold_admonitions"]

_MARKER_RE = re.compile(r"^(?P<indent> *)(?:!!!|\?\?\?\+?)[ \t]+[A-Za-z][\w-]*(?:[ \t].*)?$")
_FENCE_RE = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})")
_STEP = 4


def unfold_admonitions(source: str) -> str:
    """`source` with every admonition's marker line blank and its body dedented (see the module)."""
    if "!!!" not in source and "???" not in source:
        return source
    lines = source.split("\n")
    bodies: list[int] = []  # the body indent of each open box, outermost first
    fence = ""
    for number, line in enumerate(lines):
        if line.strip():
            indent = len(line) - len(line.lstrip(" "))
            while bodies and indent < bodies[-1]:
                bodies.pop()
        if bodies:
            line = line[min(len(bodies) * _STEP, len(line) - len(line.lstrip(" "))) :]
        opened = _FENCE_RE.match(line)
        if fence:
            if opened and opened.group("fence")[0] == fence[0] and len(opened.group("fence")) >= len(fence):
                fence = ""
        elif opened:
            fence = opened.group("fence")
        elif (marker := _MARKER_RE.match(line)) is not None:
            bodies.append((len(bodies) * _STEP) + len(marker.group("indent")) + _STEP)
            line = ""
        lines[number] = line
    return "\n".join(lines)
