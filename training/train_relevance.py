"""Train citeline's relevance (reranking) cross-encoder from all-MiniLM-L6-v2 on CPU (or a GPU: --device).

Why this mix: SQuAD-style sets give sentence-level answers with hard negatives from the same paragraph,
Natural Questions gives paragraph-level answers with a BM25-top negative (citeline ranks chunks, so both
granularities matter), MultiRC adds multi-sentence evidence and TrecQA train/dev is answer-sentence selection
like the TrecQA test. Sampling keeps whole questions, so each positive trains against the negatives its set
carries. WikiQA (evaluation-only licence) and TrecQA test are never trained on: rows sharing a query or
passage with them are dropped, then a seeded 2.5% of queries is held out as validation.

    python -m training.train_relevance --data ../shared/traindata --out engine/weights/relevance

``--polar`` trains on the polar mix instead: yes/no questions made from NLI pairs (``training.polar``: a
premise that entails or contradicts the hypothesis answers its question, a neutral one does not) beside a
replay share of the factoid sets, meant to go on from the factoid model (``--start``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from training.data import RelRow, Source, load_relevance, norm_key, read_jsonl, sample_groups
from training.docs_recipe import DocsRecipe
from training.listwise import listwise_loss
from training.loop import TrainConfig, predict_logits
from training.metrics import mrr_at_k
from training.pairs import load as load_pairs
from training.pairs import save as save_pairs
from training.polar import load_polar
from training.recipe import Mix, arguments, build, capped, run, use_bf16, write_summary
from training.train_entailment import EVAL_ONLY as NLI_EVAL_ONLY

__all__ = ["DOCS_MIX", "DOCS_RECIPES", "EVAL_ONLY", "MIX", "POLAR_MIX", "main"]

MIX = (
    Source("relevance/squad", cap=30_000),
    Source("relevance/nq", cap=9_000),
    Source("relevance/multirc", cap=15_000),
    Source("relevance/trecqa/train.jsonl.gz"),
    Source("relevance/trecqa/dev.jsonl.gz"),
)
POLAR_MIX = (
    Source("nli/lingnli/train.jsonl.gz"),
    Source("nli/taxinli_mnli"),
    Source("relevance/squad", cap=12_000),
    Source("relevance/nq", cap=4_000),
    Source("relevance/multirc", cap=6_000),
    Source("relevance/trecqa/train.jsonl.gz"),
    Source("relevance/trecqa/dev.jsonl.gz"),
)
"""Polar questions from the NLI sets the entailment model trains on, and as many factoid rows again so the
model keeps what it knew."""
_DOCS_ROWS = (Source("docs_faq/pairs.jsonl.gz"), Source("docs_faq/heading_overflow.jsonl.gz", cap=3_000))
DOCS_MIX = (
    *_DOCS_ROWS,
    Source("relevance/squad", cap=1_500),
    Source("relevance/nq", cap=800),
    Source("relevance/multirc", cap=800),
    Source("relevance/trecqa/train.jsonl.gz", cap=800),
)
"""Docs questions from the training repositories of ``training.docs_split`` (read through citeline's own
parser, ``training.docs_mix``), topic headings capped so question rows are not drowned, and a replay share
of the factoid sets so the model keeps what it knew; meant to go on from the factoid model (``--start``)."""
WIDE_REPLAY = (
    Source("relevance/squad", cap=4_500),
    Source("relevance/nq", cap=2_400),
    Source("relevance/multirc", cap=2_400),
    Source("relevance/trecqa/train.jsonl.gz", cap=2_400),
)
"""A factoid replay of a third of the docs recipes' pairs instead of a sixth: factoid questions are
paraphrased, a mined docs question copies its heading."""
WIDER_REPLAY = (
    Source("relevance/squad", cap=13_500),
    Source("relevance/nq", cap=7_200),
    Source("relevance/multirc", cap=7_200),
    Source("relevance/trecqa/train.jsonl.gz"),
)
"""The wide replay about three times over (all of TrecQA train), beside every docs question row and ten
times the topic headings: the docs6 mix at the scale a lent GPU trains in minutes (``docs6x``)."""
JUDGED_MORE = Path(__file__).resolve().parent / "data" / "judged_more.jsonl.gz"
"""The engine's candidates for more training repositories' questions, judged as `judged_candidates` is
(`bench/candidates.py` wrote the candidates; training/README.md says who judged them and how they read)."""
DOCS_RECIPES = {
    "docs4": (DocsRecipe(), DOCS_MIX),
    "docs5": (DocsRecipe(other_pages=True), (*_DOCS_ROWS, *WIDE_REPLAY)),
    "docs6": (DocsRecipe(other_pages=True, headless_share=1 / 3), (*_DOCS_ROWS, *WIDE_REPLAY)),
    "docs7": (DocsRecipe(other_pages=True, headless_share=2 / 3), (*_DOCS_ROWS, *WIDE_REPLAY)),
    "docs4u": (DocsRecipe(rewrite_share=0.5), DOCS_MIX),
    "docs6u": (
        DocsRecipe(other_pages=True, headless_share=1 / 3, rewrite_share=0.5),
        (*_DOCS_ROWS, *WIDE_REPLAY),
    ),
    "docs4uh": (DocsRecipe(rewrite_share=0.5, dense_misses=3), DOCS_MIX),
    "docs4w": (
        DocsRecipe(),
        (
            *DOCS_MIX,
            Source("docs_faq/users_written.jsonl.gz"),
            Source("docs_faq/users_written_overflow.jsonl.gz", cap=6_000),
        ),
    ),
    "docs4wr": (
        DocsRecipe(rewrite_share=0.5, reader_soft=True),
        (
            *DOCS_MIX,
            Source("docs_faq/users_written.jsonl.gz"),
            Source("docs_faq/users_written_overflow.jsonl.gz", cap=6_000),
        ),
    ),
    "docs6w": (
        DocsRecipe(other_pages=True, headless_share=1 / 3),
        (
            *_DOCS_ROWS,
            *WIDE_REPLAY,
            Source("docs_faq/users_written.jsonl.gz"),
            Source("docs_faq/users_written_overflow.jsonl.gz", cap=6_000),
        ),
    ),
    "qpairs": (
        DocsRecipe(question_pairs=True),
        (Source("docs_faq/users_written.jsonl.gz"), Source("docs_faq/users_written_overflow.jsonl.gz")),
    ),
    "qpairs_dense": (
        DocsRecipe(question_pairs=True, pairs_embedder="citeline-docs"),
        (Source("docs_faq/users_written.jsonl.gz"), Source("docs_faq/users_written_overflow.jsonl.gz")),
    ),
    "qpairs_wide": (
        DocsRecipe(question_pairs=True, pairs_same_page=4, pairs_other_pages=4),
        (Source("docs_faq/users_written.jsonl.gz"), Source("docs_faq/users_written_overflow.jsonl.gz")),
    ),
    "docs4j": (
        DocsRecipe(),
        (
            Source("docs_faq/judged_candidates.jsonl.gz"),
            Source(str(JUDGED_MORE)),
            Source("docs_faq/users_written.jsonl.gz", cap=4_000),
            Source("docs_faq/pairs.jsonl.gz", cap=4_000),
            Source("relevance/squad", cap=1_000),
            Source("relevance/nq", cap=500),
            Source("relevance/multirc", cap=500),
            Source("relevance/trecqa/train.jsonl.gz", cap=500),
        ),
    ),
    "docs6x": (
        DocsRecipe(other_pages=True, headless_share=1 / 3),
        (
            Source("docs_faq/pairs.jsonl.gz"),
            Source("docs_faq/heading_overflow.jsonl.gz", cap=30_000),
            *WIDER_REPLAY,
        ),
    ),
}
"""The docs mixes by name (``--docs-recipe``): docs4 made the shipped weights; docs5 to docs7 were measured
and not shipped (training/README.md). docs4u and docs6u are docs4 and docs6 with half the rows that have a
kept user-worded rewrite asked in it (``DocsRecipe.rewrite_share``); docs4uh adds the vector lane's near
misses to those (``DocsRecipe.dense_misses``), measured and not shipped either. docs4w is docs4 plus every
usable training row of the questions written in users' words (``training.docs_written``: three styles
against the mined answer's passages, and the row's near-miss question against its answer), and a capped
share of the overflow rows written the same way; it drops the 1.5B rewrites. docs6w is the answer check's
docs6 with the same written rows: their near-miss questions are what the check exists to refuse. docs4wr is
docs4w with half the mined rows that have a 1.5B rewrite asked in one, each answer trained towards the
reader's soft label for it (``training.reader_labels``): the rewrites down-weighted rather than dropped.
qpairs is not a relevance mix: question against question (``training.question_pairs``), the memory's matcher;
qpairs_dense reads the other pages' questions the docs embedder finds closest as its negatives; qpairs_wide
reads four of each kind of negative per row instead of two. docs4j is docs4 with the users' written rows and a
strong reader's judgement of the engine's own search top 10 for training questions (``training.judged``):
distilling that reader's choice among the sentences search found into the cross-encoder; the written and
mined rows and a small factoid share are capped replay, so a fine-tune from the shipped model (``--start``)
fits in about half an hour on two cores."""
EVAL_ONLY = ("relevance/wikiqa", "relevance/trecqa/test.jsonl.gz")
POLAR_EVAL_ONLY = (*EVAL_ONLY, *NLI_EVAL_ONLY)
"""The polar mix reads NLI files, so the entailment model's held-out sets are never trained on either."""


def _loader(docs: DocsRecipe) -> Callable[[Path], list[RelRow]]:
    def load(path: Path) -> list[RelRow]:
        """Relevance rows, polar-question rows from a set of NLI pairs, or docs rows from a docs_faq file
        (the training repositories only, as ``docs`` builds them), told apart by their fields."""
        files = (
            [path] if path.is_file() else sorted(p for p in path.iterdir() if p.suffix in (".jsonl", ".gz"))
        )
        first = next(read_jsonl(files[0]), {}) if files else {}
        if "hypothesis" in first:
            return load_polar(path)
        if "candidates" in first:
            from training.judged import load_judged

            return load_judged(path)
        if "usable" in first and docs.question_pairs:
            from training.question_pairs import load_question_pairs

            return load_question_pairs(
                path,
                embedder=docs.pairs_embedder,
                same_page=docs.pairs_same_page,
                other_pages=docs.pairs_other_pages,
            )
        if "usable" in first:
            from training.docs_written import load_written  # citeline's parser: only where the mix is built

            return load_written(path)
        if "positive" in first:
            from training.docs_mix import load_docs  # citeline's parser: only where the mix is built

            rewrites, reader = None, None
            if docs.reader_soft:
                from training.reader_labels import reader_rewrites

                rewrites, reader = reader_rewrites(path.parent)
            elif docs.rewrite_share:
                from training.embedder_data import REWRITES, read_rewrites

                rewrites = read_rewrites(REWRITES)
            return load_docs(path, recipe=docs, rewrites=rewrites, reader=reader)
        return load_relevance(path)

    return load


_load = _loader(DocsRecipe())


def _pair(row: RelRow) -> tuple[str, str]:
    return row.query, row.passage


def _query(row: RelRow) -> str:
    return norm_key(row.query)


def _group(row: RelRow) -> str:
    return row.group


def _sample(
    src: Source, fit: list[RelRow], val: list[RelRow], cap: int | None, limit: int | None, seed: int
) -> tuple[list[RelRow], list[RelRow]]:
    """Whole questions up to the cap (none with ``--full``); validation keeps at most as many rows as 1/10
    of the source's training cap, the same with or without ``--full`` so the figures compare across recipes:
    enough groups, little eval time."""
    fit = capped(fit, _group, cap, limit, seed)
    val = sample_groups(val, _group, (src.cap or len(fit)) // 10 if limit is None else limit // 10, seed)
    return fit, val


def _positives(rows: list[RelRow]) -> int:
    return sum(r.label for r in rows)


RECIPE = Mix(MIX, EVAL_ONLY, _load, _pair, _query, _sample, positives=_positives)


def _docs_recipe(name: str) -> Mix[RelRow]:
    docs, sources = DOCS_RECIPES[name]
    return Mix(sources, EVAL_ONLY, _loader(docs), _pair, _query, _sample, positives=_positives)


POLAR_RECIPE = Mix(POLAR_MIX, POLAR_EVAL_ONLY, _load, _pair, _query, _sample, positives=_positives)


_RUN_KEYS = ("start", "listwise", "listwise_uncertain")
"""What the summary's head says of the run rather than of its mix: not saved with a mix (`--save-pairs`), and
taken from the run that trains on one (`--pairs`)."""


def main() -> None:
    ap = arguments(__doc__)
    ap.add_argument("--full", action="store_true", help="no per-source caps: every kept row trains (GPU)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--device", default="cpu", help="torch device, e.g. cuda")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--max-minutes", type=float, help="stop training after this long, then evaluate and save")
    ap.add_argument("--polar", action="store_true", help="the polar mix (yes/no questions from NLI pairs)")
    ap.add_argument("--docs", action="store_true", help="the docs mix (docs_faq training repositories)")
    ap.add_argument("--docs-recipe", choices=sorted(DOCS_RECIPES), default="docs4", help="which docs mix")
    ap.add_argument("--lr", type=float, default=5e-5, help="peak learning rate (default 5e-5)")
    ap.add_argument(
        "--listwise",
        type=float,
        default=0.0,
        help="add this weight of the listwise loss (training.listwise); batches then hold whole questions",
    )
    ap.add_argument(
        "--listwise-uncertain",
        action="store_true",
        help="the listwise loss ranks the answers above their section's uncertain units too",
    )
    ap.add_argument(
        "--save-pairs", type=Path, help="build the mix, write it to this file (training.pairs), stop"
    )
    ap.add_argument("--pairs", type=Path, help="train on a mix --save-pairs wrote instead of building one")
    args = ap.parse_args()
    cfg = TrainConfig(
        lr=args.lr,
        batch_size=args.batch_size,
        max_length=256,
        seed=args.seed,
        threads=args.threads,
        epochs=args.epochs,
        device=args.device,
        max_minutes=args.max_minutes,
        bf16=use_bf16(args.bf16, args.device),
        freeze_layers=args.freeze_layers,
        freeze_word_embeddings=args.freeze_word_embeddings,
    )
    t0 = time.monotonic()
    head = {
        "full": args.full,
        "polar": args.polar,
        "docs": args.docs,
        "docs_recipe": args.docs_recipe if args.docs else None,
        "start": str(args.start) if args.start else None,
        "listwise": args.listwise or None,
        "listwise_uncertain": args.listwise_uncertain or None,
    }
    if args.pairs is not None:
        rows, val, counts, built = load_pairs(args.pairs)
        head = {**built, **{k: head[k] for k in _RUN_KEYS}, "pairs_file": args.pairs.name}
    else:
        recipe = POLAR_RECIPE if args.polar else _docs_recipe(args.docs_recipe) if args.docs else RECIPE
        rows, val, counts = build(recipe, args.data, args.seed, args.limit, args.full)
    if args.save_pairs is not None:
        save_pairs(args.save_pairs, rows, val, counts, {k: v for k, v in head.items() if k not in _RUN_KEYS})
        print(f"wrote {len(rows)} training and {len(val)} validation rows to {args.save_pairs}")
        return
    print(f"train rows {len(rows)} ({sum(r.label for r in rows)} relevant); val rows {len(val)}", flush=True)
    val_pairs = [(r.query, r.passage) for r in val]
    labels = np.array([r.label == 1 for r in val])

    def evaluate(m: PreTrainedModel, tok: PreTrainedTokenizerBase, result: dict[str, float]) -> str:
        scores = predict_logits(m, tok, val_pairs, cfg.max_length)[:, 0]
        parts = []
        # A polar source groups by premise: its MRR ranks the questions a passage answers above the others.
        for name in [*sorted({r.source.split("/")[1] for r in val}), "all"]:
            idx = [i for i, r in enumerate(val) if name in ("all", r.source.split("/")[1])]
            mrr, n = mrr_at_k([val[i].group for i in idx], [val[i].label for i in idx], scores[idx].tolist())
            accuracy = float(np.mean((scores[idx] > 0) == labels[idx])) if idx else 0.0
            result[f"val_mrr10:{name}"] = mrr
            result[f"val_accuracy:{name}"] = accuracy
            parts.append(f"{name}={mrr:.3f} ({n} q, accuracy {accuracy:.3f})")
        return "MRR@10 " + " ".join(parts)

    numbers = {g: n for n, g in enumerate(dict.fromkeys(r.group for r in rows))}
    groups = [numbers[r.group] for r in rows]
    targets = torch.tensor([[r.goal, float(g)] for r, g in zip(rows, groups, strict=True)])

    def loss(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        pointwise = torch.nn.functional.binary_cross_entropy_with_logits(logits[:, 0], y[:, 0])
        if not args.listwise:
            return pointwise
        return pointwise + args.listwise * listwise_loss(
            logits[:, 0], y[:, 0], y[:, 1], args.listwise_uncertain
        )

    pairs = [(r.query, r.passage) for r in rows]
    trained = run(args, cfg, None, pairs, targets, loss, evaluate, t0, groups if args.listwise else None)
    write_summary(args.out, cfg, counts, ("train_rows", len(rows)), len(val), trained, head=head)


if __name__ == "__main__":
    main()
