"""Filters that can match nothing are bad input: a repository that is not indexed is a 400 naming the indexed
ones on every route that filters, and exit status 2 with the same one-line message on every command that
filters, through a running server and in its own process; a path prefix that begins no document's path says
so. A scoped key never learns another repository's name from the refusal."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import TestClient

from api.app import create_app
from api.settings import ApiKey, ApiSettings
from daemon.cli import main
from daemon.instance import database_digest, recorded_server
from engine.filters import checked_filters
from engine.inputs import InputError
from engine.search import Filters, Retriever
from indexer.database import Connection, Database
from tests.api_support import (
    ALPHA_KEY,
    FULL_KEY,
    KEYS,
    cli_environment,
    client_for,
    index_two_repositories,
    real_answering,
    served,
)

FULL = {"Authorization": f"Bearer {FULL_KEY}"}
ALPHA = {"Authorization": f"Bearer {ALPHA_KEY}"}
GAMMA_KEY = "alpha-and-gamma-key-01234"
"""A key for `alpha` and `gamma`, which is configured but not indexed."""
GAMMA = {"Authorization": f"Bearer {GAMMA_KEY}"}
UNKNOWN = "repository nosuch is not indexed; the indexed repositories are: alpha, beta"
NO_PREFIX = "path_prefix 'nowhere/' matches no indexed document; paths begin with: guide, recipes"


@pytest.fixture
def indexed(conn: Connection, tmp_path: Path) -> Path:
    index_two_repositories(conn, tmp_path)
    return tmp_path


@pytest.fixture
def client(indexed: Path, clean_database: Database, lexical_retriever: Retriever) -> Iterator[TestClient]:  # type: ignore[type-arg]
    settings = ApiSettings(keys=(*KEYS, ApiKey(GAMMA_KEY, ("alpha", "gamma"))))
    answering = real_answering(clean_database, lexical_retriever)
    with client_for(clean_database, lexical_retriever, answering, settings) as test_client:
        yield test_client


def _filtered(
    client: TestClient,  # type: ignore[type-arg]
    route: str,
    headers: dict[str, str],
    repositories: list[str] | None = None,
    path_prefix: str | None = None,
) -> Any:
    """One request to `route` (`answers`, `search` or `gaps`) with the filters given."""
    if route == "answers":
        filters: dict[str, Any] = {"repositories": repositories, "path_prefix": path_prefix}
        body = {"question": "What does stage 0 download?", "filters": filters}
        return client.post("/v1/answers", json=body, headers=headers)
    params: dict[str, Any] = {"repo": repositories or []}
    if route == "search":
        params.update(q="stage", lane="lexical")
    if path_prefix is not None:
        params["path_prefix"] = path_prefix
    return client.get(f"/v1/{route}", params=params, headers=headers)


ROUTES = ["answers", "search", "gaps"]


@pytest.mark.parametrize("route", ROUTES)
def test_a_repository_that_is_not_indexed_is_a_400_naming_the_indexed_ones(
    client: TestClient,  # type: ignore[type-arg]
    route: str,
    conn: Connection,
) -> None:
    for names in (["nosuch"], ["alpha", "nosuch"], [" nosuch "]):
        response = _filtered(client, route, FULL, names)
        assert response.status_code == 400, names
        assert response.json()["detail"] == UNKNOWN
    two = _filtered(client, route, FULL, ["zz", "nosuch"])
    assert (
        two.json()["detail"]
        == "repositories nosuch, zz are not indexed; the indexed repositories are: alpha, beta"
    )
    assert _filtered(client, route, FULL, ["alpha"]).status_code == 200
    assert conn.execute("SELECT count(*) FROM answers").fetchone() == (1 if route == "answers" else 0,)


@pytest.mark.parametrize("route", ROUTES)
def test_a_scoped_key_asking_for_an_unknown_repository_learns_no_other_repository(
    client: TestClient,  # type: ignore[type-arg]
    route: str,
) -> None:
    unknown = _filtered(client, route, ALPHA, ["nosuch"])
    foreign = _filtered(client, route, ALPHA, ["beta"])
    assert unknown.status_code == foreign.status_code == 403
    assert unknown.json()["detail"] == "this key may not read repository nosuch; it may read: alpha"
    assert foreign.json()["detail"] == "this key may not read repository beta; it may read: alpha"
    configured = _filtered(client, route, GAMMA, ["gamma"])
    assert configured.status_code == 400
    assert (
        configured.json()["detail"] == "repository gamma is not indexed; the indexed repositories are: alpha"
    )
    assert _filtered(client, route, GAMMA, None).status_code == 200, "its scope alone is no filter"


@pytest.mark.parametrize("route", ["answers", "search"])
def test_a_path_prefix_that_begins_no_document_s_path_is_a_400_saying_so(
    client: TestClient,  # type: ignore[type-arg]
    route: str,
) -> None:
    everywhere = _filtered(client, route, FULL, None, "nowhere/")
    assert everywhere.status_code == 400 and everywhere.json()["detail"] == NO_PREFIX
    in_beta = _filtered(client, route, FULL, ["beta"], "guide/")
    assert in_beta.json()["detail"] == (
        "path_prefix 'guide/' matches no indexed document in beta; paths begin with: recipes"
    )
    scoped = _filtered(client, route, ALPHA, None, "recipes/")
    assert scoped.status_code == 400
    assert "recipes/bread" not in scoped.text and "beta" not in scoped.json()["detail"]
    assert scoped.json()["detail"].endswith("in alpha; paths begin with: guide")
    assert _filtered(client, route, FULL, ["alpha"], "guide/").status_code == 200


def test_filters_that_match_still_narrow_the_search(client: TestClient) -> None:  # type: ignore[type-arg]
    response = _filtered(client, "search", FULL, ["alpha"], "guide/b")
    hits = response.json()["hits"]
    assert hits and {(h["repository"], h["path"]) for h in hits} == {("alpha", "guide/build.md")}


def test_the_check_names_only_what_the_caller_may_read(conn: Connection, indexed: Path) -> None:
    with pytest.raises(InputError) as caught:
        checked_filters(conn, Filters(("beta",)), readable=("alpha",))
    assert str(caught.value) == "repository beta is not indexed; the indexed repositories are: alpha"
    assert checked_filters(conn, Filters(None, "guide/"), readable=("alpha",)) == Filters(
        ("alpha",), "guide/"
    )
    assert checked_filters(conn, Filters(("beta", "beta"))) == Filters(("beta",))
    conn.execute("TRUNCATE repositories CASCADE")
    with pytest.raises(InputError, match=r"^repository docs is not indexed; no repository is indexed yet$"):
        checked_filters(conn, Filters(("docs",)))


@pytest.fixture
def data_dir(clean_database: Database, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    return cli_environment(clean_database, monkeypatch, tmp_path)


COMMANDS = [
    (["search", "stage", "--lane", "lexical", "--repo", "nosuch"], UNKNOWN),
    (["ask", "What does stage 0 download?", "--repo", "nosuch"], UNKNOWN),
    (["gaps", "--repo", "nosuch"], UNKNOWN),
    (["search", "stage", "--lane", "lexical", "--path-prefix", "nowhere/"], NO_PREFIX),
    (["ask", "What does stage 0 download?", "--path-prefix", "nowhere/"], NO_PREFIX),
]


def _refused(argv: list[str], said: str, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err == f"citeline {argv[0]}: {said}\n"
    assert captured.out == ""


@pytest.mark.parametrize(("argv", "said"), COMMANDS)
def test_a_command_in_its_own_process_refuses_a_filter_that_matches_nothing(
    argv: list[str],
    said: str,
    indexed: Path,
    data_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    conn: Connection,
) -> None:
    def no_model(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("a model was loaded for input refused")

    monkeypatch.setattr("daemon.assembly.build_engine", no_model)
    _refused([*argv, "--local"], said, capsys)
    assert conn.execute("SELECT count(*) FROM answers").fetchone() == (0,)


def test_export_feedback_refuses_a_repository_that_is_not_indexed_and_writes_nothing(
    indexed: Path, data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "feedback.jsonl"
    _refused(["export-feedback", "--out", str(out), "--repo", "nosuch"], UNKNOWN, capsys)
    assert not out.exists()


@pytest.mark.parametrize(("argv", "said"), COMMANDS)
def test_a_command_through_a_running_server_refuses_a_filter_that_matches_nothing(
    argv: list[str],
    said: str,
    indexed: Path,
    data_dir: Path,
    clean_database: Database,
    lexical_retriever: Retriever,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    answering = real_answering(clean_database, lexical_retriever)
    app = create_app(clean_database, lexical_retriever, answering, ApiSettings())
    digest = database_digest(clean_database.url, data_dir)
    with served(app) as url, recorded_server(data_dir, "127.0.0.1", int(url.rsplit(":", 1)[1]), digest):

        def nothing_local(*_args: object, **_kwargs: object) -> None:
            raise AssertionError("the command opened the database itself")

        monkeypatch.setattr("daemon.assembly.open_process", nothing_local)
        _refused(argv, said, capsys)
