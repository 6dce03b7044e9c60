"""Docs questions end to end: a small docs repository, indexed and embedded, answered through
`daemon.assembly.build_engine` (the callable `POST /v1/answers` runs) with the shipped models.

The models are the real ones (the docs embedder, citeline's relevance and entailment cross-encoders), so
these tests say what a user gets: the sentence that answers, cited with the neighbour it leans on, and no
answer where the docs hold none.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api.context import Answering
from daemon.assembly import ModelNames, build_engine
from engine.search import Filters
from indexer.database import Connection, Database
from indexer.embedder import load_embedding_model
from indexer.embedding_queue import EmbeddingWorker
from indexer.reconcile import Repository, reconcile_repository

DOCS = {
    "operating/storage.md": "# Storage\n\n"
    "Prometheus stores its samples in a local time series database on disk. "
    "By default, samples are kept for fifteen days before they are deleted. "
    "The storage.tsdb.retention.time flag changes how long samples are kept.\n\n"
    "## Compaction\n\nBlocks are compacted in the background to save space.\n",
    "operating/lifecycle.md": "# Lifecycle API\n\n"
    "The web.enable-lifecycle flag turns on HTTP endpoints that reload and shut down the server. "
    "This is disabled by default.\n\n"
    "Sending a SIGHUP signal to the process also reloads the configuration file.\n",
    "operating/reload.md": "# Reloading\n\n"
    "To reload the configuration without a restart, send this request:\n\n"
    "```\ncurl -X POST http://localhost:9090/-/reload\n```\n\n"
    "The server answers once the new configuration is loaded.\n",
    "guides/build.md": "# Building\n\nBuilds are incremental.\n\n## Build cache\n\n"
    "The build cache can grow large over time. To clean it, run this command:\n\n"
    "```\ncargo clean\n```\n\nBuilds after a clean take longer.\n",
    "reference/tables.md": "# Tables\n\nTables hold rows.\n\n## FAQ\n\n"
    "**Can I rename a column?**\n\nYes. Run ALTER TABLE with RENAME COLUMN.\n\n"
    "**Can I drop a partition?**\n\nYes, with ALTER TABLE DROP PARTITION.\n\n"
    "**Can I store two clocks in a table?**\n\nNo. Each table keeps one clock column.\n\n"
    "**Can I delete a single row?**\n\nNo. Rows are removed by dropping their partition.\n\n"
    "**What happens if I insert a row without a timestamp?**\n\n"
    "The insert fails. Every row needs a timestamp value.\n",
    "guides/cooking.md": "# Bread\n\nBread dough rises because yeast produces carbon dioxide. "
    "Bake the loaf at two hundred degrees for forty minutes.\n",
}


@pytest.fixture
def answering(conn: Connection, clean_database: Database, repo_dir: Path) -> Iterator[Answering]:
    for name, text in DOCS.items():
        (repo_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (repo_dir / name).write_text(text)
    reconcile_repository(conn, Repository("docs", repo_dir))
    EmbeddingWorker(conn, load_embedding_model()).drain()
    engine = build_engine(clean_database, ModelNames())
    yield engine.answer
    engine.close()


def _ask(answering: Answering, question: str) -> dict[str, Any]:
    return answering(question, "mid", Filters()).to_dict()


def _cited(body: dict[str, Any]) -> list[str]:
    return [source["text"] for clause in body["clauses"] for source in clause["sources"]]


def test_a_lookup_cites_the_sentence_that_states_the_fact(answering: Answering) -> None:
    body = _ask(answering, "How long are samples kept by default?")
    assert body["status"] == "answer"
    assert _cited(body)[0] == "By default, samples are kept for fifteen days before they are deleted."


def test_a_sentence_that_points_back_is_cited_with_the_sentence_it_points_to(answering: Answering) -> None:
    body = _ask(answering, "Is the lifecycle API disabled by default?")
    assert body["status"] == "answer"
    cited = _cited(body)
    assert "This is disabled by default." in cited
    at = cited.index("This is disabled by default.")
    assert cited[at + 1].startswith("The web.enable-lifecycle flag turns on HTTP endpoints")
    sources = [s for c in body["clauses"] for s in c["sources"]]
    assert sources[at]["line_start"] == sources[at + 1]["line_start"] == 3  # one paragraph, two citations


def test_a_question_the_docs_do_not_answer_gets_insufficient(answering: Answering) -> None:
    body = _ask(answering, "Which port does the Kafka bridge listen on?")
    assert body["status"] == "insufficient"
    assert body["clauses"] == []


def test_a_command_answer_cites_the_code_block_after_its_introducing_sentence(answering: Answering) -> None:
    body = _ask(answering, "How do I reload the configuration without restarting?")
    assert body["status"] == "answer"
    cited = _cited(body)
    intro = "To reload the configuration without a restart, send this request:"
    assert intro in cited
    assert cited[cited.index(intro) + 1] == "curl -X POST http://localhost:9090/-/reload"


@pytest.mark.xfail(
    strict=True,
    reason="#50: the shipped answer check rates the lead-in with its block 0.59 for this question, under "
    "its floor 0.6, so the answer is insufficient (the closest passages list the block with its lead-in); "
    "on tune 0.5 did as well for the shipped relevance model, not yet measured on held out",
)
def test_a_question_its_premise_restates_is_answered_by_what_the_premise_introduces(
    answering: Answering,
) -> None:
    body = _ask(answering, "How do I clean the build cache?")
    assert body["status"] == "answer"
    cited = _cited(body)
    assert cited[:2] == ["To clean it, run this command:", "cargo clean"]
    assert "The build cache can grow large over time." not in cited


def test_a_faq_question_line_is_answered_by_the_lines_it_introduces_not_by_itself(
    answering: Answering,
) -> None:
    body = _ask(answering, "What happens if I insert a row without a timestamp?")
    assert body["status"] == "answer"
    cited = _cited(body)
    assert cited[0] in ("The insert fails.", "Every row needs a timestamp value.")
    assert not any(text.endswith("?") for text in cited)
