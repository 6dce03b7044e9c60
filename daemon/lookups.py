"""`citeline search` and `citeline ask`: the input contract first, then a running server, else this process.

Input is checked against the contract the API enforces (`engine.inputs`) before anything is loaded: what
`POST /v1/answers` or `GET /v1/search` answers 400 to, these refuse with the same message and exit status
2, a repository filter that names no indexed repository or a path prefix that begins no document's path
included (`engine.filters`, checked by the server or, in this process, before any model is loaded). Then,
when a `citeline serve` / `citeline api` is running for the same data dir and database
(`daemon.instance`), the command goes through it, whose models are loaded already; otherwise it opens the
database itself and loads only the models it needs (`search --lane lexical` none). A data dir with no database
is refused (exit status 2) without creating one, and so is `ask` on an index with no documents; `search` on
one says so on stderr (`daemon.whereabouts`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from daemon.config import Config, load_config
from daemon.instance import ServerRecord, database_digest, find_server
from daemon.logs import configure_logging
from daemon.remote import RefusedError, UnreachableError, remote_answer, remote_search
from daemon.whereabouts import has_documents, no_database, no_index_message
from engine.inputs import (
    MAX_QUERY_CHARS,
    MAX_QUESTION_CHARS,
    QUERY,
    QUESTION,
    InputError,
    hit_count,
    optional_text,
    required_text,
)
from engine.search import Filters, SearchMode

if TYPE_CHECKING:
    from indexer.database import Database

__all__ = ["run_lookup", "server_for", "token_for"]


def _filters(args: argparse.Namespace) -> Filters:
    """The command's filters, each checked as the API checks it; blank values are no filter."""
    names = [optional_text("repository", r, MAX_QUERY_CHARS) for r in args.repo or []]
    repositories = tuple(n for n in names if n) or None
    return Filters(repositories, optional_text("path_prefix", args.path_prefix, MAX_QUERY_CHARS))


def token_for(config: Config) -> str | None:
    """A key for the local server: an unscoped one that may teach when any is configured (`[api] keys`, then
    `CITELINE_API_KEYS`), else an unscoped one, else the first."""
    entries = [e.strip() for e in (*config.api.keys, *os.environ.get("CITELINE_API_KEYS", "").split(","))]
    entries = [e for e in entries if e]
    unscoped = [e for e in entries if not e.partition(":")[2].partition(":")[0].strip()]
    teaching = [e for e in unscoped if "teach" in e.partition(":")[2].partition(":")[2].split("|")]
    chosen = (teaching or unscoped or entries)[:1]
    return chosen[0].partition(":")[0].strip() if chosen else None


def server_for(config: Config) -> ServerRecord | None:
    """The running server for this configuration's data dir and database, when one answers."""
    return find_server(
        config.data_dir, database_digest(config.database_url, config.data_dir), token_for(config)
    )


def _open_here(args: argparse.Namespace) -> tuple[Config, Database]:
    """This process answers: its logs configured as every command's are (a lookup through a server logs
    nothing, so it does not load structlog), then its configuration and database opened."""
    from daemon.assembly import open_process

    configure_logging()
    return open_process(args.config)


def _checked_here(database: Database, filters: Filters) -> Filters:
    """`filters` checked against this process's index as the API checks them (`engine.filters`): an
    `InputError` for a repository that is not indexed or a path prefix that begins no document's path."""
    from engine.filters import checked_filters

    with database.connect() as conn:
        return checked_filters(conn, filters)


def _print_hits(hits: list[dict[str, Any]], as_json: bool) -> None:
    from daemon.answering import line_range

    if as_json:
        print(json.dumps({"hits": hits}, ensure_ascii=False, indent=2))
        return
    if not hits:
        print("no matches")
    for rank, h in enumerate(hits, 1):
        heading = f"  [{h['heading']}]" if h.get("heading") else ""
        pending = "" if h.get("embedded") else "  (not embedded yet)"
        where = f"{h['repository']}/{h['path']}:{line_range(h)}"
        print(f"{rank:>3}. {where}{heading}  ({h['score']:.3f}){pending}")
        print(f"     {h['text']}")


def _search(
    args: argparse.Namespace, query: str, filters: Filters, config: Config, record: ServerRecord | None
) -> int:
    if record is not None:
        try:
            hits = remote_search(
                record, token_for(config), query, args.k, args.lane, filters.repositories, filters.path_prefix
            )
        except UnreachableError:
            pass
        else:
            _print_hits(hits, args.json)
            return 0
    from daemon.assembly import build_retriever

    config, database = _open_here(args)
    if not has_documents(database):
        print(f"citeline search: {no_index_message(config, database)}", file=sys.stderr)
    filters = _checked_here(database, filters)
    mode = SearchMode(args.lane)
    retriever = build_retriever(config, database, mode)
    try:
        found = retriever.search(query, args.k, mode=mode, filters=filters)
    finally:
        retriever.close()
    _print_hits([h.to_dict() for h in found], args.json)
    return 0


def _ask(
    args: argparse.Namespace, question: str, filters: Filters, config: Config, record: ServerRecord | None
) -> int:
    from daemon.answering import print_answer

    if record is not None:
        try:
            result = remote_answer(
                record, token_for(config), question, args.budget, filters.repositories, filters.path_prefix
            )
        except UnreachableError:
            pass
        else:
            return print_answer(result, as_json=args.json)
    from daemon.answering import ask

    config, database = _open_here(args)
    if not has_documents(database):  # before loading any model: nothing can be answered from it
        print(f"citeline ask: {no_index_message(config, database)}", file=sys.stderr)
        return 2
    filters = _checked_here(database, filters)
    return ask(config, database, question, args.budget, filters, as_json=args.json)


_Lookup = Callable[[argparse.Namespace, str, Filters, Config, ServerRecord | None], int]
_LOOKUPS: dict[str, tuple[_Lookup, str, int]] = {
    "search": (_search, QUERY, MAX_QUERY_CHARS),
    "ask": (_ask, QUESTION, MAX_QUESTION_CHARS),
}


def run_lookup(args: argparse.Namespace) -> int:
    """Run `search` or `ask`: 2 for input the contract refuses (or a server refused) or a data dir with no
    database, else the command's own status. `--local` skips the server."""
    lookup, name, limit = _LOOKUPS[args.command]
    try:
        if args.command == "search":
            hit_count(args.k)
        text = required_text(name, args.query if args.command == "search" else args.question, limit)
        filters = _filters(args)
        config = load_config(args.config)
        record = None if args.local else server_for(config)
        if record is None and no_database(config):
            print(f"citeline {args.command}: {no_index_message(config)}", file=sys.stderr)
            return 2
        return lookup(args, text, filters, config, record)
    except (InputError, RefusedError) as exc:
        print(f"citeline {args.command}: {exc}", file=sys.stderr)
        return 2
