"""Would another signal choose the answer among the first retrieval better than the relevance model's rating?

    python bench/answer_choice.py DOCS_FAQ WORKDIR [--db db-default] [--embedder SPEC] [--role tune]
        [--limit N] [--model NAME=PATH ...]

WORKDIR is a `bench/docs_users.py --workdir` whose index `--db` is built with `--embedder` (the spec its
`--embedder` had: empty for the default, `citeline-docs` for `db-docs`). Each question of the role, the
user-worded rewrites and the mined questions (`faq` and `heading` rows), is searched as the engine's first
retrieval searches (the fused top 10), and the shipped relevance model rates each hit under its heading path,
as the extractive planner does (a hit only the lexical lane found has cosine 0). Then each choice rule picks
one hit, and the share of questions whose pick is the mined positive (gold) or a unit of its section is
counted: the rating alone (the planner's first-hop choice, before it looks within the section), fusion's order
alone, and the rating with fusion's rank or the vector lane's cosine added at a few weights. The first two
lines per set are the bound (gold in the top 10) and the baseline (the rating). Figures only; it asserts
nothing. Choose with `--role tune`. Each `--model NAME=PATH` (a relevance cross-encoder's folder) rates the
same heads as well, and its rules are printed under its name beside the shipped model's.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from docs_faq_pages import ROLES, load_rows
from docs_users import user_rows

from daemon.config import load_config
from engine.crossencoders import load_relevance
from engine.search import Filters, Retriever
from indexer.database import open_database
from indexer.embedder import load_embedding_model

FIRST_K = 10


@dataclass(frozen=True, slots=True)
class Head:
    """One question's first retrieval: per hit, whether it is gold or in gold's section, its rating and its
    vector cosine."""

    gold: list[bool]
    section: list[bool]
    rating: list[float]
    cosine: list[float]


Rule = Callable[[Head, int], float]


def _with_rank(weight: float) -> Rule:
    return lambda h, i: 10 * h.rating[i] + weight / (1 + i)


def _with_cosine(weight: float) -> Rule:
    return lambda h, i: 10 * h.rating[i] + weight * h.cosine[i]


def _rules() -> dict[str, Rule]:
    rules: dict[str, Rule] = {
        "rating (baseline)": lambda h, i: h.rating[i],
        "fusion's order": lambda h, i: -i,
    }
    rules |= {f"10 x rating + {w:g} / (1 + rank)": _with_rank(w) for w in (0.5, 2.0, 5.0)}
    rules |= {f"10 x rating + {w:g} x cosine": _with_cosine(w) for w in (2.0, 5.0, 10.0)}
    return rules


def _report(label: str, heads: list[Head], with_order: bool = True) -> None:
    """The bound, then each rule's picks; fusion's order (the same for every model) only with `with_order`."""
    n = len(heads)
    bound = sum(any(h.gold) for h in heads) / n
    print(f"{label}: {n} questions; gold in the top {FIRST_K}: {bound:.3f}")
    for name, rule in _rules().items():
        if name == "fusion's order" and not with_order:
            continue
        gold = section = 0
        for head in heads:
            if not head.gold:
                continue
            scores = [rule(head, i) for i in range(len(head.gold))]
            pick = scores.index(max(scores))
            gold += head.gold[pick]
            section += head.section[pick]
        print(f"  {name:34s} picks gold {gold / n:.3f}, gold's section {section / n:.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", type=Path)
    ap.add_argument("workdir", type=Path)
    ap.add_argument("--db", default="db-default")
    ap.add_argument("--embedder", default="")
    ap.add_argument("--role", default="tune")
    ap.add_argument("--limit", type=int, default=None, help="only the first N questions of each set")
    ap.add_argument("--model", action="append", default=[], help="NAME=PATH: another relevance model to rate")
    args = ap.parse_args()
    config = load_config()
    embedder = load_embedding_model(args.embedder, config.models.embedder_runtime)
    retriever = Retriever(open_database(None, args.workdir / args.db), embedder, None, config.retrieval)
    models = {"shipped": load_relevance(None)}
    models |= {name: load_relevance(path) for name, path in (spec.split("=", 1) for spec in args.model)}
    sets = {
        "users' words": user_rows(args.data, args.role, {"faq", "heading"}),
        "the docs' words": [
            (r, r.question) for r in load_rows(args.data, ROLES[args.role]) if r.kind in ("faq", "heading")
        ],
    }
    for label, asked in sets.items():
        heads: dict[str, list[Head]] = {name: [] for name in models}
        for row, text in asked[: args.limit]:
            hits = retriever.search(text, FIRST_K, filters=Filters(repositories=(row.name,)))
            gold = [row.is_positive(h.path, h.text) for h in hits]
            where = next((h.heading_path for h, g in zip(hits, gold, strict=True) if g), None)
            section = [h.path in row.paths and where is not None and h.heading_path == where for h in hits]
            cosine = [h.scores.get("vector", 0.0) for h in hits]
            for name, model in models.items():
                ratings = model.score(text, [h.headed_text for h in hits]) if hits else []
                heads[name].append(Head(gold, section, [float(r) for r in ratings], cosine))
        for name, rated in heads.items():
            shipped = name == "shipped"
            _report(label if shipped else f"{label} [{name}]", rated, with_order=shipped)


if __name__ == "__main__":
    main()
