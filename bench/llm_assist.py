"""Extractive against LLM-assisted answers (the model as reader, as writer of query variants, or both), in one
run per set, every question answered by each on one index:

    python bench/llm_assist.py prometheus QA_JSONL BUNDLE [--split tune|heldout|all] [--limit N]
    python bench/llm_assist.py docs DOCS_FAQ [--role heldout|tune] [--words heading,users] [--limit N]
        each with --llm-url URL [--llm-model M] [--llm-budget S] [--llm-modes reader,variants,both]
        [--budget low|mid|high] [--workdir DIR] [--dump FILE] [--reader-floors R,C] [--declined-floors R,C]

HotpotQA is `python bench/hotpotqa.py DATA --compare-llm --llm-modes reader,variants,both --llm-url URL`.

`prometheus` asks the tip rows of the Prometheus question set (`docs_qa`: its clone, index and `Record`s) and
prints the tune and held-out parts apart; its paragraph hit is a same-page hit (the set has no paragraphs).
`docs` asks the role's repositories (`docs_faq_pages`) heading-worded (the mined question) and user-worded
(`docs_users.user_rows`), then the unanswerable variant of the `faq` rows with their section cut; every
answer goes through `daemon.assembly.build_engine`, scoped to the row's repository. `--limit N` keeps N
questions per set, spread evenly over it (for smoke runs and for tuning on a budget).

Per set and label: answer hit, paragraph hit, citation precision (strict for Prometheus, same page for the
docs), abstention on answerable and on unanswerable questions, answer p50/p95. `--dump` writes each answer's
figures and, per clause, who chose it, what the reader said in its round, its ratings and whether it is gold
(`reader_floors.py` reads it). Figures only; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from benchkit import mean, workspace
from docs_faq import _holds, _sync
from docs_faq_pages import ROLES, FaqRow, cut_section, in_paragraph, load_rows, page_file, write_pages
from docs_gold import load_rows as load_qa
from docs_gold import split_rows
from docs_qa import _bundle_head, _git, _Run
from docs_users import _ask, user_rows
from llm_compare import (
    add_floor_arguments,
    add_llm_arguments,
    floor_settings,
    latency_rows,
    mode_configs,
    print_side_by_side,
)

from daemon.assembly import build_engine, load_embedder, model_names
from daemon.config import load_config
from engine.answers import Answer
from engine.llm_client import LLMConfig
from indexer.database import open_database
from indexer.embedding_queue import EmbeddingWorker
from indexer.reconcile import IndexOptions, Repository


@dataclass(slots=True)
class Judged:
    """One answer as the figures count it."""

    label: str
    part: str
    answerable: bool
    hit: bool
    paragraph: bool
    cited: list[bool]
    abstained: bool
    ms: float
    clauses: list[dict[str, Any]] = field(default_factory=list)


def signals(body: dict[str, Any], gold: Callable[[dict[str, Any]], bool]) -> list[dict[str, Any]]:
    """Per clause: who chose it, what the reader said in its round, its ratings, and `gold` of its first
    source."""
    out = []
    for clause in body["clauses"]:
        trace = body["trace"][clause["round"] - 1] if clause["round"] <= len(body["trace"]) else {}
        reading = trace.get("reading")
        out.append(
            {
                "by": trace.get("chosen_by", {}).get(clause["clause"], "extractive"),
                "read": reading is not None,
                "declined": reading is not None and not reading["chosen"],
                "p_none": None if reading is None else reading["p_none"],
                "relevance": clause["verification"]["relevance"],
                "answer_check": clause["verification"].get("answer_check"),
                "gold": bool(clause["sources"]) and gold(clause["sources"][0]),
                "agree": reading is not None
                and bool(clause["sources"])
                and reading.get("extractive") == clause["sources"][0]["sentence_id"],
            }
        )
    return out


def spread(items: Sequence[Any], limit: int | None) -> list[Any]:
    """`limit` of `items` spread evenly over them, in order (all without a limit)."""
    if limit is None or limit >= len(items):
        return list(items)
    return [items[i * len(items) // limit] for i in range(limit)]


def labels_of(args: argparse.Namespace) -> dict[str, LLMConfig | None]:
    """ "extractive", then each of `--llm-modes` (which needs `--llm-url`)."""
    modes = mode_configs(args)
    if not modes:
        raise SystemExit(
            "--llm-url is needed: the run compares the extractive planner with the model's modes"
        )
    return {"extractive": None, **modes}


def report(judged: list[Judged], labels: list[str], parts: list[str]) -> None:
    """Per part, each label's figures side by side."""
    for part in parts:
        groups = [[j for j in judged if j.label == label and j.part == part] for label in labels]
        answerable = [[j for j in g if j.answerable] for g in groups]
        unanswerable = len(groups[0]) - len(answerable[0])
        print(f"\n== {part}: {len(answerable[0])} answerable, {unanswerable} unanswerable")
        rows: list[tuple[str, list[float | str]]] = [
            ("answer hit", [mean([float(j.hit) for j in a]) for a in answerable]),
            ("paragraph hit", [mean([float(j.paragraph) for j in a]) for a in answerable]),
            ("citation precision", [mean([float(c) for j in a for c in j.cited]) for a in answerable]),
            ("cited", [str(sum(len(j.cited) for j in a)) for a in answerable]),
            ("abstention answerable", [mean([float(j.abstained) for j in a]) for a in answerable]),
            (
                "abstention unanswerable",
                [mean([float(j.abstained) for j in g if not j.answerable]) for g in groups],
            ),
            *latency_rows("answer", [[j.ms for j in g] for g in groups]),
        ]
        print_side_by_side(labels, rows)


def prometheus(args: argparse.Namespace) -> list[Judged]:
    """The Prometheus tip rows of the chosen split, asked by every label on one index."""
    rows = load_qa(args.qa)
    split = split_rows(rows)
    chosen = [r for r in rows if not r.changed and args.split in ("all", split[r.id])]
    chosen = [
        r
        for part in ("tune", "heldout")
        for r in spread([c for c in chosen if split[c.id] == part], args.limit)
    ]
    config, labels = load_config(), labels_of(args)
    settings = floor_settings(args, None)
    judged: list[Judged] = []
    with workspace(args.workdir) as work:
        clone = work / "clone"
        if not (clone / ".git").exists():
            subprocess.run(["git", "clone", "-q", str(args.qa_bundle), str(clone)], check=True)
        _git(clone, "checkout", "-q", "--detach", _bundle_head(args.qa_bundle))
        database = open_database(None, work / "db")
        models = replace(model_names(config), llm=None)
        run = _Run(clone, database, config, args.budget, models, settings)
        with database.connect() as conn:
            run.sync(conn)
            for label, llm in labels.items():
                for record in run.ask_with(conn, replace(models, llm=llm), chosen, split):
                    gold = {u.sentence_id: s for u, s in zip(record.cited, record.strict, strict=True)}
                    judged.append(
                        Judged(
                            label,
                            record.split,
                            record.row.answerable,
                            any(record.strict),
                            any(record.same_page),
                            list(record.strict),
                            record.abstained,
                            record.latency_ms,
                            signals(record.body, partial(_strict, gold)),
                        )
                    )
        run.retriever.close()
    return judged


def _strict(gold: dict[int, bool], source: dict[str, Any]) -> bool:
    return gold.get(int(source["sentence_id"]), False)


class _Kept:
    """An engine whose answers are kept, for `docs_users._ask`, which reads only their figures."""

    def __init__(self, engine: Any) -> None:
        self.engine, self.retriever = engine, engine.retriever
        self.bodies: list[dict[str, Any]] = []

    def answer(self, *args: Any) -> Answer:
        result: Answer = self.engine.answer(*args)
        self.bodies.append(result.to_dict())
        return result


def _ask_docs(
    engine: Any, asked: list[tuple[FaqRow, str]], phase: str, label: str, part: str, budget: str
) -> list[Judged]:
    kept = _Kept(engine)
    out = []
    for (row, _), record, body in zip(
        asked, _ask(kept, asked, phase, label, budget), kept.bodies, strict=True
    ):

        def gold(source: dict[str, Any], row: FaqRow = row) -> bool:
            return _holds(source["text"], row.positive) or in_paragraph(source["text"], row.context)

        texts = [s for c in body["clauses"] for s in c["sources"]]
        on_page = [s["path"] in row.paths for s in texts]
        out.append(
            Judged(
                label,
                part,
                phase == "answerable",
                record["hit"],
                record["paragraph"],
                on_page,
                record["abstained"],
                record["ms"],
                signals(body, gold),
            )
        )
    return out


def docs(args: argparse.Namespace) -> list[Judged]:
    """The role's repositories asked heading-worded and user-worded, then with the faq sections cut."""
    kinds, words = set(args.kinds.split(",")), args.words.split(",")
    asked: dict[str, list[tuple[FaqRow, str]]] = {}
    if "heading" in words:
        rows = [r for r in load_rows(args.data, ROLES[args.role]) if r.kind in kinds]
        asked["heading"] = spread([(r, r.question) for r in rows], args.limit)
    if "users" in words:
        asked["users"] = spread(user_rows(args.data, args.role, kinds), args.limit)
    config, labels = load_config(), labels_of(args)
    settings = floor_settings(args, None)
    judged: list[Judged] = []
    with workspace(args.workdir) as work:
        repos = []
        for name in ROLES[args.role]:
            root = work / "pages" / name.replace("/", "__")
            write_pages(args.data, name, root)
            repos.append(Repository(root.name, root))
        database = open_database(None, work / "db")
        options = IndexOptions(config.indexing.max_file_bytes, config.indexing.code_blocks)
        with database.connect() as conn:
            worker = EmbeddingWorker(conn, load_embedder(config))
            print(f"indexed and embedded in {_sync(conn, repos, options, worker):.1f}s", flush=True)
            cut_rows = {(r.repo, r.question) for part in asked.values() for r, _ in part if r.kind == "faq"}
            originals: dict[Path, str] = {}
            for phase in ("answerable", "unanswerable"):
                if phase == "unanswerable":
                    originals = _cut(work, [r for part in asked.values() for r, _ in part], cut_rows)
                    _sync(conn, repos, options, worker)
                for label, llm in labels.items():
                    engine = build_engine(
                        database, replace(model_names(config), llm=llm), config.retrieval, settings
                    )
                    try:
                        for part, pairs in asked.items():
                            conn.execute("DELETE FROM answers")
                            if phase == "unanswerable":
                                pairs = [(r, t) for r, t in pairs if (r.repo, r.question) in cut_rows]
                            judged += _ask_docs(engine, pairs, phase, label, part, args.budget)
                    finally:
                        engine.close()
            for file, text in originals.items():
                file.write_text(text, encoding="utf-8")
    return judged


def _cut(work: Path, rows: list[FaqRow], keys: set[tuple[str, str]]) -> dict[Path, str]:
    """Cut each row's section from its page (`keys` keeps those cut); returns the pages' texts before."""
    originals: dict[Path, str] = {}
    for row in dict.fromkeys(r for r in rows if (r.repo, r.question) in keys):
        file = page_file(work / "pages" / row.name, row.path)
        text = originals.setdefault(file, file.read_text(encoding="utf-8"))
        shorter = cut_section(file.read_text(encoding="utf-8"), row.question)
        if shorter is None or cut_section(text, row.question) is None:
            keys.discard((row.repo, row.question))
            continue
        file.write_text(shorter, encoding="utf-8")
    return originals


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sets = parser.add_subparsers(dest="set", required=True)
    qa = sets.add_parser("prometheus")
    qa.add_argument("qa", type=Path)
    qa.add_argument("qa_bundle", type=Path)
    qa.add_argument("--split", choices=["tune", "heldout", "all"], default="all")
    faq = sets.add_parser("docs")
    faq.add_argument("data", type=Path)
    faq.add_argument("--role", choices=sorted(ROLES), default="heldout")
    faq.add_argument("--kinds", default="faq,heading")
    faq.add_argument("--words", default="heading,users", help="heading (mined questions), users (rewrites)")
    for sub in (qa, faq):
        sub.add_argument("--budget", choices=["low", "mid", "high"], default="mid")
        sub.add_argument("--workdir", type=Path)
        sub.add_argument("--dump", type=Path)
        sub.add_argument("--limit", type=int, default=None, help="N questions per part, spread evenly")
        add_llm_arguments(sub, "the model's OpenAI-compatible API base")
        add_floor_arguments(sub)
    args = parser.parse_args()
    judged = prometheus(args) if args.set == "prometheus" else docs(args)
    labels = list(labels_of(args))
    print(
        f"\nbudget {args.budget}; model {args.llm_model} at {args.llm_url}, {args.llm_budget:g} s per answer"
    )
    report(judged, labels, list(dict.fromkeys(j.part for j in judged)))
    if args.dump is not None:
        with args.dump.open("w", encoding="utf-8") as out:
            for j in judged:
                out.write(
                    json.dumps({"set": args.set, **{k: getattr(j, k) for k in Judged.__slots__}}) + "\n"
                )


if __name__ == "__main__":
    main()
