"""The page's links, in a real headless Chromium (Debian's, driven by Playwright): `/?q=QUESTION` asks on
load, each stored answer links to itself as `/?answer=ID`, which shows it from the answer store without asking
again, and each citation names its repository and heading as a closest passage does.

Skipped without Debian's chromium or the playwright package.
"""

from __future__ import annotations

import re
import shutil
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api.app import create_app
from api.settings import ApiSettings
from engine.search import Retriever
from indexer.database import Connection, Database
from tests.api_support import ALPHA_KEY, KEYS, index_two_repositories, real_answering, served
from tests.page_support import CHROMIUM, FLAGS, opened_page

WAIT = {"timeout": 15_000}
QUESTION = "What does stage 0 download?"
CITED = "Stage 0 downloads a prebuilt beta toolchain."

pytestmark = pytest.mark.skipif(shutil.which(CHROMIUM) is None, reason=f"no chromium at {CHROMIUM}")
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
expect = sync_api.expect


def _served(conn: Connection, tmp_path: Path, database: Database, settings: ApiSettings) -> Iterator[str]:
    index_two_repositories(conn, tmp_path)
    retriever = Retriever(database, None, max_connections=4)
    app = create_app(database, retriever, real_answering(database, retriever), settings)
    with served(app) as base:
        yield base
    retriever.close()


@pytest.fixture
def url(conn: Connection, tmp_path: Path, clean_database: Database) -> Iterator[str]:
    yield from _served(conn, tmp_path, clean_database, ApiSettings())


@pytest.fixture
def keyed_url(conn: Connection, tmp_path: Path, clean_database: Database) -> Iterator[str]:
    yield from _served(conn, tmp_path, clean_database, ApiSettings(keys=KEYS))


def _asked(page: Any) -> list[str]:
    """The URLs of the questions the page posts from now on, this document and the next ones."""
    posted: list[str] = []
    page.on(
        "request",
        lambda r: posted.append(r.url) if r.method == "POST" and r.url.endswith("/v1/answers") else None,
    )
    return posted


def test_a_question_in_the_address_is_asked_on_load_and_its_answer_links_to_itself(
    url: str, clean_database: Database
) -> None:
    with opened_page(sync_api, url, "/?" + urllib.parse.urlencode({"q": QUESTION})) as page:
        clause = page.locator("#clauses li").first
        expect(clause).to_contain_text(CITED, **WAIT)
        expect(page.locator("#question")).to_have_value(QUESTION)
        cite = clause.locator(".cite").first
        expect(cite.locator(".source-link")).to_have_text("alpha/guide/build.md:3")
        expect(cite.locator(".heading")).to_have_text("Building")

        link = page.locator("#answer-link")
        expect(link).to_be_visible()
        href = link.get_attribute("href")
        assert href is not None and re.fullmatch(r"/\?answer=[0-9a-f-]{36}", href), href
        answer_id = href.removeprefix("/?answer=")
        with clean_database.connect() as conn:
            stored = conn.execute("SELECT question FROM answers WHERE id = %s", (answer_id,)).fetchone()
        assert stored == (QUESTION,), "the link names the stored answer"

        posted = _asked(page)
        link.click()
        expect(page).to_have_url(url + href)
        expect(page.locator("#clauses li").first).to_contain_text(CITED, **WAIT)
        expect(page.locator("#answer-meta")).to_contain_text(f"id {answer_id}")
        expect(page.locator("#question")).to_have_value(QUESTION)
        expect(page.locator("#answer-link")).to_have_attribute("href", href)
        expect(page.locator("#clauses .cite .heading").first).to_have_text("Building")
        expect(page.locator("#feedback")).to_be_visible()
        assert posted == [], "the shared link shows the stored answer; it does not ask again"


def test_an_address_that_names_no_answer_id_says_so_and_asks_nothing(url: str) -> None:
    with opened_page(sync_api, url, "/?answer=not-an-id") as page:
        posted = _asked(page)
        expect(page.locator("#error")).to_have_text("not an answer id: not-an-id", **WAIT)
        expect(page.locator("#answer")).to_be_hidden()
        assert posted == []


def test_a_linked_question_refused_for_want_of_a_key_is_asked_once_the_key_is_given(keyed_url: str) -> None:
    """The first asking is refused (401) before a key is typed: the page says why, then asks with the key."""
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            page = browser.new_page()
            page.goto(keyed_url + "/?" + urllib.parse.urlencode({"q": QUESTION}))
            expect(page.locator("#error")).to_contain_text("a bearer API key is required", **WAIT)
            expect(page.locator("#question")).to_have_value(QUESTION)
            page.fill("#api-key", ALPHA_KEY)
            page.locator("#api-key").dispatch_event("change")
            expect(page.locator("#clauses li").first).to_contain_text(CITED, **WAIT)
            expect(page.locator("#error")).to_be_hidden()
        finally:
            browser.close()
