"""Dense recall of the docs_faq questions, read as the embedding queue reads the pages: the yardstick of an
embedder fine-tune, before the engine bench.

Every citable unit of a repository's pages is embedded as the queue embeds it, and each question (as mined,
or a user-worded rewrite kept by ``training.embedder_data.kept_rewrites``) is ranked against its own
repository's units, as a one-repository deployment searches. A question hits at k when a unit among the
first k has the mined positive's text. The vector lane alone: no lexical lane, no reranker.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from indexer.embedder import EmbedderRuntime
from training.data import norm_key, read_jsonl
from training.docs_pages import RepoIndex, embedded_text, page_units, read_corpus
from training.docs_split import role
from training.embedder_data import kept_rewrites

__all__ = ["Question", "RepoUnits", "dense_recall", "embedder_spec", "load_questions"]

Encode = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True, slots=True)
class Question:
    repo: str
    kind: str
    text: str
    worded: str  # "mined" or "rewrite"
    positive: str  # norm_key of the positive unit's text


@dataclass(frozen=True, slots=True)
class RepoUnits:
    texts: list[str]  # as embedded
    keys: list[str]  # norm_key of each unit's own text


def load_questions(data: Path, roles: tuple[str, ...]) -> tuple[list[Question], dict[str, RepoUnits]]:
    """The questions of the repositories in `roles` whose positive is found, and each repository's units."""
    worded = kept_rewrites(data)
    rows = [r for r in read_jsonl(data / "pairs.jsonl.gz") if role(str(r["repo"])) in roles]
    units: dict[str, RepoUnits] = {}
    questions: list[Question] = []
    for repository in sorted({str(r["repo"]) for r in rows}):
        index = RepoIndex(read_corpus(data / "corpus", repository))
        texts, keys = [], []
        for page in index.pages.values():
            for i in page_units(page):
                texts.append(embedded_text(page, i))
                keys.append(norm_key(page.units[i].text))
        units[repository] = RepoUnits(texts, keys)
        for row in (r for r in rows if r["repo"] == repository):
            page = index.pages.get(str(row["path"]))
            start = page.find(str(row["positive"])) if page is not None else None
            if page is None or start is None:
                continue
            key = norm_key(page.units[start].text)
            kind, question = str(row["kind"]), str(row["question"])
            questions.append(Question(repository, kind, question, "mined", key))
            for text in worded.get((repository, kind, question), []):
                questions.append(Question(repository, kind, text, "rewrite", key))
    return questions, units


def dense_recall(
    encode: Encode, questions: list[Question], units: dict[str, RepoUnits], ks: tuple[int, ...] = (10, 50)
) -> dict[str, float]:
    """Recall at each k, by (worded, kind) and overall per worded: ``rewrite/faq@10`` and the like."""
    hits: dict[str, list[bool]] = {}
    for repository, repo_units in units.items():
        asked = [q for q in questions if q.repo == repository]
        if not asked:
            continue
        passages = encode(repo_units.texts)
        queries = encode([q.text for q in asked])
        order = np.argsort(-(queries @ passages.T), axis=1)[:, : max(ks)]
        for q, ranked in zip(asked, order, strict=True):
            found = [repo_units.keys[j] == q.positive for j in ranked]
            for k in ks:
                for name in (f"{q.worded}/{q.kind}@{k}", f"{q.worded}@{k}"):
                    hits.setdefault(name, []).append(any(found[:k]))
    return {name: round(sum(v) / len(v), 3) for name, v in sorted(hits.items())}


def embedder_spec(spec: str, runtime: str = "auto") -> tuple[str, str, EmbedderRuntime]:
    """`LABEL=SPEC[@RUNTIME]` as (label, spec, runtime): the spec as `[models] embedder` takes it, and
    `runtime` when none is named."""
    label, _, rest = spec.partition("=")
    name, _, named = rest.partition("@")
    return label, name, EmbedderRuntime(named or runtime)


def main(argv: list[str] | None = None) -> None:
    """``python -m training.embedder_eval DOCS_FAQ --model LABEL=SPEC[@RUNTIME] ... [--roles tune]
    [--skip-repos A,B]``: dense recall of each embedder (a spec as ``[models] embedder`` takes it; ``base``
    for the bundled all-MiniLM-L6-v2), printed as one JSON line per model."""
    import argparse
    import json
    import time

    from indexer.embedder import load_embedding_model

    parser = argparse.ArgumentParser()
    parser.add_argument("data", type=Path)
    parser.add_argument("--model", action="append", default=[])
    parser.add_argument("--roles", default="tune")
    parser.add_argument("--skip-repos", default="")
    args = parser.parse_args(argv)
    questions, units = load_questions(args.data, tuple(args.roles.split(",")))
    for name in filter(None, args.skip_repos.split(",")):
        units.pop(name, None)
    print(json.dumps({"questions": len(questions), "units": {k: len(v.texts) for k, v in units.items()}}))
    for spec in args.model:
        label, name, runtime = embedder_spec(spec, "torch")
        model = load_embedding_model(name, runtime)
        started = time.monotonic()
        figures = dense_recall(model.encode, questions, units)
        seconds = round(time.monotonic() - started)
        print(json.dumps({"model": label, **figures, "seconds": seconds}), flush=True)


if __name__ == "__main__":
    main()
