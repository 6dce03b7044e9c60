"""`POST /v1/answers/{id}/feedback` and `citeline feedback`: the stored record, the key rules of answers, bad
input refused with the same message from both, and the CLI through a running server or on its own."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from api.app import create_app
from api.settings import ApiSettings
from daemon.cli import main
from engine.search import Retriever
from indexer.database import Connection, Database
from tests.api_support import (
    ALPHA_KEY,
    BETA_KEY,
    FULL_KEY,
    KEYS,
    answering_client,
    cli_environment,
    index_two_repositories,
    real_answering,
    served_for,
)
from tests.helpers import sentence_id_of

FULL = {"Authorization": f"Bearer {FULL_KEY}"}
ALPHA = {"Authorization": f"Bearer {ALPHA_KEY}"}
BETA = {"Authorization": f"Bearer {BETA_KEY}"}
QUESTION = "What does stage 0 download?"


@pytest.fixture
def client(
    conn: Connection, tmp_path: Path, clean_database: Database, lexical_retriever: Retriever
) -> Iterator[TestClient]:  # type: ignore[type-arg]
    settings = ApiSettings(keys=KEYS)
    with answering_client(conn, tmp_path, clean_database, lexical_retriever, settings) as test_client:
        yield test_client


def _ask(client: TestClient, repositories: list[str] | None = None) -> dict[str, Any]:  # type: ignore[type-arg]
    body: dict[str, Any] = {"question": QUESTION}
    if repositories:
        body["filters"] = {"repositories": repositories}
    response = client.post("/v1/answers", json=body, headers=FULL)
    assert response.status_code == 200
    answer: dict[str, Any] = response.json()
    return answer


def test_feedback_is_stored_and_returned_with_what_it_accepted(
    client: TestClient,  # type: ignore[type-arg]
    conn: Connection,
) -> None:
    answer = _ask(client)
    cited = answer["clauses"][0]["sources"][0]["sentence_id"]
    response = client.post(
        f"/v1/answers/{answer['id']}/feedback",
        json={"helpful": True, "sentence_ids": [cited], "comment": "exactly this"},
        headers=FULL,
    )
    assert response.status_code == 201
    record = response.json()
    assert record["answer_id"] == answer["id"] and record["question"] == QUESTION
    assert record["helpful"] is True and record["sentence_ids"] == [cited] and record["accepted"] == [cited]
    assert record["comment"] == "exactly this" and record["repositories"] == ["alpha"]
    metrics = client.get("/metrics", headers=FULL).text
    assert 'citeline_feedback_total{kind="helpful"} 1.0' in metrics


def test_only_helpful_is_required(client: TestClient) -> None:  # type: ignore[type-arg]
    answer = _ask(client)
    response = client.post(f"/v1/answers/{answer['id']}/feedback", json={"helpful": False}, headers=FULL)
    assert response.status_code == 201
    assert response.json()["rejected"] == [answer["clauses"][0]["sources"][0]["sentence_id"]]


def test_a_scoped_key_gives_feedback_only_within_its_repositories(
    client: TestClient,  # type: ignore[type-arg]
    conn: Connection,
) -> None:
    answer = _ask(client, ["alpha"])
    url = f"/v1/answers/{answer['id']}/feedback"
    bread = sentence_id_of(conn, "Bake the bread at 220 degrees.")
    assert client.post(url, json={"helpful": True}, headers=BETA).status_code == 404
    refused = client.post(url, json={"helpful": True, "sentence_ids": [bread]}, headers=ALPHA)
    assert refused.status_code == 403 and str(bread) in refused.json()["detail"]
    assert client.post(url, json={"helpful": True}, headers=ALPHA).status_code == 201
    unscoped = _ask(client)  # asked over every repository: not a scoped key's to judge
    assert (
        client.post(
            f"/v1/answers/{unscoped['id']}/feedback", json={"helpful": True}, headers=ALPHA
        ).status_code
        == 404
    )
    assert conn.execute("SELECT count(*) FROM feedback").fetchone() == (1,)


def test_feedback_on_a_missing_answer_or_sentence_is_not_found(client: TestClient) -> None:  # type: ignore[type-arg]
    missing = client.post(f"/v1/answers/{uuid.uuid4()}/feedback", json={"helpful": True}, headers=FULL)
    assert missing.status_code == 404
    answer = _ask(client)
    no_sentence = client.post(
        f"/v1/answers/{answer['id']}/feedback", json={"helpful": True, "sentence_ids": [987654]}, headers=FULL
    )
    assert no_sentence.status_code == 404 and "987654" in no_sentence.json()["detail"]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"helpful": "yes"},
        {"helpful": 0},
        {"helpful": True, "extra": 1},
        {"helpful": True, "sentence_ids": "1"},
        {"helpful": True, "sentence_ids": ["1"]},
        {"helpful": True, "sentence_ids": [1.5]},
    ],
)
def test_a_malformed_body_is_a_clear_400(client: TestClient, body: dict[str, Any]) -> None:  # type: ignore[type-arg]
    answer = _ask(client)
    response = client.post(f"/v1/answers/{answer['id']}/feedback", json=body, headers=FULL)
    assert response.status_code == 400 and response.headers["content-type"].startswith("application/problem")


BAD_FEEDBACK = [
    ({"helpful": True, "sentence_ids": [0]}, ["--helpful", "--sentence", "0"]),
    ({"helpful": True, "comment": "x" * 2001}, ["--helpful", "--comment", "x" * 2001]),
    (
        {"helpful": True, "sentence_ids": list(range(1, 52))},
        ["--helpful", *[f"--sentence={i}" for i in range(1, 52)]],
    ),
]


@pytest.fixture
def data_dir(clean_database: Database, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    return cli_environment(clean_database, monkeypatch, tmp_path)


@pytest.mark.parametrize(("body", "flags"), BAD_FEEDBACK)
def test_the_cli_refuses_what_the_api_refuses_with_the_same_message(
    body: dict[str, Any],
    flags: list[str],
    client: TestClient,  # type: ignore[type-arg]
    data_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    answer = _ask(client)
    response = client.post(f"/v1/answers/{answer['id']}/feedback", json=body, headers=FULL)
    assert response.status_code == 400
    capsys.readouterr()
    assert main(["feedback", answer["id"], *flags]) == 2
    assert capsys.readouterr().err == f"citeline feedback: {response.json()['detail']}\n"


def test_the_cli_gives_feedback_through_a_running_server_and_on_its_own(
    data_dir: Path,
    conn: Connection,
    tmp_path: Path,
    clean_database: Database,
    lexical_retriever: Retriever,
    capsys: pytest.CaptureFixture[str],
) -> None:
    index_two_repositories(conn, tmp_path)
    app = create_app(
        clean_database, lexical_retriever, real_answering(clean_database, lexical_retriever), ApiSettings()
    )
    toolchain = sentence_id_of(conn, "Stage 0 downloads a prebuilt beta toolchain.")
    with served_for(app, data_dir, clean_database):
        assert main(["ask", QUESTION, "--json"]) == 0
        answer_id = json.loads(capsys.readouterr().out)["id"]
        assert main(["feedback", answer_id, "--helpful", "--sentence", str(toolchain), "--json"]) == 0
        remote = json.loads(capsys.readouterr().out)
        assert main(["feedback", str(uuid.uuid4()), "--helpful"]) == 2
        assert "no answer" in capsys.readouterr().err
    assert main(["feedback", answer_id, "--unhelpful", "--comment", "too terse", "--local"]) == 0
    assert capsys.readouterr().out.startswith(f"recorded feedback {remote['id'] + 1} on answer {answer_id}")
    assert remote["accepted"] == [toolchain]
    rows = conn.execute("SELECT helpful, comment FROM feedback ORDER BY id").fetchall()
    assert rows == [(True, None), (False, "too terse")]
