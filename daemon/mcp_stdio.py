"""`citeline mcp`: citeline's MCP tools over stdio, for a coding agent or a chat client to start.

A client starts it with one line of config (`citeline mcp`, with `CITELINE_DATA_DIR` pointing at the data dir
of an index) and speaks JSON-RPC on its stdin and stdout; logs go to stderr only, and the SDK's stdio
transport keeps anything else that writes to fd 1 off the protocol stream. The tools run over
`daemon.mcp_backends.RoutedBackend`: the running server of the data dir when one answers, else this
process. The process ends when the client closes its stdin.
"""

from __future__ import annotations

import argparse

import anyio
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

from api.mcp.server import docs_server
from daemon.config import load_config
from daemon.mcp_backends import RoutedBackend

__all__ = ["run_mcp"]


async def _serve(server: Server[object]) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def run_mcp(args: argparse.Namespace) -> int:
    """Serve until the client closes stdin; 0 then. A bad configuration is `ConfigError` (exit status 2,
    one line)."""
    backend = RoutedBackend(load_config(args.config), args.config)
    try:
        anyio.run(_serve, docs_server(lambda _ctx: backend))
    except KeyboardInterrupt:
        return 130
    finally:
        backend.close()
    return 0
