"""Helpers shared by the answer benchmarks (`hotpotqa.py`, `docs_qa.py`): word sets, percentiles, means,
the shipped cross-encoders when present, and a work directory that is either kept or temporary.

The benchmarks run as scripts (`python bench/NAME.py`), so this module is imported by its bare name.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from engine.crossencoders import (
    CrossEncoderPrecision,
    EntailmentModel,
    RelevanceModel,
    load_entailment,
    load_relevance,
)

__all__ = ["mean", "optional_models", "percentile", "words", "workspace"]

_WORD = re.compile(r"\w+")


def words(text: str) -> set[str]:
    """The lowercased word set of `text` (letters, digits, underscores of any script)."""
    return {w.lower() for w in _WORD.findall(text)}


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank `q` quantile (0..1) of `values`; NaN when there are none."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def mean(values: Sequence[float]) -> float:
    """The arithmetic mean; NaN when there are no values (printed as "nan", never a fake 0)."""
    return sum(values) / len(values) if values else float("nan")


def optional_models(
    precision: CrossEncoderPrecision = CrossEncoderPrecision.AUTO,
) -> tuple[EntailmentModel | None, RelevanceModel | None]:
    """The shipped entailment and relevance cross-encoders; a missing one is None and the run says so."""
    try:
        entailment: EntailmentModel | None = load_entailment(precision=precision)
    except FileNotFoundError as exc:
        print(f"no entailment model ({exc}); only verbatim clauses verify")
        entailment = None
    try:
        relevance: RelevanceModel | None = load_relevance(precision=precision)
    except FileNotFoundError as exc:
        print(f"no relevance model ({exc}); retrieval is not reranked")
        relevance = None
    return entailment, relevance


@contextmanager
def workspace(workdir: Path | None) -> Iterator[Path]:
    """`workdir` (created, kept after the run for the next one) or a temporary directory removed after."""
    if workdir is not None:
        workdir.mkdir(parents=True, exist_ok=True)
        yield workdir
        return
    with tempfile.TemporaryDirectory() as scratch:
        yield Path(scratch)
