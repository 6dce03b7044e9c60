"""`citeline ask`: one question through the engine `daemon.assembly` builds, printed for a person or as JSON.

The answer is the one `POST /v1/answers` gives (the same engine, models and store), without the API: this
module and what it imports never load the `api` package.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from daemon.assembly import build_engine, model_names
from daemon.config import Config
from engine.search import Filters
from indexer.database import Database

__all__ = ["ask"]


def _render(result: dict[str, Any]) -> str:
    lines = [f"{result['status']} ({result['route']} path, {len(result['trace'])} round(s))"]
    if result.get("reason"):
        lines.append(f"  reason: {result['reason']}")
    for number, clause in enumerate(result["clauses"], 1):
        lines.append(f"{number}. {clause['clause']}  [confidence {clause['confidence']:.2f}]")
        for source in clause["sources"]:
            heading = f" [{source['heading']}]" if source.get("heading") else ""
            lines.append(f"     {source['repository']}/{source['path']}:{source['line_start']}{heading}")
    return "\n".join(lines)


def ask(
    config: Config,
    database: Database,
    question: str,
    budget: str,
    filters: Filters,
    *,
    as_json: bool,
) -> int:
    """`citeline ask`: answer one question; exit 0 for an answer, 1 when insufficient or failed."""
    engine = build_engine(database, model_names(config), config.retrieval)
    try:
        result = engine.answer(question, budget, filters).to_dict()
    finally:
        engine.close()
    if as_json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
    else:
        print(_render(result))
    sys.stdout.flush()
    return 0 if result["status"] == "answer" else 1
