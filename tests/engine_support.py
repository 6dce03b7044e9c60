"""What the engine tests share: a small corpus of two hops and two distractors, and a scripted entailment
model (a fake: the shipped NLI model's verdicts are not known in advance, and these tests need known ones).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engine.crossencoders import EntailmentScores
from indexer.database import Connection
from indexer.embedder import EmbeddingModel
from indexer.embedding_queue import EmbeddingWorker
from indexer.hashing import normalize_sentence
from indexer.reconcile import Repository, reconcile_repository

__all__ = ["DOCS", "ContainmentNLI", "FixedRating", "ScriptedPairs", "index_docs"]

DOCS = {
    "lsu.md": "# 2003 LSU Tigers football team\n\nThe 2003 LSU Tigers football team represented "
    "Louisiana State University. The Tigers compiled an 11-1 regular season record under coach Nick Saban.\n",
    "sugar.md": "# 2004 Sugar Bowl\n\nThe 2004 Sugar Bowl was the BCS title game played by the LSU Tigers. "
    "It was held at the Louisiana Superdome in New Orleans.\n",
    "rose.md": "# Rose Bowl\n\nThe Rose Bowl is an annual college football game in Pasadena. "
    "It is the oldest bowl game.\n",
    "cooking.md": "# Bread\n\nBread dough rises because yeast produces carbon dioxide. "
    "Bake it at 220 degrees.\n",
}


class ContainmentNLI:
    """Scripted NLI: entailed when the hypothesis is contained in the premise; listed pairs contradict."""

    def __init__(self, contradict: Sequence[tuple[str, str]] = ()) -> None:
        self.contradict = {(normalize_sentence(a), normalize_sentence(b)) for a, b in contradict}
        self.calls = 0

    def predict(self, pairs: Sequence[tuple[str, str]]) -> list[EntailmentScores]:
        self.calls += 1
        out = []
        for premise, hypothesis in pairs:
            p, h = normalize_sentence(premise), normalize_sentence(hypothesis)
            if any(a in p and b == h for a, b in self.contradict):
                out.append(EntailmentScores(0.02, 0.03, 0.95))
            elif h.rstrip(".") in p:
                out.append(EntailmentScores(0.95, 0.04, 0.01))
            else:
                out.append(EntailmentScores(0.05, 0.9, 0.05))
        return out


class FixedRating:
    """A fake rating model (relevance or answer check): one score for every passage, so a verification rule,
    not a model's mood, decides (the real models are tested in test_crossencoders)."""

    def __init__(self, value: float) -> None:
        self.value = value

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        return [self.value for _ in passages]


class ScriptedPairs:
    """The memory's store, scripted (`engine.memory.RememberedAnswers`): `recall` is a pure choice over what
    `remembered` returns, so these pairs are returned whatever is asked."""

    def __init__(self, *pairs: Any) -> None:
        self.pairs = list(pairs)

    def remembered(self, *_: Any) -> list[Any]:
        return self.pairs


def index_docs(conn: Connection, repo_dir: Path, embedder: EmbeddingModel) -> Path:
    """`DOCS` written into `repo_dir`, indexed as repository "docs" and embedded; returns `repo_dir`."""
    for name, text in DOCS.items():
        (repo_dir / name).write_text(text)
    reconcile_repository(conn, Repository("docs", repo_dir))
    EmbeddingWorker(conn, embedder).drain()
    return repo_dir
