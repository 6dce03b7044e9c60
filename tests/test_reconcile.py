"""Catching up with a tree as `citeline index` does: renames keep ids; one rule says what a document is."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from daemon.cli import main
from indexer.database import Connection, Database
from indexer.reconcile import Repository, reconcile_repository
from indexer.sources import DocumentMatcher, FileFilter, walk_markdown
from tests.helpers import lexical_stats_are_exact, sentence_ids

DOC = """# Building

The compiler is built with x.py in stages. Stage 0 downloads a beta compiler.

## Testing

Run the test suite before you open a pull request. Tests live in `tests/ui`.
"""


@pytest.fixture
def env(clean_database: Database, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CITELINE_DATABASE_URL", clean_database.url)
    monkeypatch.setenv("CITELINE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CITELINE_CONFIG", raising=False)


def _index_json(root: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, int]:
    assert main(["index", str(root), "--json"]) == 0
    report: dict[str, int] = json.loads(capsys.readouterr().out)["repositories"]["docs"]
    return report


@pytest.mark.usefixtures("env")
def test_citeline_index_keeps_sentence_ids_across_a_rename(
    conn: Connection, repo_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (repo_dir / "guide").mkdir()
    (repo_dir / "guide" / "build.md").write_text(DOC)
    (repo_dir / "other.md").write_text("# Other\n\nAn unrelated page.\n")
    _index_json(repo_dir, capsys)
    before = sentence_ids(conn, "guide/build.md")
    document_id = conn.execute("SELECT id FROM documents WHERE path = 'guide/build.md'").fetchone()
    (repo_dir / "guide" / "build.md").rename(repo_dir / "building.md")
    report = _index_json(repo_dir, capsys)
    assert sentence_ids(conn, "building.md") == before
    assert sentence_ids(conn, "guide/build.md") == {}
    assert conn.execute("SELECT id FROM documents WHERE path = 'building.md'").fetchone() == document_id
    assert (report["documents_renamed"], report["documents_deleted"], report["sentences_inserted"]) == (
        1,
        0,
        0,
    )
    lexical_stats_are_exact(conn)


def test_a_renamed_file_with_new_content_is_indexed_anew(conn: Connection, repo_dir: Path) -> None:
    (repo_dir / "old.md").write_text(DOC)
    repo = Repository("docs", repo_dir)
    reconcile_repository(conn, repo)
    before = sentence_ids(conn, "old.md")
    (repo_dir / "old.md").rename(repo_dir / "new.md")
    (repo_dir / "new.md").write_text(DOC + "\nA sentence added while moving.\n")
    report = reconcile_repository(conn, repo)
    assert (report.documents_renamed, report.documents_deleted, report.files_written) == (0, 1, 1)
    assert set(sentence_ids(conn, "new.md").values()).isdisjoint(before.values())
    lexical_stats_are_exact(conn)


def test_two_files_with_the_same_bytes_renamed_each_keep_one_document(
    conn: Connection, repo_dir: Path
) -> None:
    for name in ("a.md", "b.md"):
        (repo_dir / name).write_text(DOC)
    repo = Repository("docs", repo_dir)
    reconcile_repository(conn, repo)
    ids = dict(conn.execute("SELECT path, id FROM documents").fetchall())
    (repo_dir / "a.md").rename(repo_dir / "c.md")
    (repo_dir / "b.md").rename(repo_dir / "d.md")
    report = reconcile_repository(conn, repo)
    assert (report.documents_renamed, report.documents_deleted, report.sentences_inserted) == (2, 0, 0)
    assert dict(conn.execute("SELECT path, id FROM documents").fetchall()) == {
        "c.md": ids["a.md"],
        "d.md": ids["b.md"],
    }
    lexical_stats_are_exact(conn)


def test_the_matcher_accepts_exactly_the_files_the_walk_lists(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    files = [
        "a.md",
        "notes.txt",
        "build/out.md",
        "guide/keep.md",
        "guide/draft.md",
        "guide/deep/x.markdown",
        "guide/deep/skip.md",
        "vendor/lib.md",
        ".git/info.md",
        "outside/linked.md",
    ]
    for rel in files:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("# A page\n")
    (root / ".gitignore").write_text("build/\n")
    (root / "guide" / ".gitignore").write_text("draft.md\n")
    (root / "guide" / "deep" / ".gitignore").write_text("skip.md\n")
    os.symlink(root / "outside", root / "linked", target_is_directory=True)
    file_filter = FileFilter(exclude=("vendor/**",))
    listed = set(walk_markdown(root, file_filter))
    matcher = DocumentMatcher(root, file_filter)
    assert listed == {"a.md", "guide/keep.md", "guide/deep/x.markdown", "outside/linked.md"}
    for rel in [*files, "linked/linked.md"]:
        assert matcher.matches(rel) == (rel in listed), rel
