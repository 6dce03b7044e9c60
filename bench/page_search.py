"""Search-as-you-type latency on the page, measured in the browser, on the rustc dev guide indexed lexically.

    python bench/page_search.py ../shared/data/rustc_dev_guide [--delay-ms 90] [--rounds 2]

Indexes the guide's HEAD into a throwaway embedded PostgreSQL, serves the API and the page (lexical lane, no
models), and types each query into the search box of Debian's headless Chromium key by key. The figure is
the time from the last keystroke (its keydown, as the page sees it) to the frame after the results for the
whole query are in the DOM: debounce, request, search, rendering. Prints p50, p95 and max; asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import uvicorn
from litestar import Litestar
from playwright.sync_api import sync_playwright

from api.app import create_app
from api.settings import ApiSettings
from engine.search import Retriever
from indexer.database import open_database
from indexer.reconcile import Repository, reconcile_repository

QUERIES = [
    "bootstrap stage",
    "query system",
    "borrow checker",
    "bless ui tests",
    "trait solving",
    "incremental compilation",
    "x test library",
    "parser recovery",
    "name resolution",
    "type inference variables",
    "lint diagnostics",
    "llvm codegen",
    "const evaluation",
    "macro expansion hygiene",
    "hir lowering",
    "monomorphization collector",
    "rustdoc tests",
    "debugging the compiler",
    "mir optimizations",
    "stabilization process",
]

PROBE = """() => {
  window.__rendered = {};
  document.addEventListener("keydown", () => { window.__lastKey = performance.now(); }, true);
  document.addEventListener("citeline:search-rendered", (e) => {
    const query = e.detail.query;
    requestAnimationFrame(() => { window.__rendered[query] = performance.now(); });
  });
}"""


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _serve(app: Litestar) -> tuple[uvicorn.Server, str]:
    config = uvicorn.Config(app, host="127.0.0.1", port=0, access_log=False, log_config=None)
    server = uvicorn.Server(config)
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.02)
    return server, f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"


def measure(url: str, rounds: int, delay_ms: int) -> list[float]:
    samples: list[float] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", headless=True, args=["--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page()
        for round_ in range(rounds + 1):  # round 0 warms up the server, the database and the page
            page.goto(url + "/")  # a fresh page: no results cached from the round before
            page.evaluate(PROBE)
            page.select_option("#lane", "lexical")
            for query in QUERIES:
                page.fill("#search", "")
                page.click("#search")
                page.keyboard.type(query, delay=delay_ms)
                page.wait_for_function("(q) => window.__rendered[q] !== undefined", arg=query)
                latency = page.evaluate("(q) => window.__rendered[q] - window.__lastKey", query)
                if round_:
                    samples.append(latency)
        browser.close()
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("data", type=Path, help="the rustc_dev_guide folder (md_history.bundle)")
    parser.add_argument("--delay-ms", type=int, default=90, help="pause between keystrokes")
    parser.add_argument("--rounds", type=int, default=2, help="measured passes over the queries")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        head = Path(tmp) / "head"
        bundle = args.data.resolve() / "md_history.bundle"
        subprocess.run(["git", "clone", "-q", str(bundle), str(head)], check=True, cwd=tmp)
        database = open_database(None, Path(tmp) / "db")
        started = time.perf_counter()
        with database.connect() as conn:
            report = reconcile_repository(conn, Repository("rustc-dev-guide", head))
        print(
            f"indexed {report.files_written} files, {report.sentences_inserted} sentences"
            f" in {time.perf_counter() - started:.1f}s (lexical lane only)"
        )
        retriever = Retriever(database, None, max_connections=4)
        server, url = _serve(create_app(database, retriever, None, ApiSettings()))
        try:
            samples = measure(url, args.rounds, args.delay_ms)
        finally:
            server.should_exit = True
            retriever.close()
    print(
        f"search as you type, last keystroke to results painted ({len(samples)} queries, "
        f"{args.delay_ms} ms between keys): p50 {_pct(samples, 0.5):.0f} ms,"
        f" p95 {_pct(samples, 0.95):.0f} ms, max {max(samples):.0f} ms,"
        f" mean {statistics.mean(samples):.0f} ms"
    )


if __name__ == "__main__":
    main()
