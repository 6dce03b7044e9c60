"""A second terminal pointed at the wrong data dir: `ask`, `search` and `status` say there is no index there,
name the data dir they read, say how to point elsewhere and where a running server's index is, and create
no database."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.cli import main
from daemon.instance import other_servers, recorded_server
from indexer.database import Database


@pytest.fixture
def state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """This test's own folder of server notes."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("CITELINE_CONFIG", raising=False)
    monkeypatch.delenv("CITELINE_API_KEYS", raising=False)
    return tmp_path / "state"


@pytest.fixture
def empty_data_dir(state: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A data dir with no database, and no database URL configured: the embedded one would be used."""
    monkeypatch.delenv("CITELINE_DATABASE_URL", raising=False)
    monkeypatch.setenv("CITELINE_DATA_DIR", str(tmp_path / "second-terminal"))
    return tmp_path / "second-terminal"


@pytest.mark.parametrize(
    "argv",
    [["ask", "how do I redirect www?"], ["search", "redirect", "--lane", "lexical"], ["status"]],
    ids=["ask", "search", "status"],
)
def test_a_data_dir_with_no_database_is_named_and_none_is_created(
    argv: list[str], empty_data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"the data dir {empty_data_dir} holds no index yet" in err
    assert "CITELINE_DATA_DIR" in err and "--config" in err
    assert "server is running" not in err, "no server runs"
    assert not (empty_data_dir / "pgdata").exists()


def test_a_server_running_with_another_data_dir_is_named(
    empty_data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    served = tmp_path / "first-terminal"
    with recorded_server(served, "0.0.0.0", 8751, "digest"):
        assert [s.data_dir for s in other_servers(empty_data_dir)] == [served.resolve()]
        assert other_servers(served) == [], "not the one the command reads already"
        assert main(["ask", "how do I redirect www?"]) == 2
    err = capsys.readouterr().err
    assert f"running at http://127.0.0.1:8751 with the data dir {served.resolve()}" in err
    assert f"CITELINE_DATA_DIR={served.resolve()}" in err
    assert other_servers(empty_data_dir) == [], "the note goes with the server"


def test_an_index_with_no_documents_is_said_to_be_empty(
    state: Path,
    clean_database: Database,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("CITELINE_DATABASE_URL", clean_database.url)
    monkeypatch.setenv("CITELINE_DATA_DIR", str(tmp_path / "data"))
    assert main(["ask", "how do I redirect www?"]) == 2, "refused before any model is loaded"
    assert "holds no documents" in capsys.readouterr().err
    assert main(["search", "redirect", "--lane", "lexical"]) == 0
    out, err = capsys.readouterr()
    assert out == "no matches\n"
    assert "holds no documents" in err and "CITELINE_DATA_DIR" in err
    assert main(["status"]) == 0
    assert "holds no documents" in capsys.readouterr().out
