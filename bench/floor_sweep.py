"""Choose the verifier's floors (`VerifyConfig.min_relevance`, `min_answer_check`) from the dumps of a docs
bench run with open floors, on tuning data:

    python bench/docs_users.py DOCS_FAQ --role tune --min-relevance 0 --min-answer-check 0 --dump F
    python bench/floor_sweep.py F [F ...] [--relevance 0.1,0.2,...] [--check 0,0.05,...]

Each record of `docs_users.py` or `docs_faq.py` holds its answer's best relevance rating and best answer check
(`best_relevance`, `best_check`). This replays a grid of floors on them: an answer keeps its clauses when
both its best ratings reach the floors, and abstains otherwise. It is a replay, not a rerun: a refused clause
does not let the planner try the next candidate, so hits under strict floors are a lower bound, and the two
best ratings may come from different clauses of a many-clause answer.

Per model of the dumps and floor pair it prints: answer hit, paragraph hit, abstention on answerable and on
unanswerable questions. Figures only.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchkit import mean

__all__ = ["kept", "sweep"]


def kept(record: dict[str, Any], relevance: float, check: float) -> bool:
    """Whether an answer would still be emitted at these floors (an abstention stays one)."""
    if record["abstained"]:
        return False
    return float(record["best_relevance"]) >= relevance and float(record["best_check"]) >= check


def sweep(records: Sequence[dict[str, Any]], relevance: float, check: float) -> dict[str, float]:
    """hit, paragraph, abstention on answerable and on unanswerable records at these floors, and the wrong
    rate: of the near-miss questions (`docs_written.py`'s `nearmiss` phase), how many an answer kept at these
    floors answers with the mined answer (NaN without such records)."""
    answerable = [r for r in records if r["phase"] == "answerable"]
    unanswerable = [r for r in records if r["phase"] == "unanswerable"]
    near = [r for r in records if r["phase"] == "nearmiss"]
    on = [kept(r, relevance, check) for r in answerable]
    return {
        "wrong": mean([float(kept(r, relevance, check) and r["hit"]) for r in near]),
        "hit": mean([float(k and r["hit"]) for k, r in zip(on, answerable, strict=True)]),
        "paragraph": mean([float(k and r["paragraph"]) for k, r in zip(on, answerable, strict=True)]),
        "abstain_answerable": mean([float(not k) for k in on]),
        "abstain_unanswerable": mean([float(not kept(r, relevance, check)) for r in unanswerable]),
    }


def _floats(text: str) -> list[float]:
    return [float(x) for x in text.split(",") if x.strip()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dumps", nargs="+", type=Path)
    ap.add_argument("--relevance", default="0,0.1,0.2,0.25,0.3,0.35,0.45,0.55")
    ap.add_argument("--check", default="0,0.02,0.05,0.1,0.2,0.3")
    ap.add_argument("--style", help="only answerable records of this style (docs_written.py: plain, ...)")
    args = ap.parse_args()
    records = [json.loads(line) for dump in args.dumps for line in dump.read_text().splitlines() if line]
    if args.style:
        records = [r for r in records if r["phase"] != "answerable" or r.get("style") == args.style]
    for model in dict.fromkeys(r["model"] for r in records):
        rows = [r for r in records if r["model"] == model]
        counts = (
            sum(r["phase"] == "answerable" for r in rows),
            sum(r["phase"] == "unanswerable" for r in rows),
        )
        print(f"{model}: {counts[0]} answerable, {counts[1]} unanswerable")
        print("  relevance  check    hit  paragraph  abstain-answerable  abstain-unanswerable  wrong")
        for relevance in _floats(args.relevance):
            for check in _floats(args.check):
                f = sweep(rows, relevance, check)
                print(
                    f"  {relevance:9.2f}  {check:5.2f}  {f['hit']:.3f}  {f['paragraph']:9.3f}"
                    f"  {f['abstain_answerable']:18.3f}  {f['abstain_unanswerable']:20.3f}  {f['wrong']:.3f}"
                )


if __name__ == "__main__":
    main()
