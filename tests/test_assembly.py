"""The daemon's assembly: `citeline ask` answers without the API, the answer engine queries the database
through the retriever's pool, a malformed API key or a named model that cannot load stops the command with
one line, and no package imports one above it."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from daemon.assembly import ModelNames, build_engine
from daemon.cli import main
from engine.search import Filters
from indexer.database import Connection, Database
from indexer.reconcile import Repository, reconcile_repository

GUIDE = "# Building\n\nThe compiler is built with x.py in stages. Stage 0 downloads a beta toolchain.\n"

_ASK = """
import json, sys
from daemon.cli import main
status = main(["ask", "What does stage 0 download?", "--json", "--budget", "low"])
api = sorted(name for name in sys.modules if name == "api" or name.startswith("api."))
print(json.dumps({"status": status, "api_modules": api}), file=sys.stderr)
"""


class CountingDatabase(Database):
    """The test database, counting the connections opened on it directly (not through a pool)."""

    __slots__ = ("opened",)

    def __init__(self, database: Database) -> None:
        super().__init__(database.url, database.embedded_dir)
        self.opened = 0

    def connect(self, *, autocommit: bool = True) -> Connection:
        self.opened += 1
        return super().connect(autocommit=autocommit)


def test_citeline_ask_answers_without_importing_the_api(
    clean_database: Database, conn: Connection, repo_dir: Path, tmp_path: Path
) -> None:
    (repo_dir / "build.md").write_text(GUIDE)
    reconcile_repository(conn, Repository("docs", repo_dir))
    env = dict(os.environ)
    env.pop("CITELINE_CONFIG", None)
    env.update(CITELINE_DATABASE_URL=clean_database.url, CITELINE_DATA_DIR=str(tmp_path / "data"))
    done = subprocess.run(
        [sys.executable, "-c", _ASK], env=env, capture_output=True, text=True, timeout=300, check=True
    )
    answer = json.loads(done.stdout)
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert answer["question"] == "What does stage 0 download?"
    assert report["status"] == (0 if answer["status"] == "answer" else 1)
    assert report["api_modules"] == [], "citeline ask imports no module of the api package"


def test_the_answer_engine_queries_through_the_retrievers_pool(
    clean_database: Database, conn: Connection, repo_dir: Path
) -> None:
    (repo_dir / "build.md").write_text(GUIDE)
    reconcile_repository(conn, Repository("docs", repo_dir))
    database = CountingDatabase(clean_database)
    engine = build_engine(database, ModelNames())
    try:
        body = engine.answer("What does stage 0 download?", "low", Filters()).to_dict()
    finally:
        engine.close()
    assert body["status"] != "fail", body.get("reason")
    assert body["id"] is not None, "the answer was stored"
    assert database.opened == 0, "the store lookup, every round and the stored answer went through the pool"


@pytest.mark.parametrize("setting", ["", "none"])
def test_the_answer_check_is_the_shipped_one_unless_the_configuration_says_none(
    setting: str, clean_database: Database
) -> None:
    engine = build_engine(clean_database, ModelNames(answer_check=setting))
    try:
        check = engine.engine.answer_check
    finally:
        engine.close()
    assert (check is None) == (setting == "none")


@pytest.mark.parametrize("command", ["serve", "api"])
def test_a_malformed_api_key_stops_the_api_commands_with_one_line(
    command: str,
    clean_database: Database,
    repo_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("CITELINE_DATABASE_URL", clean_database.url)
    monkeypatch.setenv("CITELINE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CITELINE_CONFIG", raising=False)
    monkeypatch.setenv("CITELINE_API_KEYS", "too-short")
    monkeypatch.setenv("CITELINE_MODELS__TORCH_THREADS", "0")  # keep pytest's torch on every core
    arguments = [command, str(repo_dir)] if command == "serve" else [command]
    assert main(arguments) == 2
    err = capsys.readouterr().err  # the last line: a warning may come before it
    assert err.splitlines()[-1] == "citeline: API key #1: a token needs at least 16 characters"


@pytest.mark.parametrize(
    ("setting", "arguments"),
    [
        ("MODELS__RERANKER", ["ask", "Where is the build cache?"]),
        ("MODELS__ENTAILMENT", ["ask", "Where is the build cache?"]),
        ("MODELS__ANSWER_CHECK", ["ask", "Where is the build cache?"]),
        ("MODELS__EMBEDDER", ["ask", "Where is the build cache?"]),
        ("MODELS__EMBEDDER", ["search", "build cache"]),
        ("MODELS__RERANKER", ["search", "build cache"]),
    ],
)
def test_a_model_the_configuration_names_that_cannot_load_stops_the_command_with_one_line(
    setting: str,
    arguments: list[str],
    clean_database: Database,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    missing = tmp_path / "no-such-model"
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "cache.md").write_text("# Cache\n\nThe build cache is kept in the target folder.\n")
    with clean_database.connect() as conn:  # an empty index is refused before any model loads
        reconcile_repository(conn, Repository("docs", docs))
    monkeypatch.setenv("CITELINE_DATABASE_URL", clean_database.url)
    monkeypatch.setenv("CITELINE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CITELINE_CONFIG", raising=False)
    monkeypatch.setenv("CITELINE_RETRIEVAL__RERANK_CANDIDATES", "8")  # search loads the reranker
    monkeypatch.setenv(f"CITELINE_{setting}", str(missing))
    assert main(arguments) == 2
    last = capsys.readouterr().err.splitlines()[-1]  # after any progress bar of a model that did load
    key = setting.lower().replace("__", ".")
    assert last.startswith(f"citeline: {key}: cannot load '{missing}': ")


def test_imports_point_one_way_from_daemon_to_api_to_engine_to_indexer() -> None:
    layers = ["daemon", "api", "engine", "indexer"]
    root = Path(__file__).resolve().parent.parent
    upward = []
    for depth, package in enumerate(layers):
        above = set(layers[:depth])
        for module in sorted((root / package).rglob("*.py")):
            for node in ast.walk(ast.parse(module.read_text(), str(module))):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                upward += [f"{module.relative_to(root)}: {n}" for n in names if n.split(".")[0] in above]
    assert upward == []
