"""The MCP server: the tools of `api.mcp.tools` over a `DocsBackend`, on any transport.

`docs_server(backend_of)` is transport-free: `/mcp` serves it over streamable HTTP (`api.mcp.http`) with a
backend for the key of each request, `citeline mcp` over stdio with the daemon's backend. A call runs in a
worker thread (backends block on the database, the models or HTTP), so one slow answer holds up no other
request. Every refusal is a tool error (`isError`) carrying the API's message; an unknown tool is one too.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server

from api.mcp.backend import DocsBackend, ToolRefusedError
from api.mcp.results import (
    answer_result,
    error_result,
    feedback_result,
    passage_result,
    search_result,
    status_result,
)
from api.mcp.tools import (
    ASK_DOCS,
    DOCS_STATUS,
    GIVE_FEEDBACK,
    READ_PASSAGE,
    SEARCH_DOCS,
    TOOLS,
    Arguments,
    answer_body,
    feedback_call,
    passage_call,
    search_args,
)

__all__ = ["INSTRUCTIONS", "BackendOf", "docs_server", "run_tool"]

BackendOf = Callable[[ServerRequestContext[Any, Any]], DocsBackend]
"""The backend for one request: from its HTTP request's key on `/mcp`, always the same one on stdio. It may
raise `ToolRefusedError` (no key resolved)."""

INSTRUCTIONS = (
    "citeline answers questions from a team's Markdown documentation in git, always fresh. Use ask_docs"
    " for a question: every clause it returns is verified against the sentence it cites"
    " (repository/path:line). When the docs do not verify an answer it says so: say so too rather than"
    " answering from its closest passages. Use search_docs to find where something is written,"
    " read_passage to read around a source, docs_status to see what is indexed and how fresh it is."
)


def _search(backend: DocsBackend, arguments: Arguments) -> types.CallToolResult:
    return search_result(backend.search(search_args(arguments)))


def _ask(backend: DocsBackend, arguments: Arguments) -> types.CallToolResult:
    return answer_result(backend.answer(answer_body(arguments)))


def _passage(backend: DocsBackend, arguments: Arguments) -> types.CallToolResult:
    return passage_result(backend.sentence(*passage_call(arguments)))


def _status(backend: DocsBackend, arguments: Arguments) -> types.CallToolResult:
    if arguments:
        raise ToolRefusedError(400, f"{DOCS_STATUS} takes no argument {', '.join(sorted(arguments))}")
    return status_result(backend.status())


def _feedback(backend: DocsBackend, arguments: Arguments) -> types.CallToolResult:
    return feedback_result(backend.feedback(*feedback_call(arguments)))


_RUNNERS: dict[str, Callable[[DocsBackend, Arguments], types.CallToolResult]] = {
    SEARCH_DOCS: _search,
    ASK_DOCS: _ask,
    READ_PASSAGE: _passage,
    DOCS_STATUS: _status,
    GIVE_FEEDBACK: _feedback,
}


def run_tool(backend: DocsBackend, name: str, arguments: Arguments) -> types.CallToolResult:
    """One tool call, blocking: its result, or the tool error that says why it was refused."""
    runner = _RUNNERS.get(name)
    if runner is None:
        return error_result(400, f"no tool {name!r}; the tools are {', '.join(sorted(_RUNNERS))}")
    try:
        return runner(backend, arguments)
    except ToolRefusedError as refused:
        return error_result(refused.status, refused.detail)


def _version() -> str:
    try:
        return version("citeline")
    except PackageNotFoundError:
        return ""


def docs_server(backend_of: BackendOf) -> Server[Any]:
    """An MCP server offering citeline's tools over the backends `backend_of` gives."""

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(TOOLS))

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            backend = backend_of(ctx)
        except ToolRefusedError as refused:
            return error_result(refused.status, refused.detail)
        arguments = dict(params.arguments or {})
        return await anyio.to_thread.run_sync(run_tool, backend, params.name, arguments)

    return Server(
        "citeline",
        version=_version(),
        title="citeline: cited answers from the docs",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )
