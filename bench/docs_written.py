"""Docs questions written in users' words, asked through the whole engine: the first figure of a docs change.

    python bench/docs_written.py DOCS_FAQ [--role heldout|tune]
        [--model LABEL=RELEVANCE[,CHECK][@REL,CHECK][#SETTING=N,...]]
        [--embedder LABEL=SPEC ...] [--columns EMB:MODEL,...] [--styles plain,situation,terse] [--limit N]
        [--workdir DIR] [--dump FILE]
    python bench/docs_written.py DOCS_FAQ --report DUMP [DUMP ...]

DOCS_FAQ is `traindata/docs_faq`. The questions are the usable rows of `users_written.jsonl.gz` of the role's
repositories (`--role heldout`, the default: never trained or tuned on; `--role tune`: where floors may be
chosen). Each row is asked:
- in each style (`plain`, `situation`, `terse`): answerable, its mined answer is the gold;
- as its `near_miss`: a question on the same page that the mined answer does NOT answer. Citing the mined
  answer sentence is a wrong answer (the confidently wrong answer of a near miss);
- in `plain` words once more with its section cut from its page, for `faq` rows whose heading is found: the
  unanswerable variant (the pages are put back after).

The role's pages are indexed and embedded once per `--embedder` (default: the default embedder; several are
measured in one run, each model's column then named `EMBEDDER:MODEL`, and `--columns` keeps only the named
ones), and every `--model` answers on each index: `LABEL=` is the shipped relevance model and answer check,
`LABEL=PATH` a relevance model in place of the shipped one, `LABEL=PATH,CHECK` an answer check too (`none`:
no answer check), and `@REL,CHECK` the verifier's floors for that model (`VerifyConfig.min_relevance`,
`min_answer_check`; default the engine's), and `#SETTING=N,...` numeric `EngineConfig` settings
(`#first_hold=10`). With `--dump`, `bench/floor_sweep.py` replays floors on the
records (run with open floors, `@0,0`, on the tune role).

Per model, per style: search recall@10 and @50 of the mined answer, answer hit, paragraph hit, same-page
precision over cited sources and over cited clauses (a clause's first source: a lead-in with the block it
introduces counts once), abstention on answerable questions; then the wrong-answer rate (near misses
answered with the mined answer) and the near misses' abstention; abstention on the unanswerable variant;
answer p50/p95 ms.
`--report DUMP ...` prints the figures of earlier dumps, one column per file and model. Figures only; it
asserts nothing.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from benchkit import mean, percentile, workspace
from docs_faq import _sync
from docs_faq_pages import ROLES, FaqRow, cut_section, load_rows, page_file, write_pages
from docs_users import _ask as ask_users

from daemon.assembly import build_engine, model_names
from daemon.config import load_config
from engine.config import EngineConfig
from engine.search import Filters
from indexer.database import open_database
from indexer.embedder import load_embedding_model
from indexer.embedding_queue import EmbeddingWorker
from indexer.reconcile import IndexOptions, Repository
from training.data import read_jsonl
from training.embedder_eval import embedder_spec

STYLES = ("plain", "situation", "terse")


@dataclass(frozen=True, slots=True)
class Written:
    """One usable written row with its mined row."""

    row: FaqRow
    asked: dict[str, str]
    near_miss: str


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """A relevance model, an answer check and the verifier's floors, as `--model` names them."""

    label: str
    relevance: str = ""
    check: str = ""
    floors: tuple[float, float] | None = None
    engine: tuple[tuple[str, int | float], ...] = ()
    """Numeric `EngineConfig` settings in place of the defaults (`#first_hold=10,lookup_margin=0.05`)."""

    @classmethod
    def parse(cls, text: str) -> ModelSpec:
        label, _, rest = text.partition("=")
        rest, _, settings = rest.partition("#")
        models, _, floors = rest.partition("@")
        relevance, _, check = models.partition(",")
        pair = None
        if floors:
            rel, _, chk = floors.partition(",")
            pair = (float(rel), float(chk or 0.0))
        engine = tuple(
            (k, int(v) if v.lstrip("-").isdigit() else float(v))
            for k, _, v in (s.partition("=") for s in settings.split(",") if s)
        )
        return cls(label, relevance, check, pair, engine)

    def settings(self) -> EngineConfig | None:
        if self.floors is None and not self.engine:
            return None
        base = replace(EngineConfig(), **dict(self.engine))
        if self.floors is None:
            return base
        verify = replace(base.verify, min_relevance=self.floors[0], min_answer_check=self.floors[1])
        return replace(base, verify=verify)


def written_rows(data: Path, role: str, limit: int | None) -> list[Written]:
    """The usable written rows of the role's repositories, in file order, joined to their mined rows."""
    repos = ROLES[role]
    mined = {n: r for n, r in enumerate(read_jsonl(data / "pairs.jsonl.gz")) if r["repo"] in repos}
    rows = {(r.repo, r.question, r.path): r for r in load_rows(data, repos)}
    out = []
    for w in read_jsonl(data / "users_written.jsonl.gz"):
        m = mined.get(int(w["row"]))
        if m is None or not w.get("usable"):
            continue
        row = rows[(m["repo"], m["question"], m["path"])]
        out.append(Written(row, {s: str(w[s]) for s in STYLES}, str(w["near_miss"])))
    return out[:limit] if limit else out


def _ask(engine: Any, asked: list[tuple[FaqRow, str]], phase: str, style: str, label: str) -> list[Any]:
    """`docs_users.py`'s records (search recall of the mined answer, the answer's record), each with its
    style."""
    return [{**record, "style": style} for record in ask_users(engine, asked, phase, label, "mid")]


def _run(
    work: Path, spec: str, models: list[ModelSpec], rows: list[Written], role: str, styles: list[str]
) -> list[dict[str, Any]]:
    label, name, runtime = embedder_spec(spec)
    config = load_config()
    repos = [Repository(n.replace("/", "__"), work / "pages" / n.replace("/", "__")) for n in ROLES[role]]
    database = open_database(None, work / f"db-{label}")
    options = IndexOptions(config.indexing.max_file_bytes, config.indexing.code_blocks)
    names = replace(model_names(config), embedder=name, embedder_runtime=runtime)
    records: list[dict[str, Any]] = []
    with database.connect() as conn:
        worker = EmbeddingWorker(conn, load_embedding_model(name, runtime))
        print(f"{label}: indexed and embedded in {_sync(conn, repos, options, worker):.1f}s", flush=True)
        engines = {
            m.label: build_engine(
                database,
                replace(names, reranker=m.relevance, answer_check=m.check),
                config.retrieval,
                m.settings(),
            )
            for m in models
        }
        try:
            for m in models:
                engine = engines[m.label]
                conn.execute("DELETE FROM answers")
                engine.answer("warm-up: what is this about", "mid", Filters())
                for style in styles:
                    records += _ask(
                        engine, [(w.row, w.asked[style]) for w in rows], "answerable", style, m.label
                    )
                    print(f"  {m.label}: {style} asked", flush=True)
                records += _ask(
                    engine, [(w.row, w.near_miss) for w in rows], "nearmiss", "near_miss", m.label
                )
            originals: dict[Path, str] = {}
            cut: list[Written] = []
            for w in rows:
                if w.row.kind != "faq":
                    continue
                file = page_file(work / "pages" / w.row.name, w.row.path)
                text = originals.setdefault(file, file.read_text(encoding="utf-8"))
                shorter = cut_section(file.read_text(encoding="utf-8"), w.row.question)
                if shorter is not None and cut_section(text, w.row.question) is not None:
                    file.write_text(shorter, encoding="utf-8")
                    cut.append(w)
            try:
                _sync(conn, repos, options, worker)
                for m in models:
                    conn.execute("DELETE FROM answers")
                    asked = [(w.row, w.asked["plain"]) for w in cut]
                    records += _ask(engines[m.label], asked, "unanswerable", "plain", m.label)
            finally:
                for file, text in originals.items():
                    file.write_text(text, encoding="utf-8")
                _sync(conn, repos, options, worker)
        finally:
            for engine in engines.values():
                engine.close()
    return records


def _clauses_on_page(records: list[dict[str, Any]]) -> str:
    """The share of cited clauses whose first source is on the row's page: a clause with the block its
    lead-in introduces, or a dependent sentence with its antecedent, counts once, as the unit a reader sees
    (`cited_on_page` counts each of its sources). Records dumped before the field existed are read from
    their `clauses`, by the page's path."""
    total = on = 0
    for r in records:
        if "clauses_cited" in r:
            total, on = total + r["clauses_cited"], on + r["clauses_on_page"]
            continue
        firsts = [sources[0].rsplit(":", 1)[0] for _, sources in r["clauses"] if sources]
        total, on = total + len(firsts), on + sum(path == r["path"] for path in firsts)
    return f"{on / max(1, total):.3f}"


def report(records: list[dict[str, Any]], labels: list[str], styles: list[str]) -> None:
    """Print the figures of each model, one column each."""

    def of(label: str, phase: str, style: str | None = None) -> list[dict[str, Any]]:
        return [
            r
            for r in records
            if r["model"] == label and r["phase"] == phase and (style is None or r.get("style") == style)
        ]

    lines: list[tuple[str, list[str]]] = []
    for style in styles:
        for figure, name in (
            ("recall10", "search recall@10"),
            ("recall50", "search recall@50"),
            ("hit", "answer hit"),
            ("paragraph", "paragraph hit"),
            ("abstained", "abstain, answerable"),
        ):
            values = [f"{mean([float(r[figure]) for r in of(lb, 'answerable', style)]):.3f}" for lb in labels]
            lines.append((f"{style}: {name}", values))
        precision = []
        for label in labels:
            answered = of(label, "answerable", style)
            cited = max(1, sum(r["cited"] for r in answered))
            precision.append(f"{sum(r['cited_on_page'] for r in answered) / cited:.3f}")
        lines.append((f"{style}: same-page precision", precision))
        lines.append(
            (
                f"{style}: same-page precision, clauses",
                [_clauses_on_page(of(lb, "answerable", style)) for lb in labels],
            )
        )
    near = [of(lb, "nearmiss") for lb in labels]
    lines.append(
        ("near miss: wrong-answer rate", [f"{mean([float(r['hit']) for r in rs]):.3f}" for rs in near])
    )
    lines.append(("near miss: abstain", [f"{mean([float(r['abstained']) for r in rs]):.3f}" for rs in near]))
    cut = [of(lb, "unanswerable") for lb in labels]
    lines.append(
        (
            "abstain, unanswerable",
            [f"{mean([float(r['abstained']) for r in rs]):.3f} ({len(rs)})" for rs in cut],
        )
    )
    for q in (0.5, 0.95):
        values = [f"{percentile([r['ms'] for r in of(lb, 'answerable')], q):.0f}" for lb in labels]
        lines.append((f"answer ms p{int(q * 100)}", values))
    width = max(len(name) for name, _ in lines)
    print(f"{'figure':<{width}}  " + "  ".join(f"{label:>12}" for label in labels))
    for name, values in lines:
        print(f"{name:<{width}}  " + "  ".join(f"{v:>12}" for v in values))


def _report_dumps(files: list[Path], styles: list[str]) -> None:
    """The figures of `--dump` files, one column per file and model (`FILE:MODEL` when several files)."""
    records: list[dict[str, Any]] = []
    labels: list[str] = []
    for file in files:
        for line in file.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            if len(files) > 1:
                record["model"] = f"{file.stem}:{record['model']}"
            if record["model"] not in labels:
                labels.append(record["model"])
            records.append(record)
    present = {r.get("style") for r in records if r["phase"] == "answerable"}
    report(records, labels, [s for s in styles if s in present])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", type=Path)
    ap.add_argument("--role", choices=sorted(ROLES), default="heldout")
    ap.add_argument("--model", action="append", default=[], help="LABEL=RELEVANCE[,CHECK][@REL,CHECK]")
    ap.add_argument("--embedder", action="append", default=[], help="LABEL=SPEC[@RUNTIME]")
    ap.add_argument("--columns", default="", help="EMB:MODEL,... (several embedders): only these")
    ap.add_argument("--styles", default=",".join(STYLES))
    ap.add_argument("--limit", type=int, help="the first N usable rows only (a smoke run)")
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--dump", type=Path)
    ap.add_argument("--report", type=Path, nargs="+", help="print the figures of dumps; ask nothing")
    args = ap.parse_args()
    if args.report:
        _report_dumps(args.report, [s for s in args.styles.split(",") if s])
        return
    rows = written_rows(args.data, args.role, args.limit)
    styles = [s for s in args.styles.split(",") if s]
    models = [ModelSpec.parse(m) for m in args.model or ["shipped="]]
    print(
        f"{len(rows)} usable written rows of {args.role}; models {', '.join(m.label for m in models)}",
        flush=True,
    )
    with workspace(args.workdir) as work:
        for name in ROLES[args.role]:
            write_pages(args.data, name, work / "pages" / name.replace("/", "__"))
        embedders = args.embedder or ["default="]
        labels: list[str] = []
        records: list[dict[str, Any]] = []
        wanted = {c for c in args.columns.split(",") if c}
        for spec in embedders:
            named = embedder_spec(spec)[0]
            chosen = [m for m in models if not wanted or f"{named}:{m.label}" in wanted]
            if not chosen:
                continue
            for record in _run(work, spec, chosen, rows, args.role, styles):
                if len(embedders) > 1:
                    record["model"] = f"{named}:{record['model']}"
                records.append(record)
            labels += [f"{named}:{m.label}" if len(embedders) > 1 else m.label for m in chosen]
    report(records, labels, styles)
    if args.dump is not None:
        with args.dump.open("w", encoding="utf-8") as out:
            out.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


if __name__ == "__main__":
    main()
