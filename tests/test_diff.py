"""The multiset diff rules, on plain data."""

from __future__ import annotations

from indexer.diff import StoredSentence, diff_sentences
from indexer.hashing import normalize_sentence, sentence_hash


def _s(
    text: str, ordinal: int, sid: int = 0, line: int | None = None, heading: tuple[str, ...] = ()
) -> StoredSentence:
    line = ordinal + 1 if line is None else line
    return StoredSentence(sid, sentence_hash(text), ordinal, "sentence", text, heading, line, line)


def test_normalization_folds_case_whitespace_and_compatibility_forms() -> None:
    assert normalize_sentence("  The\tﬁle  IS\n read. ") == "the file is read."
    assert sentence_hash("Hello   World.") == sentence_hash("hello world.")
    assert sentence_hash("Hello World.") != sentence_hash("Hello World!")


def test_unchanged_document_writes_nothing() -> None:
    old = [_s("A.", 0, 1), _s("B.", 1, 2)]
    diff = diff_sentences(old, [_s("A.", 0), _s("B.", 1)])
    assert (diff.inserted, diff.deleted, diff.moved, diff.unchanged) == ([], [], [], 2)


def test_edit_inserts_new_and_deletes_old_only() -> None:
    old = [_s("A.", 0, 1), _s("B.", 1, 2), _s("C.", 2, 3)]
    diff = diff_sentences(old, [_s("A.", 0), _s("B changed.", 1), _s("C.", 2)])
    assert diff.inserted == [1]
    assert diff.deleted == [2]
    assert diff.moved == []


def test_moved_sentence_keeps_its_id() -> None:
    old = [_s("A.", 0, 1), _s("B.", 1, 2)]
    diff = diff_sentences(old, [_s("New.", 0), _s("A.", 1), _s("B.", 2)])
    assert diff.inserted == [0]
    assert diff.deleted == []
    assert sorted((m.id, m.new_index) for m in diff.moved) == [(1, 1), (2, 2)]
    assert not any(m.heading_changed for m in diff.moved)


def test_duplicates_match_as_a_multiset() -> None:
    old = [_s("See above.", 0, 1), _s("X.", 1, 2), _s("See above.", 2, 3)]
    diff = diff_sentences(old, [_s("See above.", 0), _s("X.", 1)])
    assert diff.deleted == [3]
    assert diff.inserted == []
    new = [_s("See above.", 0), _s("See above.", 1), _s("See above.", 2), _s("X.", 3)]
    diff = diff_sentences(old, new)
    assert diff.inserted == [2]
    assert diff.deleted == []


def test_case_only_change_keeps_row_but_updates_text() -> None:
    old = [_s("hello world.", 0, 7)]
    diff = diff_sentences(old, [_s("Hello  World.", 0)])
    assert diff.inserted == [] and diff.deleted == []
    assert [m.id for m in diff.moved] == [7]


def test_heading_change_is_flagged() -> None:
    old = [_s("A.", 0, 1, heading=("Intro",))]
    diff = diff_sentences(old, [_s("A.", 0, heading=("Overview",))])
    assert [m.heading_changed for m in diff.moved] == [True]
