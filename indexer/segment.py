"""Segment stage: parsed blocks -> sentence units with their own source line ranges.

Why blingfire inside a masking wrapper: chosen by ``bench/segmenters.py`` on 250 hand-checked
rustc-dev-guide paragraphs (``bench/data/rdg_sentences_gold.jsonl``) for accuracy, and on all prose
paragraphs of the guide for speed (CPU time, one core); README.md (Search) has the table.

pysbd over-splits code-like text (``?x``, ``#![..]``, ``.normalize``) and is far too slow for the budget;
syntok is accurate but much slower than blingfire; blingfire is the most precise plain segmenter and the
only one with speed to spare. Its misses are inline code it cannot see ("the `?` operator", a sentence
starting with lowercase `rustc`) and abbreviations ("e.g. This"), hence the mask (``mask_protected``). The
line rule (``_ends_line``) adds the guide's semantic line breaks. The mask and line rule were designed on
gold records 0-84 and the rule's extra splits over the whole guide were all checked by hand; the one
remaining miss has no punctuation at all (record 71).

Speed: parse and segment together meet the units/s budget on the guide, and markdown-it's block parser sets
the floor (figures in README.md, Search).
"""

from __future__ import annotations

import ctypes
import re
import threading

import blingfire

from indexer.markdown import Block, CodeMode, ParsedMarkdown, TextUnit, UnitKind, parse_markdown

__all__ = ["markdown_units", "mask_protected", "sentence_spans", "split_sentences"]

# Abbreviations whose final period is never a sentence end in technical prose. "etc." is left out on
# purpose: in the guide it ends a sentence more often than not, and blingfire judges it from context.
_ABBREVIATIONS = frozenset(
    {"e.g.", "i.e.", "eg.", "ie.", "vs.", "cf.", "viz.", "approx.", "resp.", "al.", "a.k.a.", "w.r.t.", "re."}
)
_PERIOD_SPACE_RE = re.compile(r"\.\s")
# A boundary needs terminal punctuation, optional closers, then whitespace; texts without one are
# a single sentence, which spares the segmenter call for most list items.
_CANDIDATE_RE = re.compile(r"[.!?…][\"'”’)\]]*\s")
# A line break plus the blanks after it, matched as one so scanning stays linear.
_LINE_BREAK_RE = re.compile(r"\n\s*")
_OPENERS = "([{\"'“‘"
_TERMINALS = ".!?…"
_STARTERS = "0123456789([{\"'“‘#*"
# Terminal punctuation at the end of a source line (not an ellipsis), optional closers, blanks.
_LINE_END_RE = re.compile(r"(?:(?<!\.)\.|[!?])[\"'”’)\]]*[ \t]*$")


class _Blingfire:
    """Direct ctypes call into blingfire with a reused output buffer.

    The package's ``text_to_sentences`` allocates a fresh zeroed buffer per call, which was a third of
    the segment stage's time. The buffer is per thread because the C call runs without the GIL.
    """

    __slots__ = ("_local",)

    def __init__(self) -> None:
        self._local = threading.local()

    def sentences(self, text: str) -> list[str]:
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates cannot reach the C library; keep the text whole
            return []
        size = 2 * len(data) + 16  # the package's own sizing rule for the output
        buf: ctypes.Array[ctypes.c_char] | None = getattr(self._local, "buf", None)
        if buf is None or len(buf) < size:
            buf = self._local.buf = ctypes.create_string_buffer(size)
        written: int = _LIB.TextToSentences(data, len(data), buf, len(buf))
        if written <= 0 or written > len(buf):
            return []
        return ctypes.string_at(buf, written - 1).decode("utf-8", "replace").split("\n")


_LIB = blingfire.blingfire
_SEGMENTER = _Blingfire()


def mask_protected(text: str, code_spans: tuple[tuple[int, int], ...] = ()) -> str:
    """Same-length copy of ``text`` that a segmenter cannot cut inside protected pieces.

    Same length means offsets need no mapping back. Inline code becomes ``Xxx…`` (a capitalized word,
    so a sentence may still start with code) and abbreviation periods become ``_``. Newlines become
    spaces because each one is only a line wrap. Bare URLs, versions, decimals and file names need no
    mask: none has whitespace after its dots, and blingfire never splits without whitespace.
    """
    masked = text.replace("\n", " ")
    if code_spans:
        pieces: list[str] = []
        done = 0
        for start, end in code_spans:
            pieces.append(masked[done:start])
            if end - start > 1:  # keep a final "." of the code: `Go to x.com.` Next ...
                last = masked[end - 1] if masked[end - 1] in _TERMINALS else "x"
                pieces.append("X" + "x" * (end - start - 2) + last)
            elif end > start:  # "X." would read as an initial and glue "`T`. Next" together
                pieces.append("x")
            done = end
        pieces.append(masked[done:])
        masked = "".join(pieces)
    dots = [
        m.start()
        for m in _PERIOD_SPACE_RE.finditer(masked)
        if masked[masked.rfind(" ", 0, m.start()) + 1 : m.start() + 1].lstrip(_OPENERS).lower()
        in _ABBREVIATIONS
    ]
    if dots:
        chars = list(masked)
        for dot in dots:
            chars[dot] = "_"
        masked = "".join(chars)
    return masked


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def sentence_spans(text: str, code_spans: tuple[tuple[int, int], ...] = ()) -> list[tuple[int, int]]:
    """``(start, end)`` offsets of the sentences in ``text``, trimmed of whitespace; never raises.

    ``text`` keeps its source newlines: a line that ends in terminal punctuation always ends a
    sentence ("semantic line breaks"), which catches what blingfire misses ("a const. Unambig",
    "case. #100051 shows", lowercase "this. it will").
    """
    masked = mask_protected(text, code_spans)
    if _CANDIDATE_RE.search(masked) is None:
        start, end = _trimmed(text, 0, len(text))
        return [(start, end)] if end > start else []
    spans = _segment(text, masked)
    return _split_at_line_ends(text, masked, spans) if "\n" in text else spans


def _segment(text: str, masked: str) -> list[tuple[int, int]]:
    sentences = _SEGMENTER.sentences(masked)
    spans: list[tuple[int, int]] = []
    cursor = 0
    for sentence in sentences:
        found = masked.find(sentence, cursor) if sentence else -1
        if found < 0:
            break
        cursor = found + len(sentence)
        spans.append(_trimmed(text, found, cursor))
    start, end = _trimmed(text, cursor, len(text))
    if end > start:  # text the segmenter dropped or altered stays one sentence
        spans.append((start, end))
    return spans


def _ends_line(masked: str, newline: int, following: int) -> bool:
    """Whether the source line ending at ``newline`` ends a sentence.

    A period does, even before a lowercase word (``rustc``, a sloppy "it"), unless it is part of an
    ellipsis or follows an initial ("Nicholas D."). "!" and "?" also close asides ("(just submit a
    PR!) and ..."), so they count only before what can start a sentence.
    """
    m = _LINE_END_RE.search(masked, max(0, newline - 8), newline)
    if m is None:
        return False
    mark = m.start()
    if masked[mark] == ".":
        word_start = masked.rfind(" ", 0, mark) + 1
        return not (mark - word_start == 1 and masked[word_start].isupper())
    return following < len(masked) and (masked[following].isupper() or masked[following] in _STARTERS)


def _split_at_line_ends(text: str, masked: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    forced = [m.end() for m in _LINE_BREAK_RE.finditer(text) if _ends_line(masked, m.start(), m.end())]
    if not forced:
        return spans
    out: list[tuple[int, int]] = []
    next_cut = 0  # both lists are sorted, so one pass keeps huge paragraphs linear
    for span_start, end in spans:
        start = span_start
        while next_cut < len(forced) and forced[next_cut] <= start:
            next_cut += 1
        while next_cut < len(forced) and forced[next_cut] < end:
            out.append(_trimmed(text, start, forced[next_cut]))
            start = forced[next_cut]
            next_cut += 1
        out.append((start, end))
    return out


def _fold(text: str) -> str:
    return " ".join(text.split())


def _block_units(block: Block, units: list[TextUnit], intro: int | None) -> None:
    if block.kind is UnitKind.CODE:
        text = block.text.strip("\n").rstrip()  # code keeps its lines and indentation: they are its syntax
        if text.strip():
            units.append(
                TextUnit(text, block.kind, block.heading_path, block.line_start, block.line_end, intro)
            )
        return
    if block.kind is not UnitKind.SENTENCE:
        text = _fold(block.text)
        if text:
            units.append(TextUnit(text, block.kind, block.heading_path, block.line_start, block.line_end))
        return
    text = block.text
    wrapped = "\n" in text
    line, counted = block.line_start, 0  # line of text[counted]; counting on from there stays linear
    for start, end in sentence_spans(text, block.code_spans):
        unit_text = _fold(text[start:end])
        if not unit_text:
            continue
        if wrapped:  # each newline in Block.text is one source line break
            line += text.count("\n", counted, start)
            line_end = line + text.count("\n", start, end)
            counted = start
        else:
            line_end = line
        units.append(TextUnit(unit_text, UnitKind.SENTENCE, block.heading_path, line, line_end))


def split_sentences(parsed: ParsedMarkdown) -> list[TextUnit]:
    """Units in source order; prose blocks become sentences, other kinds pass through whole.

    A code block's unit points (``TextUnit.intro``) at the last sentence of the paragraph that introduces
    it, when that paragraph made any unit.
    """
    units: list[TextUnit] = []
    last_unit: dict[int, int] = {}  # block index -> index of its last unit
    for index, block in enumerate(parsed.blocks):
        before = len(units)
        intro = last_unit.get(block.intro) if block.intro is not None else None
        _block_units(block, units, intro)
        if len(units) > before:
            last_unit[index] = len(units) - 1
    return units


def markdown_units(source: str, *, code_mode: CodeMode = CodeMode.BLOCK) -> list[TextUnit]:
    """Parse and segment in one call, for callers that do not time the stages apart."""
    return split_sentences(parse_markdown(source, code_mode=code_mode))
