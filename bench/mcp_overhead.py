"""What an MCP tool call costs over the same HTTP API call: p50/p95 of `search_docs` against `GET /v1/search`
and of `ask_docs` against `POST /v1/answers`, on one server, calls interleaved.

    python bench/mcp_overhead.py [--docs DIR] [--calls 200] [--answers 100]

Indexes `--docs` (default: this repository's docs/) into an embedded PostgreSQL in a temp dir with
`citeline index`, starts `citeline api` on a free loopback port (the real server with its models, in its
own process), then, from one client process, alternates each MCP call (the SDK's client over streamable
HTTP at `/mcp`, one session) with the same API call (the same HTTP client library). Each query goes first
by MCP in one round and by the API in the next, so neither side runs first (on colder caches) more often.
Prints p50 and p95 of each side, the difference of the p95s, and the median and p95 of the per-pair
differences (the two calls of a pair run back to back, so these take most of the engine's own variation
out); asserts nothing (issue 65's target: at most 50 ms at p95).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import httpx2
from benchkit import percentile
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[1]
CITELINE = str(Path(sys.executable).with_name("citeline"))
QUERIES = [
    "embedding backlog",
    "API keys scoped to repositories",
    "how are answers verified",
    "readiness probe",
    "watch a repository",
    "feedback from the docs team",
    "configuration file location",
    "cross-encoder reranker",
]
QUESTIONS = [
    "How do I give a key access to only some repositories?",
    "What does the readiness probe check?",
    "Where does citeline keep its data?",
    "How do I run the tests?",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_ready(url: str, child: subprocess.Popen[bytes], seconds: float = 600.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise SystemExit(f"citeline api exited with {child.returncode}")
        try:
            with urllib.request.urlopen(url + "/readyz", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.5)
    raise SystemExit("citeline api did not get ready")


async def _timed(work: Awaitable[Any]) -> float:
    start = time.perf_counter()
    await work
    return time.perf_counter() - start


async def _by_mcp(session: ClientSession, tool: str, arguments: dict[str, Any]) -> None:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result


async def _by_api(api: httpx2.AsyncClient, method: str, url: str, **request: Any) -> None:
    response = await api.request(method, url, **request)
    response.raise_for_status()


async def _measure(url: str, calls: int, answers: int) -> dict[str, tuple[list[float], list[float]]]:
    """Per tool: (MCP latencies, API latencies), interleaved."""
    figures: dict[str, tuple[list[float], list[float]]] = {"search": ([], []), "ask": ([], [])}
    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(600.0)) as api,
        httpx2.AsyncClient(timeout=httpx2.Timeout(600.0)) as transport_client,
        streamable_http_client(f"{url}/mcp", http_client=transport_client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        plan = [("search", i) for i in range(calls)] + [("ask", i) for i in range(answers)]
        for kind, i in plan:
            if kind == "search":
                query = QUERIES[i % len(QUERIES)]
                pair: tuple[Callable[[], Awaitable[None]], Callable[[], Awaitable[None]]] = (
                    partial(_by_mcp, session, "search_docs", {"query": query, "k": 10}),
                    partial(_by_api, api, "GET", f"{url}/v1/search", params={"q": query, "k": "10"}),
                )
            else:
                question = QUESTIONS[i % len(QUESTIONS)]
                pair = (
                    partial(_by_mcp, session, "ask_docs", {"question": question}),
                    partial(_by_api, api, "POST", f"{url}/v1/answers", json={"question": question}),
                )
            mcp_times, api_times = figures[kind]
            rounds = len(QUERIES if kind == "search" else QUESTIONS)
            if (i // rounds) % 2:  # each query goes first by MCP in one round, by the API in the next
                api_times.append(await _timed(pair[1]()))
                mcp_times.append(await _timed(pair[0]()))
            else:
                mcp_times.append(await _timed(pair[0]()))
                api_times.append(await _timed(pair[1]()))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--docs", type=Path, default=ROOT / "docs", help="the Markdown folder to index")
    parser.add_argument("--calls", type=int, default=200, help="search pairs (MCP + API)")
    parser.add_argument("--answers", type=int, default=100, help="answer pairs (MCP + API)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="citeline-mcp-bench-") as work:
        env = {**os.environ, "CITELINE_DATA_DIR": str(Path(work) / "data")}
        for name in ("CITELINE_CONFIG", "CITELINE_DATABASE_URL", "CITELINE_API_KEYS"):
            env.pop(name, None)
        subprocess.run([CITELINE, "index", str(args.docs)], env=env, check=True, capture_output=True)
        port = _free_port()
        url = f"http://127.0.0.1:{port}"
        child = subprocess.Popen(
            [CITELINE, "api", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            _wait_ready(url, child)
            figures = anyio.run(_measure, url, args.calls, args.answers)
        finally:
            child.terminate()
            child.wait(timeout=60)
    print(f"docs: {args.docs}  calls: {args.calls} search pairs, {args.answers} answer pairs, interleaved")
    labels = {"search": "search_docs vs GET /v1/search", "ask": "ask_docs vs POST /v1/answers"}
    for kind, (tool, route) in figures.items():
        if not tool:
            continue
        p50 = (percentile(tool, 0.5) * 1000, percentile(route, 0.5) * 1000)
        p95 = (percentile(tool, 0.95) * 1000, percentile(route, 0.95) * 1000)
        paired = [(t - r) * 1000 for t, r in zip(tool, route, strict=True)]
        pair_p50, pair_p95 = percentile(paired, 0.5), percentile(paired, 0.95)
        print(
            f"{labels[kind]}: p50 {p50[0]:.1f} ms vs {p50[1]:.1f} ms, p95 {p95[0]:.1f} ms vs {p95[1]:.1f} ms"
            f"  (p95 difference {p95[0] - p95[1]:+.1f} ms; per pair: median {pair_p50:+.1f} ms,"
            f" p95 {pair_p95:+.1f} ms)"
        )


if __name__ == "__main__":
    main()
