"""Helpers shared by the answer benchmarks (`hotpotqa.py`, `docs_qa.py`): word sets, percentiles, means,
the shipped cross-encoders when present, and a work directory that is either kept or temporary.

The benchmarks run as scripts (`python bench/NAME.py`), so this module is imported by its bare name.
"""

from __future__ import annotations

import argparse
import re
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from engine.config import EngineConfig
from engine.crossencoders import (
    CrossEncoderPrecision,
    EntailmentModel,
    RelevanceModel,
    load_entailment,
    load_relevance,
)
from engine.nearest import NEAREST

__all__ = [
    "NEAREST_FIGURE",
    "add_engine_arguments",
    "answer_check_of",
    "engine_settings",
    "mean",
    "nearest_shown",
    "optional_models",
    "percentile",
    "words",
    "workspace",
]

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


NEAREST_FIGURE = "insufficient, gold in top 10: in nearest"
"""The name of `nearest_shown`'s figure in a bench's report."""


def nearest_shown(records: Sequence[Mapping[str, Any]], shown: int = NEAREST) -> str:
    """Of the answerable questions answered `insufficient` whose gold passage search ranks in its top 10
    (`gold_rank`), how many list it among the answer's closest passages (`nearest_hit`), as "k/n"; in
    brackets, how many list it among the first `shown` (the CLI and the page fold the rest; records without
    `nearest_rank` leave this out), and how many a list in search order (its first `shown`) would have held.

    The issue's target is that every one of them does: an answer that falls short shows the passage search
    found."""
    held = [
        r
        for r in records
        if r["phase"] == "answerable" and r["status"] == "insufficient" and (r["gold_rank"] or 99) <= 10
    ]
    in_order = sum(r["gold_rank"] <= shown for r in held)
    first = ""
    if all("nearest_rank" in r for r in held):
        first = f"in the first {shown} {sum((r['nearest_rank'] or 99) <= shown for r in held)}; "
    return f"{sum(r['nearest_hit'] for r in held)}/{len(held)} ({first}search order {in_order})"


def add_engine_arguments(parser: argparse.ArgumentParser) -> None:
    """`--one-hop-patience`, `--first-hold`, `--min-answer-check`, `--min-relevance` and `--lookup-clauses`:
    engine settings a docs bench can change (see `engine_settings`)."""
    parser.add_argument(
        "--one-hop-patience",
        type=int,
        default=None,
        help="EngineConfig.one_hop_patience (0: no limit; default: the engine's)",
    )
    parser.add_argument(
        "--first-hold",
        type=int,
        default=None,
        help="EngineConfig.first_hold (and first_k, when larger; default: the engine's)",
    )
    parser.add_argument(
        "--min-answer-check",
        type=float,
        default=None,
        help="VerifyConfig.min_answer_check (0: the check refuses nothing; default: the engine's)",
    )
    parser.add_argument(
        "--min-relevance",
        type=float,
        default=None,
        help="VerifyConfig.min_relevance (a clause's best source's relevance floor; default: the engine's)",
    )
    parser.add_argument(
        "--lookup-clauses",
        type=int,
        default=None,
        help="EngineConfig.lookup_clauses (a lookup's close alternatives; default: the engine's)",
    )


def engine_settings(args: argparse.Namespace, base: EngineConfig | None = None) -> EngineConfig | None:
    """`base` (the engine's defaults when None) with what `add_engine_arguments`' flags set; `base` itself
    when they set nothing."""
    lookup = getattr(args, "lookup_clauses", None)
    flags = (args.one_hop_patience, args.first_hold, args.min_answer_check, args.min_relevance, lookup)
    if all(flag is None for flag in flags):
        return base
    settings = base or EngineConfig()
    if args.first_hold is not None:
        first_k = max(settings.first_k, args.first_hold)
        settings = replace(settings, first_hold=args.first_hold, first_k=first_k)
    if args.one_hop_patience is not None:
        settings = replace(settings, one_hop_patience=args.one_hop_patience)
    if lookup is not None:
        settings = replace(settings, lookup_clauses=lookup)
    if args.min_answer_check is not None:
        settings = replace(settings, verify=replace(settings.verify, min_answer_check=args.min_answer_check))
    if args.min_relevance is not None:
        settings = replace(settings, verify=replace(settings.verify, min_relevance=args.min_relevance))
    return settings


def answer_check_of(verification: Mapping[str, Any]) -> float:
    """A clause's answer-check rating (`verification.answer_check`); 1 where the check did not read it (a
    bridge's later hop, or no check loaded), which passes any floor."""
    value = verification.get("answer_check")
    return 1.0 if value is None else float(value)


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
