"""Parse stage: Markdown source -> searchable blocks with exact source lines.

Why the block structure comes from markdown-it-py: lists, block quotes, lazy continuation lines,
setext headings, tables, reference definitions and front matter all change which lines are prose,
and only a CommonMark parser gets them right.

Why the inline level does NOT use markdown-it's inline parser: see `indexer.inline`, which strips inline
markup with one compiled regex scanner instead.

Why HTML blocks are skipped: in the guide they are layout and comments (``<!-- toc -->``, ``<div>``),
not prose; Markdown inside ``<details>`` after a blank line is still parsed as Markdown. One thing in them
is kept: a ``<summary>`` titles the rest of its ``<details>`` as a heading would (`indexer.details`).
An MkDocs admonition's body is unfolded to prose before parsing (`indexer.admonitions`).

Why block text keeps ``"\\n"``: every newline in ``Block.text`` stands for exactly one source line break
(also inside dropped link targets and tags), so the segment stage can map any character offset back to
its real line by counting newlines. Whitespace is folded only when units are emitted.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.front_matter import front_matter_plugin

from indexer.admonitions import unfold_admonitions
from indexer.details import DetailsTag, details_events
from indexer.inline import inline_text
from indexer.options import CodeMode

__all__ = [
    "PARSER_VERSION",
    "Block",
    "CodeMode",
    "ParsedMarkdown",
    "TextUnit",
    "UnitKind",
    "inline_text",
    "parse_markdown",
]


class UnitKind(enum.Enum):
    """What a unit is, so search can rank and display each kind differently."""

    SENTENCE = "sentence"
    """One prose sentence from a paragraph, list item or block quote: the unit a citation points at."""
    HEADING = "heading"
    """A whole heading, kept unsplit because section titles are strong, short search targets."""
    TABLE_ROW = "table_row"
    """One table row with cells joined by `` | ``: rows are records, sentence splitting would mangle them."""
    CODE = "code"
    """One whole code block (``CodeMode.BLOCK``, the default): code has no sentences to split."""


@dataclass(frozen=True, slots=True)
class TextUnit:
    """One indexed, citable piece of text; the line range is what a citation links to.

    ``intro`` is set on a CODE unit introduced by a sentence: the index, in the same document's unit list,
    of that sentence (the last sentence of the paragraph right before the block, or of the block before a
    run of blocks); None for every other unit and for a block after a heading, a table or a list's end.
    """

    text: str
    kind: UnitKind
    heading_path: tuple[str, ...]
    line_start: int
    line_end: int
    intro: int | None = None


@dataclass(frozen=True, slots=True)
class Block:
    """A parsed block before segmentation, kept separate so parse and segment can be timed apart.

    ``text`` is plain text in which each ``"\\n"`` is one source line break after ``line_start``.
    ``code_spans`` are ``(start, end)`` offsets into ``text`` of inline code, which segmentation must
    never cut. ``heading_path`` of a heading holds its ancestors only, not the heading itself. Lines
    are those of the text (a setext underline is not text); a CODE block's include its fences.
    ``intro`` of a CODE block is the index (in the document's block list) of the paragraph that
    introduces it: the one right before it in the same container, or the one before a run of blocks.
    """

    kind: UnitKind
    text: str
    heading_path: tuple[str, ...]
    line_start: int
    line_end: int
    code_spans: tuple[tuple[int, int], ...] = ()
    intro: int | None = None


@dataclass(frozen=True, slots=True)
class ParsedMarkdown:
    """Parse stage output: document title plus blocks in source order."""

    title: str | None
    blocks: list[Block]


def _make_parser() -> MarkdownIt:
    md = MarkdownIt("commonmark").enable("table").use(front_matter_plugin)
    # Inline markup is stripped by `indexer.inline`, not markdown-it's inline parser; text_join only merges
    # inline children, which no longer exist.
    md.disable(["inline", "text_join"])
    return md


_MD = _make_parser()

_TITLE_RE = re.compile(r"^title:[ \t]*(.*?)[ \t]*$", re.MULTILINE)
_ATTRIBUTES_RE = re.compile(r"\s*\{:?\s*[#.][^{}]*\}\s*$")
"""A heading's trailing attribute list: "Is Vue reliable? {#is-vue-reliable}" (VitePress, Docusaurus, Hugo,
MkDocs' attr_list, kramdown's "{: .class}"): it sets the anchor, and is no part of the title."""
_CONTAINER_RE = re.compile(r"^[ \t]*:{3,}[^\n]*$", re.MULTILINE)
"""A custom container's fence line ("::: tip", ":::note Title", ":::"; VitePress, Docusaurus admonitions):
markup around the text, which a parser without the extension leaves in the paragraph. Its newline stays, so
the lines still map to the source."""
_ALERT_RE = re.compile(r"\A[ \t]*\[!(?:NOTE|TIP|IMPORTANT|WARNING|CAUTION)\][ \t]*", re.IGNORECASE)
"""A GitHub alert's marker opening a quoted paragraph ("> [!NOTE]"): it renders as the box's label, and is no
text of the note. Its newline stays, so the lines still map to the source."""
_IMAGE = r"!\[[^\]\n]*\](?:\([^()\n]*\)|\[[^\]\n]*\])?"
_FIGURE_RE = re.compile(rf"\A(?:\s*(?:\[\s*{_IMAGE}\s*\](?:\([^()\n]*\)|\[[^\]\n]*\])?|{_IMAGE}))+\s*\Z")
"""A paragraph of images alone ("![Architecture](arch.png)", a row of linked badges): a figure, whose alt
text labels it and states nothing, so it makes no unit (an image inside a sentence keeps its alt text)."""
_MAX_DETAILS = 4
"""A summary nested deeper than this many open ``<details>`` titles nothing: heading paths stay short."""
PARSER_VERSION = 8
"""Raised whenever the same file would be cut into other units or headings, so that an index built by an
older parser reads every file again once (`IndexOptions.parse_fingerprint`); the sentence diff keeps each
unchanged row and id."""


def _fold(text: str) -> str:
    return " ".join(text.split())


def _front_matter_title(yaml_text: str) -> str | None:
    """Reads only ``title:``, so no YAML library is needed for a field that is always a scalar."""
    m = _TITLE_RE.search(yaml_text)
    if m is None:
        return None
    title = m.group(1)
    if len(title) >= 2 and title[0] == title[-1] and title[0] in "\"'":
        title = title[1:-1]
    return _fold(title) or None


def _intro(prev: Token | None, blocks: list[Block]) -> int | None:
    """The block index of the paragraph introducing a code block that follows token `prev`, if any."""
    if prev is None or not blocks:
        return None
    if prev.type == "paragraph_close" and blocks[-1].kind is UnitKind.SENTENCE:
        return len(blocks) - 1
    if prev.type in ("fence", "code_block") and blocks[-1].kind is UnitKind.CODE:
        return blocks[-1].intro
    return None


def parse_markdown(source: str, *, code_mode: CodeMode = CodeMode.BLOCK) -> ParsedMarkdown:
    """Turn a Markdown document into blocks; accepts any string and never raises on odd Markdown."""
    env: dict[str, Any] = {}
    # a BOM would hide front matter; an admonition's body would read as indented code
    tokens = _MD.parse(unfold_admonitions(source.removeprefix("\ufeff")), env)
    refs: dict[str, Any] = env.get("references", {})
    blocks: list[Block] = []
    headings: list[tuple[float, str]] = []  # open section headings as (level, text), outermost first
    details: list[int] = []  # per open <details>: len(headings) when it opened
    quoted = 0  # open block quotes
    path: tuple[str, ...] = ()
    fm_title: str | None = None
    h1_title: str | None = None
    row: list[str] = []
    row_line = 0
    prev: Token | None = None
    bare = False
    for tok in tokens:
        ttype = tok.type
        if ttype == "inline" and tok.map is not None and prev is not None:
            first, last = tok.map[0] + 1, tok.map[1]
            paragraph = prev.type == "paragraph_open"
            content = tok.content
            if paragraph:
                content = _CONTAINER_RE.sub("", _ALERT_RE.sub("", content) if quoted else content)
            text, spans = inline_text(content, refs)
            if paragraph:
                # a container's fences or a figure alone: no unit, and no code block's intro
                bare = not text.strip() or _FIGURE_RE.match(content) is not None
                if bare:
                    prev = tok
                    continue
                blocks.append(Block(UnitKind.SENTENCE, text, path, first, last, spans))
            elif prev.type == "heading_open":
                text = _ATTRIBUTES_RE.sub("", text)
                level = int(prev.tag[1:])
                while headings and headings[-1][0] >= level:
                    headings.pop()
                blocks.append(Block(UnitKind.HEADING, text, tuple(h for _, h in headings), first, last))
                if title := _fold(text):
                    headings.append((level, title))
                    if level == 1 and h1_title is None:
                        h1_title = title
                path = tuple(h for _, h in headings)
            else:  # a table cell, the only other parent of an inline token
                row.append(_fold(text))
        elif ttype in ("blockquote_open", "blockquote_close"):
            quoted += 1 if ttype == "blockquote_open" else -1
        elif ttype == "tr_open":
            row, row_line = [], (tok.map[0] + 1 if tok.map else 0)
        elif ttype == "tr_close" and row_line and any(row):
            blocks.append(Block(UnitKind.TABLE_ROW, " | ".join(row), path, row_line, row_line))
        elif ttype in ("fence", "code_block") and code_mode is CodeMode.BLOCK and tok.map is not None:
            intro = None if bare else _intro(prev, blocks)
            blocks.append(Block(UnitKind.CODE, tok.content, path, tok.map[0] + 1, tok.map[1], (), intro))
        elif ttype == "front_matter":
            fm_title = _front_matter_title(tok.content)
        elif ttype == "html_block" and tok.map is not None:
            for event in details_events(tok.content):
                if event.tag is DetailsTag.OPEN:
                    details.append(len(headings))
                elif event.tag is DetailsTag.CLOSE:
                    if details:  # its summary's section ends
                        del headings[details.pop() :]
                elif 0 < len(details) <= _MAX_DETAILS and (
                    title := _fold(text := inline_text(event.title, refs)[0])
                ):
                    del headings[details[-1] :]  # a second summary of one <details> replaces the first
                    line = tok.map[0] + 1 + event.line
                    path = tuple(h for _, h in headings)
                    blocks.append(Block(UnitKind.HEADING, text, path, line, line + text.count("\n")))
                    # half a level below the open section: any heading inside the details nests under it
                    headings.append(((headings[-1][0] if headings else 0) + 0.5, title))
                path = tuple(h for _, h in headings)
        prev = tok
    return ParsedMarkdown(fm_title or h1_title, blocks)
