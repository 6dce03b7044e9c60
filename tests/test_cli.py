"""The `citeline` command line as scripts drive it: real processes' entry point, real database, `--json`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from daemon.answering import render_answer
from daemon.cli import main
from engine.answers import Answer
from engine.kinds import Budget, Route, Status
from indexer.database import Database


@pytest.fixture
def env(clean_database: Database, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CITELINE_DATABASE_URL", clean_database.url)
    monkeypatch.setenv("CITELINE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CITELINE_CONFIG", raising=False)


@pytest.mark.usefixtures("env")
def test_index_search_status_json(repo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo_dir / "guide").mkdir()
    (repo_dir / "guide" / "tests.md").write_text(
        "# Testing\n\n## UI tests\n\n"
        "UI tests compare the compiler output with a snapshot. They live in tests/ui.\n"
    )
    assert main(["index", str(repo_dir), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["repositories"]["docs"]
    assert report["files_written"] == 1
    assert report["sentences_inserted"] >= 3

    assert main(["search", "snapshot compiler output", "--json", "-k", "2"]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert 1 <= len(hits) <= 2
    top = hits[0]
    assert set(top) >= {"sentence_id", "text", "path", "line_start", "line_end", "heading", "scores"}
    assert top["text"] == "UI tests compare the compiler output with a snapshot."
    assert (top["path"], top["line_start"], top["line_end"]) == ("guide/tests.md", 5, 5)
    assert top["heading"] == "Testing > UI tests"
    assert top["scores"]["bm25"] > 0

    assert main(["status", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    (repo,) = status["repositories"]
    assert repo["repository"] == "docs"
    assert repo["documents"] == 1
    assert repo["backlog_size"] == repo["sentences"] == status["total"]["sentences"]
    assert repo["backlog_oldest_age_seconds"] >= 0


@pytest.mark.usefixtures("env")
def test_human_output_and_errors(repo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo_dir / "a.md").write_text("Bootstrapping builds the compiler with itself.\n")
    assert main(["index", str(repo_dir)]) == 0
    assert "1 written" in capsys.readouterr().out
    assert main(["search", "bootstrapping"]) == 0
    assert "docs/a.md:1" in capsys.readouterr().out
    assert main(["search", "x", "-k", "0"]) == 2
    assert capsys.readouterr().err == "citeline search: k must be between 1 and 1000, got 0\n"
    assert main(["index", str(repo_dir / "missing")]) == 2
    assert "not a folder" in capsys.readouterr().err


def test_bad_config_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "c.toml"
    bad.write_text("[api]\nport = 'x'\n")
    assert main(["--config", str(bad), "status"]) == 2
    assert "api.port: expected an integer" in capsys.readouterr().err


def test_unreachable_database_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CITELINE_DATABASE_URL", "postgresql://nobody@127.0.0.1:1/none?connect_timeout=1")
    assert main(["status"]) == 2
    assert "does not answer" in capsys.readouterr().err


@pytest.mark.usefixtures("env")
def test_two_live_folders_cannot_share_a_repository_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = tmp_path / "a" / "docs", tmp_path / "b" / "docs"
    for folder in (first, second):
        folder.mkdir(parents=True)
        (folder / "x.md").write_text(f"Unique sentence of {folder.parent.name}.\n")
    assert main(["index", str(first)]) == 0
    capsys.readouterr()
    assert main(["index", str(second)]) == 2
    assert "already names" in capsys.readouterr().err
    assert main(["search", "unique sentence", "--lane", "lexical", "--json"]) == 0
    assert [h["text"] for h in json.loads(capsys.readouterr().out)["hits"]] == ["Unique sentence of a."]
    assert main(["watch", str(second)]) == 2, "refused before any service starts"
    assert "already names" in capsys.readouterr().err
    first.rename(tmp_path / "a" / "old")
    assert main(["index", str(second)]) == 0, "the old folder is gone: the name moves to the new one"
    capsys.readouterr()
    assert main(["search", "unique sentence", "--lane", "lexical", "--json"]) == 0
    assert [h["text"] for h in json.loads(capsys.readouterr().out)["hits"]] == ["Unique sentence of b."]


def test_a_respelt_question_is_printed_as_it_was_read() -> None:
    answer = Answer("What does stage 0 downlod?", Status.INSUFFICIENT, Route.FAST, Budget.LOW)
    assert "read as" not in render_answer(answer.to_dict())
    answer.read_as = "What does stage 0 download?"
    assert render_answer(answer.to_dict()).splitlines()[1] == "  read as: What does stage 0 download?"
