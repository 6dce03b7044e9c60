"""Shared pieces of the MCP tests: the SDK's own client over streamable HTTP and over stdio, and readers of
a tool result.

Every session here is the MCP SDK's `ClientSession` on the SDK's transports (`streamable_http_client`,
`stdio_client`), so what is tested is what an agent's client sends and reads. Calls run under `anyio.run`
from plain synchronous tests.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2
import mcp_types as types
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

__all__ = ["CITELINE", "call", "http_session", "run", "stdio_session", "text_of"]

T = TypeVar("T")
CITELINE = str(Path(sys.executable).with_name("citeline"))
"""The console script of this virtualenv, as a client's config names it."""


def run(work: Callable[[], Awaitable[T]]) -> T:
    """`work` on a fresh event loop, from a synchronous test."""
    return anyio.run(work)


@asynccontextmanager
async def http_session(base_url: str, token: str | None = None) -> AsyncIterator[ClientSession]:
    """An initialized session with the server's `/mcp`, sending `token` as the bearer key."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(120.0)) as client,
        streamable_http_client(f"{base_url}/mcp", http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def stdio_session(env: dict[str, str], errlog: Any = None) -> AsyncIterator[ClientSession]:
    """An initialized session with `citeline mcp` started as a client starts it, with `env` added."""
    params = StdioServerParameters(command=CITELINE, args=["mcp"], env={**_passed_env(), **env})
    async with (
        stdio_client(params, errlog=errlog or sys.stderr) as (read, write),
        ClientSession(read, write, read_timeout_seconds=300.0) as session,
    ):
        await session.initialize()
        yield session


def _passed_env() -> dict[str, str]:
    """What the child needs of this process's environment besides the SDK's defaults: the test database's
    settings are given explicitly by each test, the models' quiet switches are kept."""
    keep = (
        "HF_HUB_OFFLINE",
        "TRANSFORMERS_OFFLINE",
        "HF_HUB_DISABLE_PROGRESS_BARS",
        "TRANSFORMERS_VERBOSITY",
    )
    return {k: os.environ[k] for k in keep if k in os.environ}


async def call(session: ClientSession, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    """One tool call."""
    return await session.call_tool(name, arguments)


def text_of(result: types.CallToolResult) -> str:
    """The result's text content, joined."""
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))
