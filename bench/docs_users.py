"""Docs questions in users' own words, on repositories citeline never trained on: the paraphrased bench.

    python bench/docs_users.py DOCS_FAQ [--role heldout|tune] [--embedder LABEL=SPEC ...]
        [--kinds faq,heading] [--budget low|mid|high] [--workdir DIR] [--dump FILE]
        [--one-hop-patience N] [--min-answer-check F]

DOCS_FAQ is `traindata/docs_faq`. The questions are the user-worded rewrites of `paraphrases.jsonl.gz`:
- `--role heldout` (the default): the rewrites of the ten held-out repositories that were read by hand and
  kept (`bench/data/users_heldout.jsonl`: the list is fixed, and nothing is tuned on it);
- `--role tune`: the tune repositories' rewrites that the round-trip check did not show to miss the answer
  (`training.embedder_data.kept_rewrites`): where floors may be chosen.

Each `--embedder` (a spec as `[models] embedder` takes it, `LABEL=SPEC` or `LABEL=SPEC@RUNTIME`; when none
is given, the default embedder and citeline's docs embedder: `default= docs=citeline-docs`) gets its own
index of the role's pages, embedded once, and answers every rewrite through `daemon.assembly.build_engine`
with the shipped cross-encoders, scoped to the row's repository. Then the unanswerable variant: the section
of every `faq` row whose heading is found is cut from its page, the index catches up, and that row's
rewrites are asked again; the pages are put back.

Per embedder it prints: search recall@10 and @50 of the mined positive; answer hit; paragraph hit;
same-page precision; abstention on answerable rewrites and on the unanswerable variant; answer p50/p95 ms;
and the first embed's wall time. Figures only; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchkit import (
    NEAREST_FIGURE,
    add_engine_arguments,
    engine_settings,
    mean,
    nearest_shown,
    percentile,
    workspace,
)
from docs_faq import _record, _sync
from docs_faq_pages import (
    ROLES,
    FaqRow,
    add_docs_arguments,
    cut_section,
    load_rows,
    page_file,
    write_pages,
)

from daemon.assembly import build_engine, model_names
from daemon.config import load_config
from engine.search import Filters
from indexer.database import open_database
from indexer.embedder import load_embedding_model
from indexer.embedding_queue import EmbeddingWorker
from indexer.reconcile import IndexOptions, Repository
from training.embedder_data import kept_rewrites
from training.embedder_eval import embedder_spec

_KEPT = Path(__file__).resolve().parent / "data" / "users_heldout.jsonl"


def user_rows(data: Path, role: str, kinds: set[str]) -> list[tuple[FaqRow, str]]:
    """(mined row, rewrite) pairs of the role's repositories."""
    rows = {(r.repo, r.kind, r.question): r for r in load_rows(data, ROLES[role]) if r.kind in kinds}
    if role == "heldout":
        kept = [json.loads(line) for line in _KEPT.read_text(encoding="utf-8").splitlines() if line.strip()]
        pairs = [((k["repo"], k["kind"], k["question"]), k["rewrite"]) for k in kept]
    else:
        pairs = [(key, text) for key, texts in kept_rewrites(data).items() for text in texts]
    return [(rows[key], text) for key, text in pairs if key in rows]


def _ask(
    engine: Any, asked: list[tuple[FaqRow, str]], phase: str, label: str, budget: str
) -> list[dict[str, Any]]:
    out = []
    for row, text in asked:
        filters = Filters(repositories=(row.name,))
        top = engine.retriever.search(text, 50, filters=filters) if phase == "answerable" else []
        started = time.perf_counter()
        body = engine.answer(text, budget, filters).to_dict()
        ms = 1000 * (time.perf_counter() - started)
        record = _record(replace(row, question=text), phase, label, body, [], ms)
        found = [row.is_positive(h.path, h.text) for h in top]
        record["recall10"], record["recall50"] = any(found[:10]), any(found)
        record["gold_rank"] = found.index(True) + 1 if any(found) else None
        record["heading"] = row.question
        out.append(record)
    return out


def _run_embedder(
    work: Path, data: Path, spec: str, asked: list[tuple[FaqRow, str]], args: argparse.Namespace
) -> tuple[list[dict[str, Any]], float]:
    label, name, runtime = embedder_spec(spec)
    config = load_config()
    repos = [
        Repository(n.replace("/", "__"), work / "pages" / n.replace("/", "__")) for n in ROLES[args.role]
    ]
    database = open_database(None, work / f"db-{label}")
    options = IndexOptions(config.indexing.max_file_bytes, config.indexing.code_blocks)
    models = replace(model_names(config), embedder=name, embedder_runtime=runtime)
    records: list[dict[str, Any]] = []
    with database.connect() as conn:
        worker = EmbeddingWorker(conn, load_embedding_model(name, runtime))
        first = _sync(conn, repos, options, worker)
        print(f"{label}: indexed and embedded in {first:.1f}s", flush=True)
        engine = build_engine(database, models, config.retrieval, engine_settings(args, None))
        try:
            conn.execute("DELETE FROM answers")
            engine.answer("warm-up: what is this about", args.budget, Filters())
            records += _ask(engine, asked, "answerable", label, args.budget)
            originals: dict[Path, str] = {}
            cut_keys: set[tuple[str, str]] = set()
            for row in dict.fromkeys(r for r, _ in asked if r.kind == "faq"):
                file = page_file(work / "pages" / row.name, row.path)
                text = originals.setdefault(file, file.read_text(encoding="utf-8"))
                shorter = cut_section(file.read_text(encoding="utf-8"), row.question)
                if shorter is not None and cut_section(text, row.question) is not None:
                    file.write_text(shorter, encoding="utf-8")
                    cut_keys.add((row.repo, row.question))
            try:
                _sync(conn, repos, options, worker)
                conn.execute("DELETE FROM answers")
                cut = [(r, t) for r, t in asked if (r.repo, r.question) in cut_keys]
                records += _ask(engine, cut, "unanswerable", label, args.budget)
            finally:
                for file, text in originals.items():
                    file.write_text(text, encoding="utf-8")
                _sync(conn, repos, options, worker)
        finally:
            engine.close()
    return records, first


def _report(records: list[dict[str, Any]], labels: list[str], firsts: dict[str, float]) -> None:
    def of(label: str, phase: str) -> list[dict[str, Any]]:
        return [r for r in records if r["model"] == label and r["phase"] == phase]

    lines: list[tuple[str, list[str]]] = []
    for figure, name in (
        ("recall10", "search recall@10"),
        ("recall50", "search recall@50"),
        ("hit", "answer hit"),
        ("paragraph", "paragraph hit"),
        ("abstained", "abstain, answerable"),
    ):
        lines.append(
            (name, [f"{mean([float(r[figure]) for r in of(lb, 'answerable')]):.3f}" for lb in labels])
        )
    precisions = []
    for label in labels:
        answered = of(label, "answerable")
        cited = max(1, sum(r["cited"] for r in answered))
        precisions.append(f"{sum(r['cited_on_page'] for r in answered) / cited:.3f}")
    lines.append(("same-page precision", precisions))
    lines.append((NEAREST_FIGURE, [nearest_shown(of(lb, "answerable")) for lb in labels]))
    unanswerable = [of(lb, "unanswerable") for lb in labels]
    lines.append(
        (
            "abstain, unanswerable",
            [f"{mean([float(r['abstained']) for r in rs]):.3f} ({len(rs)})" for rs in unanswerable],
        )
    )
    for q in (0.5, 0.95):
        lines.append(
            (
                f"answer ms p{int(q * 100)}",
                [f"{percentile([r['ms'] for r in of(lb, 'answerable')], q):.0f}" for lb in labels],
            )
        )
    lines.append(("first embed s", [f"{firsts[lb]:.1f}" for lb in labels]))
    width = max(len(name) for name, _ in lines)
    print(f"{'figure':<{width}}  " + "  ".join(f"{label:>14}" for label in labels))
    for name, values in lines:
        print(f"{name:<{width}}  " + "  ".join(f"{v:>14}" for v in values))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_docs_arguments(ap)
    ap.add_argument("--embedder", action="append", default=[], help="LABEL=SPEC[@RUNTIME]")
    add_engine_arguments(ap)
    args = ap.parse_args()
    asked = user_rows(args.data, args.role, set(args.kinds.split(",")))
    print(f"{len(asked)} rewrites of {len({r for r, _ in asked})} rows", flush=True)
    records: list[dict[str, Any]] = []
    firsts: dict[str, float] = {}
    specs = args.embedder or ["default=", "docs=citeline-docs"]
    with workspace(args.workdir) as work:
        for name in ROLES[args.role]:
            write_pages(args.data, name, work / "pages" / name.replace("/", "__"))
        for spec in specs:
            got, firsts[embedder_spec(spec)[0]] = _run_embedder(work, args.data, spec, asked, args)
            records += got
    _report(records, [embedder_spec(s)[0] for s in specs], firsts)
    if args.dump is not None:
        with args.dump.open("w", encoding="utf-8") as out:
            for record in records:
                out.write(json.dumps(record, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
