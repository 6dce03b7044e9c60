"""Measure sentence segmenters and the parse/segment pipeline on the rustc-dev-guide.

Why this exists: the segmenter in ``indexer.segment`` was chosen by these numbers, and the indexer has
a hard speed budget (parse + segment >= 30,000 units/s on one core), so both are re-checkable.

    python bench/segmenters.py GUIDE_DIR GOLD              # print the accuracy/speed tables
    python bench/segmenters.py GUIDE_DIR --draft OUT.jsonl # sample paragraphs for a new gold set

Gold records (JSONL) hold a paragraph's plain text exactly as the parse stage produces it (one
newline per source line break), its inline-code spans, and the hand-checked sentences (newlines shown
as spaces). A draft is pre-split by citeline's own segmenter and MUST be corrected by hand before it
is used as gold. Plain segmenters see newlines as spaces; only citeline uses the line structure.
``bench/data/rdg_sentences_gold.jsonl`` is a frozen snapshot: 250 paragraphs (200 with a possible
internal boundary, 50 without) from rustc-dev-guide commit d7417e5, drafted with DRAFT_SEED by the
parser of that day (a later parser may sample other paragraphs) and then checked by hand.
Accuracy is paragraph exact match (same set of internal boundaries) and micro boundary P/R/F1.
Speed is sentences/s of each segmenter alone over every prose paragraph of GUIDE_DIR. All timings are
CPU time of this one process (one core), pipeline ones the best of several runs, so other load on a
shared machine does not count against the budget.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import blingfire
import pysbd
from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.front_matter import front_matter_plugin
from syntok import segmenter as syntok_segmenter

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from indexer.markdown import UnitKind, inline_text, parse_markdown
from indexer.segment import mask_protected, sentence_spans, split_sentences

__all__ = ["main"]

Spans = tuple[tuple[int, int], ...]
# A segmenter maps (text, code spans) to the start offsets of its sentences.
Segmenter = Callable[[str, Spans], list[int]]
DRAFT_SEED = 20240611
DRAFT_WITH_CANDIDATES = 200  # paragraphs with a possible internal boundary (". ", "? ", ...)
DRAFT_WITHOUT = 50
_FOOTNOTE_RE = re.compile(
    r"\[\^[^\]\s]+\]:?"
)  # paragraphs without one: checks that nothing splits where nothing should


def _align(text: str, sentences: list[str]) -> list[int]:
    """Start offsets of ``sentences`` in ``text``; segmenters that rewrite text lose those starts."""
    starts: list[int] = []
    cursor = 0
    for sentence in sentences:
        piece = sentence.strip()
        found = text.find(piece, cursor) if piece else -1
        if found >= 0:
            starts.append(found)
            cursor = found + len(piece)
    return starts


def _pysbd() -> Segmenter:
    seg = pysbd.Segmenter(language="en", clean=False)
    return lambda text, _spans: _align(_flat(text), [str(s) for s in seg.segment(_flat(text))])


def _syntok(text: str, _spans: Spans) -> list[int]:
    paragraphs = syntok_segmenter.analyze(_flat(text))
    return [sentence[0].offset for para in paragraphs for sentence in para if sentence]


def _blingfire(text: str, _spans: Spans) -> list[int]:
    return _align(_flat(text), blingfire.text_to_sentences(_flat(text)).split("\n"))


def _masked(inner: Segmenter) -> Segmenter:
    """citeline's masking (inline code, abbreviations) around any segmenter; offsets are unchanged."""
    return lambda text, spans: inner(mask_protected(text, spans), ())


def _citeline(text: str, spans: Spans) -> list[int]:
    return [start for start, _ in sentence_spans(text, spans)]


def segmenters() -> dict[str, Segmenter]:
    pysbd_seg = _pysbd()
    return {
        "pysbd": pysbd_seg,
        "syntok": _syntok,
        "blingfire": _blingfire,
        "pysbd+mask": _masked(pysbd_seg),
        "syntok+mask": _masked(_syntok),
        "blingfire+mask": _masked(_blingfire),
        "blingfire+mask+lines (ours)": _citeline,
    }


def _flat(text: str) -> str:
    """Plain segmenters get line wraps as spaces: a Markdown newline is not a sentence break."""
    return text.replace("\n", " ")


def guide_sources(guide: Path) -> Iterator[tuple[str, str]]:
    for path in sorted(guide.rglob("*.md")):
        if ".git" not in path.parts:
            yield str(path.relative_to(guide)), path.read_text(encoding="utf-8", errors="replace")


def prose_paragraphs(guide: Path) -> list[dict[str, object]]:
    """Every prose block of the guide in the gold-record shape."""
    out: list[dict[str, object]] = []
    for name, source in guide_sources(guide):
        for block in parse_markdown(source).blocks:
            if block.kind is UnitKind.SENTENCE and block.text.strip():
                out.append(
                    {
                        "id": f"{name}:{block.line_start}",
                        "text": block.text,
                        "code_spans": [list(span) for span in block.code_spans],
                    }
                )
    return out


def _spans(record: dict[str, object]) -> Spans:
    raw = record.get("code_spans", [])
    assert isinstance(raw, list)
    return tuple((int(s), int(e)) for s, e in raw)


def _internal(text: str, starts: list[int]) -> set[int]:
    """Boundaries inside the paragraph, normalised to the first non-space character."""
    first = len(text) - len(text.lstrip())
    result = set()
    for start in starts:
        while start < len(text) and text[start].isspace():
            start += 1
        if first < start < len(text):
            result.add(start)
    return result


def accuracy(gold: list[dict[str, object]], seg: Segmenter) -> tuple[float, float, float, float]:
    exact = tp = fp = fn = 0
    for record in gold:
        text = str(record["text"])
        sentences = record["sentences"]
        assert isinstance(sentences, list)
        want = _internal(text, _align(_flat(text), [str(s) for s in sentences]))
        got = _internal(text, seg(text, _spans(record)))
        exact += want == got
        tp += len(want & got)
        fp += len(got - want)
        fn += len(want - got)
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return exact / len(gold), precision, recall, f1


def speed(paragraphs: list[dict[str, object]], seg: Segmenter) -> float:
    inputs = [(str(p["text"]), _spans(p)) for p in paragraphs]
    start = time.process_time()
    count = sum(len(seg(text, spans)) for text, spans in inputs)
    return count / (time.process_time() - start)


def _reference_plain(children: list[Token]) -> str:
    parts: list[str] = []
    for child in children:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(_reference_plain(child.children or []))
    return "".join(parts)


def inline_fidelity(guide: Path) -> None:
    """How often citeline's regex inline stripper equals markdown-it's full inline parse (footnote
    markers, an mdBook extension both would treat differently, are removed first)."""
    reference = MarkdownIt("commonmark").enable("table").use(front_matter_plugin)
    same = total = 0
    for _, source in guide_sources(guide):
        env: dict[str, Any] = {}
        for token in reference.parse(_FOOTNOTE_RE.sub("", source), env):
            if token.type == "inline":
                want = " ".join(_reference_plain(token.children or []).split())
                got = " ".join(inline_text(token.content, env.get("references", {}))[0].split())
                same += want == got
                total += 1
    print(f"\ninline plain text equal to markdown-it's inline parser: {same}/{total}")


def pipeline(guide: Path, runs: int = 7) -> None:
    sources = [source for _, source in guide_sources(guide)]
    best_parse = best_segment = float("inf")
    units = 0
    for _ in range(runs):
        start = time.process_time()
        parsed = [parse_markdown(source) for source in sources]
        middle = time.process_time()
        units = sum(len(split_sentences(p)) for p in parsed)
        end = time.process_time()
        best_parse, best_segment = min(best_parse, middle - start), min(best_segment, end - middle)
    total = best_parse + best_segment
    print(f"\npipeline over {len(sources)} files, {units} units (CPU time, best of {runs}):")
    print(f"  parse   {best_parse:6.3f} s  {units / best_parse:9.0f} units/s")
    print(f"  segment {best_segment:6.3f} s  {units / best_segment:9.0f} units/s")
    print(f"  both    {total:6.3f} s  {units / total:9.0f} units/s  (budget >= 30000)")


def draft(guide: Path, out: Path) -> None:
    rng = random.Random(DRAFT_SEED)
    paragraphs = prose_paragraphs(guide)
    with_candidates: list[dict[str, object]] = []
    without: list[dict[str, object]] = []
    for p in paragraphs:
        text = _flat(str(p["text"])).rstrip()
        inner = text[:-1] if text else text
        has = any(mark + " " in inner for mark in ".!?")
        (with_candidates if has else without).append(p)
    picked = rng.sample(with_candidates, DRAFT_WITH_CANDIDATES) + rng.sample(without, DRAFT_WITHOUT)
    with out.open("w", encoding="utf-8") as fh:
        for p in picked:
            text = str(p["text"])
            p["sentences"] = [_flat(text)[s:e] for s, e in sentence_spans(text, _spans(p))]
            fh.write(json.dumps(p, ensure_ascii=False) + "\n")
    print(f"wrote {len(picked)} draft records to {out}; correct them by hand before use")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("guide", type=Path)
    parser.add_argument("gold", type=Path, nargs="?")
    parser.add_argument("--draft", type=Path, metavar="OUT")
    args = parser.parse_args(argv)
    if args.draft:
        draft(args.guide, args.draft)
        return
    if args.gold is None:
        parser.error("GOLD is required unless --draft is given")
    gold = [json.loads(line) for line in args.gold.read_text(encoding="utf-8").splitlines() if line.strip()]
    paragraphs = prose_paragraphs(args.guide)
    print(f"gold: {len(gold)} paragraphs; speed corpus: {len(paragraphs)} prose paragraphs\n")
    print(f"{'segmenter':<27} {'exact':>6} {'P':>6} {'R':>6} {'F1':>6} {'sent/s':>9}")
    for name, seg in segmenters().items():
        exact, precision, recall, f1 = accuracy(gold, seg)
        rate = speed(paragraphs, seg)
        print(f"{name:<27} {exact:6.3f} {precision:6.3f} {recall:6.3f} {f1:6.3f} {rate:9.0f}")
    inline_fidelity(args.guide)
    pipeline(args.guide)


if __name__ == "__main__":
    main()
