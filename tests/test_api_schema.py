"""Schemathesis against the served OpenAPI schema: generated requests to every operation, none answered 5xx.

The app runs under uvicorn on loopback with keys on, and the calls carry an unscoped key, so generated input
reaches the handlers and the database instead of stopping at the guard. Bounded to 25 examples per
operation (a couple of hundred requests) to stay well under a minute on two shared cores.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.schemas import OpenApiSchema

from api.app import create_app
from api.settings import ApiSettings
from engine.retrieval import Retriever
from indexer.database import Connection, Database
from tests.api_support import FULL_KEY, KEYS, index_two_repositories, real_answering, served


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


def test_no_server_errors(api_schema: OpenApiSchema, base_url: str) -> None:
    """Each operation gets its own bounded Hypothesis run (the pytest plugin of schemathesis is not used:
    its fixture loader does not work with this pytest)."""
    headers = {"Authorization": f"Bearer {FULL_KEY}"}
    operations = [result.ok() for result in api_schema.get_all_operations() if isinstance(result, Ok)]
    assert len(operations) == 9
    statuses: list[int] = []

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def no_5xx(case: schemathesis.Case) -> None:  # type: ignore[type-arg]
            response = case.call(base_url=base_url, headers=headers, timeout=30)
            statuses.append(response.status_code)
            case.validate_response(response, checks=[not_a_server_error])

        no_5xx()
    assert len(statuses) > 100, "the run must actually exercise the API"
    assert any(400 <= code < 500 for code in statuses) and 200 in statuses


def test_schema_lists_every_route(api_schema: OpenApiSchema, conn: Connection) -> None:
    paths = set(api_schema.raw_schema["paths"])
    assert paths == {
        "/v1/answers",
        "/v1/answers/{answer_id}",
        "/v1/search",
        "/v1/sentences/{sentence_id}",
        "/v1/documents",
        "/v1/status",
        "/healthz",
        "/readyz",
        "/metrics",
    }
