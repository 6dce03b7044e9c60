"""The page's feedback buttons and Gaps panel, in a real headless Chromium (Debian's, driven by Playwright): a
helpful / not helpful pair on each answer, "this answers it" on cited sources and closest passages, a short
confirmation of what was recorded, the Gaps panel listing a refused question, and no serious accessibility
violation. Skipped without Debian's chromium or the playwright package."""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from api.app import create_app
from api.settings import ApiSettings
from engine.answers import Answer
from engine.controller import AnswerEngine, EngineConfig, answer
from engine.search import Filters, Retriever
from engine.verdicts import VerifyConfig
from indexer.database import Connection, Database
from indexer.reconcile import Repository, reconcile_repository
from tests.api_support import ContainmentNLI, real_answering, served
from tests.page_support import AXE, CHROMIUM, opened_page, serious_violations

WAIT = {"timeout": 15_000}

pytestmark = pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason=f"no chromium at {CHROMIUM}")
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
expect = sync_api.expect

FILES = {
    "config/server.md": "# Server options\n\n## server.port\n\n"
    "Specify server port. Note if the port is already being used, Vite will try the next port.\n",
    "guide/build.md": "# Building\n\nStage 0 downloads a prebuilt beta toolchain.\n",
}


@pytest.fixture
def url(conn: Connection, tmp_path: Path, clean_database: Database) -> Iterator[str]:
    root = tmp_path / "docs"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    reconcile_repository(conn, Repository("docs", root))
    retriever = Retriever(clean_database, None, max_connections=4)
    lenient = real_answering(clean_database, retriever)
    strict = AnswerEngine(
        clean_database,
        retriever,
        None,
        entailment=ContainmentNLI(),
        config=EngineConfig(verify=VerifyConfig(threshold=0.95)),
        pool=retriever.pool,
    )

    def answering(question: str, budget: str, filters: Filters) -> Answer:
        engine = partial(answer, engine=strict) if "port" in question else lenient
        return engine(question, budget, filters)

    with served(create_app(clean_database, retriever, answering, ApiSettings())) as base:
        yield base
    retriever.close()


@pytest.fixture
def page(url: str) -> Iterator[Any]:
    with opened_page(sync_api, url) as opened:
        yield opened


def test_an_answer_takes_feedback_and_says_what_was_recorded(page: Any, conn: Connection) -> None:
    page.fill("#question", "What does stage 0 download?")
    page.click("#ask")
    expect(page.locator("#clauses li").first).to_contain_text("Stage 0 downloads", **WAIT)
    expect(page.locator("#feedback")).to_be_visible()
    page.click("#feedback-helpful")  # Helpful alone accepts what the answer cites, as the CLI's --helpful
    said = re.compile(r"^Recorded: helpful; accepted sentence \d+ for this question\.$")
    expect(page.locator("#feedback-status")).to_have_text(said, **WAIT)
    assert conn.execute("SELECT count(*) FROM accepted_answers WHERE helpful").fetchone() == (1,)
    page.locator("#clauses .answers-it").first.click()
    expect(page.locator("#feedback-status")).to_contain_text("accepted sentence", **WAIT)
    deadline = time.monotonic() + 15
    while conn.execute("SELECT count(*) FROM feedback").fetchone() != (2,) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert conn.execute("SELECT count(*) FROM accepted_answers WHERE helpful").fetchone() == (2,)


def test_a_refused_question_is_a_gap_until_a_closest_passage_is_marked_as_the_answer(
    page: Any, conn: Connection
) -> None:
    page.fill("#question", "How do I change the port of the server?")
    page.click("#ask")
    expect(page.locator("#answer-meta")).to_contain_text("insufficient", **WAIT)
    page.click("#feedback-unhelpful")
    expect(page.locator("#feedback-status")).to_contain_text("Recorded: not helpful", **WAIT)
    gap = page.locator("#gaps-list li").first
    expect(gap).to_contain_text("How do I change the port of the server?", **WAIT)
    expect(gap).to_contain_text("closest: docs/config/server.md")
    expect(gap.locator(".gap-kind")).not_to_be_empty()
    page.locator("#nearest-list .answers-it").first.click()
    expect(page.locator("#feedback-status")).to_contain_text("accepted sentence", **WAIT)
    expect(page.locator("#gaps-list li")).to_have_count(0, **WAIT)  # the team's acceptance closes it


@pytest.mark.skipif(AXE is None, reason="no axe-core: pip install axe-playwright-python")
def test_the_feedback_buttons_and_gaps_have_no_serious_accessibility_violations(page: Any) -> None:
    page.fill("#question", "How do I change the port of the server?")
    page.click("#ask")
    expect(page.locator("#nearest-list .answers-it").first).to_be_visible(**WAIT)
    page.click("#feedback-unhelpful")
    expect(page.locator("#feedback-status")).to_contain_text("Recorded: not helpful", **WAIT)
    expect(page.locator("#gaps-list li").first).to_be_visible(**WAIT)
    assert serious_violations(page) == []
