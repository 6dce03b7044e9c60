"""Hostile files, names and folders: each is skipped with its reason, keeps its previous version, is counted
for the operator, and never stops the other files from being indexed."""

from __future__ import annotations

import json
import os
import random
import string
from pathlib import Path

import psycopg
import pytest
from structlog.testing import capture_logs

from api.metrics import ApiMetrics
from daemon.cli import main
from indexer.database import Connection, Database
from indexer.hashing import content_hash
from indexer.markdown import parse_markdown
from indexer.reconcile import Repository, index_paths, reconcile_repository
from indexer.segment import split_sentences
from indexer.status import repository_status
from indexer.store import DocumentFile, ensure_repository, refused_rows, write_document
from tests.helpers import lexical_stats_are_exact, without_permission_override

UNDECODABLE = b"\xff\xfe-name.md"


def distinct_words_line(count: int = 125_000) -> str:
    """One line of random 7-letter words: over a megabyte of tsvector if all of it were indexed."""
    rng = random.Random(16)
    return " ".join("".join(rng.choices(string.ascii_lowercase, k=7)) for _ in range(count))


def too_long_to_index(root: Path) -> str:
    """A path of 12 nested folders of 240 random letters: legal on Linux, but its (repository, path) key is
    over the 2,704 bytes a PostgreSQL B-tree entry may hold, so the document row is refused."""
    rng = random.Random(7)
    folders = ["".join(rng.choices(string.ascii_letters, k=240)) for _ in range(12)]
    (root / "/".join(folders)).mkdir(parents=True)
    return "/".join([*folders, "deep.md"])


def texts(conn: Connection, path: str) -> list[str]:
    rows = conn.execute(
        "SELECT s.text FROM sentences s JOIN documents d ON d.id = s.document_id WHERE d.path = %s"
        " ORDER BY s.ordinal",
        (path,),
    ).fetchall()
    return [r[0] for r in rows]


def skipped_rows(conn: Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT path, reason FROM skipped_files").fetchall())


def test_a_line_of_distinct_words_is_indexed_whole_with_its_terms_capped(
    conn: Connection, repo_dir: Path
) -> None:
    line = distinct_words_line()
    (repo_dir / "poison.md").write_text(f"# Word list\n\n{line}\n")
    (repo_dir / "zeta.md").write_text("Files sorted after it are indexed too.\n")
    report = reconcile_repository(conn, Repository("docs", repo_dir))
    assert report.files_written == 2 and report.skipped == {}
    assert texts(conn, "poison.md")[-1] == line
    first, last = line.split()[0], line.split()[-1]
    found = conn.execute("SELECT count(*) FROM sentences WHERE tsv @@ to_tsquery('simple', %s)", (first,))
    assert found.fetchone() == (1,)
    beyond = conn.execute("SELECT count(*) FROM sentences WHERE tsv @@ to_tsquery('simple', %s)", (last,))
    assert beyond.fetchone() == (0,)
    lexical_stats_are_exact(conn)


def test_a_document_whose_row_the_database_refuses_is_skipped_and_the_rest_indexed(
    conn: Connection, repo_dir: Path
) -> None:
    deep = too_long_to_index(repo_dir)
    (repo_dir / deep).write_text("Nobody can store this path.\n")
    (repo_dir / "zeta.md").write_text("Files sorted after it are indexed too.\n")
    with capture_logs() as logs:
        report = reconcile_repository(conn, Repository("docs", repo_dir))
    assert report.skipped == {deep: "rejected"} and report.files_written == 1
    assert texts(conn, "zeta.md") == ["Files sorted after it are indexed too."]
    assert skipped_rows(conn) == {deep: "rejected"}
    (warning,) = [e for e in logs if e.get("path") == deep]
    assert warning["reason"] == "rejected" and "ProgramLimitExceeded" in warning["detail"]
    lexical_stats_are_exact(conn)


def test_a_refused_update_keeps_the_previous_version_until_the_file_is_fixed(
    conn: Connection, repo_dir: Path
) -> None:
    """The refusal comes from a CHECK constraint this test adds to the real table (and drops again)."""
    repo = Repository("docs", repo_dir)
    (repo_dir / "notes.md").write_text("# Notes\n\nThe first version is indexed.\n")
    reconcile_repository(conn, repo)
    conn.execute("ALTER TABLE sentences ADD CONSTRAINT test_refused CHECK (text NOT LIKE '%%refused%%')")
    try:
        (repo_dir / "notes.md").write_text("# Notes\n\nA refused second version.\n")
        (repo_dir / "zeta.md").write_text("Files sorted after it are indexed too.\n")
        report = reconcile_repository(conn, repo)
    finally:
        conn.execute("ALTER TABLE sentences DROP CONSTRAINT test_refused")
    assert report.skipped == {"notes.md": "rejected"}
    assert texts(conn, "notes.md") == ["Notes", "The first version is indexed."]
    assert texts(conn, "zeta.md") == ["Files sorted after it are indexed too."]
    assert skipped_rows(conn) == {"notes.md": "rejected"}
    lexical_stats_are_exact(conn)

    (repo_dir / "notes.md").write_text("# Notes\n\nA fixed version is indexed.\n")
    index_paths(conn, repo, ["notes.md"])
    assert texts(conn, "notes.md") == ["Notes", "A fixed version is indexed."]
    assert skipped_rows(conn) == {}


def test_a_lost_connection_is_not_taken_for_a_refused_file(clean_database: Database, repo_dir: Path) -> None:
    raw = b"One sentence.\n"
    units = split_sentences(parse_markdown(raw.decode()))
    document = DocumentFile("a.md", None, content_hash(raw), len(raw), 0, None, units)
    with clean_database.connect() as victim, clean_database.connect() as killer:
        repository_id = ensure_repository(victim, "docs", str(repo_dir))
        killer.execute("SELECT pg_terminate_backend(%s)", (victim.info.backend_pid,))
        with pytest.raises(psycopg.OperationalError) as caught:
            write_document(victim, repository_id, document)
        assert not refused_rows(caught.value, victim)


def test_a_file_name_that_is_not_utf8_is_skipped_and_shown_with_escapes(
    conn: Connection, repo_dir: Path
) -> None:
    repo = Repository("docs", repo_dir)
    (repo_dir / "good.md").write_text("A good sentence stays indexed.\n")
    bad = os.path.join(os.fsencode(repo_dir), UNDECODABLE)
    Path(os.fsdecode(bad)).write_text("Never stored under a name it cannot hold.\n")
    report = reconcile_repository(conn, repo)
    assert report.files_written == 1
    assert report.skipped == {"\\xff\\xfe-name.md": "undecodable_name"}
    assert [s.skipped_files for s in repository_status(conn)] == [1]
    os.unlink(bad)
    reconcile_repository(conn, repo)
    assert [s.skipped_files for s in repository_status(conn)] == [0]


def test_an_unreadable_folder_keeps_its_documents_and_says_so(conn: Connection, repo_dir: Path) -> None:
    repo = Repository("docs", repo_dir)
    (repo_dir / "guide").mkdir()
    for name in ("a", "b"):
        (repo_dir / "guide" / f"{name}.md").write_text(f"Page {name} is kept.\n")
    (repo_dir / "top.md").write_text("The top page.\n")
    reconcile_repository(conn, repo)
    (repo_dir / "guide").chmod(0)
    try:
        with capture_logs() as logs:
            report = without_permission_override(lambda: reconcile_repository(conn, repo))
    finally:
        (repo_dir / "guide").chmod(0o755)
    assert report.documents_deleted == 0
    assert report.skipped == {"guide/a.md": "folder_unreadable", "guide/b.md": "folder_unreadable"}
    warned = [e for e in logs if e["log_level"] == "warning" and e.get("folder") == "guide"]
    assert warned and "unreadable" in warned[0]["event"]
    assert texts(conn, "guide/a.md") == ["Page a is kept."]
    assert [s.skipped_files for s in repository_status(conn)] == [2]

    reconcile_repository(conn, repo)
    assert [s.skipped_files for s in repository_status(conn)] == [0]


def test_index_status_and_metrics_report_skipped_files(
    clean_database: Database,
    repo_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CITELINE_DATABASE_URL", clean_database.url)
    monkeypatch.setenv("CITELINE_DATA_DIR", str(repo_dir.parent / "data"))
    monkeypatch.delenv("CITELINE_CONFIG", raising=False)
    (repo_dir / "poison.md").write_text(f"# Words\n\n{distinct_words_line()}\n")
    deep = too_long_to_index(repo_dir)
    (repo_dir / deep).write_text("Nobody can store this path.\n")
    Path(os.fsdecode(os.path.join(os.fsencode(repo_dir), UNDECODABLE))).write_text("x\n")
    (repo_dir / "zeta.md").write_text("Files sorted after them are indexed too.\n")
    assert main(["index", str(repo_dir), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["repositories"]["docs"]
    assert report["files_written"] == 2
    assert report["skipped"] == {deep: "rejected", "\\xff\\xfe-name.md": "undecodable_name"}

    assert main(["status", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert [r["skipped_files"] for r in status["repositories"]] == [2]
    assert status["total"]["skipped_files"] == 2
    assert main(["status"]) == 0
    assert "2 files skipped" in capsys.readouterr().out

    scraped = ApiMetrics(clean_database.connect).render().decode()
    assert 'citeline_skipped_files{repository="docs"} 2.0' in scraped
