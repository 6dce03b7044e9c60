"""Docs QA: search recall, answer hits, citation precision, abstention and latency on a docs question set.

    python bench/docs_qa.py QA_JSONL BUNDLE [--split tune|heldout|all] [--budget low|mid|high]
        [--dump FILE] [--workdir DIR] [--changed-to tip|new] [--limit N] [--one-hop-patience N]
        [--min-answer-check F]
        [--llm-url URL [--llm-model M] [--llm-budget S]]

QA_JSONL is a question file in the `prometheus_docs/qa_dev.jsonl` format and BUNDLE the git bundle of the
repository its gold sentences quote; nothing here knows which repository that is. The bundle is cloned and
citeline runs on the work tree as a user runs it, with the configuration `citeline` itself would read
(`CITELINE_*` variables and `CITELINE_CONFIG` apply, so `CITELINE_INDEXING__CODE_BLOCKS=skip` compares
modes): the repository is indexed, the embedding backlog drained, and every question goes through
`daemon.assembly.build_engine`'s answering callable, the one `POST /v1/answers` calls (answers are stored).

Tip rows are asked at the bundle's head. A `changed` row checks out `old_commit`, re-indexes, drains and
asks; then checks out `new_commit` (or the tip with `--changed-to tip`), re-indexes, times checkout to the
new sentence being found by the lexical lane, drains, asks again, and loads the first stored answer to see
whether its sources now report `changed` or `deleted` (`GET /v1/answers/{id}`'s store function). Changed
rows run in history order, so with `new` the index walks forward through the history once (the commit
itself is the change); `tip` re-reads the whole stretch back to the tip for every row (minutes each).

The split is fixed: within each kind, rows ordered by id, the odd-numbered ones are `tune`, the even ones
`heldout`; with `--split all` figures are printed for tune, held-out and all. How a cited unit is matched
to gold is in `docs_gold`; what is counted is in `docs_report`. Prints figures; asserts nothing.

With `--llm-url`, the tip rows are asked twice on the same index: first by an engine with the extractive
planner (whatever `[planner]` says), then by one with the LLM planner on that endpoint (both built by
`build_engine`; the answer store is emptied before each, so neither is served the other's answers). The
changed rows' walk through history runs once, with the extractive planner. It prints docs_report's figures
for the extractive run (changed rows included), then for the LLM run (tip rows only), then per split the
overall figures of both on the tip rows side by side (search recall, hit, gold recall, precision strict and
same page, abstention, answer p50/p95), and who planned the LLM's rounds (`llm_compare.RoundCounts`);
`--dump` then writes the LLM's records too, each record with its `planner`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchkit import add_engine_arguments, engine_settings, mean, workspace
from docs_gold import GOLD_KINDS, Gold, QARow, Unit, load_rows, matches, split_rows
from docs_report import Record, print_report
from llm_compare import RoundCounts, add_llm_arguments, latency_rows, llm_config, print_side_by_side

from api.context import Answering
from daemon.assembly import ModelNames, build_engine, load_embedder, model_names
from daemon.config import load_config
from daemon.services import queue_options
from engine.config import EngineConfig
from engine.search import Filters, Retriever, SearchMode
from engine.store import load_answer
from indexer.database import Connection, Database, open_database
from indexer.embedder import EmbeddingModel
from indexer.embedding_queue import EmbeddingWorker, QueueOptions
from indexer.reconcile import IndexOptions, Repository, reconcile_repository

_UNIT_SQL = """
SELECT s.id, s.kind, p.text FROM sentences s
LEFT JOIN sentences p ON p.document_id = s.document_id AND p.ordinal = s.ordinal - 1
WHERE s.id = ANY(%s)
"""


def _git(clone: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(clone), *args], check=True, capture_output=True, text=True)
    return done.stdout.strip()


def _bundle_head(bundle: Path) -> str:
    heads = subprocess.run(
        ["git", "bundle", "list-heads", str(bundle)], check=True, capture_output=True, text=True
    ).stdout.split("\n")
    refs = dict(reversed(line.split(maxsplit=1)) for line in heads if line.strip())
    return refs.get("HEAD") or next(iter(refs.values()))


class _Run:
    """One bench run's collaborators: the clone, the database, the answering callable and the embedder."""

    def __init__(
        self,
        clone: Path,
        database: Database,
        config: Any,
        budget: str,
        models: ModelNames,
        settings: EngineConfig | None = None,
    ) -> None:
        self.clone, self.database, self.budget, self.settings = clone, database, budget, settings
        self.repo = Repository(clone.name, clone)
        self.options = IndexOptions(config.indexing.max_file_bytes, config.indexing.code_blocks)
        self.queue: QueueOptions = queue_options(config)
        self.retriever: Retriever
        self.answering: Answering
        self.retrieval = config.retrieval
        engine = build_engine(database, models, config.retrieval, settings)
        self.retriever, self.answering = engine.retriever, engine.answer
        self.embedder: EmbeddingModel = load_embedder(config)

    def sync(self, conn: Connection) -> tuple[int, float]:
        """Index what changed and drain the backlog; returns (sentences written, seconds)."""
        started = time.perf_counter()
        report = reconcile_repository(conn, self.repo, self.options)
        EmbeddingWorker(conn, self.embedder, self.queue).drain()
        return report.sentences_inserted, time.perf_counter() - started

    def units(self, conn: Connection, found: list[dict[str, Any]]) -> list[Unit]:
        """Hits or cited sources (dicts with sentence_id, path, text, lines) as units, first citation kept."""
        found = list({int(f["sentence_id"]): f for f in reversed(found)}.values())[::-1]
        info = {r[0]: (r[1], r[2]) for r in conn.execute(_UNIT_SQL, ([f["sentence_id"] for f in found],))}
        return [
            Unit(
                int(f["sentence_id"]),
                f["path"],
                f["text"],
                int(f["line_start"]),
                int(f["line_end"]),
                *info.get(int(f["sentence_id"]), ("sentence", None)),
            )
            for f in found
        ]

    def ask(self, conn: Connection, row: QARow, split: str, gold: QARow | None = None) -> Record:
        """Search and answer `row`'s question; gold is `gold`'s (the row itself unless said otherwise)."""
        hits = [h.to_dict() for h in self.retriever.search(row.question, 10)]
        started = time.perf_counter()
        body = self.answering(row.question, self.budget, Filters()).to_dict()
        latency = 1000 * (time.perf_counter() - started)
        cited = [s for c in body["clauses"] for s in c["sources"]]
        return Record(
            row if gold is None else gold,
            split,
            body,
            latency,
            self.units(conn, cited),
            self.units(conn, hits),
            near=self.units(conn, body.get("nearest", [])),
        )

    def ask_with(
        self, conn: Connection, models: ModelNames, rows: list[QARow], split: dict[str, str]
    ) -> list[Record]:
        """Ask `rows` again with an engine built on `models`, the answer store emptied before and after."""
        engine = build_engine(self.database, models, self.retrieval, self.settings)
        answering, self.answering = self.answering, engine.answer
        conn.execute("DELETE FROM answers")
        engine.answer("warm-up: what is this about", self.budget, Filters())
        conn.execute("DELETE FROM answers")
        records = [self.ask(conn, row, split[row.id]) for row in rows]
        conn.execute("DELETE FROM answers")
        self.answering = answering
        engine.close()
        return records

    def searchable_ms(self, conn: Connection, row: QARow, started: float) -> float | None:
        """Milliseconds from `started` until the lexical lane finds the new sentence; None after 10 s."""
        while time.perf_counter() - started < 10.0:
            hits = self.retriever.search(row.new_sentence, 10, mode=SearchMode.LEXICAL)
            if any(
                h.path == row.path
                and matches(h.text, row.new_sentence, same_path=True, rival=row.old_sentence)
                for h in hits
            ):
                return 1000 * (time.perf_counter() - started)
            time.sleep(0.01)
        return None

    def changed(self, conn: Connection, row: QARow, split: str, target: str) -> tuple[Record, Record]:
        """The before/after of one changed row; the after record carries the change figures."""
        _git(self.clone, "checkout", "-q", "--detach", row.old_commit)
        self.sync(conn)
        old_gold = replace(row, gold=(Gold(row.path, row.old_sentence),), rival=row.new_sentence)
        first = self.ask(conn, row, split, old_gold)
        started = time.perf_counter()
        _git(self.clone, "checkout", "-q", "--detach", target or row.new_commit)
        reconcile_repository(conn, self.repo, self.options)
        searchable = self.searchable_ms(conn, row, started)
        EmbeddingWorker(conn, self.embedder, self.queue).drain()
        second = self.ask(conn, row, split)
        stored = load_answer(conn, first.body["id"]) if first.body.get("id") else None
        states = [s.state.value for c in stored.clauses for s in c.checks] if stored else []
        second.change = {
            "searchable_ms": searchable,
            "first": first,
            "first_states": states,
            "cites_old": [u.to_dict() for u in second.cited if _is_old(u, row)],
        }
        return first, second


def _is_old(unit: Unit, row: QARow) -> bool:
    return matches(unit.text, row.old_sentence, same_path=unit.path == row.path, rival=row.new_sentence)


def _compare(extractive: list[Record], llm: list[Record], split: str) -> None:
    """Per split, the overall figures of both planners on the tip rows side by side; then the LLM's rounds."""
    for name in ["tune", "heldout", "all"] if split == "all" else [split]:
        groups = [[r for r in records if name in ("all", r.split)] for records in (extractive, llm)]
        answerable = [[r for r in g if r.row.answerable] for g in groups]
        print(f"\n== split {name}: extractive and llm side by side, {len(groups[0])} tip rows each")
        rows: list[tuple[str, list[float | str]]] = [
            ("search recall@10", [mean([float(r.search_hit) for r in a]) for a in answerable]),
            ("answer hit", [mean([float(any(r.strict)) for r in a]) for a in answerable]),
            ("gold recall", [mean([r.gold_recall for r in a]) for a in answerable]),
            ("precision strict", [mean([float(s) for r in a for s in r.strict]) for a in answerable]),
            ("cited units", [str(sum(len(r.strict) for r in a)) for a in answerable]),
            ("precision same page", [mean([float(p) for r in a for p in r.same_page]) for a in answerable]),
            ("abstention answerable", [mean([float(r.abstained) for r in a]) for a in answerable]),
            (
                "abstention unanswerable",
                [mean([float(r.abstained) for r in g if not r.row.answerable]) for g in groups],
            ),
            *latency_rows("answer", [[r.latency_ms for r in g] for g in groups]),
        ]
        print_side_by_side(["extractive", "llm"], rows)
    rounds = RoundCounts()
    for record in llm:
        rounds.add(record.body.get("trace", []))
    print()
    rounds.print("llm")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("qa", type=Path)
    parser.add_argument("bundle", type=Path)
    parser.add_argument("--split", choices=["tune", "heldout", "all"], default="all")
    parser.add_argument("--budget", choices=["low", "mid", "high"], default="mid")
    parser.add_argument("--dump", type=Path, default=None, help="each question's detail as JSON lines")
    parser.add_argument(
        "--workdir", type=Path, default=None, help="keep the clone and index for the next run"
    )
    parser.add_argument("--changed-to", choices=["new", "tip"], default="new")
    add_engine_arguments(parser)
    parser.add_argument("--limit", type=int, default=None, help="only the first N chosen rows of each kind")
    add_llm_arguments(parser, "also ask the tip rows with the LLM planner on this OpenAI-compatible API base")
    args = parser.parse_args()
    llm = llm_config(args)
    rows = load_rows(args.qa)
    split = split_rows(rows)
    chosen = [r for r in rows if args.split in ("all", split[r.id])]
    if args.limit is not None:
        chosen = [r for r in chosen if [c.kind for c in chosen if c.id <= r.id].count(r.kind) <= args.limit]
    sizes = {s: sum(1 for r in rows if split[r.id] == s) for s in ("tune", "heldout")}
    print(f"{len(rows)} rows: tune {sizes['tune']}, heldout {sizes['heldout']}", end="; ")
    per_kind = {
        k: sum(1 for r in rows if r.kind == k and split[r.id] == "tune")
        for k in dict.fromkeys(r.kind for r in rows)
    }
    print("tune per kind " + ", ".join(f"{k} {n}" for k, n in per_kind.items()), end="; ")
    print(f"running {args.split}: {len(chosen)}")
    unknown = {r.kind for r in rows} - {*GOLD_KINDS, "unanswerable", "changed"}
    if unknown:
        print(f"kinds without a figure rule, counted as answerable: {sorted(unknown)}")
    config = load_config()
    tip = _bundle_head(args.bundle)
    records: list[Record] = []
    with workspace(args.workdir) as work:
        clone = work / "clone"
        if not (clone / ".git").exists():
            subprocess.run(["git", "clone", "-q", str(args.bundle), str(clone)], check=True)
        _git(clone, "checkout", "-q", "--detach", tip)
        database = open_database(None, work / "db")
        models = model_names(config)
        settings = engine_settings(args)
        extractive = models if llm is None else replace(models, llm=None)
        run = _Run(clone, database, config, args.budget, extractive, settings)
        with database.connect() as conn:
            written, seconds = run.sync(conn)
            print(
                f"indexed and embedded at {tip[:12]} in {seconds:.1f}s ({written:,} sentences written);"
                f" code blocks: {config.indexing.code_blocks.value}"
            )
            conn.execute("DELETE FROM answers")  # a kept workdir must not serve last run's answers
            run.answering("warm-up: what is this about", args.budget, Filters())
            conn.execute("DELETE FROM answers")
            tip_rows = [r for r in chosen if not r.changed]
            records += [run.ask(conn, row, split[row.id]) for row in tip_rows]
            llm_records = run.ask_with(conn, replace(models, llm=llm), tip_rows, split) if llm else []
            target = "" if args.changed_to == "new" else tip
            changed = [r for r in chosen if r.changed]
            depth = {c: int(_git(clone, "rev-list", "--count", c)) for c in {r.old_commit for r in changed}}
            for row in sorted(changed, key=lambda r: (depth[r.old_commit], r.id)):
                records.append(run.changed(conn, row, split[row.id], target)[1])
            _git(clone, "checkout", "-q", "--detach", tip)
            run.sync(conn)
        run.retriever.close()
    print(f"budget {args.budget}; changed rows re-asked at {args.changed_to}")
    if llm is not None:
        print("\n=== the extractive planner (tip rows, then the changed rows' walk through history)")
    print_report(records, args.split)
    if llm is not None:
        print(
            f"\n=== the LLM planner llm:{llm.model} at {llm.url}, {llm.budget_seconds:g} s per answer"
            " (tip rows only: the changed rows' walk ran with the extractive planner alone)"
        )
        print_report(llm_records, args.split)
        _compare([r for r in records if r.change is None], llm_records, args.split)
    if args.dump is not None:
        labelled = [*(("extractive", r) for r in records), *(("llm", r) for r in llm_records)]
        with args.dump.open("w", encoding="utf-8") as out:
            for label, record in labelled:
                body = record.to_dict() | ({"planner": label} if llm is not None else {})
                out.write(json.dumps(body, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
