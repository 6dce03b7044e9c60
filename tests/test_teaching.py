"""Who may teach citeline: with keys configured, only a key with the `teach` property accepts (or rejects)
sentences for everyone; any other key's feedback is a vote, recorded and counted. Key specs
`TOKEN[:REPOSITORIES[:PROPERTIES]]` parse as documented, and a bad one stops `citeline api` with one line that
never shows the token."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from api.auth import ANONYMOUS, Access
from api.settings import ApiKeyError, ApiSettings, parse_keys
from daemon.cli import main
from engine.search import Retriever
from indexer.database import Connection, Database
from tests.api_support import (
    FULL_KEY,
    KEYS,
    VOTE_KEY,
    answering_client,
    cli_environment,
)

FULL = {"Authorization": f"Bearer {FULL_KEY}"}
VOTE = {"Authorization": f"Bearer {VOTE_KEY}"}
TOKEN = "a-secret-token-0123456789"
QUESTION = "What does stage 0 download?"


def test_a_key_teaches_only_with_the_teach_property_and_old_specs_read_as_before() -> None:
    keys = parse_keys(
        [
            TOKEN,
            f"{TOKEN}:alpha|beta",
            f"{TOKEN}:alpha|beta:teach",
            f"{TOKEN}::teach",
            f" {TOKEN}:beta : teach ",
        ]
    )
    assert [(k.repositories, k.teach) for k in keys] == [
        (None, False),
        (("alpha", "beta"), False),
        (("alpha", "beta"), True),
        (None, True),
        (("beta",), True),
    ]
    assert TOKEN not in repr(keys[2]) and "teach=True" in repr(keys[2])
    assert ANONYMOUS.may_teach is False and Access(None).may_teach is True


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (f"{TOKEN}:alpha:admin", "API key #2: unknown key property 'admin'; known: teach"),
        (f"{TOKEN}::", "API key #2: the second ':' must be followed by a property (teach)"),
        (f"{TOKEN}:alpha:teach:more", "API key #2: expected TOKEN, TOKEN:REPOSITORIES or"),
        (f"{TOKEN}:", "API key #2: ':' must be followed by repository names"),
        ("short:alpha:teach", "API key #2: a token needs at least 16 characters"),
    ],
)
def test_a_bad_key_spec_is_a_clear_error_naming_the_entry_not_the_token(spec: str, message: str) -> None:
    with pytest.raises(ApiKeyError) as caught:
        parse_keys([f"{TOKEN}::teach", spec])
    assert str(caught.value).startswith(message) and TOKEN not in str(caught.value)


def test_the_api_command_refuses_a_bad_key_spec_in_one_line_before_loading_models(
    clean_database: Database,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cli_environment(clean_database, monkeypatch, tmp_path)
    monkeypatch.setenv("CITELINE_API_KEYS", f"{TOKEN}:alpha:teacher")
    assert main(["api"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == "citeline: API key #1: unknown key property 'teacher'; known: teach"
    assert TOKEN not in err


@pytest.fixture
def client(
    conn: Connection, tmp_path: Path, clean_database: Database, lexical_retriever: Retriever
) -> Iterator[TestClient]:  # type: ignore[type-arg]
    settings = ApiSettings(keys=KEYS)
    with answering_client(conn, tmp_path, clean_database, lexical_retriever, settings) as test_client:
        yield test_client


def _answer(client: TestClient) -> dict[str, Any]:  # type: ignore[type-arg]
    response = client.post("/v1/answers", json={"question": QUESTION}, headers=FULL)
    assert response.status_code == 200 and response.json()["status"] == "answer"
    body: dict[str, Any] = response.json()
    return body


def _pairs(conn: Connection) -> int:
    row = conn.execute("SELECT count(*) FROM accepted_answers").fetchone()
    assert row is not None
    return int(row[0])


def test_a_key_that_may_not_teach_cannot_accept_sentences_but_its_vote_is_counted(
    client: TestClient,  # type: ignore[type-arg]
    conn: Connection,
) -> None:
    answer = _answer(client)
    cited = answer["clauses"][0]["sources"][0]["sentence_id"]
    url = f"/v1/answers/{answer['id']}/feedback"
    for helpful in (True, False):
        refused = client.post(url, json={"helpful": helpful, "sentence_ids": [cited]}, headers=VOTE)
        assert refused.status_code == 403 and "teach property" in refused.json()["detail"]
    assert _pairs(conn) == 0 and conn.execute("SELECT count(*) FROM feedback").fetchone() == (0,)
    voted = client.post(url, json={"helpful": True}, headers=VOTE)
    assert voted.status_code == 201
    record = voted.json()
    assert record["helpful"] is True and record["teaching"] is False
    assert record["accepted"] == [] and record["rejected"] == [] and record["nearest_ids"] == []
    unhelpful = client.post(url, json={"helpful": False, "comment": "too short"}, headers=VOTE).json()
    assert unhelpful["rejected"] == [], "a vote rejects nothing the team accepted"
    assert _pairs(conn) == 0
    metrics = client.get("/metrics", headers=FULL).text
    assert 'citeline_feedback_total{kind="helpful"} 1.0' in metrics
    assert 'citeline_feedback_total{kind="unhelpful"} 1.0' in metrics


def test_a_teaching_key_accepts_sentences_for_everyone(
    client: TestClient,  # type: ignore[type-arg]
    conn: Connection,
) -> None:
    answer = _answer(client)
    cited = answer["clauses"][0]["sources"][0]["sentence_id"]
    response = client.post(
        f"/v1/answers/{answer['id']}/feedback", json={"helpful": True, "sentence_ids": [cited]}, headers=FULL
    )
    assert response.status_code == 201
    assert response.json()["accepted"] == [cited] and response.json()["teaching"] is True
    assert _pairs(conn) == 1


def test_with_no_keys_configured_everyone_may_teach(
    conn: Connection, tmp_path: Path, clean_database: Database, lexical_retriever: Retriever
) -> None:
    with answering_client(conn, tmp_path, clean_database, lexical_retriever, ApiSettings()) as open_client:
        answer = open_client.post("/v1/answers", json={"question": QUESTION}).json()
        cited = answer["clauses"][0]["sources"][0]["sentence_id"]
        body = {"helpful": True, "sentence_ids": [cited]}
        record = open_client.post(f"/v1/answers/{answer['id']}/feedback", json=body).json()
    assert record["accepted"] == [cited] and record["teaching"] is True
