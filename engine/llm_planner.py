"""A planner on any OpenAI-compatible chat-completions endpoint (Ollama, vLLM, llama.cpp, hosted APIs).

The model sees the question, the evidence held (by sentence id), the accepted findings and failed searches,
and answers in JSON under the plan's schema (`plan_schema`, sent as `response_format`): the clauses to try
with their reference need and sources, at most three further queries, and whether the answer is complete.
Its output is validated strictly, because the controller acts on it: a malformed reply is sent back once
with the error, and a second malformed reply fails the round. All the planner's calls for one answer share
one time budget (`LLMConfig.budget_seconds`, counted from its first call): each request may take only what
is left, and once the budget is spent, or the endpoint failed, the planner fails the answer's remaining
rounds at once, without asking the endpoint, so the answer never waits for a model past its budget. A
failed round is planned by the extractive planner instead (`engine.rounds`). The final round's prompt
offers no further queries, and a reply that asks for some anyway is malformed. Whatever the model writes,
the controller verifies every clause.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import httpx

from engine.answers import ReferenceNeed
from engine.llm_client import ChatClient, EndpointError, LLMConfig
from engine.planning import Plan, PlannerError, PlannerState
from engine.verdicts import Proposal

__all__ = ["MAX_QUERIES", "LLMConfig", "LLMPlanner", "parse_plan", "plan_schema"]

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
        proposals.append(Proposal(item["text"].strip(), need, tuple(sources)))
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

    __slots__ = ("_chat", "_config")

    def __init__(self, config: LLMConfig, client: httpx.Client | None = None) -> None:
        self._config = config
        self._chat = ChatClient(config, client)

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
        if state.planner_deadline is None:
            state.planner_deadline = time.monotonic() + self._config.budget_seconds
        deadline = state.planner_deadline
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
