"""The page's tools in a real headless Chromium (Debian's, driven by Playwright): search while a file is
edited, a citation's link to GitHub at the cited commit, the freshness panel turning amber and red as the
backlog ages, a stored answer flagged once its source is gone, and an axe-core accessibility check.

Skipped when Debian's chromium or the playwright package is not installed, like tests/test_page_e2e.py; the
accessibility check is skipped when no package shipping axe-core (`axe-playwright-python`) is installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api.app import create_app
from api.settings import ApiSettings
from engine.search import Retriever
from indexer.database import Connection, Database
from indexer.reconcile import Repository, reconcile_repository
from tests.api_support import ALPHA, BETA, real_answering, served
from tests.page_support import AXE, CHROMIUM, FLAGS, serious_violations

REMOTE = "git@github.com:acme/handbook.git"
WAIT = {"timeout": 15_000}

pytestmark = pytest.mark.skipif(
    shutil.which(CHROMIUM) is None,
    reason=f"Debian's chromium is not installed at {CHROMIUM} (apt-get install chromium)",
)
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
expect = sync_api.expect


def git(root: Path, *args: str) -> str:
    command = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com", *args]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip()


class Site:
    """The served page over `alpha` (a checkout of a GitHub repository) and `beta` (a plain folder)."""

    def __init__(self, url: str, root: Path, conn: Connection, commit: str) -> None:
        self.url, self.root, self.conn, self.commit = url, root, conn, commit

    def write(self, rel: str, text: str) -> None:
        """Edit a file of `alpha` and index the change, as the watcher would."""
        (self.root / "alpha" / rel).write_text(text)
        reconcile_repository(self.conn, Repository("alpha", self.root / "alpha"))


@pytest.fixture
def site(conn: Connection, tmp_path: Path, clean_database: Database) -> Iterator[Site]:
    for name, files in (("alpha", ALPHA), ("beta", BETA)):
        for rel, text in files.items():
            (tmp_path / name / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / name / rel).write_text(text)
    git(tmp_path / "alpha", "init", "-q")
    git(tmp_path / "alpha", "remote", "add", "origin", REMOTE)
    git(tmp_path / "alpha", "add", ".")
    git(tmp_path / "alpha", "commit", "-q", "-m", "docs")
    commit = git(tmp_path / "alpha", "rev-parse", "HEAD")
    for name in ("alpha", "beta"):
        reconcile_repository(conn, Repository(name, tmp_path / name))
    retriever = Retriever(clean_database, None, max_connections=4)
    answering = real_answering(clean_database, retriever)
    with served(create_app(clean_database, retriever, answering, ApiSettings())) as url:
        yield Site(url, tmp_path, conn, commit)
    retriever.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        yield instance
        instance.close()


@pytest.fixture
def page(browser: Any, site: Site) -> Iterator[Any]:
    context = browser.new_context()
    opened = context.new_page()
    opened.goto(site.url + "/")
    yield opened
    context.close()


def test_a_sentence_written_while_searching_appears_without_a_reload(page: Any, site: Site) -> None:
    page.locator("body").press("/")
    expect(page.locator("#search")).to_be_focused()
    page.keyboard.type("gyroscope level")
    expect(page.locator("#search-count")).to_have_text("No results for “gyroscope level”", **WAIT)

    site.write(
        "guide/probe.md", "# Probe\n\n## Flight\n\nThe gyroscope keeps the probe level. It spins fast.\n"
    )
    hit = page.locator("#search-results li.hit").first
    expect(hit.locator(".sentence")).to_have_text("The gyroscope keeps the probe level.", **WAIT)
    expect(hit.locator("mark").first).to_have_text("gyroscope")
    expect(hit.locator(".heading")).to_have_text("Probe › Flight")
    expect(hit.locator(".hit-open")).to_have_text("alpha/guide/probe.md:5")
    expect(hit.locator(".badge")).to_have_text("no vector yet")
    expect(hit.locator(".around")).to_have_text(["Flight ", " It spins fast."])

    page.keyboard.press("ArrowDown")
    expect(hit.locator(".hit-open")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#source-context p.hit")).to_have_text("The gyroscope keeps the probe level.")
    page.keyboard.press("Escape")
    expect(page.locator("#search")).to_be_focused()


def test_a_citation_links_to_github_at_the_cited_commit_and_lines(page: Any, site: Site) -> None:
    page.fill("#question", "What does stage 0 download?")
    page.click("#ask")
    clause = page.locator("#clauses li").first
    expect(clause).to_contain_text("Stage 0 downloads a prebuilt beta toolchain.")
    expected = f"https://github.com/acme/handbook/blob/{site.commit}/guide/build.md#L3-L3"
    expect(clause.locator("a.forge").first).to_have_attribute("href", expected)

    page.fill("#search", "bread")
    bread = page.locator("#search-results li.hit").first
    expect(bread.locator(".hit-open")).to_contain_text("beta/recipes/bread.md", **WAIT)
    expect(bread.locator("a.forge")).to_have_count(0)
    page.fill("#search", "beta toolchain")
    stage = page.locator("#search-results li.hit").first
    expect(stage.locator("a.forge")).to_have_attribute("href", expected, **WAIT)


def test_the_freshness_panel_turns_amber_then_red_as_the_backlog_ages(page: Any, site: Site) -> None:
    alpha = page.locator('#freshness-rows tr[data-repository="alpha"]')
    expect(alpha).to_have_attribute("data-level", "ok", **WAIT)
    expect(alpha.locator("td").nth(2)).to_have_text(str(backlog_size(site.conn, "alpha")))
    age_backlog(site.conn, "alpha", 400)
    expect(alpha).to_have_attribute("data-level", "amber", **WAIT)
    expect(alpha.locator(".oldest")).to_have_text(re.compile(r"^6 min \d+ s behind$"))
    expect(page.locator('#freshness-rows tr[data-repository="beta"]')).to_have_attribute("data-level", "ok")
    age_backlog(site.conn, "alpha", 2000)
    expect(alpha).to_have_attribute("data-level", "red", **WAIT)
    expect(page.locator("#status-strip")).to_have_class("warn")


BACKLOG_OF = (
    "sentences s JOIN documents d ON d.id = s.document_id JOIN repositories r ON r.id = d.repository_id"
)


def backlog_size(conn: Connection, repository: str) -> int:
    row = conn.execute(
        f"SELECT count(*) FROM embedding_backlog q JOIN {BACKLOG_OF} ON s.id = q.sentence_id"
        " WHERE r.name = %s",
        (repository,),
    ).fetchone()
    assert row is not None
    return int(row[0])


def age_backlog(conn: Connection, repository: str, seconds: int) -> None:
    """Make the repository's backlog as old as `seconds`, as if the embedders had stopped that long ago."""
    conn.execute(
        "UPDATE embedding_backlog q SET enqueued_at = now() - make_interval(secs => %s)"
        f" FROM {BACKLOG_OF} WHERE s.id = q.sentence_id AND r.name = %s",
        (seconds, repository),
    )


def test_a_stored_answer_whose_source_is_gone_is_flagged_and_asked_again(page: Any, site: Site) -> None:
    page.fill("#question", "What does stage 0 download?")
    page.click("#ask")
    stored = page.locator("#history-list li.stored")
    expect(stored).to_have_count(1, **WAIT)
    expect(stored.first).to_have_attribute("data-freshness", "fresh")

    site.write("guide/build.md", "# Building\n\nStage 1 builds the compiler from source.\n")
    expect(stored.first).to_have_attribute("data-freshness", "changed", **WAIT)  # edited, not deleted
    expect(stored.first.locator(".badge.freshness")).to_have_text("source changed")

    page.fill("#question", "")
    stored.first.get_by_role("button", name="Ask again: What does stage 0 download?").click()
    expect(page.locator("#question")).to_have_value("What does stage 0 download?")
    expect(stored.first).to_have_attribute("data-times", "2", **WAIT)  # one entry per question
    expect(stored).to_have_count(1)
    expect(stored.first).to_contain_text("asked 2 times")


@pytest.mark.skipif(
    AXE is None, reason="no axe-core: pip install axe-playwright-python (it ships axe.min.js)"
)
def test_the_page_has_no_serious_accessibility_violations(page: Any, site: Site) -> None:
    page.fill("#search", "stage")
    expect(page.locator("#search-results li.hit").first).to_be_visible(**WAIT)
    page.fill("#question", "What does stage 0 download?")
    page.click("#ask")
    expect(page.locator("#history-list li.stored")).to_have_count(1, **WAIT)
    page.locator("#clauses .source-link").first.click()
    expect(page.locator("#source-context p.hit")).to_be_visible()
    assert serious_violations(page) == []
