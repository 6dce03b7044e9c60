"""The docs_faq question sets asked through the whole engine: the first figures of a docs change.

    python bench/docs_asked.py DOCS_FAQ [--set blind|real|page] [--role heldout|tune]
        [--model LABEL=RELEVANCE[,CHECK][@REL,CHECK][#SETTING=N,...] ...] [--styles plain,situation,terse]
        [--limit N] [--every N] [--workdir DIR] [--dump FILE]
    python bench/docs_asked.py --report DUMP [DUMP ...]

DOCS_FAQ is `traindata/docs_faq`. `--set blind` (the default) asks `blind_questions` (written before the docs
were opened); `real` asks `real_questions` (real users' questions, held out only); `page` asks
`page_questions` in each style with its near miss. `--role heldout` (the default) is never trained or tuned
on; `--role tune` is where floors and settings may be chosen. `--model` is `docs_written.py`'s: `LABEL=` the
shipped models, `#first_hold=10` an `EngineConfig` setting, `@REL,CHECK` the verifier's floors.

Per model and wording style it prints (`question_sets.py` says how each is judged):
- answer hit: a cited source answers;
- answered wrong: answered, citing no answering sentence;
- refused answerable, and the share of those with an answering sentence among the first 5 closest passages;
- unanswerable refused;
- search top 10: an answering sentence among search's first 10;
- clause precision: cited clauses with an answering source, over cited clauses; clauses per answer;
- near misses (page set): answered citing the row's own answer sentence, which does not answer them;
- answer p50 / p95 ms;
then where each answerable question that was not hit was lost, by stage. Figures only; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from benchkit import mean, percentile, workspace
from docs_written import ModelSpec
from question_sets import LOSSES, PAGE_STYLES, blind_rows, page_rows, real_rows, run_role

_SETS = {"blind": blind_rows, "real": real_rows}


def _rate(part: list[dict[str, Any]], key: str) -> str:
    return f"{_rate_f(part, key):.3f}" if part else "-"


def figures(records: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(figure, value) rows for one model's records of one style."""
    answerable = [r for r in records if r["answerable"]]
    unanswerable = [r for r in records if not r["answerable"] and r["style"] != "near_miss"]
    refused = [r for r in answerable if not r["answered"]]
    answered = [r for r in answerable if r["answered"]]
    clauses = [h for r in answered for h in r.get("clause_hits", [])]
    rows = [
        ("answerable asked", str(len(answerable))),
        ("answer hit", _rate(answerable, "hit")),
        ("answered wrong", _rate(answerable, "wrong")),
        ("refused answerable", f"{len(refused) / max(1, len(answerable)):.3f}"),
        ("  of those, answer in closest 5", _rate(refused, "nearest5")),
        (
            "unanswerable refused",
            f"{1 - _rate_f(unanswerable, 'answered'):.3f} ({len(unanswerable)})" if unanswerable else "-",
        ),
        ("search top 10", f"{mean([float(r['rank10'] is not None) for r in answerable]):.3f}"),
        ("clause precision", f"{mean([float(h) for h in clauses]):.3f}" if clauses else "-"),
        ("clauses per answer", f"{len(clauses) / max(1, len(answered)):.2f}"),
    ]
    near = [r for r in records if r["style"] == "near_miss"]
    if near:
        rows = [
            ("near misses asked", str(len(near))),
            ("near miss: cited the row's answer", _rate(near, "near_miss_wrong")),
            ("near miss: refused", f"{1 - _rate_f(near, 'answered'):.3f}"),
        ]
    timed = [r["ms"] for r in records]
    rows += [(f"answer ms p{q}", f"{percentile(timed, q / 100):.0f}") for q in (50, 95)]
    return rows


def _rate_f(part: list[dict[str, Any]], key: str) -> float:
    return mean([float(r[key]) for r in part]) if part else float("nan")


def report(records: list[dict[str, Any]]) -> None:
    """Print each style's figures and the loss table, one column per model."""
    labels = list(dict.fromkeys(r["model"] for r in records))
    styles = list(dict.fromkeys(r["style"] for r in records))
    lines: list[tuple[str, list[str]]] = []
    for style in styles:
        columns = [figures([r for r in records if r["model"] == lb and r["style"] == style]) for lb in labels]
        for i, (name, _) in enumerate(columns[0]):
            lines.append((f"{style}: {name}", [c[i][1] for c in columns]))
    for style in styles:
        part = [r for r in records if r["style"] == style and r["answerable"]]
        if not part:
            continue
        lines.append((f"{style}: lost at (of answerable)", ["" for _ in labels]))
        for loss in LOSSES:
            counts = [sum(r["loss"] == loss for r in part if r["model"] == lb) for lb in labels]
            lines.append((f"  {loss}", [str(c) for c in counts]))
    width = max(len(name) for name, _ in lines)
    print(f"{'figure':<{width}}  " + "  ".join(f"{lb:>12}" for lb in labels))
    for name, values in lines:
        print(f"{name:<{width}}  " + "  ".join(f"{v:>12}" for v in values))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", type=Path, nargs="?")
    ap.add_argument("--set", choices=["blind", "real", "page"], default="blind")
    ap.add_argument("--role", choices=["heldout", "tune"], default="heldout")
    ap.add_argument("--model", action="append", default=[], help="LABEL=RELEVANCE[,CHECK][@REL,CHECK]")
    ap.add_argument("--styles", default=",".join(PAGE_STYLES), help="page set: the wordings to ask")
    ap.add_argument("--budget", choices=["low", "mid", "high"], default="mid")
    ap.add_argument("--limit", type=int, help="the first N questions only (a smoke run)")
    ap.add_argument("--every", type=int, default=1, help="every Nth row of the set only (a spread sample)")
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--dump", type=Path)
    ap.add_argument("--report", type=Path, nargs="+", help="print the figures of dumps; ask nothing")
    args = ap.parse_args()
    if args.report:
        records = []
        for file in args.report:
            for line in file.read_text(encoding="utf-8").splitlines():
                record = json.loads(line)
                if len(args.report) > 1:
                    record["model"] = f"{file.stem}:{record['model']}"
                records.append(record)
        report(records)
        return
    if args.data is None:
        ap.error("DOCS_FAQ is required unless --report is given")
    if args.set == "page":
        asked = page_rows(args.data, args.role, tuple(s for s in args.styles.split(",") if s), args.every)
    else:
        asked = _SETS[args.set](args.data, args.role)[:: args.every]
    asked = asked[: args.limit] if args.limit else asked
    models = [ModelSpec.parse(m) for m in args.model or ["shipped="]]
    print(f"{len(asked)} {args.set} questions of {args.role}; models {', '.join(m.label for m in models)}")
    with workspace(args.workdir) as work:
        records = run_role(args.data, work, args.role, asked, models, args.budget)
    report(records)
    if args.dump is not None:
        with args.dump.open("w", encoding="utf-8") as out:
            out.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


if __name__ == "__main__":
    main()
