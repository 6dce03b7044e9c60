"""Schemathesis against the served OpenAPI schema: the schema and the server agree, and nothing is a 5xx.

The app runs under uvicorn on loopback with keys on, over a real PostgreSQL holding two repositories. The
schemathesis CLI runs with every check (`[checks] enabled = true`) and every phase, deterministic so that a
run is the same every time: with an unscoped key (generated input reaches the handlers and the database), a
scoped one (fuzzing only: 403s), and none (every route but the probes answers 401, as declared). Bounded
to 20 examples per operation with the unscoped key, to stay around a minute on two shared cores.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from schemathesis.specs.openapi.schemas import OpenApiSchema

from api.app import create_app
from api.settings import ApiSettings
from engine.search import Retriever
from indexer.database import Connection, Database
from tests.api_support import ALPHA_KEY, FULL_KEY, KEYS, index_two_repositories, real_answering, served


@pytest.fixture(scope="module")
def base_url(database: Database, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with database.connect() as conn:
        conn.execute("TRUNCATE repositories, answers RESTART IDENTITY CASCADE")
        index_two_repositories(conn, Path(tmp_path_factory.mktemp("schema-repos")))
    retriever = Retriever(database, None, max_connections=4)
    app = create_app(database, retriever, real_answering(database, retriever), ApiSettings(keys=KEYS))
    with served(app) as url:
        yield url
    retriever.close()


@pytest.fixture(scope="module")
def api_schema(base_url: str) -> OpenApiSchema:
    return schemathesis.openapi.from_url(f"{base_url}/schema/openapi.json")


ALL_PHASES = "examples,coverage,fuzzing,stateful"
FILTERED = ("/v1/answers", "/v1/search", "/v1/gaps")
"""The routes whose repository and path filters are checked against the index (`engine.filters`): a
schema-valid name that is not indexed, or a prefix that begins no document's path, is a 400 by design (the
schema cannot list what is indexed), so on these alone a 400 to schema-valid input is expected."""
FEEDBACK = "/v1/answers/{answer_id}/feedback"
"""Feedback naming a sentence that does not exist is a 404 (`no sentence N`) on an answer that does: the
stateful phase's "created resource not found" check reads it as the answer gone, so it is off here alone
(`tests/test_feedback_api.py` holds the 404s to their messages)."""
CONFIG = (
    "[checks]\nenabled = true\n"  # every check, as `--checks all` (which would override the sections below)
    + "".join(
        f'[[operations]]\ninclude-path = "{path}"\n[operations.checks.positive_data_acceptance]\n'
        'expected-statuses = ["2xx", "3xx", "400", "401", "403", "404", "409", "429", "5xx"]\n'
        for path in FILTERED
    )
    + f'[[operations]]\ninclude-path = "{FEEDBACK}"\n'
    + "[operations.checks.ensure_resource_availability]\nenabled = false\n"
)


def _schemathesis(base_url: str, workdir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """`st run` with every check, in deterministic mode (no randomness, no example database), so a run
    generates the same cases every time."""
    (workdir / "schemathesis.toml").write_text(CONFIG, encoding="utf-8")
    command = [
        str(Path(sys.executable).with_name("st")),
        "--config-file",
        str(workdir / "schemathesis.toml"),
        "run",
        f"{base_url}/schema/openapi.json",
        "--generation-deterministic",
        "--workers",
        "1",
        "--no-color",
        *extra,
    ]
    # In a temp folder: schemathesis keeps a cache folder in its working directory.
    return subprocess.run(command, capture_output=True, text=True, timeout=600, check=False, cwd=workdir)


@pytest.mark.parametrize(
    ("key", "max_examples", "phases"),
    [(FULL_KEY, 20, ALL_PHASES), (ALPHA_KEY, 10, "fuzzing"), (None, 5, ALL_PHASES)],
    ids=["full", "scoped", "anonymous"],
)
def test_the_schema_matches_the_server(
    base_url: str, key: str | None, max_examples: int, phases: str, tmp_path: Path
) -> None:
    """Every check schemathesis has (server errors, undocumented statuses and media types, responses that
    break their schema, schema-valid input refused, schema-invalid input accepted) over a bounded run."""
    auth = ["--header", f"Authorization: Bearer {key}"] if key else []
    run = _schemathesis(base_url, tmp_path, "--max-examples", str(max_examples), "--phases", phases, *auth)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    counts = re.search(r"(\d+) generated, (\d+) passed", run.stdout)
    assert counts is not None, run.stdout[-2000:]
    assert int(counts[1]) == int(counts[2]) > 5 * max_examples, "the run must actually exercise the API"


def test_schema_lists_every_route(api_schema: OpenApiSchema, conn: Connection) -> None:
    paths = set(api_schema.raw_schema["paths"])
    assert paths == {
        "/v1/answers",
        "/v1/history",
        "/v1/answers/{answer_id}",
        "/v1/answers/{answer_id}/feedback",
        "/v1/gaps",
        "/v1/search",
        "/v1/sentences/{sentence_id}",
        "/v1/documents",
        "/v1/status",
        "/healthz",
        "/readyz",
        "/metrics",
    }
