"""`citeline ask`: one question through the engine `daemon.assembly` builds, printed for a person or as JSON;
and the planner's line of `citeline status`.

The answer is the one `POST /v1/answers` gives (the same engine, models and store), without the API: this
module and what it imports never load the `api` package.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

from engine.caveats import WARNING
from engine.passages import NEAREST
from engine.reasons import plain_reason

if TYPE_CHECKING:  # printing an answer (`ask` through a server) loads no model and no database driver
    from daemon.config import Config
    from engine.search import Filters
    from indexer.database import Database

__all__ = [
    "MEMORY",
    "ask",
    "line_range",
    "planner_status",
    "print_answer",
    "refusal",
    "render_answer",
    "render_planner_status",
    "short_id",
]


MEMORY = "from the team's memory"
"""How a clause the team accepted for an earlier question (`chosen_by: "team"`) is marked; the page says the
same (`api/static/app.js`)."""


def render_answer(result: dict[str, Any]) -> str:
    """An answer's JSON shape (`engine.answers`) for a person: status, its warnings, how the question was read
    when it was respelt, the reason, each clause with its sources (one from the team's memory marked so),
    each source's short id (`[s42]`, what `citeline feedback --sentence` takes), place and text (a code
    block line by line), and, for an answer with none, the closest passages, set apart as not verified, each
    after the sentence it depends on (`context`) and with why it was not used in plain words
    (`engine.reasons.plain_reason`, as the page says it); last, the answer's id and the feedback command."""
    lines = [f"{result['status']} ({result['route']} path, {len(result['trace'])} round(s))"]
    lines += [f"  {note}" for note in result.get("notes", []) if note.startswith(WARNING)]
    if result.get("read_as"):
        lines.append(f"  read as: {result['read_as']}")
    if result.get("reason"):
        lines.append(f"  reason: {result['reason']}")
    for number, clause in enumerate(result["clauses"], 1):
        lines.append(f"{number}. {clause['clause']}  [confidence {clause['confidence']:.2f}]")
        if clause.get("chosen_by") == "team":
            asked = (clause.get("remembered") or {}).get("question")
            lines.append(f"     {MEMORY}" + (f': accepted for "{asked}"' if asked else ""))
        for source in clause["sources"]:
            lines.append(f"     {_tagged(source)}")
            lines += _quoted(source)
    nearest = result.get("nearest") or []
    if nearest:
        lines.append("closest passages (not verified, not an answer):")
    for number, near in enumerate(nearest[:NEAREST], 1):
        lines.append(f"  {number}. {_tagged(near)}")
        if near.get("context"):  # what it depends on, before it
            lines.append(f"     after line {line_range(near['context'])}: {near['context']['text']}")
        lines.append(f"     {near['text']}")
        lines.append(f"     not used: {plain_reason(near)}")
    if len(nearest) > NEAREST:
        lines.append(f"  ... and {len(nearest) - NEAREST} more that search found (`--json` lists them)")
    return "\n".join(lines + _feedback_hint(result))


def short_id(source: dict[str, Any]) -> str:
    """A sentence's short id as `citeline ask` prints it and `citeline feedback --sentence` takes it: s42."""
    return f"s{source['sentence_id']}"


def _tagged(source: dict[str, Any]) -> str:
    """A source's short id, then its place."""
    tag = f"[{short_id(source)}] " if source.get("sentence_id") is not None else ""
    return f"{tag}{_where(source)}"


def _feedback_hint(result: dict[str, Any]) -> list[str]:
    """The answer's id and the one command that gives feedback on it: `--helpful` alone accepts the cited
    sentences; an answer with none names a closest passage to pass with `--sentence`."""
    answer_id = result.get("id")
    if not answer_id:
        return []
    lines = [f"answer id: {answer_id}"]
    named = [n for n in result.get("nearest") or [] if n.get("sentence_id") is not None][:1]
    if result["clauses"]:
        lines.append(f"  helped? citeline feedback {answer_id} --helpful (accepts the cited sentences)")
    elif named:
        lines.append(
            f"  does a closest passage answer it? citeline feedback {answer_id} --helpful"
            f" --sentence {short_id(named[0])}"
        )
    return lines


def _quoted(source: dict[str, Any]) -> list[str]:
    """A cited source's text under its place: a sentence on one line; a code block, or any text with line
    breaks, line by line, indented further, its line breaks and indentation kept."""
    text = str(source.get("text") or "")
    if source.get("kind") == "code" or "\n" in text:
        return [f"         {line}".rstrip() for line in text.splitlines()]
    return [f"       {text}"]


def line_range(item: dict[str, Any]) -> str:
    """A source's lines as the page shows them: "269" for one line, "120-127" for several."""
    start, end = item["line_start"], item.get("line_end", item["line_start"])
    return f"{start}" if end in (None, start) else f"{start}-{end}"


def _where(source: dict[str, Any]) -> str:
    heading = f" [{source['heading']}]" if source.get("heading") else ""
    return f"{source['repository']}/{source['path']}:{line_range(source)}{heading}"


def refusal(near: dict[str, Any]) -> str:
    """Why a near passage was not used: the stage (or that no clause was drawn from it), the reason, and the
    score against its threshold where the reason does not already say them."""
    stage, reason = near.get("stage"), near.get("reason", "")
    score, threshold, measure = near.get("score"), near.get("threshold"), near.get("measure") or stage
    head = stage or "not proposed"
    if score is None or threshold is None:
        return f"{head}: {reason}"
    limit = "limit" if measure == "contradiction" else "threshold"
    if stage is None:
        return f"{head}: {measure} {score:.2f}, {limit} {threshold:g}"
    if f"{score:.2f}" not in reason:
        return f"{head}: {reason} ({measure} {score:.2f}, {limit} {threshold:g})"
    if f"{threshold:g}" in reason:
        return f"{head}: {reason}"
    return f"{head}: {reason}; {measure} {limit} {threshold:g}"


def print_answer(result: dict[str, Any], *, as_json: bool) -> int:
    """Print an answer's JSON shape as JSON or for a person; the exit status: 0 for an answer, 1 when
    insufficient or failed."""
    if as_json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
    else:
        print(render_answer(result))
    sys.stdout.flush()
    return 0 if result["status"] == "answer" else 1


def ask(
    config: Config,
    database: Database,
    question: str,
    budget: str,
    filters: Filters,
    *,
    as_json: bool,
) -> int:
    """`citeline ask` in this process: answer one question (no watcher runs here, so the answer warns of
    files changed on disk since indexed); exit 0 for an answer, 1 when insufficient or failed."""
    from daemon.assembly import build_engine, model_names

    engine = build_engine(database, model_names(config), config.retrieval, compare_disk=True)
    try:
        result = engine.answer(question, budget, filters).to_dict()
    finally:
        engine.close()
    return print_answer(result, as_json=as_json)


def planner_status(config: Config) -> dict[str, Any]:
    """The configured planner and, for an LLM one, whether its endpoint answers now. An endpoint that does not
    is reported, not an error: the extractive planner answers in its place."""
    from daemon.assembly import model_names
    from engine.llm_client import probe_endpoint

    llm = model_names(config).llm
    if llm is None:
        return {"kind": "extractive"}
    problem = probe_endpoint(llm)
    reachable = problem is None
    return {"kind": "llm", "url": llm.url, "model": llm.model, "reachable": reachable, "problem": problem}


def render_planner_status(status: dict[str, Any]) -> str:
    """`planner_status` as `citeline status` prints it."""
    if status["kind"] == "extractive":
        return "planner: extractive"
    where = f"planner: llm {status['model']} at {status['url']}"
    if status["reachable"]:
        return f"{where}: reachable"
    return f"{where}: DEGRADED, the extractive planner answers ({status['problem']})"
