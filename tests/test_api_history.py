"""`GET /v1/history`: the latest stored answers, newest first, each marked fresh, changed or deleted as its
sources stand now, and scoped like a single stored answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from api.settings import ApiSettings
from engine.search import Retriever
from indexer.database import Connection, Database
from indexer.reconcile import Repository, reconcile_repository
from tests.api_support import (
    ALPHA_KEY,
    BETA_KEY,
    FULL_KEY,
    KEYS,
    client_for,
    index_two_repositories,
    real_answering,
)


def ask(client: Any, question: str, repositories: list[str], key: str = FULL_KEY) -> str:
    body = {"question": question, "filters": {"repositories": repositories}}
    response = client.post("/v1/answers", json=body, headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 200, response.text
    return str(response.json()["id"])


def history(client: Any, key: str = FULL_KEY, **params: Any) -> Any:
    response = client.get("/v1/history", params=params, headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 200, response.text
    return response.json()["answers"]


def test_history_lists_answers_newest_first_and_marks_those_whose_source_went(
    conn: Connection, tmp_path: Path, clean_database: Database, lexical_retriever: Retriever
) -> None:
    index_two_repositories(conn, tmp_path)
    answering = real_answering(clean_database, lexical_retriever)
    with client_for(clean_database, lexical_retriever, answering, ApiSettings(keys=KEYS)) as client:
        stage = ask(client, "What does stage 0 download?", ["alpha"])
        bread = ask(client, "Why does bread dough rise?", ["beta"])
        listed = history(client)
        assert [a["id"] for a in listed] == [bread, stage]
        assert [a["freshness"] for a in listed] == ["fresh", "fresh"]
        assert listed[1]["question"] == "What does stage 0 download?"
        assert listed[1]["status"] == "answer" and listed[1]["clauses"] >= 1
        assert listed[1]["sources"]["live"] >= 1 and listed[1]["filters"]["repositories"] == ["alpha"]

        (tmp_path / "alpha" / "guide/build.md").write_text("# Building\n\nStage 1 builds the compiler.\n")
        reconcile_repository(conn, Repository("alpha", tmp_path / "alpha"))
        after = {a["id"]: a for a in history(client)}
        assert after[stage]["freshness"] == "changed" and after[stage]["sources"]["changed"] >= 1
        assert after[bread]["freshness"] == "fresh"
        assert [a["id"] for a in history(client, limit=1)] == [bread]


def test_a_scoped_key_lists_only_answers_asked_within_its_repositories(
    conn: Connection, tmp_path: Path, clean_database: Database, lexical_retriever: Retriever
) -> None:
    index_two_repositories(conn, tmp_path)
    answering = real_answering(clean_database, lexical_retriever)
    with client_for(clean_database, lexical_retriever, answering, ApiSettings(keys=KEYS)) as client:
        stage = ask(client, "What does stage 0 download?", ["alpha"], ALPHA_KEY)
        bread = ask(client, "Why does bread dough rise?", ["beta"], BETA_KEY)
        ask(client, "What does stage 0 download?", [], FULL_KEY)
        assert [a["id"] for a in history(client, ALPHA_KEY)] == [stage]
        assert [a["id"] for a in history(client, BETA_KEY)] == [bread]
        assert len(history(client, FULL_KEY)) == 3
        auth = {"Authorization": f"Bearer {FULL_KEY}"}
        assert client.get("/v1/history", params={"limit": 0}, headers=auth).status_code == 400


def test_a_question_asked_again_is_one_entry_with_its_count_and_a_deleted_file_reads_deleted(
    conn: Connection, tmp_path: Path, clean_database: Database, lexical_retriever: Retriever
) -> None:
    index_two_repositories(conn, tmp_path)
    answering = real_answering(clean_database, lexical_retriever)
    with client_for(clean_database, lexical_retriever, answering, ApiSettings(keys=KEYS)) as client:
        first = ask(client, "What does stage 0 download?", ["alpha"])
        (tmp_path / "alpha" / "guide/build.md").write_text("# Building\n\nStage 1 builds the compiler.\n")
        reconcile_repository(conn, Repository("alpha", tmp_path / "alpha"))
        again = ask(client, "What does stage 0 download?", ["alpha"])  # recomputed: its source changed
        bread = ask(client, "Why does bread dough rise?", ["beta"])
        listed = history(client)
        assert [a["id"] for a in listed] == [bread, again]
        assert again != first
        assert [a["times"] for a in listed] == [1, 2]
        assert listed[1]["first_asked_at"] < listed[1]["created_at"]
        assert listed[0]["first_asked_at"] == listed[0]["created_at"]

        (tmp_path / "beta" / "recipes/bread.md").unlink()
        reconcile_repository(conn, Repository("beta", tmp_path / "beta"))
        gone = {a["id"]: a for a in history(client)}[bread]
        assert gone["freshness"] == "deleted" and gone["sources"]["deleted"] >= 1


def test_every_asking_counts_also_those_the_store_answers_again(
    conn: Connection, tmp_path: Path, clean_database: Database, lexical_retriever: Retriever
) -> None:
    index_two_repositories(conn, tmp_path)
    answering = real_answering(clean_database, lexical_retriever)
    with client_for(clean_database, lexical_retriever, answering, ApiSettings(keys=KEYS)) as client:
        first = ask(client, "What does stage 0 download?", ["alpha"])
        assert {ask(client, "What does stage 0 download?", ["alpha"]) for _ in range(3)} == {first}, (
            "served again"
        )
        ask(client, "Which port does the proxy use?", ["beta"])
        counted = {a["question"]: a["times"] for a in history(client)}
        assert counted["What does stage 0 download?"] == 4
