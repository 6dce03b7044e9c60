"""A clause whose sentence introduces what follows carries it: the lead-in is cited with the code block or the
tight list it introduces, and `citeline ask` prints every cited source's text under its clause, a code block
line by line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from api.app import create_app
from api.settings import ApiSettings
from daemon.answering import render_answer
from daemon.cli import main
from daemon.instance import database_digest, recorded_server
from engine.answers import AnswerClause, Verification
from engine.contexts import cite_companions, fetch_contexts, introduces
from engine.kinds import ReferenceNeed
from engine.search import Retriever, load_hits
from indexer.database import Connection, Database
from indexer.reconcile import Repository, reconcile_repository
from tests.api_support import real_answering, served
from tests.helpers import sentence_ids

OPTIONS = """# Options

The server takes these options:
- The port option sets the port.
- The host option sets the address.
- The tls option turns on HTTPS.

The rest of the page is about logging.

## Reloading

Reload the configuration as follows.

```sh
curl -X POST localhost:2019/load
echo reloaded
```

Then check the log like this:

## Logging

Logs go to stderr.
"""


def _cited_with(conn: Connection, lead_in: str) -> list[str]:
    """The texts a clause citing `lead_in` alone cites once its companions are added."""
    ids = sentence_ids(conn, "options.md")
    (hit,) = load_hits(conn, [ids[lead_in]])
    clause = AnswerClause(lead_in, [hit], 0.9, ReferenceNeed.SINGLE, Verification(composite=0.9))
    cite_companions(conn, fetch_contexts(conn, [hit.sentence_id]), [clause])
    return [source.text for source in clause.sources]


@pytest.fixture
def indexed(conn: Connection, repo_dir: Path) -> Connection:
    (repo_dir / "options.md").write_text(OPTIONS)
    reconcile_repository(conn, Repository("docs", repo_dir))
    return conn


@pytest.mark.parametrize(
    ("text", "leads_in"),
    [
        ("Run this:", True),
        ("Configure the proxy as follows.", True),
        ("Write the block like this:", True),
        ("Add the following.", True),
        ("It works like this in practice.", False),
        ("The following section is optional.", False),
    ],
)
def test_a_sentence_introduces_what_follows_by_a_colon_or_its_last_words(text: str, leads_in: bool) -> None:
    assert introduces(text) is leads_in


def test_a_lead_in_is_cited_with_every_item_of_the_list_it_introduces(indexed: Connection) -> None:
    assert _cited_with(indexed, "The server takes these options:") == [
        "The server takes these options:",
        "The port option sets the port.",
        "The host option sets the address.",
        "The tls option turns on HTTPS.",
    ]


def test_a_lead_in_without_a_colon_is_cited_with_its_code_block(indexed: Connection) -> None:
    assert _cited_with(indexed, "Reload the configuration as follows.") == [
        "Reload the configuration as follows.",
        "curl -X POST localhost:2019/load\necho reloaded",
    ]


def test_a_lead_in_before_a_heading_takes_nothing_from_the_next_section(indexed: Connection) -> None:
    assert _cited_with(indexed, "Then check the log like this:") == ["Then check the log like this:"]


def test_ask_prints_each_cited_source_under_its_clause_and_a_code_block_line_by_line(
    clean_database: Database,
    conn: Connection,
    repo_dir: Path,
    tmp_path: Path,
    lexical_retriever: Retriever,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (repo_dir / "reload.md").write_text(
        "# Reload\n\nTo reload the configuration, send this request:\n\n"
        "```sh\ncurl -X POST localhost:9090/-/reload\n  echo reloaded\n```\n"
    )
    reconcile_repository(conn, Repository("docs", repo_dir))
    monkeypatch.setenv("CITELINE_DATABASE_URL", clean_database.url)
    monkeypatch.setenv("CITELINE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CITELINE_CONFIG", raising=False)
    monkeypatch.delenv("CITELINE_API_KEYS", raising=False)
    digest = database_digest(clean_database.url, tmp_path / "data")
    app = create_app(
        clean_database, lexical_retriever, real_answering(clean_database, lexical_retriever), ApiSettings()
    )
    with (
        served(app) as url,
        recorded_server(tmp_path / "data", "127.0.0.1", int(url.rsplit(":", 1)[1]), digest),
    ):
        assert main(["ask", "How do I reload the configuration?", "--json"]) == 0
        body = json.loads(capsys.readouterr().out)
        assert main(["ask", "How do I reload the configuration?"]) == 0
        printed = capsys.readouterr().out.splitlines()
    (clause,) = [c for c in body["clauses"] if c["clause"].startswith("To reload the configuration")]
    assert [s["kind"] for s in clause["sources"]] == ["sentence", "code"]
    lead, code = (s["sentence_id"] for s in clause["sources"])
    assert f"     [s{lead}] docs/reload.md:3 [Reload]" in printed
    assert "       To reload the configuration, send this request:" in printed
    at = printed.index(f"     [s{code}] docs/reload.md:5-8 [Reload]")
    assert printed[at + 1 : at + 3] == [
        "         curl -X POST localhost:9090/-/reload",
        "           echo reloaded",
    ], "the code's lines and indentation kept"
    assert render_answer(body).splitlines() == printed
