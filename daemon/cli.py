"""The `citeline` command line: index, search, status, watch and embed, with `--json` where a script reads it.

The `--json` shapes are contracts that scripts outside the project drive; README.md documents them.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import psycopg
import structlog

from daemon.answering import planner_status, render_planner_status
from daemon.assembly import embed_child_torch_threads, load_embedder, open_process
from daemon.config import Config, ConfigError
from daemon.embedding import drain_backlog
from daemon.instance import ServerRecord, database_digest, recorded_server, sigterm_unwinds
from daemon.logs import configure_logging, quiet_model_loading
from daemon.lookups import run_lookup
from daemon.progress import drain_summary
from daemon.reconnect import Reconnector
from daemon.repositories import repositories_for
from daemon.runtime import EmbedderRunner, Service, run_services
from daemon.sdnotify import Notifier
from daemon.services import ChildProcess, embedder_builder, queue_options, watcher
from engine.search import SearchMode
from indexer.database import Database, DatabaseError
from indexer.embedding_queue import ModelMismatchError, pending_items
from indexer.reconcile import IndexOptions, IndexReport, reconcile_repository
from indexer.status import repository_status, status_totals
from indexer.store import RepositoryConflictError

__all__ = ["main"]

log = structlog.get_logger(__name__)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="citeline", description=__doc__)
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
    search.add_argument("-k", type=int, default=10, help="number of hits (1-1000, default 10)")
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


def _options(config: Config) -> IndexOptions:
    return IndexOptions(config.indexing.max_file_bytes, config.indexing.code_blocks)


@contextmanager
def _progress(label: str, *, enabled: bool) -> Iterator[Callable[[str], None] | None]:
    """A tqdm bar on a terminal; nothing otherwise (the structured log line says it all)."""
    if not enabled:
        yield None
        return
    from tqdm import tqdm

    with tqdm(desc=label, unit="file") as bar:
        yield lambda _path: bar.update(1)


def _report_dict(report: IndexReport) -> dict[str, Any]:
    return {name: getattr(report, name) for name in report.__slots__}


def _cmd_index(args: argparse.Namespace, config: Config, database: Database) -> int:
    repos = repositories_for(config, args.paths)
    reports = {}
    with database.connect() as conn:
        for repo in repos:
            with _progress(repo.name, enabled=sys.stderr.isatty() and not args.json) as progress:
                report = reconcile_repository(conn, repo, _options(config), progress=progress)
            log.info(
                "indexed",
                repository=repo.name,
                files_written=report.files_written,
                sentences_inserted=report.sentences_inserted,
                documents_deleted=report.documents_deleted,
                files_skipped=report.files_skipped,
            )
            reports[repo.name] = _report_dict(report)
    if args.json:
        print(json.dumps({"repositories": reports}, indent=2))
    else:
        for name, rep in reports.items():
            print(
                f"{name}: {rep['files_seen']} files, {rep['files_written']} written, "
                f"{rep['files_unchanged']} unchanged, {rep['files_skipped']} skipped, "
                f"{rep['documents_deleted']} deleted; sentences +{rep['sentences_inserted']} "
                f"-{rep['sentences_deleted']} ~{rep['sentences_moved']}"
            )
    return 0


def _cmd_status(args: argparse.Namespace, config: Config, database: Database) -> int:
    with database.connect() as conn:
        statuses = repository_status(conn)
        totals = status_totals(conn, statuses).as_dict()
    rows = [s.as_dict() for s in statuses]
    planner = planner_status(config)
    if args.json:
        body = {"database": database.describe(), "repositories": rows, "total": totals, "planner": planner}
        print(json.dumps(body, indent=2))
        return 0
    print(f"database: {database.describe()}")
    print(render_planner_status(planner))
    for s in statuses:
        print(
            f"{s.repository}: {s.documents} documents, {s.sentences} sentences, backlog {s.backlog_size} "
            f"(oldest {s.backlog_oldest_age_seconds:.0f}s, failed {s.failed_embeddings}), "
            f"{s.embeddings} vectors, {s.embedded_per_second:.1f} embedded/s, "
            f"ingest p95 {_ms(s.ingest_latency_p95_seconds)}, {s.skipped_files} files skipped, root {s.root}"
        )
    print(
        f"total: {totals['documents']} documents, {totals['sentences']} sentences, "
        f"backlog {totals['backlog_size']} (oldest {totals['backlog_oldest_age_seconds']:.0f}s), "
        f"model {totals['embedding_model'] or '(none yet)'}"
    )
    return 0


def _cmd_migrate(args: argparse.Namespace, config: Config, database: Database) -> int:
    """Opening the database applied the pending migrations (under an advisory lock); say where it stands."""
    with database.connect() as conn:
        row = conn.execute("SELECT max(version) FROM citeline_migrations").fetchone()
    print(f"schema at version {row[0] if row else 0}: {database.describe()}")
    return 0


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.0f} ms"


def _run_daemon(
    args: argparse.Namespace, config: Config, database: Database, *, embed: bool, api: bool
) -> int:
    """The long-running process: the watcher, optionally the embedder and the API, one lifecycle."""
    repos = repositories_for(config, args.paths)
    shutdown = threading.Event()
    reconnector = Reconnector(database, shutdown)
    services: list[Service] = [watcher(config, reconnector, repos)]
    if api and config.watch.separate_process:
        paths = [str(path) for path in args.paths]
        services = [ChildProcess("watch", ["watch", "--no-embed", *paths], args.config)]
    separate = config.embedding.separate_process
    if embed and (separate if separate is not None else api):  # unset: a child under `serve` only
        threads = embed_child_torch_threads(config.models.torch_threads)
        env = {"CITELINE_MODELS__TORCH_THREADS": str(threads)}
        services.append(ChildProcess("embed", ["embed"], args.config, config.embedding.nice, env))
    elif embed:
        services.append(EmbedderRunner(embedder_builder(config, reconnector, progress=True)))
    if not api:
        return run_services(services, database, Notifier.from_environment(), shutdown)
    from daemon.serving import api_service  # only the commands that serve it import the API

    services.append(api_service(config, database, args.host, args.port))
    with _recorded(args, config):
        return run_services(services, database, Notifier.from_environment(), shutdown)


def _recorded(args: argparse.Namespace, config: Config) -> AbstractContextManager[ServerRecord]:
    """This serving process recorded in the data dir while it runs, for `search` and `ask` to find."""
    host = args.host or config.api.host
    port = args.port if args.port is not None else config.api.port
    return recorded_server(config.data_dir, host, port, database_digest(config.database_url, config.data_dir))


def _cmd_watch(args: argparse.Namespace, config: Config, database: Database) -> int:
    return _run_daemon(args, config, database, embed=not args.no_embed, api=False)


def _cmd_embed(args: argparse.Namespace, config: Config, database: Database) -> int:
    if args.workers is not None and args.workers < 1:
        print("citeline embed: --workers must be at least 1", file=sys.stderr)
        return 2
    shutdown = threading.Event()
    reconnector = Reconnector(database, shutdown)
    if not args.drain:
        runner = EmbedderRunner(embedder_builder(config, reconnector, args.workers))
        return run_services([runner], database, Notifier.from_environment(), shutdown)
    try:
        report = drain_backlog(
            reconnector,
            load_embedder(config),
            queue_options(config),
            args.workers or config.embedding.workers,
            progress=True,
        )
    except ModelMismatchError as exc:
        print(f"citeline embed: {exc}", file=sys.stderr)
        return 1
    with database.connect() as conn:
        left = pending_items(conn)[0]
    print(drain_summary(report, left, as_json=args.json))
    return 0


def _cmd_api(args: argparse.Namespace, config: Config, database: Database) -> int:
    from daemon.serving import serve_api  # only the commands that serve it import the API

    with _recorded(args, config), sigterm_unwinds():
        return serve_api(config, database, args.host, args.port)


def _cmd_serve(args: argparse.Namespace, config: Config, database: Database) -> int:
    return _run_daemon(args, config, database, embed=True, api=True)


_COMMANDS = {
    "api": _cmd_api,
    "serve": _cmd_serve,
    "index": _cmd_index,
    "migrate": _cmd_migrate,
    "status": _cmd_status,
    "watch": _cmd_watch,
    "embed": _cmd_embed,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `citeline` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    configure_logging()
    if not args.verbose:
        quiet_model_loading()
    try:
        if args.command in ("search", "ask"):
            return run_lookup(args)
        config, database = open_process(args.config, serving=args.command in ("serve", "api"))
        return _COMMANDS[args.command](args, config, database)
    except (ConfigError, DatabaseError, RepositoryConflictError) as exc:
        print(f"citeline: {exc}", file=sys.stderr)
        return 2
    except psycopg.OperationalError as exc:  # the database went away mid-command: one line, not a traceback
        print(f"citeline: database error: {str(exc).splitlines()[0] if str(exc) else exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
