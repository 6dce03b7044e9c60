"""Docs answers on repositories citeline never trained or tuned on: the docs_faq held-out repositories.

    python bench/docs_faq.py DOCS_FAQ [--role heldout|tune] [--model LABEL=PATH|rev:REV ...]
        [--kinds faq,heading] [--budget low|mid|high] [--workdir DIR] [--dump FILE]
        [--without-section-reading] [--one-hop-patience N] [--min-answer-check F]

DOCS_FAQ is `traindata/docs_faq`. The pages of the role's repositories (`training.docs_split`) are written
out as Markdown files, one repository each, indexed and embedded as `citeline index` and `citeline embed`
would; then every model (a relevance cross-encoder: `shipped` is the one in `engine/weights/relevance`, a
`--model` is a folder, or `rev:REV` the folder as git holds it at REV) answers every question row of those
repositories through `daemon.assembly.build_engine`, scoped to the row's repository as a one-repository
deployment is. The answer store is emptied before each model, so no model is served another's answer.

Then the unanswerable variant: the section of every `faq` row whose question is a heading (or bold line) is
cut from its page, the index catches up, and each model is asked those questions again; an answer now is a
near miss passing as one. The pages are put back afterwards, so a kept workdir starts from the same index.

Per model and row kind it prints: search recall@10 of the mined positive; answer hit (cites the positive);
paragraph hit (cites a sentence of its paragraph or the list it introduces); section hit (cites a unit
under the question's heading); same-page precision; abstention on answerable rows and on the unanswerable
variant; answer p50/p95. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchkit import (
    NEAREST_FIGURE,
    add_engine_arguments,
    answer_check_of,
    engine_settings,
    mean,
    nearest_shown,
    percentile,
    workspace,
)
from docs_faq_pages import (
    ANSWERED_ELSEWHERE,
    ROLES,
    FaqRow,
    add_docs_arguments,
    cut_section,
    in_paragraph,
    load_rows,
    norm_key,
    page_file,
    same_text,
    write_pages,
)

from daemon.assembly import build_engine, load_embedder, model_names
from daemon.config import load_config
from engine.config import EngineConfig
from engine.search import Filters
from indexer.database import Connection, open_database
from indexer.embedding_queue import EmbeddingWorker
from indexer.reconcile import IndexOptions, Repository, reconcile_repository

_ROOT = Path(__file__).resolve().parents[1]


def _model_path(spec: str, work: Path) -> str:
    """`rev:REV` extracted from git into the workdir; a folder as it is; empty for the shipped model."""
    if not spec.startswith("rev:"):
        return spec
    rev = spec[4:]
    target = work / "models" / rev
    if not target.exists():
        target.mkdir(parents=True)
        archive = subprocess.run(
            ["git", "-C", str(_ROOT), "archive", rev, "engine/weights/relevance"],
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return str(target / "engine" / "weights" / "relevance")


def _holds(unit: str, positive: str) -> bool:
    """The unit is the mined positive (`same_text`) or holds all of it ("A: To change the password ...")."""
    key = norm_key(positive)
    return same_text(unit, positive) or (len(key) >= 12 and key in norm_key(unit))


def _record(
    row: FaqRow, phase: str, label: str, body: dict[str, Any], top: list[Any], ms: float
) -> dict[str, Any]:
    cited = [s for c in body["clauses"] for s in c["sources"]]
    paths = row.paths
    on_page = [s for s in cited if s["path"] in paths]
    near = [  # where the answer's closest passages hold the positive, 1-based
        i
        for i, n in enumerate(body.get("nearest", []), 1)
        if n["path"] in paths and _holds(n["text"], row.positive)
    ]
    heading = norm_key(row.question)
    gold = [row.is_positive(h.path, h.text) for h in top]
    return {
        "model": label,
        "phase": phase,
        "kind": row.kind,
        "repo": row.repo,
        "path": row.path,
        "question": row.question,
        "positive": row.positive,
        "status": body["status"],
        "abstained": body["status"] != "answer",
        "ms": ms,
        "recall10": any(gold),
        "gold_rank": gold.index(True) + 1 if any(gold) else None,
        "nearest_hit": bool(near),
        "nearest_rank": near[0] if near else None,
        "hit": any(_holds(s["text"], row.positive) for s in on_page),
        "paragraph": any(
            _holds(s["text"], row.positive) or in_paragraph(s["text"], row.context) for s in on_page
        ),
        "section": any(heading in {norm_key(h) for h in s["heading"].split(" > ")} for s in on_page),
        "cited": len(cited),
        "rounds": len(body["trace"]),
        "route": body["route"],
        "clause_rounds": [c["round"] for c in body["clauses"]],
        "timings": body["timings_ms"],
        "round_timings": [t.get("timings_ms", {}) for t in body["trace"]],
        "cited_on_page": len(on_page),
        "clauses_cited": sum(1 for c in body["clauses"] if c["sources"]),
        "clauses_on_page": sum(
            1 for c in body["clauses"] if c["sources"] and c["sources"][0]["path"] in paths
        ),
        "best_relevance": max((c["verification"]["relevance"] for c in body["clauses"]), default=-1.0),
        "best_check": max((answer_check_of(c["verification"]) for c in body["clauses"]), default=-1.0),
        "cited_texts": [(s["heading"], s["text"][:200]) for s in cited],
        "clauses": [
            (c["clause"], [f"{s['path']}:{s['line_start']}" for s in c["sources"]]) for c in body["clauses"]
        ],
    }


def _share_below(values: list[float], floor: float) -> str:
    """The share of `values` below `floor`: the answers a floor there would abstain on."""
    return _fmt(mean([float(v < floor) for v in values]))


def _ask_all(
    database: Any,
    config: Any,
    model: tuple[str, str, EngineConfig | None],
    rows: list[FaqRow],
    phase: str,
    budget: str,
) -> list[dict[str, Any]]:
    label, spec, settings = model
    models = replace(model_names(config), reranker=spec)
    engine = build_engine(database, models, config.retrieval, settings)
    out = []
    try:
        with database.connect() as conn:
            conn.execute("DELETE FROM answers")
        engine.answer("warm-up: what is this about", budget, Filters())
        for row in rows:
            filters = Filters(repositories=(row.name,))
            top = engine.retriever.search(row.question, 10, filters=filters) if phase == "answerable" else []
            started = time.perf_counter()
            body = engine.answer(row.question, budget, filters).to_dict()
            out.append(_record(row, phase, label, body, top, 1000 * (time.perf_counter() - started)))
    finally:
        engine.close()
    return out


def _sync(conn: Connection, repos: list[Repository], options: IndexOptions, worker: EmbeddingWorker) -> float:
    started = time.perf_counter()
    for repo in repos:
        reconcile_repository(conn, repo, options)
    worker.drain()
    return time.perf_counter() - started


def _fmt(value: float) -> str:
    return f"{value:.3f}" if value == value else "nan"


def _report(records: list[dict[str, Any]], labels: list[str]) -> None:
    lines: list[tuple[str, list[str]]] = []
    for kind in ("faq", "heading"):
        for figure in ("recall10", "hit", "paragraph", "section", "abstained"):
            values = []
            for label in labels:
                rs = [
                    r
                    for r in records
                    if r["model"] == label and r["phase"] == "answerable" and r["kind"] == kind
                ]
                values.append(
                    _fmt(mean([float(r[figure]) for r in rs])) + f" ({len(rs)})" * (figure == "recall10")
                )
            lines.append((f"{kind}: {figure.replace('abstained', 'abstain, answerable')}", values))
        values = []
        for label in labels:
            rs = [
                r for r in records if r["model"] == label and r["phase"] == "answerable" and r["kind"] == kind
            ]
            values.append(_fmt(sum(r["cited_on_page"] for r in rs) / max(1, sum(r["cited"] for r in rs))))
        lines.append((f"{kind}: same-page precision", values))
        shown = [
            nearest_shown([r for r in records if r["model"] == lb and r["kind"] == kind]) for lb in labels
        ]
        lines.append((f"{kind}: {NEAREST_FIGURE}", shown))
    for name, skip in (("unanswerable variant: abstain", False), ("  not answered elsewhere", True)):
        values = []
        for label in labels:
            rs = [r for r in records if r["model"] == label and r["phase"] == "unanswerable"]
            rs = [r for r in rs if not (skip and (r["repo"], r["question"]) in ANSWERED_ELSEWHERE)]
            values.append(_fmt(mean([float(r["abstained"]) for r in rs])) + f" ({len(rs)})")
        lines.append((name, values))
    for q in (0.5, 0.95):
        values = [_fmt(percentile([r["ms"] for r in records if r["model"] == label], q)) for label in labels]
        lines.append((f"answer ms p{int(q * 100)}", values))
    width = max(len(name) for name, _ in lines)
    print(f"{'figure':<{width}}  " + "  ".join(f"{label:>14}" for label in labels))
    for name, values in lines:
        print(f"{name:<{width}}  " + "  ".join(f"{v:>14}" for v in values))
    for key, name, floors in (
        ("best_relevance", "a relevance floor", (0.35, 0.45, 0.55, 0.65, 0.75)),
        ("best_check", "an answer-check floor", (0.1, 0.2, 0.3, 0.4, 0.5, 0.6)),
    ):
        print(f"abstention at {name} t (answerable faq / unanswerable), per model:")
        for label in labels:
            ans = [
                r[key]
                for r in records
                if r["model"] == label and r["phase"] == "answerable" and r["kind"] == "faq"
            ]
            una = [r[key] for r in records if r["model"] == label and r["phase"] == "unanswerable"]
            cells = [f"{t:.2f}: {_share_below(ans, t)}/{_share_below(una, t)}" for t in floors]
            print(f"  {label}: " + "  ".join(cells))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_docs_arguments(ap)
    ap.add_argument("--model", action="append", default=[], help="LABEL=PATH or LABEL=rev:REV")
    ap.add_argument("--no-shipped", action="store_true", help="leave the shipped model out of the run")
    ap.add_argument(
        "--without-section-reading",
        action="store_true",
        help="also run the shipped model with no section read on its own (EngineConfig.section_units=0)",
    )
    add_engine_arguments(ap)
    args = ap.parse_args()
    repos_named = ROLES[args.role]
    kinds = set(args.kinds.split(","))
    rows = [r for r in load_rows(args.data, repos_named) if r.kind in kinds]
    config = load_config()
    with workspace(args.workdir) as work:
        models: list[tuple[str, str, EngineConfig | None]] = []
        if args.without_section_reading:
            models.append(("no-section", "", EngineConfig(section_units=0)))
        if not args.no_shipped:
            models.append(("shipped", "", None))
        models += [
            (label, _model_path(spec, work), None) for label, spec in (m.split("=", 1) for m in args.model)
        ]
        models = [(label, spec, engine_settings(args, settings)) for label, spec, settings in models]
        repos = []
        for name in repos_named:
            root = work / "pages" / name.replace("/", "__")
            pages = write_pages(args.data, name, root)
            repos.append(Repository(root.name, root))
            print(f"{name}: {pages} pages, {sum(r.repo == name for r in rows)} rows")
        database = open_database(None, work / "db")
        options = IndexOptions(config.indexing.max_file_bytes, config.indexing.code_blocks)
        records: list[dict[str, Any]] = []
        with database.connect() as conn:
            worker = EmbeddingWorker(conn, load_embedder(config))
            print(f"indexed and embedded in {_sync(conn, repos, options, worker):.1f}s")
            for model in models:
                records += _ask_all(database, config, model, rows, "answerable", args.budget)
            originals: dict[Path, str] = {}
            cut: list[FaqRow] = []
            for row in (r for r in rows if r.kind == "faq"):
                file = page_file(work / "pages" / row.name, row.path)
                text = originals.setdefault(file, file.read_text(encoding="utf-8"))
                current = file.read_text(encoding="utf-8")
                shorter = cut_section(current, row.question)
                if shorter is not None and cut_section(text, row.question) is not None:
                    file.write_text(shorter, encoding="utf-8")
                    cut.append(row)
            seconds = _sync(conn, repos, options, worker)
            print(f"unanswerable variant: {len(cut)} faq sections cut, index caught up in {seconds:.1f}s")
            try:
                for model in models:
                    records += _ask_all(database, config, model, cut, "unanswerable", args.budget)
            finally:
                for file, text in originals.items():
                    file.write_text(text, encoding="utf-8")
                _sync(conn, repos, options, worker)
    _report(records, [label for label, _, _ in models])
    if args.dump is not None:
        with args.dump.open("w", encoding="utf-8") as out:
            for record in records:
                out.write(json.dumps(record, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
