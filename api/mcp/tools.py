"""The MCP tools: names, descriptions and input schemas written for a model to choose well, and the reading
of a call's arguments into the API's inputs.

Arguments are read for their JSON types only (a `k` that is not an integer, an argument no tool has):
their values are the API's to judge, so an empty question, `k = 0` or a repository outside the key is
refused by the same check, with the same message, as `POST /v1/answers` or `GET /v1/search` refuses it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

import mcp_types as types

from api.contract import MAX_RADIUS
from api.mcp.backend import SearchArgs, ToolRefusedError
from engine.feedback import MAX_COMMENT_CHARS, MAX_FEEDBACK_SENTENCES
from engine.inputs import MAX_K, MAX_QUERY_CHARS, MAX_QUESTION_CHARS

__all__ = [
    "ASK_DOCS",
    "DOCS_STATUS",
    "GIVE_FEEDBACK",
    "READ_PASSAGE",
    "SEARCH_DOCS",
    "TOOLS",
    "Arguments",
    "answer_body",
    "feedback_call",
    "passage_call",
    "search_args",
]

SEARCH_DOCS = "search_docs"
ASK_DOCS = "ask_docs"
READ_PASSAGE = "read_passage"
DOCS_STATUS = "docs_status"
GIVE_FEEDBACK = "give_feedback"
DEFAULT_RADIUS = 3

Arguments = Mapping[str, Any]

_REPOSITORIES = {
    "type": "array",
    "items": {"type": "string", "maxLength": MAX_QUERY_CHARS},
    "description": "Only these repositories, by the names docs_status lists. Omit to search every repository"
    " this server lets you read; naming one outside them is an error.",
}
_PATH_PREFIX = {
    "type": "string",
    "maxLength": MAX_QUERY_CHARS,
    "description": "Only documents whose path (inside its repository) starts with this, e.g. `docs/guide/`.",
}
_READ_ONLY = types.ToolAnnotations(read_only_hint=True, open_world_hint=False)


def _tool(name: str, title: str, description: str, properties: dict[str, Any], *required: str) -> types.Tool:
    schema = {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }
    annotations = _READ_ONLY.model_copy(update={"title": title}) if name != GIVE_FEEDBACK else None
    return types.Tool(
        name=name, title=title, description=description, input_schema=schema, annotations=annotations
    )


TOOLS: tuple[types.Tool, ...] = (
    _tool(
        ASK_DOCS,
        "Ask the docs",
        "Answer a question from the indexed Markdown documentation. Every clause of an answer is"
        " checked against the sentence it cites and comes with its sources: repository, path, line range,"
        " commit and the cited text. Prefer this over search_docs for a question a person would ask. When"
        " the docs do not verify an answer, the status is `insufficient` (or `fail`) and the result says so"
        " plainly, with the reason and the closest passages, which are NOT an answer. The answer id can be"
        " passed to give_feedback.",
        {
            "question": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_QUESTION_CHARS,
                "description": "The question, in plain words, as a person would ask it.",
            },
            "budget": {
                "type": "string",
                "enum": ["low", "mid", "high"],
                "default": "mid",
                "description": "How much verification work to spend: `low` is fastest, `high` tries hardest.",
            },
            "repositories": _REPOSITORIES,
            "path_prefix": _PATH_PREFIX,
        },
        "question",
    ),
    _tool(
        SEARCH_DOCS,
        "Search the docs",
        "Hybrid (keyword and semantic) search over the sentences of the indexed Markdown documentation,"
        " best first. Each hit gives repository, path, line range, heading path, the sentence's text,"
        " whether it is embedded yet (a sentence edited seconds ago is found by keywords before it is"
        " embedded) and a link to it on its forge when one is known. Hits are not verified answers: use"
        " ask_docs for a question, this to find where something is written.",
        {
            "query": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_QUERY_CHARS,
                "description": "Words or a phrase to look for.",
            },
            "k": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_K,
                "default": 10,
                "description": "How many hits to return.",
            },
            "repositories": _REPOSITORIES,
            "path_prefix": _PATH_PREFIX,
        },
        "query",
    ),
    _tool(
        READ_PASSAGE,
        "Read around a passage",
        "Read a cited or found sentence with the sentences around it in its document, with their line"
        " numbers, to see the context of a source from ask_docs or a hit from search_docs.",
        {
            "sentence_id": {
                "type": "integer",
                "minimum": 1,
                "description": "The `sentence_id` of an ask_docs source or nearest passage, or of a"
                " search_docs hit.",
            },
            "radius": {
                "type": "integer",
                "minimum": 0,
                "maximum": MAX_RADIUS,
                "default": DEFAULT_RADIUS,
                "description": "How many sentences to show on each side.",
            },
        },
        "sentence_id",
    ),
    _tool(
        DOCS_STATUS,
        "Index status",
        "Which repositories are indexed and how fresh the index is: documents and sentences per repository,"
        " the embedding backlog and the age of its oldest item, the share embedded, the last change seen and"
        " the files that could not be indexed.",
        {},
    ),
    _tool(
        GIVE_FEEDBACK,
        "Give feedback on an answer",
        "Tell the docs team whether an ask_docs answer helped. With helpful=true, sentence_ids names the"
        " sentences that answer its question (its sources, its closest passages or search hits; none: its"
        " cited sentences); they are then offered for that question again. With helpful=false, they (or,"
        " naming none, every cited one) are no longer served from memory for it. Only for answers this"
        " server gave; a key that may not teach only votes.",
        {
            "answer_id": {"type": "string", "description": "The answer id ask_docs returned."},
            "helpful": {"type": "boolean", "description": "Whether the answer helped."},
            "sentence_ids": {
                "type": "array",
                "items": {"type": "integer", "minimum": 1},
                "maxItems": MAX_FEEDBACK_SENTENCES,
                "description": "Sentences that do answer the question.",
            },
            "comment": {
                "type": "string",
                "maxLength": MAX_COMMENT_CHARS,
                "description": "A note for the docs team: what was missing or wrong.",
            },
        },
        "answer_id",
        "helpful",
    ),
)


def _known(name: str, arguments: Arguments) -> None:
    """An argument the tool does not take is refused, as the API refuses an unknown body field."""
    tool = next(t for t in TOOLS if t.name == name)
    unknown = sorted(set(arguments) - set(tool.input_schema["properties"]))
    if unknown:
        raise ToolRefusedError(400, f"{name} takes no argument {', '.join(unknown)}")


def _text(arguments: Arguments, name: str) -> str | None:
    value = arguments.get(name)
    if value is not None and not isinstance(value, str):
        raise ToolRefusedError(400, f"{name} must be a string")
    return value


def _integer(arguments: Arguments, name: str, default: int | None = None) -> int:
    value = arguments.get(name, default)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ToolRefusedError(
            400, f"{name} must be an integer" + ("" if value is None else f", got {value!r}")
        )
    return value


def _names(arguments: Arguments) -> tuple[str, ...]:
    value = arguments.get("repositories")
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ToolRefusedError(400, "repositories must be a list of repository names")
    return tuple(value)


def search_args(arguments: Arguments) -> SearchArgs:
    """`search_docs`'s arguments as `GET /v1/search` takes them."""
    _known(SEARCH_DOCS, arguments)
    return SearchArgs(
        _text(arguments, "query"),
        _integer(arguments, "k", 10),
        _names(arguments),
        _text(arguments, "path_prefix"),
    )


def answer_body(arguments: Arguments) -> dict[str, Any]:
    """`ask_docs`'s arguments as the body of `POST /v1/answers`."""
    _known(ASK_DOCS, arguments)
    body: dict[str, Any] = {
        "question": _text(arguments, "question") or "",
        "budget": arguments.get("budget", "mid"),
    }
    names, prefix = _names(arguments), _text(arguments, "path_prefix")
    if names or prefix:
        body["filters"] = {"repositories": list(names) or None, "path_prefix": prefix}
    return body


def passage_call(arguments: Arguments) -> tuple[int, int]:
    """`read_passage`'s sentence id and radius."""
    _known(READ_PASSAGE, arguments)
    return _integer(arguments, "sentence_id"), _integer(arguments, "radius", DEFAULT_RADIUS)


def feedback_call(arguments: Arguments) -> tuple[str, dict[str, Any]]:
    """`give_feedback`'s answer id and the body of `POST /v1/answers/{id}/feedback` (read strictly there)."""
    _known(GIVE_FEEDBACK, arguments)
    answer_id = (_text(arguments, "answer_id") or "").strip()
    try:
        UUID(answer_id)
    except ValueError as exc:
        raise ToolRefusedError(
            400, f"answer_id must be the id ask_docs returned (a UUID), got {answer_id!r}"
        ) from exc
    body = {k: arguments[k] for k in ("helpful", "sentence_ids", "comment") if k in arguments}
    return answer_id, body
