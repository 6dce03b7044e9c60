"""`make run`: start `citeline serve` on a docs folder and say where its page is once it answers.

`citeline serve` logs a structured `ready` line with no address. This wrapper starts it, polls `/readyz`
until the API answers, prints the page's address and how long the start took, then waits for the daemon.
Ctrl-C reaches the daemon from the terminal; a SIGTERM or SIGINT sent to this wrapper alone is passed on.
Its exit status is the daemon's. Standard library and citeline's own configuration only.

    .venv/bin/python deploy/run_local.py DOCS [--host H] [--port N]
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import FrameType

from daemon.config import ConfigError, load_config

_WILDCARD = {"", "0.0.0.0", "::", "[::]"}


def _address(host: str, port: int) -> str:
    """The page's address for a browser on this machine."""
    shown = "127.0.0.1" if host in _WILDCARD else host
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/"


def _answers(url: str) -> bool:
    """Whether the API is up: `/readyz` 200, or 401/403 when API keys protect the probes."""
    try:
        with urllib.request.urlopen(url + "readyz", timeout=2) as response:
            return bool(response.status == 200)
    except urllib.error.HTTPError as exc:
        return exc.code in (401, 403)
    except (urllib.error.URLError, OSError):
        return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("docs", type=Path, help="the folder of Markdown to index and serve")
    parser.add_argument("--host", help="listen address (default: [api] host, 127.0.0.1)")
    parser.add_argument("--port", type=int, help="listen port (default: [api] port, 8750)")
    args = parser.parse_args()
    if not args.docs.is_dir():
        print(f"make run: DOCS={args.docs} is not a folder", file=sys.stderr)
        return 2
    try:
        config = load_config()
    except ConfigError as exc:
        print(f"make run: {exc}", file=sys.stderr)
        return 2
    host = args.host or config.api.host
    port = args.port if args.port is not None else config.api.port
    url = _address(host, port)
    command = [str(Path(sys.executable).with_name("citeline")), "serve", str(args.docs.resolve())]
    command += ["--host", host, "--port", str(port)]
    started = time.monotonic()
    print(f"starting citeline serve {args.docs} (the page will be at {url})", flush=True)
    daemon = subprocess.Popen(command)

    def forward(signum: int, _frame: FrameType | None) -> None:
        if daemon.poll() is None:
            daemon.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    while daemon.poll() is None:
        if _answers(url):
            elapsed = time.monotonic() - started
            print(
                f"\nciteline is ready after {elapsed:.1f} s: open {url}\n"
                f'  ask from another terminal: .venv/bin/citeline ask "your question"\n'
                "  Ctrl-C stops it\n",
                flush=True,
            )
            break
        time.sleep(0.25)
    return daemon.wait()


if __name__ == "__main__":
    sys.exit(main())
