"""A planner on any OpenAI-compatible chat-completions endpoint (Ollama, vLLM, llama.cpp, hosted APIs).

The model sees the question, the evidence held (by sentence id), the accepted findings and failed searches,
and answers in JSON: the clauses to try with their reference need and sources, at most three further queries,
and whether the answer is complete. Its output is validated strictly, because the controller acts on it: a
malformed reply is sent back once with the error, and a second malformed reply fails the round (the loop goes
on; the model cannot force anything). The final round's prompt offers no further queries, and a reply
that asks for some anyway is malformed. Whatever the model writes, the controller verifies every clause.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import httpx

from engine.answers import ReferenceNeed
from engine.planning import Plan, PlannerError, PlannerState
from engine.verdicts import Proposal

__all__ = ["MAX_QUERIES", "LLMConfig", "LLMPlanner", "parse_plan"]

MAX_QUERIES = 3

_SYSTEM = (
    "You answer questions only from numbered evidence sentences. Reply with one JSON object, nothing else: "
    '{"clauses": [{"text": str, "need": "none"|"single"|"multi", "sources": [evidence ids]}], '
    '"queries": [str], "done": bool}. A clause states one fact its sources entail; "multi" joins facts of '
    "several sources. Never repeat a failed search."
)
_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")


@dataclass(frozen=True, slots=True)
class LLMConfig:
    """Where the endpoint is: `url` is the API base (".../v1"); the key is sent as a bearer token if set."""

    url: str
    model: str
    api_key: str | None = None
    timeout_seconds: float = 60.0
    max_evidence: int = 30


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
    """Plans through a chat-completions endpoint; one retry on malformed output, then a failed round."""

    __slots__ = ("_client", "_config")

    def __init__(self, config: LLMConfig, client: httpx.Client | None = None) -> None:
        self._config = config
        self._client = client or httpx.Client(timeout=config.timeout_seconds)

    @property
    def name(self) -> str:
        """Shown in traces."""
        return f"llm:{self._config.model}"

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()

    def _complete(self, messages: list[dict[str, str]]) -> str:
        headers = {"Authorization": f"Bearer {self._config.api_key}"} if self._config.api_key else {}
        body: dict[str, Any] = {
            "model": self._config.model,
            "messages": messages,
            "temperature": 0,
            "response_format": {"type": "json_object"},
        }
        try:
            response = self._client.post(
                self._config.url.rstrip("/") + "/chat/completions", json=body, headers=headers
            )
            response.raise_for_status()
            content = response.json()["choices"][0]["message"]["content"]
        except (httpx.HTTPError, KeyError, IndexError, TypeError, ValueError) as exc:
            raise PlannerError(f"chat completion failed: {exc}") from exc
        if not isinstance(content, str):
            raise PlannerError("chat completion returned no text")
        return content

    def plan(self, state: PlannerState, *, final: bool) -> Plan:
        """Ask the model; a malformed reply is retried once with the validation error."""
        messages = [
            {"role": "system", "content": _SYSTEM},
            {"role": "user", "content": _prompt(state, final, self._config.max_evidence)},
        ]
        error = ""
        for _ in range(2):
            content = self._complete(messages)
            try:
                return parse_plan(content, state, final=final)
            except ValueError as exc:
                error = str(exc)
                messages += [
                    {"role": "assistant", "content": content},
                    {"role": "user", "content": f"Invalid reply: {error}. Reply with the JSON object only."},
                ]
        raise PlannerError(f"malformed planner output twice: {error}")
