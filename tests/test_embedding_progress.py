"""Backlog progress: a bar with rate and ETA on a terminal, structured log lines otherwise, and the
status figures the page shows while the backlog drains. The backlog counts are fed by hand here: what is
under test is what is shown, not the queue."""

from __future__ import annotations

import io
import json

import pytest

from daemon.logs import configure_logging
from daemon.progress import BacklogProgress
from indexer.embedding_queue import BatchResult
from indexer.status import eta_seconds


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _feed(progress: BacklogProgress, backlog: list[int]) -> None:
    progress.start()
    for _ in range(3):
        progress.on_batch(BatchResult(10, 10, 0, 0, 0))
        backlog.pop(0)
    progress.finish()


def test_a_terminal_gets_a_bar_with_rate_and_eta() -> None:
    screen = _Terminal()
    backlog = [30, 20, 10, 0]
    progress = BacklogProgress(lambda: backlog[0], stream=screen, interval_seconds=0.01)
    _feed(progress, backlog)
    shown = screen.getvalue()
    assert progress.done == 30
    assert "embedding" in shown and "30/30" in shown and "sentence/s" in shown and "<" in shown


def test_a_log_gets_structured_lines(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging()
    backlog = [30, 20, 10, 0]
    progress = BacklogProgress(lambda: backlog[0], stream=io.StringIO(), interval_seconds=0.01)
    _feed(progress, backlog)
    lines = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]
    final = [line for line in lines if line["event"] == "embedding finished"]
    assert final and final[-1]["embedded"] == 30 and "per_second" in final[-1]


def test_the_eta_is_the_backlog_over_the_rate() -> None:
    assert eta_seconds(0, 0.0) == 0.0
    assert eta_seconds(100, 0.0) is None
    assert eta_seconds(100, 40.0) == 2.5
