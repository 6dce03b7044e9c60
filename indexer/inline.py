"""Inline Markdown to plain text: one compiled regex scanner, not markdown-it's inline parser.

Why: on the rustc-dev-guide markdown-it's inline parser costs as much as the whole block parse, which alone
breaks the units/s budget (README.md, Search, has the figures). Indexing only needs plain text, so one
compiled regex scanner strips the inline markup instead. It follows CommonMark where it matters for text: code
spans bind first and keep their content verbatim, backslash escapes and entities are decoded, link/image
destinations and titles are dropped while their text/alt is kept, shortcut and full reference links are
resolved against the document's definitions (unknown ones stay literal, like CommonMark), HTML tags and
comments are removed, and emphasis markers are removed when they are flanking (so ``snake_case`` and ``a * b``
survive) without pairing them, so a lone ``*word`` loses its star where CommonMark would keep it.
``bench/segmenters.py`` compares it with markdown-it's own inline parser on the guide.

mdBook footnote markers (``[^note]``, ``[^note]:``) are dropped: mdBook renders them as superscripts, so
in plain text they are noise glued to the preceding word.
"""

from __future__ import annotations

import html
import re
from typing import Any

from markdown_it.common.utils import normalizeReference

__all__ = ["inline_text"]

# Code spans are capped at 2,000 characters: an opener without a closer makes the regex scan ahead,
# and uncapped that is quadratic on hostile input (1 MB of distinct backtick runs took 13 s).
_INLINE_RE = re.compile(
    r"""
    (?<!`)(?P<ticks>`+)(?!`)(?P<code>.{1,2000}?)(?<!`)(?P=ticks)(?!`)
  | \\(?P<esc>[!-/:-@\[-`{-~\n])
  | <(?P<auto>[A-Za-z][A-Za-z0-9.+-]{1,31}:[^\s<>]*
             | [\w.!\#$%&'*+/=?^`{|}~-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*)>
  | (?P<html><!--.*?-->|</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>)
  | (?P<footnote>\[\^[^\]\s]+\]:?)
  | (?P<bang>!?)\[(?P<label>(?:[^\[\]\\`]|\\.|`+[^`]*`+|\[(?:[^\[\]\\]|\\.)*\])*)\]
      (?: (?P<dest>\(\s*(?:<[^<>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)
                 (?:\s+(?:"[^"]*"|'[^']*'|\([^()]*\)))?\s*\))
        | \[(?P<ref>[^\[\]]*)\] )?
  | (?P<emph>\*+|_+)
  | (?P<ent>&(?:\#[0-9]{1,7}|\#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});)
    """,
    re.VERBOSE | re.DOTALL,
)
# Characters that can start inline markup; text without any of them is already plain.
_MARKUP_RE = re.compile(r"[`\\<\[!*_&]")


def _is_punct(ch: str) -> bool:
    return not ch.isalnum() and not ch.isspace()


def _is_emphasis(src: str, start: int, end: int) -> bool:
    """CommonMark flanking rules, so only runs that can open or close emphasis are removed."""
    before = src[start - 1] if start else " "
    after = src[end] if end < len(src) else " "
    left = not after.isspace() and (not _is_punct(after) or before.isspace() or _is_punct(before))
    right = not before.isspace() and (not _is_punct(before) or after.isspace() or _is_punct(after))
    if src[start] == "*":
        return left or right
    return (left and (not right or _is_punct(before))) or (right and (not left or _is_punct(after)))


def _emit_inline(
    src: str, refs: dict[str, Any], parts: list[str], spans: list[tuple[int, int]], out_len: int
) -> int:
    """Append the plain text of inline Markdown ``src`` to ``parts``; returns the new output length."""
    pos = 0  # src[:pos] has been emitted
    scan = 0
    # An HTML comment opened after the last "-->" cannot close; skipping those keeps hostile input
    # such as thousands of unclosed "<!--" linear instead of one scan to the end per opener.
    last_close = src.rfind("-->") if "<!--" in src else -1
    while (hit := _MARKUP_RE.search(src, scan)) is not None:
        # Matching only where markup can start is ~6x faster than searching with the full pattern,
        # whose leading look-behind defeats the regex engine's first-character scan.
        at = hit.start()
        m = None if at > last_close and src.startswith("<!--", at) else _INLINE_RE.match(src, at)
        if m is None:
            scan = at + 1
            continue
        start, end = m.span()
        if start > pos:
            parts.append(src[pos:start])
            out_len += start - pos
        pos = scan = end
        group = m.lastgroup
        if group == "code":
            code = m.group("code")
            if code[0] == code[-1] == " " and code.strip(" "):  # CommonMark: `` `x` `` is "`x`"
                code = code[1:-1]
            parts.append(code)
            spans.append((out_len, out_len + len(code)))
            out_len += len(code)
        elif group in ("esc", "auto", "ent"):
            piece = m.group(group)
            if group == "ent":
                piece = html.unescape(piece)
            parts.append(piece)
            out_len += len(piece)
        elif group == "emph":
            if not _is_emphasis(src, start, end):
                parts.append(m.group())
                out_len += end - start
        elif group in ("html", "footnote"):  # tags, comments, mdBook footnote labels: not text
            lines = m.group().count("\n")
            parts.append("\n" * lines)
            out_len += lines
        else:  # a bracket pair: link, image, reference link or literal brackets
            label, ref, dest = m.group("label"), m.group("ref"), m.group("dest")
            key = ref if ref and ref.strip() else label
            if dest is None and normalizeReference(key) not in refs:
                opener = 2 if m.group("bang") else 1
                parts.append(src[start : start + opener])
                out_len += opener
                pos = scan = start + opener
                continue
            out_len = _emit_inline(label, refs, parts, spans, out_len)
            lines = (dest or ref or "").count("\n")
            parts.append("\n" * lines)
            out_len += lines
    parts.append(src[pos:])
    return out_len + len(src) - pos


def inline_text(src: str, refs: dict[str, Any]) -> tuple[str, tuple[tuple[int, int], ...]]:
    """Plain text of one inline run plus the offsets of its code spans."""
    if _MARKUP_RE.search(src) is None:
        return src, ()
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    _emit_inline(src, refs, parts, spans, 0)
    return "".join(parts), tuple(spans)
