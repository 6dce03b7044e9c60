"""What both training scripts share: building a mix from ``traindata/``, the command line, and the run.

A script names its sources, its evaluation-only sets and how its rows are read, paired, grouped and
capped; ``build`` then applies the same steps to every source (drop rows that touch an evaluation set or
repeat a pair, hold out a seeded share of groups, cap, count), and ``run`` trains, saves the fp16 folder and
writes ``training.json``. Everything stays a function of the seed, as the model cards promise.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from training.data import Source, group_hash_split, norm_key, sample_groups, select
from training.loop import LossFn, TrainConfig, load_base, save_fp16, seed_all, train

__all__ = ["Mix", "Trained", "arguments", "build", "capped", "run", "write_summary"]

R = TypeVar("R")
Evaluate = Callable[[PreTrainedModel, PreTrainedTokenizerBase], str]


@dataclass(frozen=True, slots=True)
class Mix(Generic[R]):
    """A training mix: its sources, the sets never trained on, and how its rows are read and grouped.

    ``sample`` caps one source's (train, validation) rows, given the cap that applies (None: no cap), the
    ``--limit`` (None: none) and the seed; ``positives``, when set, adds a count of positive training rows
    to the per-source counts. With ``smoke_validation``, a ``--limit`` run validates on only the first
    ``limit // 10`` held-out rows of each source (the counts still give the whole held-out size).
    """

    sources: tuple[Source, ...]
    eval_only: tuple[str, ...]
    load: Callable[[Path], list[R]]
    texts: Callable[[R], tuple[str, str]]
    split_group: Callable[[R], str]
    sample: Callable[[Source, list[R], list[R], int | None, int | None, int], tuple[list[R], list[R]]]
    usable: Callable[[R], bool] = lambda _row: True
    positives: Callable[[list[R]], int] | None = None
    smoke_validation: bool = False
    val_fraction: float = 0.025


def build(
    mix: Mix[R], data: Path, seed: int, limit: int | None, full: bool = False
) -> tuple[list[R], list[R], dict[str, dict[str, int]]]:
    """Training rows (repeats expanded), validation rows, and per-source row counts for the model card.

    ``full`` lifts the per-source caps; ``limit`` caps every source further, for a quick smoke run.
    """
    banned = {norm_key(t) for path in mix.eval_only for r in mix.load(data / path) for t in mix.texts(r)}
    train_rows: list[R] = []
    val_rows: list[R] = []
    counts: dict[str, dict[str, int]] = {}
    seen: set[tuple[str, str]] = set()
    for src in mix.sources:
        raw = [r for r in mix.load(data / src.path) if mix.usable(r)]
        kept = select(raw, mix.texts, banned, seen)
        fit, val = group_hash_split(kept, mix.split_group, mix.val_fraction, seed)
        fit, val = mix.sample(src, fit, val, None if full else src.cap, limit, seed)
        train_rows.extend(fit * src.repeats)
        val_rows.extend(val[: limit // 10] if mix.smoke_validation and limit is not None else val)
        counts[src.path] = {"rows": len(raw), "after_filter": len(kept), "train": len(fit)}
        if mix.positives is not None:
            counts[src.path]["positives"] = mix.positives(fit)
        counts[src.path].update(repeats=src.repeats, val=len(val))
        print(src.path, counts[src.path], flush=True)
    return train_rows, val_rows, counts


def capped(
    rows: list[R], group: Callable[[R], str], cap: int | None, limit: int | None, seed: int
) -> list[R]:
    """Whole groups up to ``cap`` rows, and to ``limit`` when one is given."""
    return sample_groups(rows, group, cap if limit is None else min(cap or limit, limit), seed)


def arguments(doc: str) -> argparse.ArgumentParser:
    """The flags both scripts take; a script adds its own."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="the traindata/ folder")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--limit", type=int, help="rows per source, for a quick smoke run only")
    ap.add_argument("--checkpoint", type=Path, help="resumable training state (not under --out: it is big)")
    ap.add_argument("--start", type=Path, help="go on training this saved cross-encoder, not a fresh head")
    ap.add_argument("--bf16", action="store_true", help="bfloat16 autocast (AMX or AVX512-BF16 CPUs, GPUs)")
    ap.add_argument(
        "--freeze-layers",
        type=int,
        default=0,
        help="keep the embeddings and this many lower encoder layers as they are (faster steps on a CPU)",
    )
    ap.add_argument(
        "--freeze-word-embeddings",
        action="store_true",
        help="keep the token embedding table as it is and train the rest (smaller weights to carry back)",
    )
    return ap


def use_bf16(asked: bool, device: str) -> bool:
    """``--bf16`` where it pays: on a CPU without native bfloat16 (AMX or AVX512-BF16) autocast emulates it,
    many times slower than float32, so such a CPU trains in float32 and says so."""
    if not asked or device != "cpu":
        return asked
    from indexer.embedder import has_native_bf16

    if has_native_bf16():
        return True
    print("--bf16 ignored: this CPU has no native bfloat16 (emulated, it is far slower); training in float32")
    return False


@dataclass(frozen=True, slots=True)
class Trained:
    """What a run leaves for the summary: the validation figures and the training's wall and CPU time."""

    validation: dict[str, float]
    wall_minutes: float
    cpu_minutes: float


def run(
    args: argparse.Namespace,
    cfg: TrainConfig,
    labels: Sequence[str] | None,
    pairs: Sequence[tuple[str, str]],
    targets: torch.Tensor,
    loss_fn: LossFn,
    evaluate: Callable[[PreTrainedModel, PreTrainedTokenizerBase, dict[str, float]], str],
    started: float,
    groups: Sequence[int] | None = None,
) -> Trained:
    """Train the base encoder with a fresh head for ``labels``, save it under ``args.out``; ``evaluate``
    fills the validation figures it is given and returns the line to print."""
    seed_all(cfg.seed)  # the fresh head's initial weights come from the seed too
    model, tok = load_base(labels, args.start)
    result: dict[str, float] = {}
    cpu_min = train(
        model, tok, pairs, targets, loss_fn, cfg, lambda m: evaluate(m, tok, result), args.checkpoint, groups
    )
    save_fp16(model, tok, args.out, cfg.max_length)
    return Trained(result, round((time.monotonic() - started) / 60, 1), round(cpu_min, 1))


def write_summary(
    out: Path,
    cfg: TrainConfig,
    counts: dict[str, dict[str, int]],
    rows: tuple[str, int],
    val_rows: int,
    trained: Trained,
    head: dict[str, Any] | None = None,
    tail: dict[str, Any] | None = None,
) -> None:
    """``training.json`` beside the weights (the config, ``head``, the per-source counts, the ``rows`` figure
    under its name, the validation figures and times, ``tail``), and the validation figures on stdout."""
    summary = {
        "config": asdict(cfg),
        **(head or {}),
        "sources": counts,
        rows[0]: rows[1],
        "val_rows": val_rows,
        "validation": trained.validation,
        "wall_minutes_last_session": trained.wall_minutes,
        "train_cpu_minutes": trained.cpu_minutes,
        **(tail or {}),
    }
    (out / "training.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary["validation"], indent=1), flush=True)
