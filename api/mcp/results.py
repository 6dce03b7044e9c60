"""Tool results: structured content a program reads, and a short text a model reads well.

The structured content is the API's JSON, trimmed of what only the page or a benchmark reads (an answer's
trace and timings, a hit's per-lane scores). The text cites every source as `repository/path:line`. An answer
the docs did not verify says so in its first line, and its closest passages are set apart as not an answer.
A refusal is a tool error (`isError`) whose text is the API's message.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from engine.passages import NEAREST
from engine.reasons import plain_reason

__all__ = [
    "NOT_VERIFIED",
    "answer_result",
    "citation",
    "error_result",
    "feedback_result",
    "passage_result",
    "search_result",
    "status_result",
]

NOT_VERIFIED = "The docs did not verify an answer to this question."
"""The first words of every result whose answer has no verified clause."""

_SOURCE_KEYS = (
    "sentence_id",
    "repository",
    "path",
    "line_start",
    "line_end",
    "heading",
    "git_commit",
    "text",
    "kind",
    "link",
)
_HIT_KEYS = (*_SOURCE_KEYS[:5], "heading_path", *_SOURCE_KEYS[6:], "embedded", "score")


def citation(source: dict[str, Any]) -> str:
    """`repository/path:12` or `repository/path:12-14`."""
    start, end = source.get("line_start"), source.get("line_end")
    lines = f"{start}" if end in (None, start) else f"{start}-{end}"
    where = (
        f"{source['repository']}/{source['path']}" if source.get("repository") else str(source.get("path"))
    )
    return f"{where}:{lines}"


def _result(text: str, structured: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=structured)


def error_result(status: int, detail: str) -> types.CallToolResult:
    """A refusal: the API's message as the text, with its HTTP status in the structured content."""
    return types.CallToolResult(
        content=[types.TextContent(text=detail)],
        structured_content={"error": detail, "status": status},
        is_error=True,
    )


def _picked(item: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: item.get(k) for k in keys}


def search_result(body: dict[str, Any]) -> types.CallToolResult:
    """`search_docs`: the hits, best first, each with its place, text, embedding state and link."""
    hits = [_picked(h, _HIT_KEYS) for h in body.get("hits", [])]
    lines = [
        f"{len(hits)} hit(s) for {body.get('query')!r}:" if hits else f"no hits for {body.get('query')!r}"
    ]
    for rank, hit in enumerate(hits, 1):
        heading = f" [{hit['heading']}]" if hit.get("heading") else ""
        pending = "" if hit.get("embedded") else " (not embedded yet)"
        lines.append(f"{rank}. {citation(hit)}{heading}{pending} (sentence {hit['sentence_id']})")
        lines.append(f"   {hit['text']}")
    return _result("\n".join(lines), {"query": body.get("query"), "hits": hits})


def _source(source: dict[str, Any]) -> dict[str, Any]:
    return _picked(source, _SOURCE_KEYS)


def answer_result(body: dict[str, Any]) -> types.CallToolResult:
    """`ask_docs`: status, the clauses with their sources, the answer id; without a verified clause, the
    plain statement that the docs did not verify an answer, the reason and the closest passages."""
    clauses = [
        {"clause": c["clause"], "confidence": c["confidence"], "sources": [_source(s) for s in c["sources"]]}
        for c in body.get("clauses", [])
    ]
    nearest = [
        {**_source(n), "not_used_because": plain_reason(n)} for n in (body.get("nearest") or [])[:NEAREST]
    ]
    verified = body.get("status") == "answer" and bool(clauses)
    structured: dict[str, Any] = {
        "answer_id": body.get("id"),
        "question": body.get("question"),
        "status": body.get("status"),
        "verified": verified,
        "reason": body.get("reason"),
        "clauses": clauses,
        "nearest": nearest,
        "notes": body.get("notes", []),
        "read_as": body.get("read_as"),
    }
    if verified:
        lines = [f"Verified answer ({len(clauses)} clause(s)), each checked against the sentence it cites:"]
        for number, clause in enumerate(clauses, 1):
            cited = ", ".join(citation(s) for s in clause["sources"])
            lines.append(f"{number}. {clause['clause']} [{cited}] (confidence {clause['confidence']:.2f})")
    else:
        structured["notice"] = NOT_VERIFIED
        lines = [f"{NOT_VERIFIED} Status: {body.get('status')}."]
        if body.get("reason"):
            lines.append(f"Reason: {body['reason']}")
        if nearest:
            lines.append("Closest passages (NOT verified, not an answer):")
        for number, near in enumerate(nearest, 1):
            lines.append(f"{number}. {citation(near)} (sentence {near['sentence_id']}): {near['text']}")
    if body.get("id"):
        lines.append(f"Answer id: {body['id']} (for give_feedback)")
    return _result("\n".join(lines), structured)


def passage_result(body: dict[str, Any]) -> types.CallToolResult:
    """`read_passage`: the sentence (marked `>`) among its neighbours, each with its line numbers."""
    heading = f" [{body['heading']}]" if body.get("heading") else ""
    commit = f" at commit {str(body['git_commit'])[:12]}" if body.get("git_commit") else ""
    lines = [f"{citation(body)}{heading}{commit}"]
    for mark, item in (
        *((" ", n) for n in body.get("before", [])),
        (">", body),
        *((" ", n) for n in body.get("after", [])),
    ):
        start, end = item["line_start"], item["line_end"]
        lines.append(f"{mark} {start if start == end else f'{start}-{end}'}: {item['text']}")
    return _result("\n".join(lines), body)


def status_result(body: dict[str, Any]) -> types.CallToolResult:
    """`docs_status`: the API's figures per repository, and a line each for a model."""
    repositories = body.get("repositories", [])
    lines = [f"{len(repositories)} repository(ies) indexed:" if repositories else "no repository indexed"]
    for r in repositories:
        backlog = (
            f"backlog {r['backlog_size']}, oldest {r['backlog_oldest_age_seconds']:.0f} s"
            if r["backlog_size"]
            else "nothing waiting to be embedded"
        )
        lines.append(
            f"- {r['repository']}: {r['documents']} document(s), {r['sentences']} sentence(s),"
            f" {r['embedded_share']:.0%} embedded, {backlog}; last change {r.get('last_change') or 'never'}"
        )
    return _result("\n".join(lines), body)


def feedback_result(body: dict[str, Any]) -> types.CallToolResult:
    """`give_feedback`: the stored record."""
    verdict = "helpful" if body.get("helpful") else "not helpful"
    lines = [f"Recorded feedback {body.get('id')} on answer {body.get('answer_id')}: {verdict}."]
    if body.get("accepted"):
        lines.append(f"Accepted for this question: sentence {', '.join(map(str, body['accepted']))}.")
    if body.get("rejected"):
        lines.append(
            f"No longer served from memory for it: sentence {', '.join(map(str, body['rejected']))}."
        )
    if body.get("teaching") is False:
        lines.append("This key does not teach: the vote is counted, no sentence was accepted or rejected.")
    elif body.get("helpful") and not body.get("accepted") and body.get("nearest_ids"):
        named = ", ".join(map(str, body["nearest_ids"]))
        lines.append(
            f"Nothing was accepted (the answer cites nothing); its closest passages: sentence {named}."
        )
    return _result("\n".join(lines), body)
