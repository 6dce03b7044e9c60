"""A planner on any OpenAI-compatible chat-completions endpoint (Ollama, vLLM, llama.cpp, hosted APIs).

The model sees the question, the evidence held (by sentence id), the accepted findings and failed searches,
and answers in JSON under the plan's schema (`plan_schema`, sent as `response_format`): the clauses to try
with their reference need and sources, at most three further queries, and whether the answer is complete. Its
output is validated strictly, because the controller acts on it: a malformed reply is sent back once with the
error, and a second malformed reply fails the round. All the planner's calls for one answer share one time
budget (`LLMConfig.budget_seconds`, counted from the answer's start, less `RESERVE_SECONDS` kept for the work
after the model's last call): each request may take only what is left, and once the budget is spent, or the
endpoint failed, the planner fails the answer's remaining rounds at once, without asking the endpoint, so the
answer never waits for a model past its budget. A failed round is planned by the extractive planner instead
(`engine.rounds`). The final round's prompt offers no further queries, and a reply that asks for some anyway
is malformed. Whatever the model writes, the controller verifies every clause.

`ReaderPlanner` gives the model the reader's role instead (`LLMRole.READER`, the default of `model_planner`):
the extractive planner ranks the candidates and plans the searches, the model names which of the top-rated
candidates answer (`engine.reader`), and its choice goes to verification as the reader's
(`Chooser.READER`); when it answers NONE, the extractive planner's choice goes with `declined` set. Either
planner offers a `rewriter` when `LLMConfig.variants` is set (or the role is `REWRITER`, where the model
only rewrites and the extractive planner chooses), and shares the budget with it.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import replace
from typing import Any

import httpx

from engine.answers import ReferenceNeed
from engine.llm_client import ChatClient, EndpointError, LLMConfig, LLMRole
from engine.planners import ExtractivePlanner
from engine.planning import Plan, PlannerError, PlannerState
from engine.reader import LLMReader, LLMRewriter, Reader, Rewriter, passages
from engine.verdicts import Chooser, Proposal

__all__ = [
    "MAX_QUERIES",
    "RESERVE_SECONDS",
    "LLMConfig",
    "LLMPlanner",
    "ReaderPlanner",
    "model_planner",
    "parse_plan",
    "plan_schema",
    "reserve",
]

MAX_QUERIES = 3
MAX_CLAUSES = 2
"""Clauses a reply may propose under the schema: a small model's reply stays well inside `max_tokens`, and
the loop's next round proposes more."""

_SYSTEM = (
    "You answer questions only from numbered evidence sentences. Reply with one JSON object, nothing else: "
    '{"clauses": [{"sources": [evidence ids], "text": str, "need": "single"|"multi"}], '
    '"queries": [str], "done": bool}. A clause states one fact its sources entail; "multi" joins facts of '
    "several sources. At most two clauses, the ones that answer the question; copying an evidence sentence "
    "word for word is the safest clause. Never repeat a failed search."
)
_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")


def plan_schema(evidence_ids: list[int], *, final: bool) -> dict[str, Any]:
    """The JSON schema of a reply: sources drawn from `evidence_ids`, and no queries in the final round. A
    clause with sources needs them ("single" or "multi"); the connective "none" is left out, because a
    small model picks an enum's first value, and a "none" clause states no fact of its own."""
    source: dict[str, Any] = {"type": "integer"}
    if evidence_ids:
        source["enum"] = evidence_ids
    clause = {
        "type": "object",
        "properties": {
            "sources": {"type": "array", "items": source, "minItems": 1, "maxItems": 3},
            "text": {"type": "string", "minLength": 1, "maxLength": 240},
            "need": {"type": "string", "enum": [ReferenceNeed.SINGLE.value, ReferenceNeed.MULTI.value]},
        },
        "required": ["sources", "text", "need"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "clauses": {"type": "array", "items": clause, "maxItems": MAX_CLAUSES},
            "queries": {
                "type": "array",
                "items": {"type": "string", "minLength": 1, "maxLength": 120},
                "maxItems": 0 if final else MAX_QUERIES,
            },
            "done": {"type": "boolean"},
        },
        "required": ["clauses", "queries", "done"],
        "additionalProperties": False,
    }


def _prompt(state: PlannerState, final: bool, max_evidence: int) -> str:
    lines = [f"Question: {state.question}", "", "Evidence:"]
    for hit in list(state.pool.hits.values())[:max_evidence]:
        lines.append(f"[{hit.sentence_id}] ({hit.path}) {hit.text}")
    if state.accepted:
        lines += ["", "Accepted findings:"] + [
            f"- {f.clause} (sources {list(f.source_ids)})" for f in state.accepted
        ]
    if state.rejected:
        lines += ["", "Rejected clauses:"] + [f"- {r.clause}: {r.reason}" for r in state.rejected]
    if state.failed:
        lines += ["", "Failed searches (do not repeat):"] + [f"- {f.query}: {f.reason}" for f in state.failed]
    lines.append("")
    if final:
        lines.append('This is the final round: give "queries": [] and "done": true.')
    else:
        lines.append(f"You may ask for more evidence with at most {MAX_QUERIES} specific queries.")
    return "\n".join(lines)


def parse_plan(content: str, state: PlannerState, *, final: bool) -> Plan:
    """Validate a reply against the schema and the state; raises ValueError saying what is wrong."""
    try:
        data = json.loads(_FENCE.sub("", content))
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError("the reply must be a JSON object")
    clauses, queries, done = data.get("clauses", []), data.get("queries", []), data.get("done")
    if not isinstance(clauses, list) or not isinstance(queries, list) or not isinstance(done, bool):
        raise ValueError('"clauses" and "queries" must be lists and "done" a boolean')
    proposals = []
    for item in clauses:
        if not isinstance(item, dict) or not isinstance(item.get("text"), str) or not item["text"].strip():
            raise ValueError("each clause needs a non-empty string 'text'")
        try:
            need = ReferenceNeed(item.get("need", "single"))
        except ValueError as exc:
            raise ValueError(f"unknown need {item.get('need')!r}") from exc
        sources = item.get("sources", [])
        if not isinstance(sources, list) or not all(
            isinstance(s, int) and not isinstance(s, bool) for s in sources
        ):
            raise ValueError("'sources' must be a list of evidence ids")
        unknown = [s for s in sources if s not in state.pool.hits]
        if unknown:
            raise ValueError(f"sources {unknown} are not evidence ids")
        proposals.append(Proposal(item["text"].strip(), need, tuple(sources), chosen_by=Chooser.PLANNER))
    if not all(isinstance(q, str) and q.strip() for q in queries):
        raise ValueError("queries must be non-empty strings")
    if len(queries) > MAX_QUERIES:
        raise ValueError(f"at most {MAX_QUERIES} queries, got {len(queries)}")
    if final and queries:
        raise ValueError("the final round takes no queries")
    return Plan(proposals, [q.strip() for q in queries], done or final)


class LLMPlanner:
    """Plans through a chat-completions endpoint within one time budget per answer; one retry on malformed
    output; a spent budget or a failed endpoint fails the round, and the answer's later rounds at once."""

    __slots__ = ("_chat", "_config", "_rewriter")

    def __init__(
        self, config: LLMConfig, client: httpx.Client | None = None, *, rewriter: Rewriter | None = None
    ) -> None:
        self._config = config
        self._chat = ChatClient(config, client)
        wanted = config.variants or config.role is LLMRole.REWRITER
        self._rewriter = (rewriter or LLMRewriter(self._chat)) if wanted else None

    @property
    def config(self) -> LLMConfig:
        """The endpoint and what one answer may ask of it."""
        return self._config

    @property
    def rewriter(self) -> Rewriter | None:
        """Writes the question's variants when the first round verifies nothing (`LLMConfig.variants`)."""
        return self._rewriter

    def deadline(self, state: PlannerState) -> float:
        """When the model's calls for this answer stop: `budget_seconds` after the answer began, less the
        time kept for what follows the last call (`reserve`), so the whole answer fits the budget."""
        if state.planner_deadline is None:
            budget = self._config.budget_seconds
            state.planner_deadline = state.started + budget - reserve(budget)
        return state.planner_deadline

    @property
    def name(self) -> str:
        """Shown in traces."""
        return f"llm:{self._config.model}"

    @property
    def chat(self) -> ChatClient:
        """The endpoint's client (its `probe` says whether the endpoint answers)."""
        return self._chat

    def close(self) -> None:
        """Close the HTTP client."""
        self._chat.close()

    def probe(self) -> str | None:
        """None when the endpoint answers, else why not (`ChatClient.probe`)."""
        return self._chat.probe()

    def plan(self, state: PlannerState, *, final: bool) -> Plan:
        """Ask the model; a malformed reply is retried once with the validation error, time allowing."""
        deadline = self.deadline(state)
        ids = list(state.pool.hits)[: self._config.max_evidence]
        schema = plan_schema(ids, final=final)
        messages = [
            {"role": "system", "content": _SYSTEM},
            {"role": "user", "content": _prompt(state, final, self._config.max_evidence)},
        ]
        error = ""
        for _ in range(2):
            if time.monotonic() >= deadline:
                spent = f"the planner's budget of {self._config.budget_seconds:g} s for this answer is spent"
                raise PlannerError(spent + (f" (after a malformed reply: {error})" if error else ""))
            try:
                content = self._chat.complete(messages, schema, deadline)
            except EndpointError:
                state.planner_deadline = time.monotonic()  # the answer's later rounds do not ask again
                raise
            try:
                return parse_plan(content, state, final=final)
            except ValueError as exc:
                error = str(exc)
                messages += [
                    {"role": "assistant", "content": content},
                    {"role": "user", "content": f"Invalid reply: {error}. Reply with the JSON object only."},
                ]
        raise PlannerError(f"malformed planner output twice: {error}")


RESERVE_SECONDS = 1.5
"""What an answer keeps of its budget for the work after the model's last call: verifying its clauses and
the extractive planner's later rounds, sized on the extractive planner's own p95 (docs/performance.md)."""


def reserve(budget: float) -> float:
    """The part of `budget` kept for the work after the model's last call: `RESERVE_SECONDS`, and at most a
    quarter of a small budget, so the model always has most of it."""
    return min(RESERVE_SECONDS, budget / 4)


MAX_READ = 1
"""Passages of one reading that become clauses, in the reader's order: the first named only (on tuning
data a second choice cost more precision than it found answers; docs/performance.md)."""


class ReaderPlanner(LLMPlanner):
    """The extractive planner's ranking and searches, with the model reading the top-rated candidates to
    choose the clauses; with `LLMRole.REWRITER`, the extractive planner's choice alone. A reading the model
    fails (endpoint, budget, a malformed reply) fails the round, as `LLMPlanner` does."""

    __slots__ = ("_extractive", "_reader")

    def __init__(
        self,
        config: LLMConfig,
        client: httpx.Client | None = None,
        *,
        reader: Reader | None = None,
        rewriter: Rewriter | None = None,
    ) -> None:
        super().__init__(config, client, rewriter=rewriter)
        self._extractive = ExtractivePlanner()
        reads = config.role is LLMRole.READER
        self._reader = (reader or LLMReader(self.chat)) if reads else None

    @property
    def name(self) -> str:
        """Shown in traces: the role, `+variants` when the model also rewrites, and the model."""
        extra = "+variants" if self._reader is not None and self.rewriter is not None else ""
        return f"{self._config.role.value}{extra}:{self._config.model}"

    def plan(self, state: PlannerState, *, final: bool) -> Plan:
        """The reader's choice among the top-rated eligible candidates (the extractive planner's when it
        answers NONE, each marked `declined`), and the searches the chosen ones lead to."""
        candidates = self._extractive.eligible(state, self._extractive.ranked(state))
        shown = candidates[: self._config.reader_candidates]
        if self._reader is None or not shown:
            return self._extractive.plan(state, final=final)
        deadline = self.deadline(state)
        if time.monotonic() >= deadline:
            raise PlannerError(
                f"the model's budget of {self._config.budget_seconds:g} s for this answer is spent"
            )
        try:
            reading = self._reader.read(state.question, passages(shown, state.pool), deadline)
        except EndpointError:
            state.planner_deadline = time.monotonic()  # the answer's later rounds do not ask again
            raise
        if reading.declined:
            plan = self._extractive.plan(state, final=final)
            plan.proposals = [replace(p, declined=True) for p in plan.proposals]
        else:
            chosen = [state.pool.hits[i] for i in reading.chosen[:MAX_READ]]
            linked = bool(state.accepted) and not state.shape.comparison
            doubt = reading.p_none is not None and reading.p_none >= self._config.none_doubt
            proposals = [
                Proposal(
                    h.text,
                    ReferenceNeed.SINGLE,
                    (h.sentence_id,),
                    linked,
                    chosen_by=Chooser.READER,
                    declined=doubt,
                )
                for h in chosen
            ]
            plan = self._extractive.follow(state, chosen, proposals, final=final)
        # The extractive planner's own choice is the first candidate: whether the two agreed is kept.
        plan.reading = reading.to_dict() | {"extractive": shown[0].sentence_id}
        return plan


def model_planner(config: LLMConfig, client: httpx.Client | None = None) -> LLMPlanner:
    """The planner `config.role` names: `ReaderPlanner` for the reader and the rewriter, `LLMPlanner` for
    the planner."""
    if config.role is LLMRole.PLANNER:
        return LLMPlanner(config, client)
    return ReaderPlanner(config, client)
