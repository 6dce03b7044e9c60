"""Index benchmark on the rustc-dev-guide history: cold index, commit-by-commit replay, BM25 latency.

    python bench/index_rustc.py ../shared/data/rustc_dev_guide [--commits N] [--code-blocks skip|block]

Prints figures; asserts nothing. The replay's headline is the ratio of sentence rows written for modified
files to what a whole-document re-index (delete all, insert all) would have written.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from engine.search import bm25_search
from indexer.database import open_database
from indexer.markdown import CodeMode
from indexer.reconcile import IndexOptions, Repository, index_paths, reconcile_repository
from indexer.store import rename_document


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def cold_index(db_url_dir: Path, tree: Path, options: IndexOptions) -> None:
    db = open_database(None, db_url_dir)
    with db.connect() as conn:
        started = time.perf_counter()
        report = reconcile_repository(conn, Repository("rustc-dev-guide", tree), options)
        wall = time.perf_counter() - started
        kinds = dict(conn.execute("SELECT kind, count(*) FROM sentences GROUP BY kind").fetchall())
    n = report.sentences_inserted
    print(
        f"cold index of HEAD: {report.files_written} files, {n} sentences in {wall:.2f}s "
        f"= {n / wall:,.0f} sentences/s"
    )
    print("  units by kind: " + ", ".join(f"{k} {v:,}" for k, v in sorted(kinds.items())))
    for stage in ("read", "parse", "segment", "database"):
        seconds = getattr(report, f"{stage}_seconds")
        print(
            f"  {stage:<9} {seconds:6.2f}s  ({n / seconds if seconds else float('inf'):>10,.0f} sentences/s)"
        )


def replay(
    data_dir: Path, bundle: Path, commits_file: Path, limit: int | None, options: IndexOptions
) -> None:
    commits = [json.loads(line) for line in commits_file.read_text().splitlines()]
    if limit:
        commits = commits[:limit]
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        _git(Path(tmp), "clone", "-q", "--no-checkout", str(bundle), str(tree))
        db = open_database(None, data_dir)
        repo = Repository("replay", tree)
        written = whole = 0
        added_rows = deleted_docs = 0
        per_commit: list[float] = []
        with db.connect() as conn:
            repository_id = None
            for commit in commits:
                _git(tree, "checkout", "-q", "--force", commit["rebuilt_commit"])
                started = time.perf_counter()
                if repository_id is None:
                    reconcile_repository(conn, repo, options)
                    repository_id = conn.execute(
                        "SELECT id FROM repositories WHERE name = 'replay'"
                    ).fetchone()[0]
                    per_commit.append(time.perf_counter() - started)
                    continue
                modified, other = [], []
                for change in commit["changes"]:
                    status, path = change["status"][0], change["path"]
                    if status == "R":
                        rename_document(conn, repository_id, change["old_path"], path)
                        modified.append(path)
                    elif status == "M":
                        modified.append(path)
                    else:
                        other.append(path)
                        deleted_docs += status == "D"
                for path in modified:
                    report = index_paths(conn, repo, [path], options)
                    written += report.sentences_inserted
                    whole += report.sentences_inserted + report.sentences_moved + report.sentences_unchanged
                if other:
                    added_rows += index_paths(conn, repo, other, options).sentences_inserted
                per_commit.append(time.perf_counter() - started)
        print(f"replay of {len(commits)} commits:")
        print(
            f"  modified files: {written:,} sentence rows written vs {whole:,} for a whole-document re-index "
            f"= {100 * written / max(whole, 1):.2f}%"
        )
        print(f"  added files: {added_rows:,} rows (same either way); deleted documents: {deleted_docs}")
        p50, p95 = 1000 * _pct(per_commit, 0.5), 1000 * _pct(per_commit, 0.95)
        print(f"  time per commit p50 {p50:.1f} ms, p95 {p95:.1f} ms")
        queries = [
            "how do I run the test suite",
            "bootstrap stage0 compiler",
            "query system incremental",
            "borrow checker regions",
            "x.py build library std",
            "MIR borrowck",
            "type inference",
            "rustdoc json",
            "LLVM codegen backend",
            "diagnostics lint",
        ]
        with db.connect() as conn:
            latencies = []
            for _ in range(10):
                for q in queries:
                    started = time.perf_counter()
                    bm25_search(conn, q, 10)
                    latencies.append(time.perf_counter() - started)
            n = conn.execute("SELECT count(*) FROM sentences").fetchone()[0]
        print(
            f"BM25 top-10 over {n:,} sentences: p50 {1000 * _pct(latencies, 0.5):.1f} ms, "
            f"p95 {1000 * _pct(latencies, 0.95):.1f} ms ({len(latencies)} queries)"
        )
        print(f"  mean {1000 * statistics.mean(latencies):.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "data", type=Path, help="the rustc_dev_guide folder (md_history.bundle, commits.jsonl)"
    )
    parser.add_argument("--commits", type=int, default=None, help="replay only the first N commits")
    parser.add_argument(
        "--code-blocks",
        choices=[m.value for m in CodeMode],
        default=IndexOptions().code_mode.value,
        help="index code blocks as units (block, the default) or drop them (skip)",
    )
    args = parser.parse_args()
    options = IndexOptions(code_mode=CodeMode(args.code_blocks))
    print(f"code blocks: {options.code_mode.value}")
    with tempfile.TemporaryDirectory() as tmp:
        head = Path(tmp) / "head"
        _git(Path(tmp), "clone", "-q", str(args.data / "md_history.bundle"), str(head))
        cold_index(Path(tmp) / "cold", head, options)
        replay(
            Path(tmp) / "replay",
            args.data / "md_history.bundle",
            args.data / "commits.jsonl",
            args.commits,
            options,
        )


if __name__ == "__main__":
    main()
