"""The `citeline` command line: index, search, status, watch and embed, with `--json` where a script reads it.

The `--json` shapes are contracts that scripts outside the project drive; README.md documents them.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import structlog

from daemon.answering import ask, planner_status, render_planner_status
from daemon.assembly import build_retriever, embed_child_torch_threads, load_embedder, open_process
from daemon.config import Config, ConfigError
from daemon.embedding import drain_backlog
from daemon.logs import configure_logging
from daemon.reconnect import Reconnector
from daemon.repositories import repositories_for
from daemon.runtime import EmbedderRunner, Service, run_services
from daemon.sdnotify import Notifier
from daemon.services import ChildProcess, embedder_builder, queue_options, watcher
from engine.search import Filters, SearchMode
from indexer.database import Database, DatabaseError
from indexer.embedding_queue import ModelMismatchError
from indexer.reconcile import IndexOptions, IndexReport, reconcile_repository
from indexer.status import repository_status, status_totals
from indexer.store import RepositoryConflictError

__all__ = ["main"]

log = structlog.get_logger(__name__)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="citeline", description=__doc__)
    parser.add_argument("--config", type=Path, help="TOML configuration file (default: $CITELINE_CONFIG)")
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


def _heading(path: Sequence[str]) -> str:
    return " > ".join(path)


def _cmd_search(args: argparse.Namespace, config: Config, database: Database) -> int:
    if not 1 <= args.k <= 1000:
        print("citeline search: -k must be between 1 and 1000", file=sys.stderr)
        return 2
    mode = SearchMode(args.lane)
    retriever = build_retriever(config, database, mode)
    try:
        filters = Filters(tuple(args.repo) if args.repo else None, args.path_prefix)
        hits = retriever.search(args.query, args.k, mode=mode, filters=filters)
    finally:
        retriever.close()
    if args.json:
        print(json.dumps({"hits": [h.to_dict() for h in hits]}, ensure_ascii=False, indent=2))
        return 0
    if not hits:
        print("no matches")
    for rank, h in enumerate(hits, 1):
        heading = f"  [{_heading(h.heading_path)}]" if h.heading_path else ""
        pending = "" if h.embedded else "  (not embedded yet)"
        print(f"{rank:>3}. {h.repository}/{h.path}:{h.line_start}{heading}  ({h.score:.3f}){pending}")
        print(f"     {h.text}")
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
    if api:
        from daemon.serving import api_service  # only the commands that serve it import the API

        services.append(api_service(config, database, args.host, args.port))
    return run_services(services, database, Notifier.from_environment(), shutdown)


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
    figures = {name: getattr(report, name) for name in report.__slots__}
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        rate = report.embedded / report.seconds if report.seconds else 0.0
        notes = [f"dropped {report.dropped}, failed {report.failed}"]
        if report.unchanged:
            notes.append(f"{report.unchanged} re-enqueued with their embedded text unchanged")
        if report.reclaimed:
            notes.append(f"took over {report.reclaimed} items leased by workers that are gone")
        if report.waited_seconds >= 0.05:
            notes.append(f"waited {report.waited_seconds:.1f}s for items leased by other workers")
        print(
            f"embedded {report.embedded} sentences in {report.seconds:.1f}s ({rate:.0f}/s), "
            + "; ".join(notes)
            + "; backlog empty"
        )
    return 0


def _cmd_ask(args: argparse.Namespace, config: Config, database: Database) -> int:
    filters = Filters(tuple(args.repo) if args.repo else None, args.path_prefix)
    return ask(config, database, args.question, args.budget, filters, as_json=args.json)


def _cmd_api(args: argparse.Namespace, config: Config, database: Database) -> int:
    from daemon.serving import serve_api  # only the commands that serve it import the API

    return serve_api(config, database, args.host, args.port)


def _cmd_serve(args: argparse.Namespace, config: Config, database: Database) -> int:
    return _run_daemon(args, config, database, embed=True, api=True)


_COMMANDS = {
    "ask": _cmd_ask,
    "api": _cmd_api,
    "serve": _cmd_serve,
    "index": _cmd_index,
    "migrate": _cmd_migrate,
    "search": _cmd_search,
    "status": _cmd_status,
    "watch": _cmd_watch,
    "embed": _cmd_embed,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `citeline` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    configure_logging()
    try:
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
