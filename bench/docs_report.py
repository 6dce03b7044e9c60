"""What `docs_qa.py` counts and prints, from one record per asked question.

- search recall@10: a gold unit among hybrid search's top 10 for the question (answerable rows);
- answer hit rate: the answer cites a gold unit (answerable rows; an abstention is a miss);
- gold recall: the share of a row's gold sentences that some cited unit matches, averaged over rows;
- citation precision strict: cited units that are gold, over every unit cited for answerable rows;
  same-page: cited units whose file holds a gold sentence (or that are gold by identical text elsewhere);
- abstention: status other than `answer`, on answerable and on unanswerable rows;
- answer p50/p95: wall-clock milliseconds of the answering call;
- `changed` rows count with their second answer (after the change, gold = the new sentence); the first
  answer (gold = the old sentence) and the change figures are printed apart;
- the abstention curve: an answer's score is the highest `verification.relevance` of its clauses (the
  relevance model's score of the best source, what `VerifyConfig.min_relevance` gates); at a threshold t an
  answer abstains when it abstained or its score is below t. A second curve reads the answer check's best
  rating of the answer's clauses the same way (what `VerifyConfig.min_answer_check` gates; a clause the
  check did not read counts as 1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from benchkit import NEAREST_FIGURE, answer_check_of, mean, nearest_shown, percentile
from docs_gold import QARow, Unit, unit_is_gold

__all__ = ["Record", "print_report"]

_KINDS = ("lookup", "two_sentence", "comparison", "code", "unanswerable", "changed")
_THRESHOLDS = [round(0.05 * i, 2) for i in range(19)]


@dataclass(slots=True)
class Record:
    """One asked question: the row (with the gold it is judged by), the answer body and what it cited."""

    row: QARow
    split: str
    body: dict[str, Any]
    latency_ms: float
    cited: list[Unit]
    top: list[Unit]
    change: dict[str, Any] | None = None
    near: list[Unit] = field(default_factory=list)
    strict: list[bool] = field(init=False)

    def __post_init__(self) -> None:
        self.strict = [self.is_gold(u) for u in self.cited]

    def is_gold(self, unit: Unit) -> bool:
        """Whether `unit` matches one of the row's gold sentences."""
        return any(unit_is_gold(unit, g, self.row.rival) for g in self.row.gold)

    @property
    def abstained(self) -> bool:
        return bool(self.body["status"] != "answer")

    @property
    def same_page(self) -> list[bool]:
        paths = {g.path for g in self.row.gold}
        return [s or u.path in paths for u, s in zip(self.cited, self.strict, strict=True)]

    @property
    def search_hit(self) -> bool:
        return any(self.is_gold(u) for u in self.top)

    @property
    def nearest(self) -> dict[str, Any]:
        """What `benchkit.nearest_shown` reads: whether the row is answerable, the answer's status, the rank
        of the first gold unit in search's top 10, and whether (and where) the answer's `nearest` holds
        one."""
        gold = [self.is_gold(u) for u in self.top]
        near = [self.is_gold(u) for u in self.near]
        return {
            "phase": "answerable" if self.row.gold else "unanswerable",
            "status": self.body["status"],
            "gold_rank": gold.index(True) + 1 if any(gold) else None,
            "nearest_hit": any(near),
            "nearest_rank": near.index(True) + 1 if any(near) else None,
        }

    @property
    def gold_recall(self) -> float:
        return mean(
            [float(any(unit_is_gold(u, g, self.row.rival) for u in self.cited)) for g in self.row.gold]
        )

    @property
    def score(self) -> float:
        """The best clause relevance; -1 for an abstention (it abstains at every threshold)."""
        if self.abstained:
            return -1.0
        return max((float(c["verification"]["relevance"]) for c in self.body["clauses"]), default=-1.0)

    @property
    def check(self) -> float:
        """The best clause's answer-check rating (1 where the check did not read it); -1 for an abstention."""
        if self.abstained:
            return -1.0
        return max((answer_check_of(c["verification"]) for c in self.body["clauses"]), default=-1.0)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.row.id,
            "kind": self.row.kind,
            "split": self.split,
            "question": self.row.question,
            "status": self.body["status"],
            "reason": self.body.get("reason"),
            "route": self.body.get("route"),
            "latency_ms": round(self.latency_ms, 1),
            "cached": bool(self.body.get("cached")),
            "score": self.score,
            "check": self.check,
            "gold": [{"path": g.path, "sentence": g.sentence, "line": g.line} for g in self.row.gold],
            "cited": [
                {**u.to_dict(), "gold": s, "same_page": p}
                for u, s, p in zip(self.cited, self.strict, self.same_page, strict=True)
            ],
            "clauses": [c["clause"] for c in self.body["clauses"]],
            "search_top10": [{**u.to_dict(), "gold": self.is_gold(u)} for u in self.top],
            "flags": {
                "abstained": self.abstained,
                "search_hit": self.search_hit,
                "answer_hit": any(self.strict),
                "gold_recall": self.gold_recall if self.row.gold else None,
            },
        }
        if self.change is not None:
            first: Record = self.change["first"]
            out["change"] = {
                **{k: v for k, v in self.change.items() if k != "first"},
                "first_answer": {**first.to_dict(), "cites_old": any(first.strict)},
            }
        return out


def _fmt(value: float) -> str:
    return "   -  " if value != value else f"{value:6.3f}"


def _figures(records: list[Record]) -> list[str]:
    answerable = [r for r in records if r.row.answerable]
    unanswerable = [r for r in records if not r.row.answerable]
    cited = [s for r in answerable for s in r.strict]
    page = [p for r in answerable for p in r.same_page]
    latencies = [r.latency_ms for r in records]
    return [
        f"{len(records):4d}",
        _fmt(mean([float(r.search_hit) for r in answerable])),
        _fmt(mean([float(any(r.strict)) for r in answerable])),
        _fmt(mean([r.gold_recall for r in answerable])),
        _fmt(mean([float(s) for s in cited])) + f" /{len(cited):<3d}",
        _fmt(mean([float(p) for p in page])),
        _fmt(mean([float(r.abstained) for r in answerable])),
        _fmt(mean([float(r.abstained) for r in unanswerable])),
        f"{percentile(latencies, 0.5):7.0f}",
        f"{percentile(latencies, 0.95):7.0f}",
    ]


def _table(records: list[Record]) -> None:
    print(
        f"{'kind':<13}{'n':>4} {'R@10':>6} {'hit':>6} {'goldR':>6} {'P.strict':>11} {'P.page':>6}"
        f" {'abst.A':>6} {'abst.U':>6} {'p50 ms':>7} {'p95 ms':>7}"
    )
    kinds = [k for k in _KINDS if any(r.row.kind == k for r in records)]
    kinds += sorted({r.row.kind for r in records} - set(kinds))
    for kind in [*kinds, "overall"]:
        group = [r for r in records if kind in ("overall", r.row.kind)]
        print(f"{kind:<13}" + " ".join(_figures(group)))


def _changed(records: list[Record]) -> None:
    changed = [r for r in records if r.change is not None]
    if not changed:
        return
    firsts: list[Record] = [r.change["first"] for r in changed if r.change is not None]
    times = [r.change["searchable_ms"] for r in changed if r.change and r.change["searchable_ms"] is not None]
    cited_old = [r for r, f in zip(changed, firsts, strict=True) if any(f.strict)]
    reported = [r for r in changed if r.change and any(s != "live" for s in r.change["first_states"])]
    print(
        f"changed rows n={len(changed)}: before the change {sum(any(f.strict) for f in firsts)} answers"
        f" cite the old sentence, {sum(f.abstained for f in firsts)} abstain"
    )
    print(
        f"  checkout -> new sentence searchable (lexical): p50 {percentile(times, 0.5):.0f} ms,"
        f" max {max(times, default=float('nan')):.0f} ms, not found {len(changed) - len(times)}"
    )
    print(
        f"  after: {sum(any(r.strict) for r in changed)} answers cite the new sentence,"
        f" {sum(bool(r.change and r.change['cites_old']) for r in changed)} still cite the old one,"
        f" {sum(r.abstained for r in changed)} abstain; {sum(bool(r.body.get('cached')) for r in changed)}"
        " served from the store"
    )
    print(
        f"  first stored answer reports a changed/deleted source: {len(reported)} of {len(changed)}"
        f" ({sum(1 for r in cited_old if r in reported)} of the {len(cited_old)} that cited the old sentence)"
    )


def _curve(records: list[Record]) -> None:
    readings: list[tuple[str, Callable[[Record], float]]] = [
        ("relevance", lambda r: r.score),
        ("answer check", lambda r: r.check),
    ]
    for name, score in readings:
        answerable = [score(r) for r in records if r.row.answerable]
        unanswerable = [score(r) for r in records if not r.row.answerable]
        if answerable and unanswerable:
            _curve_of(name, answerable, unanswerable)


def _curve_of(name: str, answerable: list[float], unanswerable: list[float]) -> None:
    print(f"abstention curve (threshold on the best clause {name}): t  abst.unanswerable  abst.answerable")
    for t in _THRESHOLDS:
        u = mean([float(s < t) for s in unanswerable])
        a = mean([float(s < t) for s in answerable])
        print(f"  {t:4.2f}  {u:6.3f}  {a:6.3f}")


def print_report(records: list[Record], split: str) -> None:
    """The per-kind table, the changed rows' figures and the abstention curve, per split."""
    for name in ["tune", "heldout", "all"] if split == "all" else [split]:
        group = [r for r in records if name in ("all", r.split)]
        print(f"\n== split {name}: {len(group)} questions")
        _table(group)
        print(f"{NEAREST_FIGURE}: {nearest_shown([r.nearest for r in group if r.change is None])}")
        _changed(group)
        _curve(group)
