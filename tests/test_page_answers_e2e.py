"""The page when an answer falls short, in a real headless Chromium (Debian's, driven by Playwright): an
`insufficient` answer shows its closest passages apart from citations and clears the previous source, the
un-embedded banner, one history entry for a repeated question, code that keeps its lines, the freshness
table at a desktop's and a phone's width, skipped files, the API reference at `/docs`, and no console error.

Two engines answer: the API tests' one, and a strict one (a composite no clause reaches without vectors) for
questions about the port or a proxy, so that a question ends `insufficient` with candidates refused. Skipped
without Debian's chromium or the playwright package.
"""

from __future__ import annotations

import json
import re
import shutil
import urllib.request
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from api.app import create_app
from api.settings import ApiSettings
from engine.answers import Answer
from engine.controller import AnswerEngine, EngineConfig, answer
from engine.passages import NEAREST
from engine.reasons import plain_reason
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
    "config/proxy.md": "# Proxies\n\n"
    + "".join(f"The proxy number {n} is one proxy among those listed here.\n\n" for n in range(8)),
    "guide/reload.md": "# Reload\n\nTo reload the configuration, send this request:\n\n"
    "```sh\ncurl -X POST localhost:9090/-/reload\necho reloaded\n```\n",
    "guide/local.md": "# Local sites\n\n"
    "Caddy serves every local site over HTTPS with a certificate of its own. It just works!\n",
}


@pytest.fixture
def url(conn: Connection, tmp_path: Path, clean_database: Database) -> Iterator[str]:
    root = tmp_path / "docs"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "logo.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00" * 20)  # skipped: binary
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
        engine = partial(answer, engine=strict) if "port" in question or "proxy" in question else lenient
        return engine(question, budget, filters)

    with served(create_app(clean_database, retriever, answering, ApiSettings())) as base:
        yield base
    retriever.close()


def _answer(base: str, question: str) -> dict[str, Any]:
    """The answer's JSON as the API gives it (the answer store's, for a question the page asked)."""
    request = urllib.request.Request(
        base + "/v1/answers",
        json.dumps({"question": question}).encode(),
        {"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        body: dict[str, Any] = json.loads(response.read())
    return body


@pytest.fixture
def page(url: str) -> Iterator[Any]:
    with opened_page(sync_api, url) as opened:
        yield opened


def test_an_insufficient_answer_shows_its_closest_passages_and_clears_the_old_source(
    page: Any, url: str
) -> None:
    page.fill("#question", "What does stage 0 download?")
    page.click("#ask")
    clause = page.locator("#clauses li").first
    expect(clause).to_contain_text("Stage 0 downloads a prebuilt beta toolchain.", **WAIT)
    expect(page.locator("#nearest")).to_be_hidden()
    clause.locator(".source-link").first.click()
    expect(page.locator("#source-context p.hit")).to_have_text("Stage 0 downloads a prebuilt beta toolchain.")

    page.fill("#question", "How do I change the port of the server?")
    page.click("#ask")
    expect(page.locator("#answer-meta")).to_contain_text("insufficient", **WAIT)
    expect(page.locator("#source")).to_be_hidden()  # the old citation is not this answer's
    expect(page.locator("#clauses li")).to_have_count(0)
    expect(page.locator("#nearest-title")).to_have_text("Closest passages (not verified)")
    near = page.locator("#nearest-list li")
    expect(near.first).to_be_visible()
    expect(page.locator("#nearest-list")).to_contain_text("Specify server port.")
    expect(near.first.locator(".near-why")).to_contain_text("Not used: ")
    refused = page.locator("#nearest-list .near-why").filter(has_text="failed verification: composite")
    expect(refused.first).to_be_visible()  # what happened, with its numbers; the stage and reason on hover
    expect(refused.first).to_contain_text("(needed 0.95)")
    expect(refused.first).to_have_attribute("title", re.compile(r"^composite: .*0\.95"))
    expect(page.locator("#rounds-list ul.rejected li").first).to_contain_text("composite")
    body = _answer(url, "How do I change the port of the server?")
    said = ["Not used: " + plain_reason(n) for n in body["nearest"][:NEAREST]]
    assert page.locator("#nearest-list .near-why").all_inner_texts() == said, (
        "the words `citeline ask` prints"
    )

    near.first.locator(".source-link").click()  # a near passage opens in context, as a citation does
    expect(page.locator("#source-context p.hit")).to_be_visible()


def test_a_closest_passage_that_leans_on_the_sentence_before_is_shown_after_it(page: Any) -> None:
    page.fill("#question", "Does local HTTPS just work on any port?")
    page.click("#ask")
    expect(page.locator("#answer-meta")).to_contain_text("insufficient", **WAIT)
    near = page.locator("#nearest-list li").filter(has_text="It just works!")
    expect(near).to_have_count(1)
    texts = near.locator(".near-text")
    expect(texts).to_have_count(2)
    before = "Caddy serves every local site over HTTPS with a certificate of its own."
    expect(texts.first).to_have_text(before)
    expect(texts.first).to_have_class(re.compile(r"\bnear-context\b"))
    expect(texts.last).to_have_text("It just works!")


def test_closest_passages_beyond_the_first_five_fold_under_a_summary(page: Any) -> None:
    page.fill("#question", "Which proxy should I pick?")
    page.click("#ask")
    expect(page.locator("#answer-meta")).to_contain_text("insufficient", **WAIT)
    expect(page.locator("#nearest-list li")).to_have_count(NEAREST)  # the page's SHOWN is the engine's
    expect(page.locator("#nearest-more-summary")).to_have_text(f"{8 - NEAREST} more that search found")
    folded = page.locator("#nearest-more-list li")
    expect(folded).to_have_count(8 - NEAREST)
    expect(page.locator("#nearest-more-list")).to_have_attribute("start", str(NEAREST + 1))
    expect(folded.first).to_be_hidden()
    page.click("#nearest-more-summary")
    expect(folded.first).to_be_visible()
    expect(folded.first).to_contain_text("The proxy number")

    page.fill("#question", "How do I change the port of the server?")
    page.click("#ask")
    expect(page.locator("#nearest-list")).to_contain_text("Specify server port.", **WAIT)
    expect(page.locator("#nearest-more")).to_be_hidden()


def test_the_banner_says_sentences_are_not_yet_searchable_by_meaning(page: Any) -> None:
    page.fill("#question", "What does stage 0 download?")
    page.click("#ask")
    banner = page.locator("#answer-warnings")
    expect(banner).to_be_visible(**WAIT)
    expect(banner).to_contain_text("sentences are not yet searchable by meaning")
    expect(banner).to_contain_text("citeline embed --drain")


def test_a_repeated_question_is_one_history_entry_with_its_count(page: Any) -> None:
    stored = page.locator("#history-list li.stored")
    for times in (1, 2):
        page.fill("#question", "How do I change the port of the server?")
        page.click("#ask")
        expect(stored.first).to_have_attribute("data-times", str(times), **WAIT)
    expect(stored).to_have_count(1)
    expect(stored.first.locator(".badge.status")).to_have_text("insufficient")
    expect(stored.first.locator(".badge.freshness")).to_have_count(0)  # it cites nothing to be fresh
    page.fill("#question", "What does stage 0 download?")
    page.click("#ask")
    expect(stored).to_have_count(2, **WAIT)
    expect(stored.first.locator(".badge.status")).to_have_text("answered")


def test_a_code_block_keeps_its_lines(page: Any) -> None:
    page.fill("#search", "reload request")
    code = page.locator("#search-results li.hit .sentence").filter(has_text="curl")
    expect(code.first).to_be_visible(**WAIT)
    assert "curl -X POST localhost:9090/-/reload\necho reloaded" in code.first.inner_text()


def test_a_clause_that_introduces_a_code_block_shows_the_code_in_monospace(page: Any) -> None:
    page.fill("#question", "How do I reload the configuration?")
    page.click("#ask")
    code = page.locator("#clauses .cited pre.code")
    expect(code.first).to_be_visible(**WAIT)
    expect(page.locator("#clauses li").first).to_contain_text(
        "To reload the configuration, send this request:"
    )
    assert "curl -X POST localhost:9090/-/reload\necho reloaded" in code.first.inner_text()
    assert "monospace" in code.first.evaluate("(e) => getComputedStyle(e).fontFamily")
    expect(page.locator("#clauses .cite").filter(has_text="reload.md:3").first).to_be_visible()
    page.locator("#clauses .cited").filter(has=page.locator("pre.code")).locator(".source-link").first.click()
    panel = page.locator("#source-context pre.hit.code")
    expect(panel).to_contain_text("echo reloaded", **WAIT)
    assert "monospace" in panel.evaluate("(e) => getComputedStyle(e).fontFamily")


# Whether any word of the freshness table's headers and repository names is broken across two lines.
BROKEN_WORDS = r"""(() => {
  const broken = [];
  for (const cell of document.querySelectorAll('#freshness-table th')) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const re = /\S+/g;
      let m;
      while ((m = re.exec(node.data))) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
        if (tops.size > 1) broken.push(m[0]);
      }
    }
  }
  return broken;
})()"""


@pytest.mark.parametrize("width", [1280, 800])
def test_the_freshness_table_breaks_no_header_or_name_mid_word(
    page: Any, width: int, conn: Connection, tmp_path: Path
) -> None:
    long_name = tmp_path / "caddyserver-website-docs"
    long_name.mkdir()
    (long_name / "index.md").write_text("# Caddy\n\nCaddy serves HTTPS by default.\n")
    reconcile_repository(conn, Repository("caddyserver-website-docs", long_name))
    page.set_viewport_size({"width": width, "height": 900})
    expect(page.locator('#freshness-rows tr[data-repository="caddyserver-website-docs"]')).to_be_visible(
        **WAIT
    )
    assert page.evaluate(BROKEN_WORDS) == []
    assert page.evaluate("document.documentElement.scrollWidth") <= width


@pytest.mark.parametrize("width", [1400, 375])
def test_the_freshness_table_fits_and_lists_skipped_files(page: Any, width: int) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    expect(page.locator("#freshness-rows tr").first).to_be_visible(**WAIT)
    fits = page.evaluate(
        "(() => { const box = document.querySelector('#freshness .scroll');"
        " return box.scrollWidth <= box.clientWidth + 1; })()"
    )
    assert fits, f"the freshness table overflows at {width} px"
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    expect(page.locator("#skipped")).to_be_visible()
    page.locator("#skipped-summary").click()
    expect(page.locator("#skipped-list li")).to_contain_text("docs/logo.md: binary")


def test_the_api_reference_is_served_locally_at_docs(page: Any, url: str) -> None:
    page.goto(url + "/docs")
    expect(page.locator("#operations")).to_contain_text("POST /v1/answers", **WAIT)
    expect(page.locator("#operations")).to_contain_text("GET /v1/search")
    expect(page.locator("#schemas")).to_contain_text("AnswerOut")


@pytest.mark.skipif(AXE is None, reason="no axe-core: pip install axe-playwright-python")
@pytest.mark.parametrize("width", [1280, 800])
def test_an_answer_showing_its_cited_code_has_no_serious_accessibility_violations(
    page: Any, width: int
) -> None:
    page.set_viewport_size({"width": width, "height": 900})
    page.fill("#question", "How do I reload the configuration?")
    page.click("#ask")
    expect(page.locator("#clauses .cited pre.code").first).to_be_visible(**WAIT)
    page.locator("#clauses .source-link").first.click()
    expect(page.locator("#source-context .hit")).to_be_visible(**WAIT)
    expect(page.locator("#freshness-rows tr").first).to_be_visible(**WAIT)
    assert serious_violations(page) == []


@pytest.mark.skipif(AXE is None, reason="no axe-core: pip install axe-playwright-python")
def test_an_insufficient_answer_with_its_banner_has_no_serious_accessibility_violations(page: Any) -> None:
    page.fill("#question", "Which proxy should I pick?")
    page.click("#ask")
    expect(page.locator("#nearest-list li").first).to_be_visible(**WAIT)
    page.locator("#nearest-more-summary").click()
    expect(page.locator("#nearest-more-list li").first).to_be_visible()
    expect(page.locator("#answer-warnings")).to_be_visible()
    page.locator("#rounds-summary").click()
    page.locator("#skipped-summary").click()
    assert serious_violations(page) == []
