"""The engine's own candidates for training repositories' questions, written out for a strong reader to judge.

    python bench/candidates.py DOCS_FAQ --repos OWNER/NAME,... --out FILE.jsonl [--k 10] [--workdir DIR]

For each named repository (training role only: a held-out or tune repository is refused), its
`page_questions` (`plain` wording) and `blind_questions` rows are asked of citeline's own search (the
defaults: hybrid, reranked), scoped to the repository, over an index of its `corpus/` pages. Each line is
`{"repo", "role", "source", "question", "candidates": [{"rank", "path", "heading", "text"}]}`, the shape of
`judged_candidates.jsonl.gz` before its labels: a reader then adds `label` (2 answers, 1 partly, 0 no) to
each candidate, reading it with its heading path. Nothing here trains or judges.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from benchkit import workspace
from docs_faq import _sync
from docs_faq_pages import write_pages

from daemon.assembly import build_engine, model_names
from daemon.config import load_config
from engine.search import Filters
from indexer.database import open_database
from indexer.embedder import load_embedding_model
from indexer.embedding_queue import EmbeddingWorker
from indexer.reconcile import IndexOptions, Repository
from training.data import read_jsonl
from training.docs_split import role


def questions(data: Path, repos: set[str]) -> list[dict[str, Any]]:
    """The `plain` page questions and the answerable blind questions of `repos`, in file order."""
    out = [
        {"repo": r["repo"], "source": "page_questions", "question": r["plain"]}
        for r in read_jsonl(data / "page_questions.jsonl.gz")
        if r["repo"] in repos and r.get("plain")
    ]
    out += [
        {"repo": r["repo"], "source": "blind_questions", "question": r["question"]}
        for r in read_jsonl(data / "blind_questions.jsonl.gz")
        if r["repo"] in repos and r["answerable"]
    ]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", type=Path)
    ap.add_argument("--repos", required=True, help="training repositories, comma-separated")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args()
    repos = {r for r in args.repos.split(",") if r}
    refused = sorted(r for r in repos if role(r) != "train")
    if refused:
        ap.error(f"not training repositories (never judge these): {', '.join(refused)}")
    asked = questions(args.data, repos)
    config = load_config()
    names = model_names(config)
    with workspace(args.workdir) as work:
        for name in sorted(repos):
            write_pages(args.data, name, work / "pages" / name.replace("/", "__"))
        indexed = [
            Repository(n.replace("/", "__"), work / "pages" / n.replace("/", "__")) for n in sorted(repos)
        ]
        database = open_database(None, work / "db")
        options = IndexOptions(config.indexing.max_file_bytes, config.indexing.code_blocks)
        with database.connect() as conn:
            worker = EmbeddingWorker(conn, load_embedding_model(names.embedder, names.embedder_runtime))
            print(f"indexed and embedded in {_sync(conn, indexed, options, worker):.1f}s", flush=True)
        engine = build_engine(database, names, config.retrieval, None)
        try:
            with args.out.open("w", encoding="utf-8") as out:
                for q in asked:
                    filters = Filters(repositories=(q["repo"].replace("/", "__"),))
                    hits = engine.retriever.search(q["question"], args.k, filters=filters)
                    candidates = [
                        {"rank": i, "path": h.path, "heading": " > ".join(h.heading_path), "text": h.text}
                        for i, h in enumerate(hits)
                    ]
                    row = {**q, "role": "train", "candidates": candidates}
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
        finally:
            engine.close()
    print(f"wrote {len(asked)} questions' candidates to {args.out}")


if __name__ == "__main__":
    main()
