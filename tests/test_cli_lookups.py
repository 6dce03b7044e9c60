"""`citeline ask` and `search`: the input contract the API enforces (same message, exit status 2), the answer
printed with its warnings and closest passages, and both going through a running server when one is
recorded for the same data dir and database."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from api.app import create_app
from api.settings import ApiSettings
from daemon.answering import refusal, render_answer
from daemon.cli import main
from daemon.instance import RECORD, database_digest, find_server, recorded_server
from daemon.logs import QUIET_ENV, quiet_model_loading
from engine.answers import Answer
from engine.inputs import MAX_K
from engine.kinds import Budget, Route, Stage, Status
from engine.passages import NEAREST, NearPassage
from engine.search import Hit, Retriever
from indexer.database import Connection, Database
from tests.api_support import (
    cli_environment,
    client_for,
    counted_answering,
    index_two_repositories,
    served,
)


@pytest.fixture
def data_dir(clean_database: Database, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    return cli_environment(clean_database, monkeypatch, tmp_path)


BAD_INPUT = [
    (["ask", ""], "POST", {"question": ""}),
    (["ask", "   "], "POST", {"question": "   "}),
    (["ask", "x" * 1001], "POST", {"question": "x" * 1001}),
    (["search", ""], "GET", {"q": ""}),
    (["search", "  "], "GET", {"q": "  "}),
    (["search", "y" * 501], "GET", {"q": "y" * 501}),
    (["search", "stage", "-k", "0"], "GET", {"q": "stage", "k": "0"}),
    (["search", "stage", "-k", "1001"], "GET", {"q": "stage", "k": "1001"}),
]


@pytest.mark.parametrize(("argv", "method", "request_body"), BAD_INPUT)
def test_the_cli_refuses_what_the_api_refuses_with_the_same_message(
    argv: list[str],
    method: str,
    request_body: dict[str, str],
    data_dir: Path,
    clean_database: Database,
    lexical_retriever: Retriever,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with client_for(clean_database, lexical_retriever, None) as client:
        if method == "POST":
            response = client.post("/v1/answers", json=request_body)
        else:
            response = client.get("/v1/search", params=request_body)
    assert response.status_code == 400
    detail = response.json()["detail"]
    capsys.readouterr()
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.err == f"citeline {argv[0]}: {detail}\n"
    assert captured.out == ""
    with clean_database.connect() as conn:
        assert conn.execute("SELECT count(*) FROM answers").fetchone() == (0,), "nothing was asked"


def test_an_insufficient_answer_prints_its_warnings_and_closest_passages_apart() -> None:
    answer = Answer("How do I change the port?", Status.INSUFFICIENT, Route.FAST, Budget.MID)
    answer.reason = "no clause could be verified against the indexed sources"
    answer.notes = ["route fast: confident", "warning: 3 sentences are not yet searchable by meaning; drain"]
    hit = Hit(
        7,
        "Specify server port.",
        "vite",
        "config/server.md",
        12,
        12,
        ("Server", "server.port"),
        3,
        4,
        None,
        True,
    )
    reason = "the answer check reads its sources as a near miss (0.09)"
    answer.nearest = [NearPassage(hit, reason, Stage.RELEVANCE, "answer_check", 0.09, 0.1, 0.4)]
    lines = render_answer(answer.to_dict()).splitlines()
    assert lines[0].startswith("insufficient (fast path")
    assert lines[1] == "  warning: 3 sentences are not yet searchable by meaning; drain"
    assert "route fast: confident" not in "\n".join(lines)
    start = lines.index("closest passages (not verified, not an answer):")
    assert lines[start + 1] == "  1. [s7] vite/config/server.md:12 [Server > server.port]"
    assert lines[start + 2] == "     Specify server port."
    assert lines[start + 3] == "     not used: read as a near miss: answer check 0.09 (floor 0.10)"
    assert lines[start + 4 :] == [], "one passage, nothing folded"
    answer.nearest = answer.nearest * (NEAREST + 2)
    lines = render_answer(answer.to_dict()).splitlines()
    listed = lines[lines.index("closest passages (not verified, not an answer):") + 1 :]
    assert len(listed) == 3 * NEAREST + 1
    assert listed[-1] == "  ... and 2 more that search found (`--json` lists them)"
    answer.clauses = Answer.from_dict(_answered()).clauses
    assert "closest passages" not in render_answer(answer.to_dict()), "never beside a verified clause"


def _answered() -> dict[str, Any]:
    source = {
        "sentence_id": 1,
        "document_id": 1,
        "repository": "r",
        "path": "a.md",
        "heading": "",
        "line_start": 1,
        "line_end": 1,
        "text": "A.",
        "embedded": True,
        "git_commit": None,
    }
    clause = {"clause": "A.", "sources": [source], "confidence": 0.9, "need": "single", "verification": {}}
    return {"question": "q", "status": "answer", "route": "fast", "budget": "mid", "clauses": [clause]}


def test_ask_and_search_go_through_a_running_server(
    data_dir: Path,
    conn: Connection,
    tmp_path: Path,
    clean_database: Database,
    lexical_retriever: Retriever,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    index_two_repositories(conn, tmp_path)
    counted, asked = counted_answering(clean_database, lexical_retriever)
    digest = database_digest(clean_database.url, data_dir)
    app = create_app(clean_database, lexical_retriever, counted, ApiSettings())
    with served(app) as url:
        port = int(url.rsplit(":", 1)[1])
        with recorded_server(data_dir, "0.0.0.0", port, digest) as record:
            assert find_server(data_dir, digest) == record
            assert find_server(data_dir, database_digest("postgresql://elsewhere/db", data_dir)) is None

            def nothing_local(*_args: object, **_kwargs: object) -> None:
                raise AssertionError("the command opened the database itself")

            monkeypatch.setattr("daemon.assembly.open_process", nothing_local)
            assert main(["ask", "What does stage 0 download?", "--json"]) == 0
            body = json.loads(capsys.readouterr().out)
            assert asked == ["What does stage 0 download?"]
            assert "prebuilt beta toolchain" in body["clauses"][0]["clause"]
            assert "read_as" not in body and "nearest" not in body and "fresh" not in body
            assert main(["search", "stage download", "--lane", "lexical", "--json", "-k", "3"]) == 0
            hits = json.loads(capsys.readouterr().out)["hits"]
            assert hits and hits[0]["text"] == "Stage 0 downloads a prebuilt beta toolchain."
            monkeypatch.undo()
        assert not (data_dir / RECORD).exists()
    monkeypatch.setenv("CITELINE_DATABASE_URL", clean_database.url)
    monkeypatch.setenv("CITELINE_DATA_DIR", str(data_dir))
    with recorded_server(data_dir, "127.0.0.1", port, digest):  # recorded, but nothing answers there now
        assert main(["search", "stage download", "--lane", "lexical", "--json", "-k", "3"]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert hits[0]["text"] == "Stage 0 downloads a prebuilt beta toolchain."


def test_the_cli_and_the_api_take_the_same_largest_number_of_hits(
    data_dir: Path, clean_database: Database, lexical_retriever: Retriever
) -> None:
    with client_for(clean_database, lexical_retriever, None) as client:
        response = client.get("/v1/search", params={"q": "stage", "k": str(MAX_K), "lane": "lexical"})
    assert response.status_code == 200
    assert main(["search", "stage", "-k", str(MAX_K), "--lane", "lexical"]) == 0


THROUGH_A_SERVER = "import daemon.answering, daemon.cli, daemon.lookups, daemon.remote"
LEXICAL_HERE = "import daemon.assembly, daemon.cli, engine.search._retriever"
MODELS = ("numpy", "torch", "engine.controller", "indexer.reconcile")


@pytest.mark.parametrize(
    ("imports", "absent"),
    [(THROUGH_A_SERVER, (*MODELS, "psycopg", "structlog", "daemon.assembly")), (LEXICAL_HERE, MODELS)],
    ids=["through a server", "lexical search in its own process"],
)
def test_a_lookup_imports_no_model_numpy_or_indexer_and_through_a_server_no_database_driver(
    imports: str, absent: tuple[str, ...]
) -> None:
    script = f"import sys\n{imports}\nprint(' '.join(m for m in {absent!r} if m in sys.modules))"
    imported = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert imported.stdout.split() == []


def test_every_name_of_the_search_package_is_its_module_own_when_first_read() -> None:
    import engine.search

    for name in engine.search.__all__:
        home = importlib.import_module(f"engine.search.{engine.search._HOMES[name]}")
        assert getattr(engine.search, name) is getattr(home, name)
    assert set(engine.search._HOMES) == set(engine.search.__all__)
    with pytest.raises(AttributeError):
        _ = engine.search.NotAName  # type: ignore[attr-defined]


def test_a_record_left_by_a_process_that_is_gone_is_ignored(tmp_path: Path) -> None:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True
    )
    pid = int(gone.stdout)
    (tmp_path / RECORD).write_text(json.dumps({"pid": pid, "url": "http://127.0.0.1:9", "database": "d"}))
    assert find_server(tmp_path, "d") is None


def test_a_server_stopped_by_sigterm_removes_its_record(tmp_path: Path) -> None:
    script = (
        "import os, signal, sys, time\n"
        "from pathlib import Path\n"
        "from daemon.instance import recorded_server, sigterm_unwinds\n"
        "with recorded_server(Path(sys.argv[1]), '127.0.0.1', 9, 'd'), sigterm_unwinds():\n"
        "    assert (Path(sys.argv[1]) / 'server.json').exists()\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    time.sleep(10)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, timeout=60)
    assert done.returncode == 143, done.stderr
    assert not (tmp_path / RECORD).exists()


def test_the_models_loading_bars_are_off_unless_asked_and_a_set_variable_is_left_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in QUIET_ENV:  # set first, so that the variables are restored after the test
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    monkeypatch.setenv("TRANSFORMERS_VERBOSITY", "info")
    quiet_model_loading()
    assert os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1"
    assert os.environ["TRANSFORMERS_VERBOSITY"] == "info"


@pytest.mark.parametrize(
    ("near", "said"),
    [
        (
            {
                "stage": "composite",
                "reason": "composite 0.58 below 0.95",
                "measure": "composite",
                "score": 0.58,
                "threshold": 0.95,
            },
            "composite: composite 0.58 below 0.95",
        ),
        (
            {
                "stage": None,
                "reason": "no clause was drawn from it",
                "measure": "relevance",
                "score": 0.183,
                "threshold": 0.35,
            },
            "not proposed: relevance 0.18, threshold 0.35",
        ),
        (
            {
                "stage": "entailment",
                "reason": "no candidate source entails it",
                "measure": "entailment",
                "score": 0.12,
                "threshold": 0.5,
            },
            "entailment: no candidate source entails it (entailment 0.12, threshold 0.5)",
        ),
        (
            {
                "stage": "contradiction",
                "reason": "contradicted (0.91)",
                "measure": "contradiction",
                "score": 0.91,
                "threshold": 0.85,
            },
            "contradiction: contradicted (0.91); contradiction limit 0.85",
        ),
        (
            {
                "stage": "entailment",
                "reason": "fewer than two sources are needed for it",
                "measure": None,
                "score": None,
                "threshold": None,
            },
            "entailment: fewer than two sources are needed for it",
        ),
    ],
)
def test_why_a_near_passage_was_not_used_names_its_score_against_the_threshold_once(
    near: dict[str, Any], said: str
) -> None:
    assert refusal(near) == said
