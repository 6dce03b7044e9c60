"""Train citeline's relevance (reranking) cross-encoder from all-MiniLM-L6-v2 on CPU (~40 min, 2 cores).

Why this mix: SQuAD-style sets give sentence-level answers with hard negatives from the same paragraph,
Natural Questions gives paragraph-level answers with a BM25-top negative (citeline ranks chunks, so both
granularities matter), MultiRC adds multi-sentence evidence and TrecQA train/dev is answer-sentence selection
like the TrecQA test. Sampling keeps whole questions, so each positive trains against the negatives its set
carries. WikiQA (evaluation-only licence) and TrecQA test are never trained on: rows sharing a query or
passage with them are dropped, then a seeded 2.5% of queries is held out as validation.

    python -m training.train_relevance --data ../shared/traindata --out engine/weights/relevance
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict
from pathlib import Path

import torch
from transformers import PreTrainedModel

from training.data import RelRow, Source, group_hash_split, load_relevance, norm_key, sample_groups, select
from training.loop import TrainConfig, load_base, predict_logits, save_fp16, train
from training.metrics import mrr_at_k

__all__ = ["EVAL_ONLY", "MIX", "main"]

MIX = (
    Source("relevance/squad", cap=30_000),
    Source("relevance/nq", cap=9_000),
    Source("relevance/multirc", cap=15_000),
    Source("relevance/trecqa/train.jsonl.gz"),
    Source("relevance/trecqa/dev.jsonl.gz"),
)
EVAL_ONLY = ("relevance/wikiqa", "relevance/trecqa/test.jsonl.gz")
VAL_FRACTION = 0.025


def _query(row: RelRow) -> str:
    return norm_key(row.query)


def _group(row: RelRow) -> str:
    return row.group


def build(
    data: Path, seed: int, limit: int | None, full: bool = False
) -> tuple[list[RelRow], list[RelRow], dict[str, dict[str, int]]]:
    """Training rows, validation rows, and per-source row counts for the model card.

    ``full`` lifts the per-source caps (every kept row trains), the recipe for a GPU; validation stays the
    same size as with the caps, so the figures compare across recipes.
    """
    banned = {
        norm_key(t) for path in EVAL_ONLY for r in load_relevance(data / path) for t in (r.query, r.passage)
    }
    train_rows: list[RelRow] = []
    val_rows: list[RelRow] = []
    counts: dict[str, dict[str, int]] = {}
    seen: set[tuple[str, str]] = set()
    for src in MIX:
        raw = load_relevance(data / src.path)
        kept = select(raw, lambda r: (r.query, r.passage), banned, seen)
        fit, val = group_hash_split(kept, _query, VAL_FRACTION, seed)
        cap = None if full else src.cap
        fit = sample_groups(fit, _group, cap if limit is None else min(cap or limit, limit), seed)
        # validation keeps at most as many rows as 1/10 of the training cap: enough groups, little eval time
        val = sample_groups(val, _group, (src.cap or len(fit)) // 10 if limit is None else limit // 10, seed)
        train_rows.extend(fit * src.repeats)
        val_rows.extend(val)
        counts[src.path] = {
            "rows": len(raw),
            "after_filter": len(kept),
            "train": len(fit),
            "positives": sum(r.label for r in fit),
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
    ap.add_argument("--full", action="store_true", help="no per-source caps: every kept row trains (GPU)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--device", default="cpu", help="torch device, e.g. cuda")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--max-minutes", type=float, help="stop training after this long, then evaluate and save")
    args = ap.parse_args()
    cfg = TrainConfig(
        lr=5e-5,
        batch_size=args.batch_size,
        max_length=256,
        seed=args.seed,
        threads=args.threads,
        epochs=args.epochs,
        device=args.device,
        max_minutes=args.max_minutes,
    )
    t0 = time.monotonic()
    rows, val, counts = build(args.data, args.seed, args.limit, args.full)
    print(f"train rows {len(rows)} ({sum(r.label for r in rows)} relevant); val rows {len(val)}", flush=True)
    model, tok = load_base(None)
    val_pairs = [(r.query, r.passage) for r in val]
    result: dict[str, float] = {}

    def evaluate(m: PreTrainedModel) -> str:
        scores = predict_logits(m, tok, val_pairs, cfg.max_length)[:, 0]
        parts = []
        for name in [*sorted({r.source.split("/")[1] for r in val}), "all"]:
            idx = [i for i, r in enumerate(val) if name in ("all", r.source.split("/")[1])]
            mrr, n = mrr_at_k([val[i].group for i in idx], [val[i].label for i in idx], scores[idx].tolist())
            result[f"val_mrr10:{name}"] = mrr
            parts.append(f"{name}={mrr:.3f} ({n} q)")
        return "MRR@10 " + " ".join(parts)

    targets = torch.tensor([float(r.label) for r in rows])

    def bce(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.binary_cross_entropy_with_logits(logits[:, 0], y)

    cpu_min = train(
        model, tok, [(r.query, r.passage) for r in rows], targets, bce, cfg, evaluate, args.checkpoint
    )
    save_fp16(model, tok, args.out, cfg.max_length)
    summary = {
        "config": asdict(cfg),
        "full": args.full,
        "sources": counts,
        "train_rows": len(rows),
        "val_rows": len(val),
        "validation": result,
        "wall_minutes_last_session": round((time.monotonic() - t0) / 60, 1),
        "train_cpu_minutes": round(cpu_min, 1),
    }
    (args.out / "training.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary["validation"], indent=1), flush=True)


if __name__ == "__main__":
    main()
