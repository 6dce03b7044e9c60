"""The `citeline` commands other than `search` and `ask`: index, status, migrate, watch, embed, api and serve.

`daemon.cli` imports this module only for these commands, so that a lookup (`daemon.lookups`) loads neither
the indexer's parsers, the embedder's workers nor the serving stack. The `--json` shapes printed here are
contracts that README.md documents.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import structlog

from daemon.answering import planner_status, render_planner_status
from daemon.assembly import embed_child_torch_threads, load_embedder, open_process
from daemon.config import Config, load_config
from daemon.embedding import drain_backlog
from daemon.instance import ServerRecord, database_digest, recorded_server, sigterm_unwinds
from daemon.progress import drain_summary
from daemon.reconnect import Reconnector
from daemon.repositories import repositories_for
from daemon.runtime import EmbedderRunner, Service, run_services
from daemon.sdnotify import Notifier
from daemon.services import ChildProcess, embedder_builder, queue_options, watcher
from daemon.whereabouts import no_database, no_index_message
from indexer.database import Database
from indexer.embedding_queue import ModelMismatchError, pending_items
from indexer.reconcile import IndexOptions, IndexReport, reconcile_repository
from indexer.status import repository_status, status_totals
from indexer.store import ensure_repository

__all__ = ["run_command"]

log = structlog.get_logger(__name__)


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
        body = {
            "database": database.describe(),
            "data_dir": str(config.data_dir),
            "repositories": rows,
            "total": totals,
            "planner": planner,
        }
        print(json.dumps(body, indent=2))
        return 0
    print(f"database: {database.describe()}")
    if not totals["documents"]:
        print(no_index_message(config, database))
    print(render_planner_status(planner))
    for s in statuses:
        print(
            f"{s.repository}: {s.documents} documents, {s.sentences} sentences, backlog {s.backlog_size} "
            f"(oldest {s.backlog_oldest_age_seconds:.0f}s, failed {s.failed_embeddings}), "
            f"{s.embeddings} vectors, {s.embedded_per_second:.1f} embedded/s, "
            f"ingest p95 {_ms(s.ingest_latency_p95_seconds)}, {s.skipped_files} files skipped, "
            f"{_replaced(s.replaced_files, s.replaced_file_paths)}root {s.root}"
        )
    print(
        f"total: {totals['documents']} documents, {totals['sentences']} sentences, "
        f"backlog {totals['backlog_size']} (oldest {totals['backlog_oldest_age_seconds']:.0f}s), "
        f"model {totals['embedding_model'] or '(none yet)'}"
    )
    return 0


def _replaced(count: int, paths: tuple[str, ...]) -> str:
    """The files read with replacement characters, named, for the status line; nothing when there are none."""
    if not count:
        return ""
    more = f" and {count - len(paths)} more" if count > len(paths) else ""
    return f"{count} read with replacement characters (fix their encoding: {', '.join(paths)}{more}), "


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
    """The long-running process: the watcher, optionally the embedder and the API, one lifecycle. Each
    repository's name is claimed for its folder before any service starts, so a name that another live
    folder holds stops the command with exit status 2 (`RepositoryConflictError`), not the watcher after
    the API is up."""
    repos = repositories_for(config, args.paths)
    with database.connect() as conn:
        for repo in repos:
            ensure_repository(conn, repo.name, str(repo.root))
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


_COMMANDS: dict[str, Callable[[argparse.Namespace, Config, Database], int]] = {
    "api": _cmd_api,
    "serve": _cmd_serve,
    "index": _cmd_index,
    "migrate": _cmd_migrate,
    "status": _cmd_status,
    "watch": _cmd_watch,
    "embed": _cmd_embed,
}


def run_command(args: argparse.Namespace) -> int:
    """Open this command's configuration and database (migrated), then run it; its exit status. `status`
    on a data dir with no database says so (exit status 2) rather than create one."""
    if args.command == "status" and no_database(unopened := load_config(args.config)):
        print(f"citeline status: {no_index_message(unopened)}", file=sys.stderr)
        return 2
    config, database = open_process(args.config, serving=args.command in ("serve", "api"))
    return _COMMANDS[args.command](args, config, database)
