"""Forge links in the API: a repository checked out from GitHub gets permalinks at the indexed commit on its
search hits and its answer sources, a configured template wins over the remote, a folder with no remote gets
`link: null`, and `context=true` puts the sentences either side of a hit next to it."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.search import Retriever
from indexer.database import Connection, Database
from indexer.reconcile import Repository, reconcile_repository
from tests.api_support import client_for, real_answering

GUIDE = (
    "# Building\n\nStage 0 downloads a prebuilt beta toolchain.\nStage 1 builds the compiler from source.\n"
)


def checkout(root: Path, remote: str | None) -> str:
    """A git checkout at `root` holding the guide, with `remote` as origin; returns its commit."""
    (root / "guide").mkdir(parents=True)
    (root / "guide" / "build.md").write_text(GUIDE)
    run = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*run, "init", "-q"], check=True)
    if remote:
        subprocess.run([*run, "remote", "add", "origin", remote], check=True)
    subprocess.run([*run, "add", "."], check=True)
    subprocess.run([*run, "commit", "-q", "-m", "guide"], check=True)
    done = subprocess.run([*run, "rev-parse", "HEAD"], check=True, capture_output=True, text=True)
    return done.stdout.strip()


@pytest.fixture
def client(clean_database: Database, lexical_retriever: Retriever) -> Iterator[Any]:
    with client_for(
        clean_database, lexical_retriever, real_answering(clean_database, lexical_retriever)
    ) as c:
        yield c


def test_a_search_hit_in_a_github_checkout_links_to_its_lines_at_the_commit(
    conn: Connection, tmp_path: Path, client: Any
) -> None:
    commit = checkout(tmp_path / "rustc", "git@github.com:rust-lang/rustc-dev-guide.git")
    reconcile_repository(conn, Repository("rustc", tmp_path / "rustc"))
    (hit,) = client.get("/v1/search", params={"q": "beta toolchain", "k": 1, "lane": "lexical"}).json()[
        "hits"
    ]
    assert hit["git_commit"] == commit
    assert hit["link"] == (f"https://github.com/rust-lang/rustc-dev-guide/blob/{commit}/guide/build.md#L3-L3")
    assert hit["before"] is None and hit["after"] is None


def test_a_folder_with_no_known_forge_gets_no_link(conn: Connection, tmp_path: Path, client: Any) -> None:
    checkout(tmp_path / "local", None)
    checkout(tmp_path / "selfhosted", "git@git.example.com:docs/guide.git")
    reconcile_repository(conn, Repository("local", tmp_path / "local"))
    reconcile_repository(conn, Repository("selfhosted", tmp_path / "selfhosted"))
    hits = client.get("/v1/search", params={"q": "beta toolchain", "lane": "lexical"}).json()["hits"]
    assert sorted(h["repository"] for h in hits) == ["local", "selfhosted"]
    assert [h["link"] for h in hits] == [None, None]


def test_a_configured_template_wins_and_answer_sources_carry_the_cited_link(
    conn: Connection, tmp_path: Path, client: Any
) -> None:
    commit = checkout(tmp_path / "docs", "git@git.example.com:docs/guide.git")
    template = "https://git.example.com/docs/guide/src/commit/{commit}/{path}#L{start}-L{end}"
    reconcile_repository(conn, Repository("docs", tmp_path / "docs", link=template))
    answer = client.post("/v1/answers", json={"question": "What does stage 0 download?"}).json()
    sources = [s for clause in answer["clauses"] for s in clause["sources"]]
    assert sources, answer
    expected = f"https://git.example.com/docs/guide/src/commit/{commit}/guide/build.md#L3-L3"
    assert expected in [s["link"] for s in sources]
    stored = client.get(f"/v1/answers/{answer['id']}").json()
    assert [s["link"] for c in stored["clauses"] for s in c["sources"]] == [s["link"] for s in sources]


def test_context_puts_the_neighbouring_sentences_beside_a_hit(
    conn: Connection, tmp_path: Path, client: Any
) -> None:
    checkout(tmp_path / "docs", None)
    reconcile_repository(conn, Repository("docs", tmp_path / "docs"))
    params = {"q": "beta toolchain", "k": 1, "lane": "lexical", "context": "true"}
    (hit,) = client.get("/v1/search", params=params).json()["hits"]
    assert hit["before"] == "Building"
    assert hit["after"] == "Stage 1 builds the compiler from source."
