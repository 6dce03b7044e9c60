"""The lexical lane's typo stage: what it costs on real questions and on hostile ones.

    python bench/lexical_typos.py ../shared/data/hotpotqa_dev150.json [--workdir DIR] [--repeat N]

Indexes the HotpotQA dev150 paragraphs (lexical lane only, no embedding; a kept `--workdir` is reused), then
times `staged_lexical_search` (64 candidates, as the retriever asks) on every question, and on two hostile
queries: one 500-character word, and 1,000 characters of unknown five-letter words. It prints how many
questions got a correction and the corrections of the first few. Prints figures; asserts nothing. To compare
with another commit, run it with that commit's tree first on `PYTHONPATH`.
"""

from __future__ import annotations

import argparse
import json
import random
import string
import time
from pathlib import Path
from typing import Any

from benchkit import percentile, workspace
from hotpotqa import write_corpus

from engine.search import staged_lexical_search
from indexer.database import Connection, open_database
from indexer.reconcile import Repository, reconcile_repository


def _hostile() -> dict[str, str]:
    rng = random.Random(1)
    long_word = "".join(rng.choice(string.ascii_lowercase) for _ in range(500))
    words = " ".join("".join(rng.choice(string.ascii_lowercase) for _ in range(5)) for _ in range(170))
    return {"one 500-character word": long_word, "1,000 characters of unknown words": words[:1000]}


def _timed(conn: Connection, query: str) -> tuple[float, dict[str, str]]:
    started = time.perf_counter()
    found = staged_lexical_search(conn, query, 64)
    return (time.perf_counter() - started) * 1000, found.corrections


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("questions", type=Path)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--repeat", type=int, default=3, help="times each question is asked (default 3)")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = json.loads(args.questions.read_text())
    questions = [r["question"] for r in rows]
    with workspace(args.workdir) as work:
        corpus = work / "corpus"
        write_corpus(rows, corpus)
        database = open_database(None, work / "db")
        with database.connect() as conn:
            reconcile_repository(conn, Repository("hotpotqa", corpus))
            for question in questions[:20]:  # warm the caches
                staged_lexical_search(conn, question, 64)
            times: list[float] = []
            corrected: dict[str, dict[str, str]] = {}
            for _ in range(max(1, args.repeat)):
                for question in questions:
                    ms, corrections = _timed(conn, question)
                    times.append(ms)
                    if corrections:
                        corrected[question] = corrections
            p50, p95 = percentile(times, 0.5), percentile(times, 0.95)
            print(
                f"{len(questions)} questions x {args.repeat}: lexical lane p50 {p50:.1f} ms,"
                f" p95 {p95:.1f} ms;"
                f" {len(corrected)} questions corrected"
            )
            for question, corrections in list(corrected.items())[:5]:
                print(f"  {corrections}  <- {question[:80]}")
            for name, query in _hostile().items():
                ms, corrections = _timed(conn, query)
                print(f"{name}: {ms:.0f} ms, {len(corrections)} corrections")


if __name__ == "__main__":
    main()
