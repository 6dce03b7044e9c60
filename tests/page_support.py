"""What the page's Chromium tests share: a page opened on the served app that fails its test when the page
logs an error, and axe-core's serious violations on a page. Playwright is imported by the tests that call
these (they skip without it), so this module imports nothing of it."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-sync",
]
AXE = importlib.util.find_spec("axe_playwright_python")
"""The package that ships axe-core's `axe.min.js`; None where it is not installed."""


@contextmanager
def opened_page(sync_api: Any, url: str, path: str = "/") -> Iterator[Any]:
    """The page at `url` + `path` in headless Chromium; on leaving, asserts it logged no console error, page
    error or HTTP status of 400 or more."""
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        opened = browser.new_page(viewport={"width": 1400, "height": 900})
        problems: list[str] = []
        opened.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        opened.on("pageerror", lambda e: problems.append(str(e)))
        opened.on("response", lambda r: problems.append(f"{r.status} {r.url}") if r.status >= 400 else None)
        opened.goto(url + path)
        yield opened
        assert problems == [], "the page logged errors"
        browser.close()


def serious_violations(page: Any) -> list[str]:
    """axe-core's serious and critical violations on the page as it stands, one line each. axe is
    evaluated through the DevTools protocol: the page's CSP rightly refuses an injected <script>."""
    assert AXE is not None and AXE.submodule_search_locations
    axe = Path(next(iter(AXE.submodule_search_locations))) / "axe.min.js"
    page.evaluate(axe.read_text(encoding="utf-8"))
    results = page.evaluate("axe.run(document, {resultTypes: ['violations']})")
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']]}"
        for v in results["violations"]
        if v["impact"] in ("serious", "critical")
    ]
