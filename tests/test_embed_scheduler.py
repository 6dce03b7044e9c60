"""The embedder's scheduler: a worker still draining when its interval comes round again is not a fault, and
the log does not say it is one."""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime

import pytest

from daemon.embedding import SCHEDULER_LOG, embed_scheduler


def _is_skip(record: logging.LogRecord) -> bool:
    message = record.getMessage()
    return "still embedding" in message or "maximum number of running instances" in message


def _skipped_while_a_run_drains(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    """Run a job that blocks, on an interval shorter than the run, until the scheduler has logged a skipped
    run (or 30 s have passed); the scheduler's records."""
    release = threading.Event()
    scheduler = embed_scheduler(1)
    scheduler.add_job(release.wait, "interval", seconds=0.05, id="embed-0", next_run_time=datetime.now(UTC))
    scheduler.start()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(_is_skip(r) for r in caplog.records):
            time.sleep(0.05)
    finally:
        release.set()
        scheduler.shutdown(wait=True)
    return [r for r in caplog.records if r.name == SCHEDULER_LOG]


def test_a_run_skipped_while_the_last_one_drains_is_a_debug_line_saying_still_embedding(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger=SCHEDULER_LOG)
    records = _skipped_while_a_run_drains(caplog)
    skipped = [r for r in records if "still embedding" in r.getMessage()]
    assert skipped, "the scheduler skipped no run"
    assert {r.levelno for r in skipped} == {logging.DEBUG}
    assert not any("maximum number of running instances" in r.getMessage() for r in records)
    assert not [r for r in records if r.levelno >= logging.WARNING]
