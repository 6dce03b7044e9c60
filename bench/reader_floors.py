"""Choose the reader's floors from `llm_assist.py --dump` files of a run with open floors, on tuning data:

    python bench/llm_assist.py ... --llm-modes reader --reader-floors 0,0 --declined-floors 0,0 --dump F
    python bench/reader_floors.py F [F ...] [--top N]

With open floors every clause that passed entailment, coverage, contradiction and the composite was emitted,
with its relevance rating and answer check in its verification. This replays the floors on those clauses:
a reader's choice is kept when either rating reaches its reader floor (`VerifyConfig.min_relevance_read`,
`min_answer_check_read`); a clause of a round the reader declined when both reach the declined floors; a
clause of a round no reader read (the extractive planner's fallback) when both reach the engine's floors.
With a NONE threshold, a reader's choice whose reading gave NONE at least that probability is held to the
declined floors too. An answer whose clauses are all dropped abstains.

It is a replay, not a rerun: where every clause is dropped and a reader's choice was dropped at the reader's
floors, the extractive answer of the same question stands in for the rescue (`engine.rounds`); a later
round is not replayed. Per set and part of the dumps, against the
extractive answers of the same run: the settings that keep citation precision and abstention on
unanswerable questions at or above the extractive figures in every part, best summed answer hit first.
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchkit import mean

from engine.verdicts import VerifyConfig

_BASE = (VerifyConfig().min_relevance, VerifyConfig().min_answer_check)
Setting = tuple[float, float, float, float, float | None, int]
"""Reader relevance and check floors, declined relevance and check floors, NONE threshold (None: off), and
how many of a reading's choices become clauses (`llm_planner.MAX_READ`: 1 keeps the first named)."""


def kept(clause: dict[str, Any], setting: Setting) -> bool:
    """Whether `clause` survives `setting`'s floors (see the module's docstring)."""
    r_rel, r_chk, d_rel, d_chk = setting[:4]
    rel = float(clause["relevance"])
    chk = 1.0 if clause["answer_check"] is None else float(clause["answer_check"])
    doubted = _doubted(clause, setting)
    if clause["by"] == "reader" and not doubted:
        return rel >= r_rel or chk >= r_chk
    if clause["by"] == "reader" or clause["declined"]:
        return rel >= d_rel and chk >= d_chk
    return rel >= _BASE[0] and chk >= _BASE[1]


def _picked(clauses: list[dict[str, Any]], picks: int) -> list[dict[str, Any]]:
    """The clauses with at most `picks` reader's choices per reading (the first named; a reading is told
    apart by its NONE probability, the same for every choice it made)."""
    seen: dict[object, int] = {}
    out = []
    for clause in clauses:
        if clause["by"] == "reader":
            seen[clause["p_none"]] = seen.get(clause["p_none"], 0) + 1
            if seen[clause["p_none"]] > picks:
                continue
        out.append(clause)
    return out


def replayed(record: dict[str, Any], extractive: dict[str, Any], setting: Setting) -> list[bool]:
    """The gold of each clause `record` keeps under `setting`; when it keeps none and a reader's choice was
    dropped at the reader's floors, the extractive planner's clauses of the same question (the rescue)."""
    clauses = _picked(record["clauses"], setting[5])
    golds = [c["gold"] for c in clauses if kept(c, setting)]
    rescued = any(c["by"] == "reader" and not _doubted(c, setting) for c in clauses)
    if golds or not rescued:
        return golds
    return [c["gold"] for c in extractive["clauses"]]


def _doubted(clause: dict[str, Any], setting: Setting) -> bool:
    return setting[4] is not None and clause["p_none"] is not None and clause["p_none"] >= setting[4]


def figures(
    records: Sequence[dict[str, Any]], setting: Setting | None, extractive: Sequence[dict[str, Any]] = ()
) -> tuple[float, float, float, float]:
    """Answer hit, citation precision, abstention on answerable and on unanswerable questions, each clause
    judged by its first source's gold (strict for Prometheus, its paragraph for the docs); `setting` None
    counts the records as they are, else they are replayed (`replayed`, against `extractive`: the
    extractive answers of the same questions in the same order)."""
    hits, cited, abstained, refused = [], [], [], []
    for index, record in enumerate(records):
        if setting is None:
            golds, answered = [c["gold"] for c in record["clauses"]], not record["abstained"]
        else:
            golds = replayed(record, extractive[index], setting)
            answered = bool(golds)
        if record["answerable"]:
            hits.append(float(any(golds)))
            cited += [float(g) for g in golds]
            abstained.append(float(not answered))
        else:
            refused.append(float(not answered))
    return mean(hits), mean(cited), mean(abstained), mean(refused)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("dumps", type=Path, nargs="+")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    records = [
        json.loads(line) for path in args.dumps for line in path.read_text().splitlines() if line.strip()
    ]
    parts = sorted({(r["set"], r["part"]) for r in records})
    groups = {p: [r for r in records if (r["set"], r["part"]) == p] for p in parts}
    base = {p: figures([r for r in g if r["label"] == "extractive"], None) for p, g in groups.items()}
    print("part: hit / precision / abstain answerable / abstain unanswerable (n)")
    for p, g in groups.items():
        n = sum(r["label"] == "extractive" for r in g)
        print(f"extractive {p[0]}/{p[1]}: " + " / ".join(f"{v:.3f}" for v in base[p]) + f" ({n})")
    grid = itertools.product(
        (0.0, 0.1, 0.2, 0.35, 0.5),
        (0.0, 0.05, 0.1, 0.2, 0.3),
        (0.35, 0.5, 0.7, 2.0),
        (0.1, 0.3),
        (None, 0.15, 0.25),
        (1, 2),
    )
    results = []
    for setting in grid:
        per = {
            p: figures(
                [r for r in g if r["label"] != "extractive"],
                setting,
                [r for r in g if r["label"] == "extractive"],
            )
            for p, g in groups.items()
        }
        short = sum(
            max(0.0, base[p][1] - per[p][1]) + max(0.0, base[p][3] - per[p][3])
            for p in parts
            if per[p][1] == per[p][1]
        )
        results.append((short < 1e-9, -round(short, 3), sum(per[p][0] for p in parts), setting, per))
    results.sort(key=lambda item: (not item[0], -item[1], -item[2]))
    for ok, short, _, setting, per in results[: args.top]:
        name = "reader {:.2f},{:.2f} declined {:.2f},{:.2f} none>={} picks {}".format(*setting)
        name += "" if ok else f" (precision and abstention short of extractive by {-short:.3f} in all)"
        print(f"\n{'meets' if ok else 'MISSES'} {name}")
        for p in parts:
            print(f"  {p[0]}/{p[1]}: " + " / ".join(f"{v:.3f}" for v in per[p]))


if __name__ == "__main__":
    main()
