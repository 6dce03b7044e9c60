"""The leave-repositories-out protocol for the docs relevance data (``traindata/docs_faq``), fixed once.

Before any training, ten of the forty repositories were drawn with ``random.Random(25)`` from their sorted
names and set apart as HELD_OUT: nothing is trained or tuned on them, and every docs figure is measured on
them. Four more were then drawn with the same seed from the remaining thirty as TUNE: not trained on
either, they are where thresholds may be chosen. The other twenty-six train. The lists are constants so
that a change in the data cannot move a repository silently; ``draw`` redoes the draw and the tests check
that it still gives these lists.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

__all__ = ["HELD_OUT", "SEED", "TUNE", "draw", "role"]

SEED = 25
HELD_OUT = (
    "MicrosoftDocs/WSL",
    "argoproj/argo-cd",
    "go-gitea/docs",
    "jaegertracing/documentation",
    "k3d-io/k3d",
    "kubernetes-sigs/kind",
    "mkdocs/mkdocs",
    "pydantic/pydantic",
    "starship/starship",
    "traefik/traefik",
)
TUNE = ("helm/helm-www", "questdb/documentation", "tiangolo/fastapi", "vuejs/docs")


def draw(repositories: Iterable[str], seed: int = SEED) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(held-out, tune) as drawn from these repository names: ten, then four of the rest."""
    names = sorted(set(repositories))
    held = sorted(random.Random(seed).sample(names, 10))
    rest = [n for n in names if n not in held]
    return tuple(held), tuple(sorted(random.Random(seed).sample(rest, 4)))


def role(repository: str) -> str:
    """``heldout``, ``tune`` or ``train``."""
    if repository in HELD_OUT:
        return "heldout"
    return "tune" if repository in TUNE else "train"
