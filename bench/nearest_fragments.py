"""How often an answer's closest passages lead with a fragment, before and after they carry their context.

    python bench/nearest_fragments.py ../shared/data/prometheus_docs [--workdir DIR] [--relevance]
    python bench/nearest_fragments.py docs/

A folder holding `md_history.bundle` (and `qa_dev.jsonl`) is cloned and its questions asked; any other folder
of Markdown is indexed as it is and its headings, turned into questions ("What about Closest passages?"),
are asked. Indexes with the lexical lane only (no embedding; a kept `--workdir` is reused), then for each
question lists the closest passages as an answer with no verified clause does (`engine.nearest.closest` over
the question's first retrieval, its top `first_k`): before, as listed until now; after, through
`with_context`. With `--relevance` the shipped relevance model orders the list, reading each sentence as it
did before (its heading path and itself) and as it does now (after the sentence it depends on); without it,
the list keeps the retrieval's order. Prints, for each: how often the first passage is a fragment (under
`FRAGMENT_WORDS` content words), how often it is one shown without the unit before it (the first of a
section is shown under its heading), how often it depends on the sentence before it, and how many listed
passages are shown without what they depend on. Asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchkit import workspace

from engine.config import EngineConfig
from engine.contexts import fetch_contexts, previous_text
from engine.crossencoders import RelevanceModel, load_relevance
from engine.evidence import EvidencePool
from engine.nearest import closest, with_context
from engine.passages import NearPassage
from engine.search import Hit, Retriever
from indexer.database import Connection, open_database
from indexer.embedding_context import FRAGMENT_WORDS, is_fragment
from indexer.reconcile import Repository, reconcile_repository


class _BeforePool(EvidencePool):
    """The pool as the relevance model read it before: each sentence under its heading path, alone."""

    def headed(self, hit: Hit) -> str:
        return hit.headed_text


@dataclass(slots=True)
class _Tally:
    asked: int = 0
    first_fragment: int = 0
    first_bare_fragment: int = 0
    first_dependent: int = 0
    listed: int = 0
    bare_dependent: int = 0
    bare_fragments: int = 0

    def add(self, pool: EvidencePool, listed: Sequence[NearPassage]) -> None:
        self.asked += 1
        for rank, passage in enumerate(listed):
            context = pool.contexts.get(passage.hit.sentence_id)
            depends = previous_text(passage.hit, context) is not None
            fragment = is_fragment(passage.hit.text)
            # the first of a section is shown under its heading, as every passage is
            opens = context is not None and context.previous_id is None and bool(passage.hit.heading_path)
            bare = passage.context is None and not opens
            self.listed += 1
            self.bare_dependent += depends and bare
            self.bare_fragments += fragment and bare
            if rank == 0:
                self.first_fragment += fragment
                self.first_bare_fragment += fragment and bare
                self.first_dependent += depends

    def report(self, name: str) -> str:
        n = max(self.asked, 1)
        return (
            f"{name}: first passage a fragment {self.first_fragment}/{self.asked}"
            f" ({self.first_fragment / n:.3f}), a fragment shown alone {self.first_bare_fragment}"
            f" ({self.first_bare_fragment / n:.3f}), dependent on the sentence before {self.first_dependent};"
            f" of {self.listed} listed, shown without what they depend on {self.bare_dependent},"
            f" fragments shown alone {self.bare_fragments}"
        )


def _questions(source: Path, work: Path) -> tuple[Path, list[str]]:
    """The folder to index and the questions to ask of it."""
    bundle = source / "md_history.bundle"
    if bundle.exists():
        tree = work / "tree"
        if not tree.exists():
            subprocess.run(["git", "clone", "-q", str(bundle), str(tree)], check=True)
        rows = [json.loads(line) for line in (source / "qa_dev.jsonl").read_text().splitlines() if line]
        return tree, [r["question"] for r in rows]
    headings = [
        line.lstrip("#").strip()
        for page in sorted(source.rglob("*.md"))
        for line in page.read_text(encoding="utf-8", errors="replace").splitlines()
        if line.startswith("## ")
    ]
    return source, [f"What about {h}?" for h in dict.fromkeys(headings)]


def _pool(conn: Connection, first: Sequence[Hit], before: bool) -> EvidencePool:
    pool = _BeforePool(None) if before else EvidencePool(None)
    pool.contexts.update(fetch_contexts(conn, [h.sentence_id for h in first]))
    pool.add(first, 1, len(first))
    return pool


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("source", type=Path, help="a prometheus_docs-style folder, or a folder of Markdown")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--relevance", action="store_true", help="order the list with the relevance model")
    args = parser.parse_args()
    relevance: RelevanceModel | None = load_relevance() if args.relevance else None
    floor = EngineConfig().verify.min_relevance
    first_k = EngineConfig().first_k
    before, after = _Tally(), _Tally()
    with workspace(args.workdir) as work:
        tree, questions = _questions(args.source.resolve(), work)
        database = open_database(None, work / "db")
        with database.connect() as conn:
            reconcile_repository(conn, Repository("docs", tree))
        retriever = Retriever(database, None, max_connections=2)
        try:
            with database.connect() as conn:
                for question in questions:
                    first = retriever.search(question, first_k)
                    old = _pool(conn, first, before=True)
                    before.add(old, closest([], old, question, first, relevance, floor))
                    new = _pool(conn, first, before=False)
                    listed = closest([], new, question, first, relevance, floor)
                    after.add(new, with_context(conn, new, listed))
        finally:
            retriever.close()
    order = "relevance model" if relevance is not None else "retrieval order"
    print(f"{len(questions)} questions over {args.source} (lexical lane, {order})")
    print(f"a fragment: under {FRAGMENT_WORDS} content words")
    print(before.report("before"))
    print(after.report("after "))


if __name__ == "__main__":
    main()
