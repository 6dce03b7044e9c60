"""A sentence that depends on the one before it ("It just works!", "Then we need to examine it.") is cited,
judged and shown with that sentence, by the one notion of dependence the embedding queue reads; a fragment is
never a closest passage without what comes before it. On a real PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import msgspec
import pytest

from api.models import NearPassageOut
from daemon.answering import render_answer
from engine.answers import Answer, AnswerClause, Verification
from engine.contexts import cite_companions, fetch_contexts
from engine.controller import AnswerEngine, EngineConfig
from engine.evidence import EvidencePool
from engine.kinds import ReferenceNeed
from engine.nearest import with_context
from engine.passages import NearPassage
from engine.search import Hit, Retriever, load_hits
from engine.verdicts import VerifyConfig
from indexer.database import Connection, Database
from indexer.embedding_context import ContextOptions, context_signature, contextual_text, is_fragment
from indexer.reconcile import Repository, reconcile_repository
from tests.api_support import ContainmentNLI
from tests.helpers import sentence_ids

HTTPS = """# Local HTTPS

Caddy serves every site on your laptop over HTTPS with a local certificate. It just works!

Caddy keeps its certificates in the data directory of the server. Then we need to examine it.

The admin endpoint listens on port 2019 of the loopback interface.
"""
BEFORE_IT_WORKS = "Caddy serves every site on your laptop over HTTPS with a local certificate."
BEFORE_EXAMINE = "Caddy keeps its certificates in the data directory of the server."
ALONE = "The admin endpoint listens on port 2019 of the loopback interface."


@pytest.fixture
def indexed(conn: Connection, repo_dir: Path) -> Connection:
    (repo_dir / "https.md").write_text(HTTPS)
    (repo_dir / "faq.md").write_text("# FAQ\n\n**Can I delete a single row?**\n\nNo.\n")
    (repo_dir / "notes.md").write_text(
        "Yes indeed.\n\nThe notes page holds nothing about certificates. There are a few:\n\n"
        "- The first certificate store is the disk of the server.\n"
    )
    reconcile_repository(conn, Repository("docs", repo_dir))
    return conn


def _hits(conn: Connection, path: str, *texts: str) -> list[Hit]:
    ids = sentence_ids(conn, path)
    loaded = {h.sentence_id: h for h in load_hits(conn, [ids[t] for t in texts])}
    return [loaded[ids[t]] for t in texts]


def _pool(conn: Connection, hits: Sequence[Hit]) -> EvidencePool:
    pool = EvidencePool(None)
    pool.add(hits, 1, len(hits))
    pool.contexts.update(fetch_contexts(conn, [h.sentence_id for h in hits]))
    return pool


class RecordingRelevance:
    """Rates every passage 0.5 and records what it was given to read."""

    def __init__(self) -> None:
        self.read: list[str] = []

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        self.read += passages
        return [0.5] * len(passages)


@pytest.mark.parametrize(
    ("text", "before"), [("It just works!", BEFORE_IT_WORKS), ("Then we need to examine it.", BEFORE_EXAMINE)]
)
def test_a_dependent_sentence_is_cited_with_the_sentence_before_it(
    indexed: Connection, text: str, before: str
) -> None:
    (hit,) = _hits(indexed, "https.md", text)
    clause = AnswerClause(text, [hit], 0.9, ReferenceNeed.SINGLE, Verification(composite=0.9))
    cite_companions(indexed, fetch_contexts(indexed, [hit.sentence_id]), [clause])
    assert [s.text for s in clause.sources] == [text, before]


def test_a_sentence_that_stands_alone_is_cited_alone(indexed: Connection) -> None:
    (hit,) = _hits(indexed, "https.md", ALONE)
    clause = AnswerClause(ALONE, [hit], 0.9, ReferenceNeed.SINGLE, Verification(composite=0.9))
    cite_companions(indexed, fetch_contexts(indexed, [hit.sentence_id]), [clause])
    assert [s.text for s in clause.sources] == [ALONE]


def test_a_short_answer_to_a_question_line_is_cited_without_the_question_but_listed_after_it(
    indexed: Connection,
) -> None:
    (hit,) = _hits(indexed, "faq.md", "No.")
    clause = AnswerClause("No.", [hit], 0.9, ReferenceNeed.SINGLE, Verification(composite=0.9))
    cite_companions(indexed, fetch_contexts(indexed, [hit.sentence_id]), [clause])
    assert [s.text for s in clause.sources] == ["No."], "a question states nothing and is never cited"
    near = NearPassage(hit, "no clause was drawn from it")
    (listed,) = with_context(indexed, _pool(indexed, [hit]), [near])
    assert listed.context is not None and listed.context.text == "Can I delete a single row?"


def test_the_verifiers_models_judge_a_dependent_sentence_with_the_sentence_before_it(
    indexed: Connection,
) -> None:
    dependent, alone = _hits(indexed, "https.md", "It just works!", ALONE)
    pool = _pool(indexed, [dependent, alone])
    relevance = RecordingRelevance()
    pool.rate("Does HTTPS work on my laptop?", relevance, [dependent, alone])
    assert relevance.read == [
        f"Local HTTPS: {BEFORE_IT_WORKS} It just works!",
        f"Local HTTPS: {ALONE}",
    ], "the relevance model reads the dependent sentence after what it depends on, the other alone"
    assert pool.premise(dependent) == f"{BEFORE_IT_WORKS} It just works!", "and so does the entailment model"


def test_a_closest_passage_that_depends_is_listed_with_what_it_depends_on(indexed: Connection) -> None:
    dependent, alone = _hits(indexed, "https.md", "Then we need to examine it.", ALONE)
    orphan, lead_in = _hits(indexed, "notes.md", "Yes indeed.", "There are a few:")
    assert is_fragment(orphan.text) and not orphan.heading_path and is_fragment(lead_in.text)
    passages = [NearPassage(h, "no clause was drawn from it") for h in (dependent, orphan, alone, lead_in)]
    listed = with_context(indexed, _pool(indexed, [dependent, alone, orphan]), passages)
    assert [p.hit.text for p in listed] == [dependent.text, ALONE], (
        "a fragment with nothing before it, or that only introduces what follows, is dropped"
    )
    assert listed[0].context is not None and listed[0].context.text == BEFORE_EXAMINE
    assert listed[0].context.line_start == dependent.line_start, "the sentence before it, on its line"
    assert listed[1].context is None
    body = listed[0].to_dict()
    assert body["context"]["text"] == BEFORE_EXAMINE and body["text"] == dependent.text
    assert NearPassage.from_dict(body).to_dict() == body, "what the answer store reads back"
    shaped = msgspec.convert(body, NearPassageOut)
    assert shaped.context is not None and shaped.context.text == BEFORE_EXAMINE, "the API carries it"
    assert listed[1].to_dict()["context"] is None


def test_an_insufficient_answer_shows_each_fragment_after_what_it_depends_on(
    indexed: Connection, clean_database: Database, lexical_retriever: Retriever
) -> None:
    config = EngineConfig(verify=VerifyConfig(threshold=0.95), store=False)
    engine = AnswerEngine(
        clean_database,
        lexical_retriever,
        None,
        entailment=ContainmentNLI(),
        config=config,
        pool=lexical_retriever.pool,
    )
    result = engine.answer("Does HTTPS just work on my laptop?")
    assert result.status.value == "insufficient" and not result.clauses
    body = result.to_dict()
    by_text = {n["text"]: n for n in body["nearest"]}
    assert "It just works!" in by_text, "search found it"
    assert by_text["It just works!"]["context"]["text"] == BEFORE_IT_WORKS
    for near in body["nearest"]:
        assert near["context"] is not None or near["heading"] or not is_fragment(near["text"])
    assert "Yes indeed." not in by_text
    printed = render_answer(body).splitlines()
    at = printed.index("     It just works!")
    assert printed[at - 1] == f"     after line 3: {BEFORE_IT_WORKS}", "the CLI shows it after its context"
    assert [n.to_dict() for n in Answer.from_dict(body).nearest] == body["nearest"]


def test_the_embedding_queue_reads_the_same_dependence() -> None:
    options = ContextOptions(heading=False)
    assert contextual_text("Then we need to examine it.", (), None, "Look at the log.", options) == (
        "Look at the log.\nThen we need to examine it."
    )
    assert contextual_text("The log rotates daily.", (), None, "Look at the log.", options) == (
        "The log rotates daily."
    )
    assert context_signature(ContextOptions()).endswith(";rule=2"), "a changed rule re-embeds what it changes"
