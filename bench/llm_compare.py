"""Helpers for the answer benchmarks that answer every question with the extractive planner and then with an
LLM planner in one run on one index (`hotpotqa.py --compare-llm`, `docs_qa.py --llm-url`).

- `add_llm_arguments`, `llm_config`, `planners_for`: the `--llm-url`, `--llm-model`, `--llm-budget`,
  `--llm-modes` (and `--compare-llm`) options, the `LLMConfig` they name and the planners a run answers
  with, by label; `mode_configs`: the `LLMConfig` of each mode (`MODES`: the model as planner, as reader,
  as rewriter of query variants, or reader and rewriter), by label;
- `add_floor_arguments`, `floor_settings`: `--reader-floors` and `--declined-floors`, the verifier's floors
  for a reader's choice and for a round the reader declined;
- `RoundCounts`: who planned the rounds of the LLM planner's answers: the model; the extractive planner
  rescuing a round whose every clause the model proposed verification refused; the extractive planner
  planning a round the model failed (endpoint refused or timed out, the answer's budget spent, a reply
  malformed twice; `engine.rounds` records each in the round's `planner_error` and `planned_by`);
- `PlannerTally`: one planner's values per figure, latencies per route and `RoundCounts`;
- `print_side_by_side`, `latency_rows`: figures as rows, one column per planner.

The benchmarks run as scripts (`python bench/NAME.py`), so this module is imported by its bare name.
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from benchkit import mean, percentile

from engine.config import EngineConfig
from engine.llm_client import LLMConfig, LLMRole
from engine.llm_planner import LLMPlanner, model_planner
from engine.planners import ExtractivePlanner
from engine.planning import Planner

__all__ = [
    "MODES",
    "PlannerTally",
    "RoundCounts",
    "add_floor_arguments",
    "add_llm_arguments",
    "close_planners",
    "floor_settings",
    "latency_rows",
    "llm_config",
    "mode_configs",
    "planners_for",
    "print_side_by_side",
]

MODES = {
    "planner": (LLMRole.PLANNER, False),
    "reader": (LLMRole.READER, False),
    "variants": (LLMRole.REWRITER, True),
    "both": (LLMRole.READER, True),
}
"""What the model does in each mode: its role, and whether it writes query variants."""

_REFUSED = "every clause"
"""How `engine.rounds` opens the `planner_error` of a round the extractive planner rescued."""


def add_llm_arguments(parser: argparse.ArgumentParser, url_help: str, *, compare: bool = False) -> None:
    """`--llm-url` (helped by `url_help`), `--llm-model`, `--llm-budget`; with `compare`, `--compare-llm`."""
    parser.add_argument("--llm-url", help=url_help)
    parser.add_argument("--llm-model", default="gemma3-270m", help="with --llm-url: the model name")
    parser.add_argument("--llm-budget", type=float, default=10.0, help="with --llm-url: seconds per answer")
    parser.add_argument(
        "--llm-modes",
        default="reader",
        help=f"with --llm-url: comma-separated, each answering every question ({', '.join(MODES)})",
    )
    if compare:
        parser.add_argument(
            "--compare-llm",
            action="store_true",
            help="with --llm-url: answer every question with the extractive planner, then the LLM planner",
        )


def llm_config(args: argparse.Namespace) -> LLMConfig | None:
    """The endpoint `--llm-url` names (None without it), with the model, the per-answer budget and the
    first of `--llm-modes`."""
    configs = mode_configs(args)
    return next(iter(configs.values())) if configs else None


def mode_configs(args: argparse.Namespace) -> dict[str, LLMConfig]:
    """The `LLMConfig` of each of `--llm-modes`, by mode, on the endpoint `--llm-url` names (none without
    it); an unknown mode stops the run."""
    if not args.llm_url:
        return {}
    base = LLMConfig(args.llm_url, args.llm_model, budget_seconds=args.llm_budget)
    configs = {}
    for mode in (m.strip() for m in args.llm_modes.split(",") if m.strip()):
        if mode not in MODES:
            raise SystemExit(f"--llm-modes: unknown mode {mode!r} (known: {', '.join(MODES)})")
        role, variants = MODES[mode]
        configs[mode] = replace(base, role=role, variants=variants)
    return configs


def add_floor_arguments(parser: argparse.ArgumentParser) -> None:
    """`--reader-floors REL,CHECK` and `--declined-floors REL,CHECK` (see `floor_settings`)."""
    parser.add_argument(
        "--reader-floors", default=None, help="VerifyConfig.min_relevance_read,min_answer_check_read"
    )
    parser.add_argument(
        "--declined-floors",
        default=None,
        help="VerifyConfig.min_relevance_declined,min_answer_check_declined",
    )


def floor_settings(args: argparse.Namespace, base: EngineConfig | None) -> EngineConfig | None:
    """`base` (the engine's defaults when None) with the floors `add_floor_arguments`' flags set; `base`
    itself when they set none."""
    if args.reader_floors is None and args.declined_floors is None:
        return base
    settings = base or EngineConfig()
    verify = settings.verify
    if args.reader_floors is not None:
        rel, check = (float(v) for v in args.reader_floors.split(","))
        verify = replace(verify, min_relevance_read=rel, min_answer_check_read=check)
    if args.declined_floors is not None:
        rel, check = (float(v) for v in args.declined_floors.split(","))
        verify = replace(verify, min_relevance_declined=rel, min_answer_check_declined=check)
    return replace(settings, verify=verify)


def planners_for(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, Planner]:
    """The planners a run answers with, by label: "extractive"; each of `--llm-modes` with `--llm-url`;
    "extractive" first, then each mode, with `--compare-llm` (which without `--llm-url` is a usage
    error)."""
    configs = mode_configs(args)
    if getattr(args, "compare_llm", False) and not configs:
        parser.error("--compare-llm needs --llm-url")
    if not configs:
        return {"extractive": ExtractivePlanner()}
    both = getattr(args, "compare_llm", False)
    models: dict[str, Planner] = {mode: model_planner(config) for mode, config in configs.items()}
    return {**({"extractive": ExtractivePlanner()} if both else {}), **models}


def close_planners(planners: Mapping[str, Planner]) -> None:
    """Close the LLM planners' HTTP clients."""
    for planner in planners.values():
        if isinstance(planner, LLMPlanner):
            planner.close()


@dataclass(slots=True)
class RoundCounts:
    """Who planned the rounds of an LLM planner's answers, over a run."""

    answers: int = 0
    rounds: int = 0
    by_model: int = 0
    rescued: int = 0
    failed: int = 0
    answers_with_extractive: int = 0
    errors: Counter[str] = field(default_factory=Counter)

    def add(self, trace: Sequence[Mapping[str, Any]]) -> None:
        """Count one answer's rounds (its trace, as `RoundTrace.to_dict` writes each round)."""
        self.answers += 1
        self.rounds += len(trace)
        extractive = [r for r in trace if r.get("planned_by")]
        self.by_model += len(trace) - len(extractive)
        self.answers_with_extractive += bool(extractive)
        for r in extractive:
            error = str(r.get("planner_error") or "")
            if error.startswith(_REFUSED):
                self.rescued += 1
            else:
                self.failed += 1
                self.errors[error[:90]] += 1

    def print(self, label: str) -> None:
        """Two or more lines: the rounds by who planned them, then the commonest failures of the model."""
        print(
            f"{label} rounds: {self.rounds} in {self.answers} answers; planned by the LLM {self.by_model},"
            f" rescued by the extractive planner (every LLM clause refused) {self.rescued},"
            f" planned by the extractive planner (the LLM failed) {self.failed};"
            f" answers with an extractive round {self.answers_with_extractive} of {self.answers}"
        )
        for error, count in self.errors.most_common(3):
            print(f"  the LLM failed {count}x: {error}")


class PlannerTally:
    """One planner's figures over a run: values per key (and per `KIND:key`), latency per route, and who
    planned its rounds."""

    def __init__(self) -> None:
        self.totals: dict[str, list[float]] = defaultdict(list)
        self.latency: dict[str, list[float]] = defaultdict(list)
        self.rounds = RoundCounts()

    def put(self, key: str, value: float, kind: str = "") -> None:
        """Add `value` under `key`, and under `kind:key` when `kind` is given."""
        self.totals[key].append(value)
        if kind:
            self.totals[f"{kind}:{key}"].append(value)

    def mean(self, key: str) -> float:
        """The mean of `key`'s values; NaN when there are none."""
        return mean(self.totals[key])


def latency_rows(name: str, per_label: Sequence[Sequence[float]]) -> list[tuple[str, list[float | str]]]:
    """Rows `name p50 ms` and `name p95 ms`: each label's latencies (milliseconds), nearest rank."""
    return [
        (f"{name} p{round(100 * q)} ms", [percentile(values, q) for values in per_label]) for q in (0.5, 0.95)
    ]


def print_side_by_side(labels: Sequence[str], rows: Sequence[tuple[str, Sequence[float | str]]]) -> None:
    """A table: a header of `labels`, then each figure's name and its value per label (a float of 10 or more
    printed with one decimal, otherwise three; a string as it is)."""
    width = max([len(name) for name, _ in rows] + [6])
    print(f"{'':<{width}}" + "".join(f"{label:>14}" for label in labels))
    for name, values in rows:
        cells = [v if isinstance(v, str) else f"{v:.1f}" if abs(v) >= 10 else f"{v:.3f}" for v in values]
        print(f"{name:<{width}}" + "".join(f"{cell:>14}" for cell in cells))
