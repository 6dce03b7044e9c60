"""`citeline feedback`, `gaps` and `export-feedback`: the docs team's loop from the command line.

`feedback` and `gaps` go through a running server when there is one (`daemon.remote`), as `ask` does, and
otherwise run in this process against the database with every repository in reach, as the other local
commands do. Both run the engine's own functions (`engine.feedback`, `engine.gaps`), so input the API
refuses these refuse with the same message and exit status 2; so does a `--repo` of `gaps` or
`export-feedback` that names no indexed repository (`engine.filters`). No model is loaded by any of them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from daemon.config import load_config
from daemon.lookups import server_for, token_for
from daemon.remote import RefusedError, UnreachableError, remote_feedback, remote_gaps
from engine.feedback import FeedbackError, checked_feedback, parse_sentence_id
from engine.filters import checked_repositories
from engine.gap_exports import passage_line
from engine.gap_kinds import KIND_LABELS
from engine.gaps import MAX_GAPS, gaps_csv, gaps_markdown, parse_since
from engine.inputs import MAX_QUERY_CHARS, InputError, optional_text

__all__ = ["run_loop"]


def _print_feedback(record: dict[str, Any], as_json: bool) -> int:
    """Print the stored record; the exit status: 1 when helpful feedback accepted no sentence (the vote is
    recorded; the closest passages to name instead are listed), else 0."""
    learnt_nothing = record["helpful"] and not record["accepted"] and record.get("teaching", True)
    if as_json:
        print(json.dumps(record, ensure_ascii=False, indent=2))
        return 1 if learnt_nothing else 0
    verdict = "helpful" if record["helpful"] else "not helpful"
    print(f"recorded feedback {record['id']} on answer {record['answer_id']}: {verdict}")
    if record["accepted"]:
        print(f"  accepted for this question: sentence {', '.join(map(str, record['accepted']))}")
    if record["rejected"]:
        print(f"  not to be served from memory for it: sentence {', '.join(map(str, record['rejected']))}")
    if not record.get("teaching", True):
        print("  counted as a vote only: this API key may not accept sentences (it lacks the teach property)")
    if learnt_nothing:
        print("  accepted no sentence for this question: the answer cites none")
        offered = [f"s{i}" for i in record.get("nearest_ids") or []]
        if offered:
            print(f"  its closest passages: {', '.join(offered)}; name the one that answers it:")
            print(f"  citeline feedback {record['answer_id']} --helpful --sentence {offered[0]}")
    return 1 if learnt_nothing else 0


def _feedback(args: argparse.Namespace) -> int:
    named = [parse_sentence_id(text) for text in args.sentence or []]
    ids, comment = checked_feedback(named, args.comment)
    config = load_config(args.config)
    record = None if args.local else server_for(config)
    if record is not None:
        body: dict[str, Any] = {"helpful": args.helpful, "sentence_ids": list(ids), "comment": comment}
        try:
            remote = remote_feedback(record, token_for(config), args.answer_id, body)
        except UnreachableError:
            pass
        else:
            return _print_feedback(remote, args.json)
    from daemon.assembly import open_process
    from engine.feedback import give_feedback

    _, database = open_process(args.config)
    with database.connect() as conn:
        stored = give_feedback(conn, args.answer_id, args.helpful, ids, comment)
    return _print_feedback(stored.as_dict(), args.json)


def _render_gaps(gaps: list[dict[str, Any]], args: argparse.Namespace) -> str:
    if args.json:
        return json.dumps({"gaps": gaps}, ensure_ascii=False, indent=2) + "\n"
    if args.format == "csv":
        return gaps_csv(gaps)
    if args.format == "markdown":
        return gaps_markdown(gaps)
    if not gaps:
        return "no gaps: every question asked was answered\n"
    lines = []
    for gap in gaps:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(gap["kinds"].items()))
        lines.append(f"{gap['count']:>4}x  {gap['question']}  ({kinds}; last {gap['last_asked'][:16]})")
        if gap.get("kind"):  # a server older than the kinds lists none
            label, shown = KIND_LABELS.get(gap["kind"], gap["kind"]), passage_line(gap.get("passage"))
            lines.append(f"       {label}: {shown}" if shown else f"       {label}")
        if gap.get("page_changed"):
            lines.append("       its closest page changed since it was last asked: ask it again to re-check")
        closest = gap.get("closest")
        if closest:
            heading = f" [{closest['heading']}]" if closest.get("heading") else ""
            lines.append(f"       closest: {closest['repository'] or '?'}/{closest['path']}{heading}")
        lines += [f"       also: {w}" for w in gap["wordings"] if w != gap["question"]]
    return "\n".join(lines) + "\n"


def _gaps(args: argparse.Namespace) -> int:
    if not 1 <= args.limit <= MAX_GAPS:
        raise InputError(f"limit must be between 1 and {MAX_GAPS}, got {args.limit}")
    since = optional_text("since", args.since, MAX_QUERY_CHARS)
    start = parse_since(since)
    names = tuple(n for n in (optional_text("repo", r, MAX_QUERY_CHARS) for r in args.repo or []) if n)
    config = load_config(args.config)
    record = None if args.local else server_for(config)
    if record is not None:
        params = [("limit", str(args.limit)), *(("repo", n) for n in names)]
        params += [("since", since)] if since else []
        try:
            sys.stdout.write(_render_gaps(remote_gaps(record, token_for(config), params), args))
        except UnreachableError:
            pass
        else:
            return 0
    from daemon.assembly import open_process
    from engine.gaps import find_gaps

    _, database = open_process(args.config)
    with database.connect() as conn:
        only = checked_repositories(conn, names)
        found = find_gaps(conn, None, only, since=start, limit=args.limit)
    sys.stdout.write(_render_gaps([g.to_dict() for g in found], args))
    return 0


def _export(args: argparse.Namespace) -> int:
    from daemon.assembly import open_process
    from indexer.feedback import accepted_pairs, mark_stale

    names = [n for n in (optional_text("repo", r, MAX_QUERY_CHARS) for r in args.repo or []) if n]
    _, database = open_process(args.config)
    with database.connect() as conn:
        only = checked_repositories(conn, names)
        mark_stale(conn)
        pairs = accepted_pairs(conn, only)
    out: Path = args.out
    partial = out.with_name(f".{out.name}.partial")
    with partial.open("w", encoding="utf-8") as handle:
        for pair in pairs:
            handle.write(json.dumps(pair.export_dict(), ensure_ascii=False) + "\n")
    os.replace(partial, out)  # a reader never sees half a file
    accepted = sum(1 for p in pairs if p.helpful)
    print(f"wrote {len(pairs)} rows to {out} ({accepted} accepted, {len(pairs) - accepted} rejected)")
    return 0


_LOOP = {"feedback": _feedback, "gaps": _gaps, "export-feedback": _export}


def run_loop(args: argparse.Namespace) -> int:
    """Run `feedback`, `gaps` or `export-feedback`: 2 for input refused (here or by a server) or an answer or
    sentence that does not exist, 1 for helpful feedback that accepted no sentence (recorded), else 0."""
    try:
        return _LOOP[args.command](args)
    except (InputError, RefusedError, FeedbackError) as exc:
        print(f"citeline {args.command}: {exc}", file=sys.stderr)
        return 2
