"""Bad files get a clear reason and never change the index beyond their own document."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from indexer.database import Connection
from indexer.reconcile import IndexOptions, Repository, reconcile_repository
from indexer.sources import FileFilter, SkipReason, read_markdown, walk_markdown
from tests.helpers import lexical_stats_are_exact


def test_skips_binary_huge_outside_symlink_and_special_files(
    conn: Connection, repo_dir: Path, tmp_path: Path
) -> None:
    (repo_dir / "good.md").write_text("A good sentence stays indexed.\n")
    (repo_dir / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 10)
    (repo_dir / "huge.md").write_text("word " * 5000)
    secret = tmp_path / "secret.md"
    secret.write_text("Secret outside the repository.\n")
    (repo_dir / "escape.md").symlink_to(secret)
    os.mkfifo(repo_dir / "pipe.md")
    report = reconcile_repository(conn, Repository("docs", repo_dir), IndexOptions(max_file_bytes=10_000))
    assert report.skipped == {
        "binary.md": SkipReason.BINARY.value,
        "huge.md": SkipReason.TOO_LARGE.value,
        "escape.md": SkipReason.OUTSIDE.value,
        "pipe.md": SkipReason.NOT_FILE.value,
    }
    paths = [r[0] for r in conn.execute("SELECT path FROM documents").fetchall()]
    assert paths == ["good.md"]
    assert conn.execute("SELECT count(*) FROM sentences WHERE text LIKE 'Secret%'").fetchone() == (0,)


def test_skipped_file_keeps_its_previous_version(conn: Connection, repo_dir: Path) -> None:
    path = repo_dir / "doc.md"
    path.write_text("The first version is indexed.\n")
    repo = Repository("docs", repo_dir)
    reconcile_repository(conn, repo)
    path.write_bytes(b"\x00" * 100)
    reconcile_repository(conn, repo)
    assert conn.execute("SELECT text FROM sentences").fetchall() == [("The first version is indexed.",)]
    lexical_stats_are_exact(conn)


def test_invalid_utf8_is_decoded_with_replacement(conn: Connection, repo_dir: Path) -> None:
    (repo_dir / "latin1.md").write_bytes("Caf\xe9 au lait is served here.\n".encode("latin-1"))
    report = reconcile_repository(conn, Repository("docs", repo_dir))
    assert report.files_written == 1
    (text,) = conn.execute("SELECT text FROM sentences").fetchone()
    assert text == "Caf\ufffd au lait is served here."


def test_vanished_file_reads_as_gone(tmp_path: Path) -> None:
    result = read_markdown(tmp_path / "gone.md", tmp_path, 1000)
    assert result.skipped is SkipReason.VANISHED


def test_walk_honours_gitignore_and_skips_git(repo_dir: Path) -> None:
    for rel in (
        "a.md",
        "notes.txt",
        "build/out.md",
        "sub/b.markdown",
        "sub/tmp.md",
        ".git/x.md",
        "drafts/d.md",
    ):
        (repo_dir / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo_dir / rel).write_text("x\n")
    (repo_dir / ".gitignore").write_text("build/\n")
    (repo_dir / "sub" / ".gitignore").write_text("tmp.md\n")
    found = list(walk_markdown(repo_dir, FileFilter(exclude=("drafts/**",))))
    assert found == ["a.md", "sub/b.markdown"]


def test_unreadable_file_is_skipped_and_keeps_its_document(
    conn: Connection, repo_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Root reads every file whatever its mode, so the refusal is injected at `os.open`."""
    path = repo_dir / "locked.md"
    path.write_text("Readable at first.\n")
    repo = Repository("docs", repo_dir)
    reconcile_repository(conn, repo)
    path.write_text("Changed but unreadable now.\n")
    real_open = os.open

    def refuse(file: str | Path, flags: int, *args: int, **kwargs: int | None) -> int:
        if os.fspath(file).endswith("locked.md"):
            raise PermissionError(13, "Permission denied", os.fspath(file))
        return real_open(file, flags, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", refuse)
    report = reconcile_repository(conn, repo)
    assert report.skipped == {"locked.md": SkipReason.UNREADABLE.value}
    assert conn.execute("SELECT text FROM sentences").fetchall() == [("Readable at first.",)]
