"""Segment stage: sentence boundaries, per-sentence source lines, unit kinds and odd input."""

from __future__ import annotations

import pytest

from indexer.markdown import CodeMode, TextUnit, UnitKind, parse_markdown
from indexer.segment import markdown_units, sentence_spans, split_sentences


def sentences(source: str) -> list[str]:
    return [u.text for u in markdown_units(source) if u.kind is UnitKind.SENTENCE]


def lines(source: str) -> list[tuple[str, int, int]]:
    return [(u.text, u.line_start, u.line_end) for u in markdown_units(source)]


# --- line ranges ----------------------------------------------------------------------------------------


def test_each_sentence_gets_its_own_lines_after_front_matter() -> None:
    source = (
        "---\ntitle: T\n---\n# Guide\n\n"  # lines 1-4, blank 5
        "First sentence here. Second one\n"  # 6
        "spans two lines. Third\n"  # 7
        "one.  Fourth.\n"  # 8
    )
    assert lines(source) == [
        ("Guide", 4, 4),
        ("First sentence here.", 6, 6),
        ("Second one spans two lines.", 6, 7),
        ("Third one.", 7, 8),
        ("Fourth.", 8, 8),
    ]


def test_lines_inside_lists_and_quotes() -> None:
    source = (
        "- Item one. Item two\n"  # 1
        "  wraps here.\n"  # 2
        "  1. Nested. Also\n"  # 3
        "     nested.\n"  # 4
        "\n"
        "> Quote one. Quote\n"  # 6
        "> two.\n"  # 7
        "lazy line. End.\n"  # 8
    )
    assert lines(source) == [
        ("Item one.", 1, 1),
        ("Item two wraps here.", 1, 2),
        ("Nested.", 3, 3),
        ("Also nested.", 3, 4),
        ("Quote one.", 6, 6),
        ("Quote two.", 6, 7),
        ("lazy line.", 8, 8),
        ("End.", 8, 8),
    ]


def test_crlf_line_endings_count_like_lf() -> None:
    assert lines("# T\r\n\r\nOne. Two\r\nthree.\r\n") == [("T", 1, 1), ("One.", 3, 3), ("Two three.", 3, 4)]


def test_every_sentence_starts_and_ends_on_the_lines_it_claims() -> None:
    body = [f"Sentence number {i} ends here. Sentence {i}b runs" for i in range(40)]
    source = "# Long\n\n" + "\n".join(f"{line} on.\n" if i % 5 == 4 else line for i, line in enumerate(body))
    src_lines = source.split("\n")
    units = [u for u in markdown_units(source) if u.kind is UnitKind.SENTENCE]
    assert len(units) > 40
    for unit in units:
        first, *_, last = unit.text.split()
        assert first in src_lines[unit.line_start - 1]
        assert last.rstrip(".") in src_lines[unit.line_end - 1]


def test_units_from_tables_headings_and_code_keep_block_lines() -> None:
    source = "# Title. With a period\n\n| a. B | c |\n|---|---|\n| d. E | f |\n\n```\nx. Y\n```\n"
    units = markdown_units(source, code_mode=CodeMode.BLOCK)
    assert [(u.kind, u.text, u.line_start, u.line_end) for u in units] == [
        (UnitKind.HEADING, "Title. With a period", 1, 1),
        (UnitKind.TABLE_ROW, "a. B | c", 3, 3),
        (UnitKind.TABLE_ROW, "d. E | f", 5, 5),
        (UnitKind.CODE, "x. Y", 7, 9),
    ]
    assert all(u.heading_path == ("Title. With a period",) for u in units[1:])


# --- sentence boundaries --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("Use e.g. rustc here. Next one.", ["Use e.g. rustc here.", "Next one."]),
        ("It is odd, i.e. The end is near.", ["It is odd, i.e. The end is near."]),
        ("Compare A vs. B today. Done.", ["Compare A vs. B today.", "Done."]),
        ("See (cf. Smith) and E.g. This. Ok.", ["See (cf. Smith) and E.g. This.", "Ok."]),
        ("We list foo, bar, etc. The next one starts.", ["We list foo, bar, etc.", "The next one starts."]),
        ("Files, etc. are fine here.", ["Files, etc. are fine here."]),
        ("It costs 1.5 units. Then 2.25 more.", ["It costs 1.5 units.", "Then 2.25 more."]),
        ("Install v1.2.3 now. Rust 1.70.0 is needed.", ["Install v1.2.3 now.", "Rust 1.70.0 is needed."]),
        ("See https://x.org/a.b?c=d. Then go.", ["See https://x.org/a.b?c=d.", "Then go."]),
        ("Open <https://x.org/a.html>. Then go.", ["Open https://x.org/a.html.", "Then go."]),
        ("Edit config.toml and run x.py build. Done.", ["Edit config.toml and run x.py build.", "Done."]),
        ("Call `foo.bar()` then `x. Y` now. Next.", ["Call foo.bar() then x. Y now.", "Next."]),
        ("Use the `?` operator. Or `panic!`. Ok.", ["Use the ? operator.", "Or panic!.", "Ok."]),
        ("See `x`. `rustc` is next.", ["See x.", "rustc is next."]),
        ("Such as `Go to a.com.` It helps.", ["Such as Go to a.com.", "It helps."]),
        ("What? Yes! No.", ["What?", "Yes!", "No."]),
        ('He said "done." Then left.', ['He said "done."', "Then left."]),
        ("(This is it.) Next one.", ["(This is it.)", "Next one."]),
        ("Wait... and then more.", ["Wait... and then more."]),
        ("Mr. Smith and Dr. Jones met.", ["Mr. Smith and Dr. Jones met."]),
        ("Text here.[^1] More text.\n\n[^1]: The note.", ["Text here.", "More text.", "The note."]),
    ],
)
def test_sentence_boundaries(source: str, expected: list[str]) -> None:
    assert sentences(source) == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # a line ending in a period ends the sentence, even before lowercase or "#"
        ("Help with this.\nit will print.", [("Help with this.", 1, 1), ("it will print.", 2, 2)]),
        ("It is a const.\nUnambig ones.", [("It is a const.", 1, 1), ("Unambig ones.", 2, 2)]),
        ("The case.\n#100051 shows it.", [("The case.", 1, 1), ("#100051 shows it.", 2, 2)]),
        # but not after an initial, an ellipsis, or an exclamation that closes an aside
        ("By Nicholas D.\nMatsakis and Amal.", [("By Nicholas D. Matsakis and Amal.", 1, 2)]),
        ("A workaround...\nsee the section.", [("A workaround... see the section.", 1, 2)]),
        ("(submit a PR!)\nand joining is free.", [("(submit a PR!) and joining is free.", 1, 2)]),
        ("Is it?\nYes it is.", [("Is it?", 1, 1), ("Yes it is.", 2, 2)]),
        ("Use e.g.\nrustc here.", [("Use e.g. rustc here.", 1, 2)]),
    ],
)
def test_semantic_line_breaks(source: str, expected: list[tuple[str, int, int]]) -> None:
    assert lines(source) == expected


# --- units ----------------------------------------------------------------------------------------------


def test_text_is_folded_and_empty_units_dropped() -> None:
    source = "# <b></b>\n\nMany   spaces\n\tand    lines.\n\n<span></span>\n\n| | |\n|-|-|\n"
    assert lines(source) == [("Many spaces and lines.", 3, 4)]


def test_units_carry_heading_paths() -> None:
    units = markdown_units("# A\n\n## B\n\nOne. Two.\n\n# C\n\nThree.\n")
    assert [(u.kind, u.text, u.heading_path) for u in units] == [
        (UnitKind.HEADING, "A", ()),
        (UnitKind.HEADING, "B", ("A",)),
        (UnitKind.SENTENCE, "One.", ("A", "B")),
        (UnitKind.SENTENCE, "Two.", ("A", "B")),
        (UnitKind.HEADING, "C", ()),
        (UnitKind.SENTENCE, "Three.", ("C",)),
    ]


def test_markdown_units_is_both_stages() -> None:
    source = "# T\n\nOne. Two.\n\n```\ncode\n```\n"
    for mode in CodeMode:
        assert markdown_units(source, code_mode=mode) == split_sentences(
            parse_markdown(source, code_mode=mode)
        )


def test_units_are_frozen() -> None:
    (unit,) = markdown_units("Hi.")
    assert unit == TextUnit("Hi.", UnitKind.SENTENCE, (), 1, 1)
    with pytest.raises(AttributeError):
        unit.text = "changed"  # type: ignore[misc]


# --- sentence_spans and odd input -----------------------------------------------------------------------


def test_sentence_spans_are_trimmed_offsets() -> None:
    text = "  One two.   Three four.\n Five. "
    assert [text[s:e] for s, e in sentence_spans(text)] == ["One two.", "Three four.", "Five."]


@pytest.mark.parametrize("text", ["", "   ", "\n\n", ".", "!?", "\0. \0.", "lone \ud800 surrogate. Next."])
def test_sentence_spans_never_raise(text: str) -> None:
    spans = sentence_spans(text)
    assert all(0 <= s < e <= len(text) and text[s:e].strip() for s, e in spans)


def test_code_span_covering_everything() -> None:
    text = "a. B. c."
    assert sentence_spans(text, ((0, len(text)),)) == [(0, len(text))]


def test_huge_paragraph_is_split_in_linear_time() -> None:
    source = "Word one here.\n" * 100_000  # one 1.5 MB paragraph, every line a sentence
    units = markdown_units(source)
    assert len(units) == 100_000
    assert (units[-1].line_start, units[-1].line_end) == (100_000, 100_000)


@pytest.mark.parametrize(
    "source",
    ["", "---\n---\n", "```\nopen fence", "Word. " * 200_000, "a" * 1_000_000, "- " * 10_000 + "x. Y."],
)
def test_odd_documents_never_raise(source: str) -> None:
    for mode in CodeMode:
        markdown_units(source, code_mode=mode)
