"""Structured logs on stderr: readable on a terminal, one JSON object per line otherwise (journald, files)."""

from __future__ import annotations

import logging
import os
import sys

__all__ = ["configure_logging", "quiet_model_loading"]


def configure_logging(level: int = logging.INFO) -> None:
    """Configure structlog once for the process (imported here: `citeline ask` through a server logs nothing
    and does not load it)."""
    import structlog

    renderer: structlog.typing.Processor = (
        structlog.dev.ConsoleRenderer() if sys.stderr.isatty() else structlog.processors.JSONRenderer()
    )
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso"),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        # Resolved per call, not cached: stderr may be swapped (tests, daemonization) after configuration.
        logger_factory=lambda *_args: structlog.PrintLogger(sys.stderr),
        cache_logger_on_first_use=False,
    )


QUIET_ENV = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error"}
"""What keeps the model libraries' loading bars and advisories ("Loading weights: 0%|...") off stderr."""


def quiet_model_loading() -> None:
    """Keep the model libraries' loading bars and advisories off stderr (`citeline --verbose` shows them),
    before any of them is imported; a variable the environment already sets is left as it is. The bars the
    commands draw themselves on a terminal (indexing, embedding) stay."""
    for name, value in QUIET_ENV.items():
        os.environ.setdefault(name, value)
