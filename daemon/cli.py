"""The `citeline` command line: index, search, status, watch and embed, with `--json` where a script reads it.

The `--json` shapes are contracts that scripts outside the project drive; README.md documents them. This
module imports only what parsing the arguments needs: `search` and `ask` run `daemon.lookups`, whose path
through a running server loads no model, numpy or database driver, and every other command runs from
`daemon.commands`, imported for it alone.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from daemon.logs import configure_logging, quiet_model_loading
from daemon.lookups import run_lookup
from engine.inputs import MAX_K
from engine.search import SearchMode

__all__ = ["main"]

_DESCRIPTION = (
    "The `citeline` command line: index, search, status, watch and embed, with `--json` where a script reads"
    " it. The `--json` shapes are contracts that scripts outside the project drive; README.md documents them."
)

_LOOP = ("feedback", "gaps", "export-feedback")
"""The docs team's loop (`daemon.loop`): no model, through a running server where one answers."""

_ONE_LINE_ERRORS = (
    ("daemon.config", "ConfigError"),
    ("indexer.database", "DatabaseError"),
    ("indexer.store", "RepositoryConflictError"),
)
"""Errors a command reports in one line with exit status 2: a bad configuration, an unreachable database, a
folder indexed under another repository's name."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="citeline", description=_DESCRIPTION)
    parser.add_argument("--config", type=Path, help="TOML configuration file (default: $CITELINE_CONFIG)")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="show the models' loading bars and warnings on stderr"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    index = sub.add_parser("index", help="index Markdown repositories (catch up with every change)")
    index.add_argument("paths", nargs="*", type=Path, help="repository folders (default: configured ones)")
    index.add_argument("--json", action="store_true", help="print the report as JSON")

    search = sub.add_parser("search", help="hybrid search over the indexed sentences")
    search.add_argument("query")
    search.add_argument("-k", type=int, default=10, help=f"number of hits (1-{MAX_K}, default 10)")
    search.add_argument("--repo", action="append", help="only this repository (repeatable)")
    search.add_argument("--path-prefix", help="only documents whose path starts with this")
    search.add_argument(
        "--lane",
        choices=[m.value for m in SearchMode],
        default=SearchMode.HYBRID.value,
        help="lexical (BM25 only, no model), vector, or hybrid (both fused, then reranked; default)",
    )
    search.add_argument("--json", action="store_true", help='print {"hits": [...]} as JSON')
    search.add_argument("--local", action="store_true", help="search in this process, not a running server")

    sub.add_parser("migrate", help="apply pending schema migrations and exit (once, before a fleet starts)")
    status = sub.add_parser("status", help="documents, sentences and embedding backlog per repository")
    status.add_argument("--json", action="store_true", help="print the figures as JSON")

    watch = sub.add_parser("watch", help="keep repositories indexed as files change, and embed the backlog")
    watch.add_argument("paths", nargs="*", type=Path, help="repository folders (default: configured ones)")
    watch.add_argument(
        "--no-embed", action="store_true", help="lexical lane only; run `citeline embed` apart"
    )

    embed = sub.add_parser("embed", help="run embedder workers on the backlog (scale out: one per machine)")
    embed.add_argument("--drain", action="store_true", help="embed until the backlog is empty, then exit")
    embed.add_argument("--workers", type=int, help="worker threads (default: [embedding] workers)")
    embed.add_argument("--json", action="store_true", help="with --drain: print the report as JSON")

    ask = sub.add_parser("ask", help="answer a question with verified, cited clauses")
    ask.add_argument("question")
    ask.add_argument("--budget", choices=["low", "mid", "high"], default="mid", help="verification effort")
    ask.add_argument("--repo", action="append", help="only this repository (repeatable)")
    ask.add_argument("--path-prefix", help="only documents whose path starts with this")
    ask.add_argument("--json", action="store_true", help="print the answer as JSON")
    ask.add_argument("--local", action="store_true", help="answer in this process, not a running server")

    feedback = sub.add_parser(
        "feedback", help="say whether a stored answer helped, and which sentences answer it"
    )
    feedback.add_argument("answer_id")
    verdict = feedback.add_mutually_exclusive_group(required=True)
    verdict.add_argument("--helpful", dest="helpful", action="store_true", default=None)
    verdict.add_argument("--unhelpful", dest="helpful", action="store_false")
    feedback.add_argument(
        "--sentence",
        action="append",
        metavar="ID",
        help="a sentence that answers it: its id or the short id `ask` prints, s42 (repeatable); with"
        " --helpful and none, the answer's cited sentences",
    )
    feedback.add_argument("--comment", help="a note for the docs team")
    feedback.add_argument("--json", action="store_true", help="print the stored record as JSON")
    feedback.add_argument("--local", action="store_true", help="record in this process, not a running server")

    gaps = sub.add_parser("gaps", help="what the docs failed to answer, different wordings grouped")
    gaps.add_argument("--since", help="only askings this recent: 30m, 12h, 7d, 2w or a date YYYY-MM-DD")
    gaps.add_argument("--repo", action="append", help="only this repository (repeatable)")
    gaps.add_argument("--limit", type=int, default=100, help="the most groups listed (1-500, default 100)")
    gaps.add_argument("--json", action="store_true", help='print {"gaps": [...]} as JSON')
    gaps.add_argument("--format", choices=["text", "csv", "markdown"], default="text", help="export format")
    gaps.add_argument("--local", action="store_true", help="read in this process, not a running server")

    export = sub.add_parser("export-feedback", help="write accepted and rejected sentences as JSON lines")
    export.add_argument("--out", type=Path, required=True, help="the JSON lines file to write")
    export.add_argument("--repo", action="append", help="only this repository (repeatable)")

    sub.add_parser(
        "mcp",
        help="serve the tools to a coding agent or chat client over MCP on stdio (through a running server)",
    )

    for name, text in (
        ("serve", "watch, embed and serve the HTTP API in one process"),
        ("api", "serve the HTTP API alone (a stateless replica)"),
    ):
        server = sub.add_parser(name, help=text)
        if name == "serve":
            server.add_argument(
                "paths", nargs="*", type=Path, help="repository folders (default: configured)"
            )
        server.add_argument("--host", help="listen address (default: [api] host)")
        server.add_argument("--port", type=int, help="listen port (default: [api] port)")
    return parser


def _raised(names: tuple[tuple[str, str], ...]) -> tuple[type[BaseException], ...]:
    """The error classes of `names` whose modules this process imported: one it never imported cannot have
    been raised, so a lookup is not made to import the indexer only to name its errors."""
    return tuple(getattr(sys.modules[module], name) for module, name in names if module in sys.modules)


EXIT_CLOSED_PIPE = 141
"""The exit status when the reader of stdout went away (`citeline search ... | head -2`): 128 + SIGPIPE, as a
shell tool killed by the signal reports it."""


def _stdout_closed() -> int:
    """The reader of stdout is gone: point stdout at /dev/null, so the interpreter's last flush of what is
    left in its buffer fails no more, and end quietly (no traceback)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_CLOSED_PIPE


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `citeline` console script; returns the exit status. A reader that closes stdout
    early (`| head -1`) ends the command quietly with status 141, not a traceback."""
    try:
        status = _main(argv)
        sys.stdout.flush()  # here, not at exit, where a closed pipe would print "Exception ignored"
    except BrokenPipeError:
        return _stdout_closed()
    return status


def _main(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    if not args.verbose:
        quiet_model_loading()
    try:
        if args.command in ("search", "ask"):
            return run_lookup(args)  # configures logging where it answers in this process
        if args.command == "mcp":
            configure_logging()
            from daemon.mcp_stdio import run_mcp  # the MCP SDK: loaded for this command alone

            return run_mcp(args)
        if args.command in _LOOP:
            configure_logging()
            from daemon.loop import run_loop

            return run_loop(args)
        configure_logging()
        from daemon.commands import run_command  # the other commands' modules: not on a lookup's path

        return run_command(args)
    except _raised(_ONE_LINE_ERRORS) as exc:
        print(f"citeline: {exc}", file=sys.stderr)
        return 2
    except _raised((("psycopg", "OperationalError"),)) as exc:  # the database went away mid-command
        print(f"citeline: database error: {str(exc).splitlines()[0] if str(exc) else exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
