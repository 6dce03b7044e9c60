"""The README's HTTP example runs as written on the index `make run DOCS=./docs` builds: `./docs` indexed
under the name its folder gives it (`citeline serve ./docs` names it with `daemon.repositories`), then the
README's request body posted as it stands. Its filters name that repository and a page of it, so the
answer must come back, citing that page, not a 400 (or, as before filters were checked, an `insufficient`
answer from a repository name that matched nothing)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from daemon.config import load_config
from daemon.repositories import repositories_for
from engine.search import Retriever
from indexer.database import Connection, Database
from indexer.reconcile import reconcile_repository
from tests.api_support import client_for, real_answering

ROOT = Path(__file__).resolve().parents[1]
CURL = re.compile(r"curl -s http://127\.0\.0\.1:8750/v1/answers [^\n]*\\\n\s*-d '(?P<body>[^']*)'")


def _readme_body() -> dict[str, Any]:
    """The JSON body of the README's `curl` example, as a reader would copy it."""
    found = CURL.search((ROOT / "README.md").read_text(encoding="utf-8"))
    assert found is not None, "the README's curl example to POST /v1/answers is gone"
    body: dict[str, Any] = json.loads(found.group("body"))
    return body


def test_the_readme_s_curl_example_is_answered_from_the_index_make_run_builds(
    conn: Connection, clean_database: Database, lexical_retriever: Retriever, tmp_path: Path
) -> None:
    docs = tmp_path / "clone" / "docs"
    shutil.copytree(ROOT / "docs", docs)
    [repository] = repositories_for(load_config(env={}), [docs])
    reconcile_repository(conn, repository)
    body = _readme_body()
    assert body["filters"]["repositories"] == [repository.name]
    answering = real_answering(clean_database, lexical_retriever)
    with client_for(clean_database, lexical_retriever, answering) as client:
        response = client.post("/v1/answers", json=body)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["status"] == "answer", answer.get("reason")
    cited = {(s["repository"], s["path"]) for c in answer["clauses"] for s in c["sources"]}
    assert cited and all(
        name == repository.name and path.startswith(body["filters"]["path_prefix"]) for name, path in cited
    )
    assert any("8750" in c["clause"] for c in answer["clauses"]), "the port the question asks for"
