"""Held-out figures for citeline's cross-encoders, on any JSONL(.gz) files in the traindata format.

Entailment files (``premise, hypothesis, label``): 3-way accuracy and per-class F1; a file with no
``neutral`` rows (FEVER, RTE) is scored 2-way, entailed or not. Relevance files (``query, passage, label``):
MRR@10 per question, for the cross-encoder and, on the same candidate lists, for BM25 and for plain
bi-encoder cosine with all-MiniLM-L6-v2, so "better than the cheap options" is measured, not assumed.
A path may be a file, a folder or a glob (quoted); the files it names are pooled into one set.

    python -m training.evaluate --data ../shared/traindata        # the standard held-out sets
    python -m training.evaluate --nli my_pairs.jsonl --rel my_queries.jsonl.gz --entailment-model PATH
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import re
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from sentence_transformers import SentenceTransformer

from engine import crossencoders
from engine.crossencoders import EntailmentModel, RelevanceModel
from training.data import NLI_LABELS, NliRow, RelRow, load_nli, load_relevance
from training.loop import base_model_path
from training.metrics import accuracy_f1, mrr_at_k

__all__ = ["STANDARD_NLI", "STANDARD_REL", "bm25_scores", "main"]

STANDARD_NLI = (
    "nli/snli_devtest_esnli/snli_test.jsonl.gz",
    "nli/lingnli/val.jsonl.gz",
    "nli/anli_devtest/R?_dev.jsonl.gz",
    "nli/fever_nli_dev",
)
STANDARD_REL = ("relevance/wikiqa/test.jsonl.gz", "relevance/trecqa/test.jsonl.gz")
_TOKEN = re.compile(r"\w+")


def _expand(pattern: str) -> list[Path]:
    hits = sorted(glob.glob(pattern))
    if not hits:
        raise FileNotFoundError(pattern)
    return [Path(h) for h in hits]


def bm25_scores(
    query: str, passages: Sequence[str], df: Counter[str], n_docs: int, avg_len: float
) -> list[float]:
    """Okapi BM25 (k1=1.2, b=0.75) of each passage; document frequencies from the whole evaluated file."""
    q_terms = _TOKEN.findall(query.lower())
    out = []
    for passage in passages:
        terms = Counter(_TOKEN.findall(passage.lower()))
        length = sum(terms.values())
        score = 0.0
        for t in q_terms:
            tf = terms.get(t, 0)
            if tf:
                idf = math.log(1 + (n_docs - df[t] + 0.5) / (df[t] + 0.5))
                score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / avg_len))
        out.append(score)
    return out


def eval_nli(name: str, rows: list[NliRow], model: EntailmentModel) -> dict[str, object]:
    start = time.monotonic()
    scores = model.predict([(r.premise, r.hypothesis) for r in rows])
    secs = time.monotonic() - start
    pred = [NLI_LABELS[int(np.argmax([s.entailment, s.neutral, s.contradiction]))] for s in scores]
    gold = [r.label for r in rows]
    result: dict[str, object] = {"set": name, "rows": len(rows), "pairs_per_s": round(len(rows) / secs, 1)}
    if "neutral" in gold:
        acc, f1 = accuracy_f1(gold, pred, NLI_LABELS)
        result.update({"accuracy_3way": round(acc, 4), **{f"f1_{c}": round(v, 4) for c, v in f1.items()}})
    else:
        acc, f1 = accuracy_f1(
            ["entailed" if g == "entailment" else "not" for g in gold],
            ["entailed" if p == "entailment" else "not" for p in pred],
            ("entailed", "not"),
        )
        result.update({"accuracy_2way": round(acc, 4), **{f"f1_{c}": round(v, 4) for c, v in f1.items()}})
    return result


def eval_rel(
    name: str, rows: list[RelRow], model: RelevanceModel, bi: SentenceTransformer
) -> dict[str, object]:
    groups: dict[str, list[RelRow]] = {}
    for r in rows:
        groups.setdefault(r.group, []).append(r)
    docs = {r.passage for r in rows}
    df: Counter[str] = Counter(t for d in docs for t in set(_TOKEN.findall(d.lower())))
    avg_len = float(np.mean([len(_TOKEN.findall(d.lower())) for d in docs]))
    keys, labels, ce, bm, cos = [], [], [], [], []
    for key, items in groups.items():
        passages = [r.passage for r in items]
        keys += [key] * len(items)
        labels += [r.label for r in items]
        ce += model.score(items[0].query, passages)
        bm += bm25_scores(items[0].query, passages, df, len(docs), avg_len)
        emb = bi.encode([items[0].query, *passages], normalize_embeddings=True, convert_to_numpy=True)
        cos += (emb[1:] @ emb[0]).tolist()
    result: dict[str, object] = {"set": name, "rows": len(rows)}
    for label, scores in (("cross_encoder", ce), ("bm25", bm), ("bi_encoder_cosine", cos)):
        mrr, n = mrr_at_k(keys, labels, scores)
        result[f"mrr10_{label}"] = round(mrr, 4)
        result["questions"] = n
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, help="traindata/ folder: evaluate the standard held-out sets in it")
    ap.add_argument("--nli", nargs="*", default=[], help="entailment files, folders or quoted globs")
    ap.add_argument("--rel", nargs="*", default=[], help="relevance files, folders or quoted globs")
    ap.add_argument("--entailment-model", help="name or path; default: the shipped model")
    ap.add_argument("--relevance-model", help="name or path; default: the shipped model")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--json", type=Path, help="also write the results here")
    args = ap.parse_args()
    nli, rel = list(args.nli), list(args.rel)
    if args.data:
        nli += [str(args.data / p) for p in STANDARD_NLI]
        rel += [str(args.data / p) for p in STANDARD_REL]
    if not nli and not rel:
        ap.error("give --data or at least one --nli / --rel path")
    results = []
    if nli:
        nli_model = crossencoders.load_entailment(
            args.entailment_model, batch_size=args.batch_size, device="cpu"
        )
    for pattern in nli:
        rows = [r for f in _expand(pattern) for r in load_nli(f)]
        results.append(eval_nli(pattern, rows, nli_model))
        print(json.dumps(results[-1]), flush=True)
    if rel:
        rel_model = crossencoders.load_relevance(
            args.relevance_model, batch_size=args.batch_size, device="cpu"
        )
        bi = SentenceTransformer(str(base_model_path()), device="cpu", local_files_only=True)
    for pattern in rel:
        rows = [r for f in _expand(pattern) for r in load_relevance(f)]
        results.append(eval_rel(pattern, rows, rel_model, bi))
        print(json.dumps(results[-1]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
