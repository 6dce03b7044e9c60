"""A key scoped to one repository never reads another repository's words back through spelling correction:
not in `read_as`, not in the notes, not in the trace's queries. With no keys or a full key, a misspelt word
is still corrected to the word of any repository."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from api.settings import ApiSettings
from engine.search import Retriever, spell_question, staged_lexical_search
from indexer.database import Connection, Database
from indexer.reconcile import Repository, reconcile_repository
from tests.api_support import ALPHA_KEY, FULL_KEY, KEYS, client_for, real_answering

ALPHA_PAGE = "# Bread\n\nBread dough rises because yeast produces carbon dioxide. Bake it at 220 degrees.\n"
BETA_PAGE = (
    "# Operations\n\nThe staging credentials live in the quarterly runbook. "
    "Rotate the staging credentials every quarter.\n"
)
TYPO = "What are the stagng credentals?"
BETA_WORDS = ("staging", "credentials")


@pytest.fixture
def two_repositories(conn: Connection, tmp_path: Path) -> None:
    for name, text in (("alpha", ALPHA_PAGE), ("beta", BETA_PAGE)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "page.md").write_text(text)
        reconcile_repository(conn, Repository(name, tmp_path / name))


@pytest.fixture
def client(
    two_repositories: None, clean_database: Database, lexical_retriever: Retriever
) -> Iterator[TestClient]:  # type: ignore[type-arg]
    settings = ApiSettings(keys=KEYS)
    answering = real_answering(clean_database, lexical_retriever)
    with client_for(clean_database, lexical_retriever, answering, settings) as test_client:
        yield test_client


def _ask(client: TestClient, key: str) -> dict[str, Any]:  # type: ignore[type-arg]
    response = client.post("/v1/answers", json={"question": TYPO}, headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _shown(body: dict[str, Any]) -> dict[str, str]:
    """Each place a corrected word can show, as text."""
    return {
        "read_as": body.get("read_as") or "",
        "notes": json.dumps(body.get("notes", [])),
        "trace queries": json.dumps([step.get("queries", []) for step in body.get("trace", [])]),
    }


def test_a_scoped_key_reads_no_word_of_another_repository(client: TestClient) -> None:  # type: ignore[type-arg]
    scoped = _ask(client, ALPHA_KEY)
    for place, text in _shown(scoped).items():
        for word in BETA_WORDS:
            assert word not in text.lower(), (place, text)


def test_a_full_key_still_gets_the_correction(client: TestClient) -> None:  # type: ignore[type-arg]
    full = _ask(client, FULL_KEY)
    shown = _shown(full)
    assert shown["read_as"] == "What are the staging credentials?"
    assert "staging" in shown["notes"] and "staging" in shown["trace queries"]


def test_spelling_is_scoped_to_the_repositories_asked(conn: Connection, two_repositories: None) -> None:
    assert spell_question(conn, TYPO).text == "What are the staging credentials?"
    assert spell_question(conn, TYPO, repositories=["beta"]).text == "What are the staging credentials?"
    assert spell_question(conn, TYPO, repositories=["alpha"]).corrections == ()


def test_the_lexical_lane_of_a_scoped_search_makes_no_foreign_correction(
    conn: Connection, two_repositories: None
) -> None:
    assert staged_lexical_search(conn, "stagng credentals", 10).corrections
    assert staged_lexical_search(conn, "stagng credentals", 10, repositories=["alpha"]).corrections == {}
