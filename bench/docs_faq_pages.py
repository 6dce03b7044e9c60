"""The docs_faq side of `docs_faq.py`: which repositories and rows, their pages written out as Markdown files,
a question's section cut from its page, and whether a cited unit is the mined answer or of its paragraph.

Imported by its bare name (the benchmarks run as scripts).
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `training` is not an installed package

from training.data import norm_key, read_jsonl
from training.docs_split import HELD_OUT, TUNE
from training.docs_text import cut_section, in_paragraph, same_text

__all__ = [
    "ANSWERED_ELSEWHERE",
    "ROLES",
    "FaqRow",
    "add_docs_arguments",
    "cut_section",
    "in_paragraph",
    "load_rows",
    "norm_key",
    "page_file",
    "same_text",
    "write_pages",
]

ROLES = {"heldout": HELD_OUT, "tune": TUNE}
ANSWERED_ELSEWHERE = {
    ("MicrosoftDocs/WSL", "How to enable systemd?"): "wsl-config.md, systemd support: the wsl.conf lines",
    ("argoproj/argo-cd", "Why is my application still OutOfSync immediately after a successful Sync?"): (
        "user-guide/diffing.md opens with this case"
    ),
    ("argoproj/argo-cd", "Why Is My App Out Of Sync Even After Syncing?"): "user-guide/diffing.md, the same",
    ("argoproj/argo-cd", "How to disable admin user?"): "user-management/index.md: admin.enabled false",
    ("argoproj/argo-cd", "How often does Argo CD check for changes to my Git or Helm repository ?"): (
        "operator-manual/webhook.md: polls every three minutes"
    ),
    ("traefik/traefik", "What Are the Forwarded Headers When Proxying HTTP Requests?"): (
        "another page holds the same sentence and header table"
    ),
}
"""Held-out `faq` rows whose section, once cut, is still answered by another page of the repository, as
read by hand in the answers of the unanswerable variant (the shipped and the retrained model's): they are
not unanswerable, so the variant's abstention is also printed without them."""


@dataclass(frozen=True, slots=True)
class FaqRow:
    """One mined question with its answer: the first sentence under its heading, and that paragraph."""

    repo: str
    path: str
    question: str
    positive: str
    context: str
    kind: str

    @property
    def name(self) -> str:
        """The repository's name in the index."""
        return self.repo.replace("/", "__")

    @property
    def paths(self) -> tuple[str, str]:
        """The page's path as mined and as written out for indexing (an .mdx page becomes .mdx.md)."""
        return (self.path, page_file(Path(), self.path).as_posix())

    def is_positive(self, path: str, text: str) -> bool:
        """Whether a unit at `path` reading `text` is this row's mined positive."""
        return path in self.paths and same_text(text, self.positive)


def add_docs_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments every docs_faq bench takes: the data folder, the role, the row kinds, the budget, a kept
    workdir and a dump file."""
    parser.add_argument("data", type=Path)
    parser.add_argument("--role", choices=sorted(ROLES), default="heldout")
    parser.add_argument("--kinds", default="faq,heading")
    parser.add_argument("--budget", choices=["low", "mid", "high"], default="mid")
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--dump", type=Path)


def load_rows(data: Path, repos: tuple[str, ...]) -> list[FaqRow]:
    """The rows of `pairs.jsonl.gz` for these repositories, in file order."""
    return [
        FaqRow(r["repo"], r["path"], r["question"], r["positive"], r["positive_context"], r["kind"])
        for r in read_jsonl(data / "pairs.jsonl.gz")
        if r["repo"] in repos
    ]


def write_pages(data: Path, repo: str, root: Path) -> int:
    """Write the repository's corpus pages under `root` as Markdown files (kept when already there)."""
    count = 0
    with gzip.open(data / "corpus" / (repo.replace("/", "__") + ".jsonl.gz"), "rt", encoding="utf-8") as fh:
        for page in map(json.loads, fh):
            target = root / page["path"]
            if target.suffix not in (".md", ".markdown"):
                target = target.with_suffix(target.suffix + ".md")
            if not target.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(page["text"], encoding="utf-8")
            count += 1
    return count


def page_file(root: Path, path: str) -> Path:
    target = root / path
    return target if target.suffix in (".md", ".markdown") else target.with_suffix(target.suffix + ".md")
