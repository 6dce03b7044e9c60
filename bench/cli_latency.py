"""How long `citeline search --lane lexical` takes with no server, and `citeline ask` through a running one.

    python bench/cli_latency.py [--docs ./docs] [--runs 10] [--source CHECKOUT] [--workdir DIR]

Indexes and embeds `--docs` into a fresh data dir, keeps its embedded PostgreSQL up with `citeline watch
--no-embed` (a watcher, no API server: the lookup runs in its own process), and times `--runs` lexical
searches as a user runs them, one process each. Then starts `citeline api` on the same data dir and asks the
20 `QUESTIONS` about citeline's manual once each (never a stored answer), timing each process's wall clock
and reading the server's own `timings_ms.total` from its JSON: the difference is the client's start-up and
the round trip. Last, `python -X importtime -c "import daemon.cli"` five times (its median).

`--source` runs every command from another checkout (a `git worktree` of an older commit) with this
interpreter, for a before/after on one machine in one window. Each command runs as the console script does
(`from daemon.cli import main`), after `compileall` has written the checkout's bytecode, as an install has
(a `PYTHONDONTWRITEBYTECODE` environment otherwise compiles every changed module again at each start).
Timings depend on the CPU and on other load: run it alone (`flock /tmp/heavy.lock ...`).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from benchkit import percentile, workspace

QUESTIONS = (
    "Which port does the page listen on?",
    "Does citeline index embed the sentences?",
    "Which command applies pending schema migrations?",
    "How do I set the API port with an environment variable?",
    "When does readyz answer 503?",
    "What does the lexical lane find before a sentence is embedded?",
    "Where is the data dir by default?",
    "How do I run the tests?",
    "What does citeline serve run?",
    "How do I drain the embedding backlog?",
    "What does the answer check do?",
    "How many clauses does an answer have?",
    "What happens when a file is deleted?",
    "How do API keys restrict repositories?",
    "What is the default rerank_candidates?",
    "How does citeline ask go through a running server?",
    "What does make run print when it is ready?",
    "Which embedder is the default?",
    "What does the status command show?",
    "How are forge links built?",
)
"""Questions a new user asks about citeline's own manual (`./docs`), answered or not."""
SEARCHES = ("listen port", "embedding backlog", "schema migrations", "api keys", "stored answers")
CONSOLE = "import sys; from daemon.cli import main; sys.exit(main())"


def _env(source: Path, data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CITELINE_")}
    env["CITELINE_DATA_DIR"] = str(data_dir)
    env["PYTHONPATH"] = str(source)
    return env


def _citeline(source: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CONSOLE, *args], cwd=source, env=env, capture_output=True, text=True
    )


def _timed(source: Path, env: dict[str, str], *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = _citeline(source, env, *args)
    return time.perf_counter() - start, done


def _wait_for_server(data_dir: Path, child: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and child.poll() is None:
        try:
            url = json.loads((data_dir / "server.json").read_text())["url"]
            with urllib.request.urlopen(url + "/healthz", timeout=2) as response:
                if response.status == 200:
                    return
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.2)
    raise SystemExit("citeline api did not start")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _stop(child: subprocess.Popen[bytes]) -> None:
    child.terminate()
    try:
        child.wait(timeout=60)
    except subprocess.TimeoutExpired:
        child.kill()


def _summary(label: str, seconds: list[float]) -> str:
    return (
        f"{label}: p50 {statistics.median(seconds):.3f} s, p95 {percentile(seconds, 0.95):.3f} s, "
        f"min {min(seconds):.3f} s, max {max(seconds):.3f} s (n={len(seconds)})"
    )


def _import_seconds(source: Path, env: dict[str, str]) -> float:
    totals = []
    for _ in range(5):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", "import daemon.cli"],
            cwd=source,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        last = [line for line in done.stderr.splitlines() if line.endswith("| daemon.cli")][-1]
        totals.append(int(last.split("|")[1]) / 1e6)
    return statistics.median(totals)


def _measure(source: Path, docs_given: Path, work: Path, runs: int) -> None:
    """Index and embed `docs_given` under `work`, then time the lookups (printed)."""
    docs = work / "docs"
    subprocess.run(["cp", "-r", str(docs_given.resolve()), str(docs)], check=True)
    env = _env(source, work / "data")
    for step in (("index", str(docs)), ("embed", "--drain")):
        done = _citeline(source, env, *step)
        if done.returncode:
            raise SystemExit(f"citeline {step[0]} failed: {done.stderr[-2000:]}")
    files = sum(1 for _ in docs.rglob("*.md"))
    print(f"source {source}; docs {docs_given} ({files} files); {os.cpu_count()} cores")
    holder = subprocess.Popen(
        [sys.executable, "-c", CONSOLE, "watch", "--no-embed", str(docs)], cwd=source, env=env
    )
    try:
        time.sleep(5)  # the watcher holds the embedded server: each lookup joins it
        lexical = []
        for run in range(runs):
            seconds, done = _timed(source, env, "search", SEARCHES[run % len(SEARCHES)], "--lane", "lexical")
            if done.returncode:
                raise SystemExit(f"search failed: {done.stderr[-2000:]}")
            lexical.append(seconds)
        print(_summary("search --lane lexical, no server", lexical))
        port = str(_free_port())
        server = subprocess.Popen([sys.executable, "-c", CONSOLE, "api", "--port", port], cwd=source, env=env)
        try:
            _wait_for_server(work / "data", server)
            _timed(source, env, "ask", "What is citeline?", "--json")  # the server's first answer warms it
            wall, answered, served = [], [], []
            for question in QUESTIONS:
                seconds, done = _timed(source, env, "ask", question, "--json")
                body = json.loads(done.stdout)
                wall.append(seconds)
                served.append(body["timings_ms"]["total"] / 1000)
                answered.append(body["status"] == "answer")
            print(_summary("ask through a running server, wall", wall))
            print(_summary("  the server's own answer (timings_ms.total)", served))
            client = [w - s for w, s in zip(wall, served, strict=True)]
            print(_summary("  the client's part (wall - server)", client))
            print(f"  answered {sum(answered)} of {len(QUESTIONS)}")
        finally:
            _stop(server)
    finally:
        _stop(holder)
    print(f"import daemon.cli (python -X importtime, median of 5): {_import_seconds(source, env):.3f} s")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--docs", type=Path, default=Path("docs"), help="a folder of Markdown (default ./docs)"
    )
    parser.add_argument("--runs", type=int, default=10, help="lexical searches timed (default 10)")
    parser.add_argument("--source", type=Path, default=Path.cwd(), help="the checkout that runs (default .)")
    parser.add_argument("--workdir", type=Path, help="keep the data dir here (default: a temporary one)")
    args = parser.parse_args()
    source = args.source.resolve()
    packages = ("daemon", "engine", "indexer", "api")
    subprocess.run([sys.executable, "-m", "compileall", "-q", *packages], cwd=source, check=True)
    with workspace(args.workdir) as work:
        _measure(source, args.docs, work, args.runs)


if __name__ == "__main__":
    main()
