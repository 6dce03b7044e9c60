"""Train citeline's 3-way entailment cross-encoder from all-MiniLM-L6-v2 on CPU.

Why this mix: there is no SNLI train split in ``traindata/``, so the SNLI-domain rows we may use (SNLI dev,
counterfactual SNLI train/dev, Breaking NLI) are seen three times, while the MultiNLI-style (LingNLI train,
TaxiNLI) and fact-verification (VitaminC) rows, closer to citation checking, are seen once. Every row that
shares a premise or hypothesis with an evaluation set (SNLI test, LingNLI val, FEVER dev, ANLI, counterfactual
SNLI test, ConjNLI dev) is dropped first, then a seeded 2.5% of premises is held out as validation.

    python -m training.train_entailment --data ../shared/traindata --out engine/weights/entailment
"""

from __future__ import annotations

import time
from collections import Counter

import numpy as np
import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from training.data import NLI_LABELS, NliRow, Source, load_nli, norm_key
from training.loop import TrainConfig, predict_logits
from training.metrics import accuracy_f1
from training.recipe import Mix, arguments, build, capped, run, use_bf16, write_summary

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


def _pair(row: NliRow) -> tuple[str, str]:
    return row.premise, row.hypothesis


def _premise(row: NliRow) -> str:
    return norm_key(row.premise)


def _sample(
    src: Source, fit: list[NliRow], val: list[NliRow], cap: int | None, limit: int | None, seed: int
) -> tuple[list[NliRow], list[NliRow]]:
    """Whole premises up to the cap; every held-out row (a smoke run validates on a tenth of ``limit``)."""
    return capped(fit, _premise, cap, limit, seed), val


RECIPE = Mix(
    MIX,
    EVAL_ONLY,
    load_nli,
    _pair,
    _premise,
    _sample,
    usable=lambda r: r.label in NLI_LABELS,
    smoke_validation=True,
)


def main() -> None:
    args = arguments(__doc__).parse_args()
    cfg = TrainConfig(
        lr=5e-5,
        max_length=128,
        seed=args.seed,
        threads=args.threads,
        bf16=use_bf16(args.bf16, "cpu"),
        freeze_layers=args.freeze_layers,
    )
    t0 = time.monotonic()
    rows, val, counts = build(RECIPE, args.data, args.seed, args.limit)
    print(
        f"train rows (with repeats) {len(rows)} {Counter(r.label for r in rows)}; val rows {len(val)}",
        flush=True,
    )
    val_pairs = [(r.premise, r.hypothesis) for r in val]

    def evaluate(m: PreTrainedModel, tok: PreTrainedTokenizerBase, result: dict[str, float]) -> str:
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
    pairs = [(r.premise, r.hypothesis) for r in rows]
    trained = run(args, cfg, NLI_LABELS, pairs, targets, torch.nn.functional.cross_entropy, evaluate, t0)
    rows_figure = ("train_rows_with_repeats", len(rows))
    write_summary(args.out, cfg, counts, rows_figure, len(val), trained, tail={"torch_threads": cfg.threads})


if __name__ == "__main__":
    main()
