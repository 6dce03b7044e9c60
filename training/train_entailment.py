"""Train citeline's 3-way entailment cross-encoder from all-MiniLM-L6-v2 on CPU (about 1 h on 2 cores).

Why this mix: there is no SNLI train split in ``traindata/``, so the SNLI-domain rows we may use (SNLI dev,
counterfactual SNLI train/dev, Breaking NLI) are seen three times, while the MultiNLI-style (LingNLI train,
TaxiNLI) and fact-verification (VitaminC) rows, closer to citation checking, are seen once. Every row that
shares a premise or hypothesis with an evaluation set (SNLI test, LingNLI val, FEVER dev, ANLI, counterfactual
SNLI test, ConjNLI dev) is dropped first, then a seeded 2.5% of premises is held out as validation.

    python -m training.train_entailment --data ../shared/traindata --out engine/weights/entailment
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from transformers import PreTrainedModel

from training.data import (
    NLI_LABELS,
    NliRow,
    Source,
    group_hash_split,
    load_nli,
    norm_key,
    sample_groups,
    select,
)
from training.loop import TrainConfig, load_base, predict_logits, save_fp16, train
from training.metrics import accuracy_f1

__all__ = ["EVAL_ONLY", "MIX", "main"]

MIX = (
    Source("nli/snli_devtest_esnli/snli_dev.jsonl.gz", repeats=3),
    Source("nli/cad_snli/train.jsonl.gz", repeats=3),
    Source("nli/cad_snli/dev.jsonl.gz", repeats=3),
    Source("nli/breaking_nli", repeats=1),
    Source("nli/lingnli/train.jsonl.gz"),
    Source("nli/taxinli_mnli"),
    Source("nli/vitaminc_bigbench", cap=20_000),
    Source("nli/conjnli/adversarial_train_15k.jsonl.gz", cap=4_000),
    Source("nli/presupp_nli_bigbench"),
)
EVAL_ONLY = (
    "nli/snli_devtest_esnli/snli_test.jsonl.gz",
    "nli/lingnli/val.jsonl.gz",
    "nli/fever_nli_dev",
    "nli/anli_devtest",
    "nli/cad_snli/test.jsonl.gz",
    "nli/conjnli/conj_dev.jsonl.gz",
)
VAL_FRACTION = 0.025


def _premise(row: NliRow) -> str:
    return norm_key(row.premise)


def build(
    data: Path, seed: int, limit: int | None
) -> tuple[list[NliRow], list[NliRow], dict[str, dict[str, int]]]:
    """Training rows (repeats expanded), validation rows, and per-source row counts for the model card."""
    banned = {
        norm_key(t) for path in EVAL_ONLY for r in load_nli(data / path) for t in (r.premise, r.hypothesis)
    }
    train_rows: list[NliRow] = []
    val_rows: list[NliRow] = []
    counts: dict[str, dict[str, int]] = {}
    seen: set[tuple[str, str]] = set()
    for src in MIX:
        raw = [r for r in load_nli(data / src.path) if r.label in NLI_LABELS]
        kept = select(raw, lambda r: (r.premise, r.hypothesis), banned, seen)
        fit, val = group_hash_split(kept, _premise, VAL_FRACTION, seed)
        fit = sample_groups(fit, _premise, src.cap if limit is None else min(src.cap or limit, limit), seed)
        train_rows.extend(fit * src.repeats)
        val_rows.extend(val if limit is None else val[: limit // 10])
        counts[src.path] = {
            "rows": len(raw),
            "after_filter": len(kept),
            "train": len(fit),
            "repeats": src.repeats,
            "val": len(val),
        }
        print(src.path, counts[src.path], flush=True)
    return train_rows, val_rows, counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, required=True, help="the traindata/ folder")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--limit", type=int, help="rows per source, for a quick smoke run only")
    ap.add_argument("--checkpoint", type=Path, help="resumable training state (not under --out: it is big)")
    args = ap.parse_args()
    cfg = TrainConfig(lr=5e-5, max_length=128, seed=args.seed, threads=args.threads)
    t0 = time.monotonic()
    rows, val, counts = build(args.data, args.seed, args.limit)
    print(
        f"train rows (with repeats) {len(rows)} {Counter(r.label for r in rows)}; val rows {len(val)}",
        flush=True,
    )
    model, tok = load_base(NLI_LABELS)
    val_pairs = [(r.premise, r.hypothesis) for r in val]
    result: dict[str, float] = {}

    def evaluate(m: PreTrainedModel) -> str:
        pred = predict_logits(m, tok, val_pairs, cfg.max_length).argmax(1)
        names = [NLI_LABELS[i] for i in pred]
        acc, f1 = accuracy_f1([r.label for r in val], names, NLI_LABELS)
        result.update({"val_accuracy": acc, **{f"val_f1_{c}": v for c, v in f1.items()}})
        per_src = {
            s: float(np.mean([n == r.label for n, r in zip(names, val, strict=True) if r.source == s]))
            for s in sorted({r.source for r in val})
        }
        result.update({f"val_accuracy:{s}": v for s, v in per_src.items()})
        return f"accuracy {acc:.4f} " + " ".join(f"{s.split('/', 1)[1]}={v:.3f}" for s, v in per_src.items())

    targets = torch.tensor([NLI_LABELS.index(r.label) for r in rows])
    cpu_min = train(
        model,
        tok,
        [(r.premise, r.hypothesis) for r in rows],
        targets,
        torch.nn.functional.cross_entropy,
        cfg,
        evaluate,
        args.checkpoint,
    )
    save_fp16(model, tok, args.out, cfg.max_length)
    summary = {
        "config": asdict(cfg),
        "sources": counts,
        "train_rows_with_repeats": len(rows),
        "val_rows": len(val),
        "validation": result,
        "wall_minutes_last_session": round((time.monotonic() - t0) / 60, 1),
        "train_cpu_minutes": round(cpu_min, 1),
        "torch_threads": cfg.threads,
    }
    (args.out / "training.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary["validation"], indent=1), flush=True)


if __name__ == "__main__":
    main()
