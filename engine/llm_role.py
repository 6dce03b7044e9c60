"""What a model does for an answer (`[planner] role`), in a module of its own so that reading the
configuration imports no HTTP client."""

from __future__ import annotations

import enum

__all__ = ["LLMRole"]


class LLMRole(enum.Enum):
    """What the model does for an answer."""

    READER = "reader"
    """It reads the top-rated candidates and names the ones that answer, or NONE (`engine.reader`); the
    extractive planner ranks the candidates and plans the searches (the default)."""
    PLANNER = "planner"
    """It writes the whole plan as JSON: clauses, sources and the next searches (`engine.llm_planner`)."""
    REWRITER = "rewriter"
    """It only writes the question's variants (`LLMConfig.variants`); the extractive planner chooses."""
