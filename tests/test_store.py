"""Change-aware writes against a real PostgreSQL: diff rules, lexical lane, backlog, SET NULL, renames."""

from __future__ import annotations

import uuid
from pathlib import Path

from engine.search import bm25_search
from indexer.database import Connection
from indexer.hashing import sentence_hash
from indexer.reconcile import Repository, index_paths, reconcile_repository
from indexer.store import rename_document
from tests.helpers import lexical_stats_are_exact, sentence_ids

DOC = """# Building

The compiler is built with x.py in stages. Stage 0 downloads a beta compiler.

## Testing

Run the test suite before you open a pull request. Tests live in `tests/ui`.
"""


def _index(conn: Connection, root: Path) -> Repository:
    repo = Repository("docs", root)
    reconcile_repository(conn, repo)
    return repo


def test_fresh_index_is_keyword_searchable_with_positions(conn: Connection, repo_dir: Path) -> None:
    (repo_dir / "build.md").write_text(DOC)
    _index(conn, repo_dir)
    hits = bm25_search(conn, "beta compiler downloads")
    assert hits, "the sentence must be found right after its transaction commits"
    top = hits[0]
    assert top.text == "Stage 0 downloads a beta compiler."
    assert (top.path, top.line_start, top.line_end) == ("build.md", 3, 3)
    assert top.heading_path == ("Building",)
    lexical_stats_are_exact(conn)


def test_edit_writes_only_changed_sentences(conn: Connection, repo_dir: Path) -> None:
    path = repo_dir / "build.md"
    path.write_text(DOC)
    repo = _index(conn, repo_dir)
    before = sentence_ids(conn, "build.md")
    conn.execute("DELETE FROM embedding_backlog")
    conn.commit()
    path.write_text("Intro line added on top.\n\n" + DOC.replace("in stages", "in three stages"))
    report = reconcile_repository(conn, repo)
    after = sentence_ids(conn, "build.md")
    assert report.sentences_inserted == 2  # the new intro and the edited sentence
    assert report.sentences_deleted == 1
    kept = set(before) & set(after)
    assert kept and all(before[t] == after[t] for t in kept), "unchanged sentences keep their ids"
    backlog = {r[0] for r in conn.execute("SELECT sentence_id FROM embedding_backlog").fetchall()}
    assert backlog == {
        after["Intro line added on top."],
        after["The compiler is built with x.py in three stages."],
    }
    moved_line = conn.execute(
        "SELECT line_start FROM sentences WHERE id = %s", (after["Building"],)
    ).fetchone()
    assert moved_line == (3,)
    assert not bm25_search(conn, "stages")[0].text.endswith("in stages.")
    lexical_stats_are_exact(conn)


def test_unchanged_tree_is_skipped(conn: Connection, repo_dir: Path) -> None:
    (repo_dir / "a.md").write_text(DOC)
    repo = _index(conn, repo_dir)
    report = reconcile_repository(conn, repo)
    assert (report.files_written, report.files_unchanged) == (0, 1)
    (repo_dir / "a.md").write_text(DOC)  # same bytes, new mtime: hashed, not parsed
    report = reconcile_repository(conn, repo)
    assert (report.files_written, report.files_unchanged, report.sentences_inserted) == (0, 1, 0)


def _store_answer(conn: Connection, sentence_id: int) -> uuid.UUID:
    answer_id = uuid.uuid4()
    text, document_id = conn.execute(
        "SELECT text, document_id FROM sentences WHERE id = %s", (sentence_id,)
    ).fetchone()
    conn.execute("INSERT INTO answers (id, question, status) VALUES (%s, 'q?', 'answer')", (answer_id,))
    clause_id = conn.execute(
        "INSERT INTO answer_clauses (answer_id, ordinal, clause, confidence) VALUES (%s, 0, 'c', 0.9)"
        " RETURNING id",
        (answer_id,),
    ).fetchone()[0]
    conn.execute(
        "INSERT INTO answer_sources (clause_id, ordinal, sentence_id, document_id, cited_text, cited_hash,"
        " path, line_start, line_end) VALUES (%s, 0, %s, %s, %s, %s, 'build.md', 1, 1)",
        (clause_id, sentence_id, document_id, text, sentence_hash(text)),
    )
    conn.commit()
    return answer_id


def test_removed_sentence_sets_answer_reference_null_and_keeps_text(conn: Connection, repo_dir: Path) -> None:
    path = repo_dir / "build.md"
    path.write_text(DOC)
    repo = _index(conn, repo_dir)
    cited = sentence_ids(conn, "build.md")["Stage 0 downloads a beta compiler."]
    _store_answer(conn, cited)
    path.write_text(DOC.replace("Stage 0 downloads a beta compiler.", ""))
    reconcile_repository(conn, repo)
    row = conn.execute("SELECT sentence_id, document_id, cited_text FROM answer_sources").fetchone()
    assert row[0] is None
    assert row[1] is not None, "the document still exists"
    assert row[2] == "Stage 0 downloads a beta compiler."
    path.unlink()
    report = reconcile_repository(conn, repo)
    assert report.documents_deleted == 1
    assert conn.execute("SELECT sentence_id, document_id FROM answer_sources").fetchone() == (None, None)
    assert conn.execute("SELECT count(*) FROM answers").fetchone() == (1,)
    lexical_stats_are_exact(conn)


def test_rename_keeps_document_and_sentence_ids(conn: Connection, repo_dir: Path) -> None:
    (repo_dir / "old.md").write_text(DOC)
    repo = _index(conn, repo_dir)
    before = sentence_ids(conn, "old.md")
    repository_id = conn.execute("SELECT id FROM repositories").fetchone()[0]
    (repo_dir / "old.md").rename(repo_dir / "new.md")
    assert rename_document(conn, repository_id, "old.md", "new.md")
    report = index_paths(conn, repo, ["new.md"])
    assert report.sentences_inserted == 0
    assert sentence_ids(conn, "new.md") == before


def test_filters_by_repository_and_path_prefix(conn: Connection, tmp_path: Path) -> None:
    for name in ("alpha", "beta"):
        (tmp_path / name / "guide").mkdir(parents=True)
        (tmp_path / name / "guide" / "x.md").write_text("The borrow checker rejects this program.\n")
        (tmp_path / name / "other.md").write_text("The borrow checker is strict.\n")
        reconcile_repository(conn, Repository(name, tmp_path / name))
    assert {h.repository for h in bm25_search(conn, "borrow checker")} == {"alpha", "beta"}
    only_beta = bm25_search(conn, "borrow checker", repositories=["beta"], path_prefix="guide/")
    assert [(h.repository, h.path) for h in only_beta] == [("beta", "guide/x.md")]


def test_bm25_prefers_rarer_terms_and_shorter_sentences(conn: Connection, repo_dir: Path) -> None:
    lines = [f"The compiler runs pass number {i} over the code." for i in range(20)]
    lines.append("The compiler emits LLVM bitcode.")
    lines.append("The compiler emits LLVM bitcode and then a very long tail of other words follows here.")
    (repo_dir / "c.md").write_text("\n\n".join(lines) + "\n")
    _index(conn, repo_dir)
    hits = bm25_search(conn, "compiler llvm")
    assert hits[0].text == "The compiler emits LLVM bitcode."
    assert hits[1].text.startswith("The compiler emits LLVM bitcode and")
    assert hits[0].score > hits[1].score > hits[2].score
