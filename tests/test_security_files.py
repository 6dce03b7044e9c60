"""No file a repository holds stops `index`, the catch-up walk or the watcher, and no skip names a path
outside the repository: each is a skipped file with its reason, counted like any other."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.cli import main
from indexer.database import Connection, Database
from indexer.reconcile import Repository, reconcile_repository
from indexer.sources import SkipReason, read_markdown
from tests.test_watch import RunningWatcher, found, skipped, wait_until


def _loop(folder: Path) -> None:
    (folder / "loopA.md").symlink_to("loopB.md")
    (folder / "loopB.md").symlink_to("loopA.md")


def _details(conn: Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT path, detail FROM skipped_files").fetchall())


def test_a_symlink_loop_is_skipped_at_start_and_the_rest_is_indexed(conn: Connection, repo_dir: Path) -> None:
    (repo_dir / "good.md").write_text("A good sentence stays indexed.\n")
    _loop(repo_dir)
    report = reconcile_repository(conn, Repository("docs", repo_dir))
    loop = SkipReason.LINK_LOOP.value
    assert report.skipped == {"loopA.md": loop, "loopB.md": loop}
    assert report.files_skipped == 2 and report.files_written == 1
    assert skipped(conn) == {"loopA.md": loop, "loopB.md": loop}


def test_a_chain_of_links_too_long_to_follow_is_a_skip(repo_dir: Path) -> None:
    (repo_dir / "end.md").write_text("The end of the chain.\n")
    previous = "end.md"
    for i in range(60):  # the kernel follows at most 40
        (repo_dir / f"c{i}.md").symlink_to(previous)
        previous = f"c{i}.md"
    assert read_markdown(repo_dir / "c0.md", repo_dir, 10_000).text == "The end of the chain.\n"
    assert read_markdown(repo_dir / "c59.md", repo_dir, 10_000).skipped is SkipReason.LINK_LOOP


def test_a_link_that_dangles_reads_as_gone(repo_dir: Path) -> None:
    (repo_dir / "dangling.md").symlink_to("nowhere.md")
    assert read_markdown(repo_dir / "dangling.md", repo_dir, 10_000).skipped is SkipReason.VANISHED


def test_citeline_index_with_a_loop_exits_0_and_counts_the_skips(
    clean_database: Database,
    repo_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("CITELINE_DATABASE_URL", clean_database.url)
    monkeypatch.setenv("CITELINE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("CITELINE_CONFIG", raising=False)
    (repo_dir / "good.md").write_text("A good sentence stays indexed.\n")
    _loop(repo_dir)
    capsys.readouterr()
    assert main(["index", str(repo_dir), "--json"]) == 0
    out = capsys.readouterr().out
    assert "loopA.md" in out and "Traceback" not in out


def test_an_outside_target_is_reported_without_its_path(
    conn: Connection, repo_dir: Path, tmp_path: Path
) -> None:
    secret = tmp_path / "elsewhere" / "secret-page.md"
    secret.parent.mkdir()
    secret.write_text("Secret outside the repository.\n")
    (repo_dir / "link.md").symlink_to(secret)
    reconcile_repository(conn, Repository("docs", repo_dir))
    detail = _details(conn)["link.md"]
    assert "outside the repository" in detail
    assert "secret-page" not in detail and str(tmp_path) not in detail


def test_a_loop_appearing_while_watching_is_skipped_and_the_watcher_keeps_going(
    conn: Connection, clean_database: Database, repo_dir: Path
) -> None:
    (repo_dir / "first.md").write_text("The first page is here.\n")
    reconcile_repository(conn, Repository("docs", repo_dir))
    with RunningWatcher(clean_database, Repository("docs", repo_dir)):
        _loop(repo_dir)
        loop = SkipReason.LINK_LOOP.value
        wait_until(lambda: skipped(conn) == {"loopA.md": loop, "loopB.md": loop})
        (repo_dir / "later.md").write_text("The zebracorn arrives after the loop.\n")
        wait_until(lambda: found(conn, "zebracorn"))
    # leaving the block asserts the watcher ran to the end without an error


def test_a_loop_present_at_watch_start_does_not_stop_the_catch_up(
    conn: Connection, clean_database: Database, repo_dir: Path
) -> None:
    (repo_dir / "first.md").write_text("The quokkafish page is here.\n")
    _loop(repo_dir)
    with RunningWatcher(clean_database, Repository("docs", repo_dir)):
        wait_until(lambda: found(conn, "quokkafish"))
        assert set(skipped(conn)) == {"loopA.md", "loopB.md"}
