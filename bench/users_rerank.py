"""Would reranking the fused head with a relevance model lift search recall on users' words?

    python bench/users_rerank.py DOCS_FAQ WORKDIR [--role tune] [--head 50] [--model LABEL=PATH ...]
        [--limit N]

WORKDIR is a `bench/docs_users.py --workdir` whose `db-default` index (the default embedder) is built. Each
rewrite of the role is searched as the engine searches, with no reranking (`rerank_candidates = 0`, the
default), for the fused top `--head`; then each model (the shipped relevance model as `shipped`, and every
`--model`) rates that head, and recall@10 of the mined positive is counted for heads of 10, 20, 30 and 50:
by the model's order alone, and fused again with fusion's order as `engine.search._rerank` does. Figures
only; it asserts nothing. Choose with `--role tune`.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from docs_users import user_rows

from daemon.config import load_config
from engine.crossencoders import load_relevance
from engine.search import Filters, Retriever
from indexer.database import open_database
from indexer.embedder import load_embedding_model

HEADS = (10, 20, 30, 50)


def _recall(orders: list[list[int]], golds: list[list[bool]]) -> float:
    return sum(any(g[i] for i in order[:10]) for order, g in zip(orders, golds, strict=True)) / len(golds)


def _by_score(scores: list[float]) -> list[int]:
    """Head positions, best rated first."""
    return sorted(range(len(scores)), key=lambda i: -scores[i])


def _fused_again(order: list[int], k: float, weight: float) -> list[int]:
    """Head positions (fusion's order) re-sorted by reciprocal ranks of the model's order and fusion's."""
    rank = {i: r for r, i in enumerate(order)}
    return sorted(order, key=lambda i: -(weight / (k + rank[i] + 1) + 1 / (k + i + 1)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", type=Path)
    ap.add_argument("workdir", type=Path)
    ap.add_argument("--role", default="tune")
    ap.add_argument("--head", type=int, default=50)
    ap.add_argument("--model", action="append", default=[], help="LABEL=PATH")
    ap.add_argument("--limit", type=int, default=None, help="only the first N rewrites (a smoke run)")
    args = ap.parse_args()
    config = load_config()
    retrieval = replace(config.retrieval, rerank_candidates=0)
    embedder = load_embedding_model("", config.models.embedder_runtime)
    retriever = Retriever(open_database(None, args.workdir / "db-default"), embedder, None, retrieval)
    texts, passages, golds = [], [], []
    for row, text in user_rows(args.data, args.role, {"faq", "heading"})[: args.limit]:
        hits = retriever.search(text, args.head, filters=Filters(repositories=(row.name,)))
        texts.append(text)
        passages.append([h.headed_text for h in hits])
        golds.append([row.is_positive(h.path, h.text) for h in hits])
    fused = [list(range(len(p))) for p in passages]
    print(f"{len(texts)} rewrites; fused recall@10 {_recall(fused, golds):.3f}", flush=True)
    for spec in ["shipped=", *args.model]:
        label, _, path = spec.partition("=")
        model = load_relevance(path or None)
        scores = [model.score(t, p) for t, p in zip(texts, passages, strict=True)]
        alone, again = [], []
        for head in HEADS:
            by_model = [_by_score(s[:head]) for s in scores]
            alone.append(_recall(by_model, golds))
            again.append(
                _recall([_fused_again(o, retrieval.rrf_k, retrieval.rerank_weight) for o in by_model], golds)
            )
        cells = "  ".join(f"head {h}: {a:.3f} / {b:.3f}" for h, a, b in zip(HEADS, alone, again, strict=True))
        print(f"{label}: recall@10 by the model / fused again: {cells}", flush=True)


if __name__ == "__main__":
    main()
