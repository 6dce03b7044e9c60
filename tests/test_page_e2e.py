"""The page at `/` in a real headless Chromium (Debian's, driven by Playwright): ask, read the clauses with
their confidence, open a source among its neighbours, and see the status strip.

Skipped when Debian's chromium or the playwright package is not installed (`apt-get install chromium`,
`pip install playwright`); Playwright never downloads a browser here, it drives /usr/bin/chromium.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from api.app import create_app
from api.settings import ApiSettings
from engine.search import Retriever
from indexer.database import Connection, Database
from tests.api_support import ALPHA_KEY, KEYS, index_two_repositories, real_answering, served
from tests.page_support import CHROMIUM

FLAGS = [  # page_support's, with QUIC and component updates off too
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = pytest.mark.skipif(
    shutil.which(CHROMIUM) is None,
    reason=f"Debian's chromium is not installed at {CHROMIUM} (apt-get install chromium)",
)
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")


@pytest.fixture
def base_url(conn: Connection, tmp_path: Path, clean_database: Database) -> Iterator[str]:
    index_two_repositories(conn, tmp_path)
    retriever = Retriever(clean_database, None, max_connections=4)
    settings = ApiSettings(keys=KEYS)
    with served(
        create_app(clean_database, retriever, real_answering(clean_database, retriever), settings)
    ) as url:
        yield url
    retriever.close()


def test_ask_read_clauses_and_open_a_source(base_url: str, tmp_path: Path) -> None:
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            page = browser.new_page()
            page.goto(base_url + "/")
            strip = page.locator("#status-strip")
            sync_api.expect(strip).to_contain_text("a bearer API key is required")

            page.fill("#api-key", ALPHA_KEY)
            page.locator("#api-key").dispatch_event("change")
            sync_api.expect(strip).to_contain_text("backlog 8")
            sync_api.expect(strip).to_contain_text("0% embedded")

            page.fill("#question", "What does stage 0 download?")
            page.click("#ask")
            clause = page.locator("#clauses li").first
            sync_api.expect(clause).to_contain_text("Stage 0 downloads a prebuilt beta toolchain.")
            sync_api.expect(clause.locator(".confidence")).to_have_text(re.compile(r"^\d+%$"))
            sync_api.expect(page.locator("#answer-meta")).to_contain_text("answer · route")
            sync_api.expect(page.locator("#rounds-summary")).to_contain_text("Rounds (")
            sync_api.expect(page.locator("#answer-read-as")).to_be_hidden()

            clause.locator(".sources a").first.click()
            sync_api.expect(page.locator("#source-context p.hit")).to_have_text(
                "Stage 0 downloads a prebuilt beta toolchain."
            )
            sync_api.expect(page.locator("#source-where")).to_contain_text("alpha/guide/build.md · line 3")
            sync_api.expect(page.locator("#source-context p").first).to_have_text("Building")
            page.screenshot(path=str(tmp_path / "page.png"), full_page=True)

            page.fill("#question", "What does stage 0 downlod?")
            page.click("#ask")
            read_as = page.locator("#answer-read-as")
            sync_api.expect(read_as).to_have_text("Read as: What does stage 0 download?")
            sync_api.expect(page.locator("#clauses li").first).to_contain_text("prebuilt beta toolchain")

            page.fill("#question", "x" * 2000)
            page.evaluate("document.getElementById('question').removeAttribute('maxlength')")
            page.fill("#question", "x" * 2000)
            page.click("#ask")
            sync_api.expect(page.locator("#error")).to_contain_text("the limit is 1000")
        finally:
            browser.close()
