"""The command line's rough edges a newcomer meets: a reader that closes the pipe early (`| head -1`), line
ranges, and files read with replacement characters counted and named by `status`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from api.app import create_app
from api.settings import ApiSettings
from daemon.cli import EXIT_CLOSED_PIPE, main
from daemon.instance import database_digest, recorded_server
from engine.search import Retriever
from indexer.database import Connection, Database
from tests.api_support import cli_environment, index_two_repositories, real_answering, served

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def data_dir(clean_database: Database, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    return cli_environment(clean_database, monkeypatch, tmp_path)


def _into_a_closed_pipe(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """Run `citeline argv` with stdout a pipe whose reader is already gone, as after `| head -1`."""
    reader, writer = os.pipe()
    os.close(reader)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        return subprocess.run(
            [sys.executable, "-m", "daemon.cli", *argv],
            stdout=writer,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )
    finally:
        os.close(writer)


@pytest.fixture
def indexed(data_dir: Path, conn: Connection, tmp_path: Path) -> None:
    index_two_repositories(conn, tmp_path)


@pytest.mark.usefixtures("indexed")
def test_search_into_a_closed_pipe_ends_quietly() -> None:
    done = _into_a_closed_pipe(["search", "stage", "--lane", "lexical", "--local"])
    assert done.returncode == EXIT_CLOSED_PIPE
    assert done.stderr == ""


@pytest.mark.usefixtures("indexed")
def test_ask_into_a_closed_pipe_ends_quietly(
    data_dir: Path, clean_database: Database, lexical_retriever: Retriever
) -> None:
    app = create_app(
        clean_database, lexical_retriever, real_answering(clean_database, lexical_retriever), ApiSettings()
    )
    with served(app) as url:
        digest = database_digest(clean_database.url, data_dir)
        with recorded_server(data_dir, "127.0.0.1", int(url.rsplit(":", 1)[1]), digest):
            done = _into_a_closed_pipe(["ask", "What does stage 0 download?"])
    assert done.returncode == EXIT_CLOSED_PIPE
    assert done.stderr == ""


def test_a_hit_on_one_line_is_printed_as_that_line_and_one_on_several_as_a_range(
    data_dir: Path, capsys: pytest.CaptureFixture[str], repo_dir: Path
) -> None:
    (repo_dir / "long.md").write_text("A run-on sentence about\nthe frobnicator spans\nthree lines.\n")
    (repo_dir / "one.md").write_text("Bootstrapping builds the compiler with itself.\n")
    assert main(["index", str(repo_dir)]) == 0
    capsys.readouterr()
    assert main(["search", "frobnicator", "--lane", "lexical", "--local", "-k", "1"]) == 0
    assert "docs/long.md:1-3" in capsys.readouterr().out
    assert main(["search", "bootstrapping", "--lane", "lexical", "--local", "-k", "1"]) == 0
    assert capsys.readouterr().out.splitlines()[0].split()[1] == "docs/one.md:1"


def test_a_file_read_with_replacement_characters_is_counted_and_named_until_fixed(
    data_dir: Path, repo_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo_dir / "cafe.md").write_bytes("The café server listens on port 80.\n".encode("latin-1"))
    (repo_dir / "fine.md").write_text("The proxy listens on port 443.\n")
    assert main(["index", str(repo_dir)]) == 0
    capsys.readouterr()
    assert main(["status", "--json"]) == 0
    (repo,) = json.loads(capsys.readouterr().out)["repositories"]
    assert repo["replaced_files"] == 1
    assert repo["replaced_file_paths"] == ["cafe.md"]
    assert repo["skipped_files"] == 0, "read, not skipped: it is searchable"
    assert main(["status"]) == 0
    assert "1 read with replacement characters (fix their encoding: cafe.md)" in capsys.readouterr().out

    (repo_dir / "cafe.md").write_text("The café server listens on port 80.\n")
    assert main(["index", str(repo_dir)]) == 0
    capsys.readouterr()
    assert main(["status", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["repositories"][0]["replaced_files"] == 0
    assert body["repositories"][0]["replaced_file_paths"] == []
    assert body["total"]["replaced_files"] == 0
