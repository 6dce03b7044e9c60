"""Parse stage: block structure, plain text, heading paths, titles and odd input."""

from __future__ import annotations

import pytest

from indexer.markdown import Block, CodeMode, UnitKind, parse_markdown


def blocks(source: str, code_mode: CodeMode = CodeMode.SKIP) -> list[Block]:
    return parse_markdown(source, code_mode=code_mode).blocks


def texts(source: str) -> list[str]:
    return [" ".join(b.text.split()) for b in blocks(source)]


def only_text(source: str) -> str:
    (block,) = blocks(source)
    return " ".join(block.text.split())


# --- title and front matter -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "title"),
    [
        ('---\ntitle: "Quoted title"\n---\n# Heading\n', "Quoted title"),
        ("---\ntitle: Plain  title\nauthor: x\n---\n", "Plain title"),
        ("---\ntitle: 'Single'\n---\n", "Single"),
        ("---\nauthor: x\n---\nText.\n\n# First *one*\n\n# Second\n", "First one"),
        ("## Not level one\n\nText.\n", None),
        ("", None),
        ("Setext title\n============\n", "Setext title"),
    ],
)
def test_title(source: str, title: str | None) -> None:
    assert parse_markdown(source).title == title


def test_front_matter_is_not_indexed_but_counts_lines() -> None:
    parsed = parse_markdown("---\ntitle: T\ndescription: secret words\n---\n# Intro\n\nBody here.\n")
    assert [(b.kind, b.text, b.line_start) for b in parsed.blocks] == [
        (UnitKind.HEADING, "Intro", 5),
        (UnitKind.SENTENCE, "Body here.", 7),
    ]


def test_byte_order_mark_does_not_hide_front_matter() -> None:
    parsed = parse_markdown("\ufeff---\ntitle: T\n---\nBody.\n")
    assert parsed.title == "T"
    assert [(b.text, b.line_start) for b in parsed.blocks] == [("Body.", 4)]


# --- headings -----------------------------------------------------------------------------------------


def test_heading_paths_follow_levels() -> None:
    source = "# A\n\na.\n\n## B\n\nb.\n\n### C\n\nc.\n\n## D\n\nd.\n\n# E\n\n#### F\n\nf.\n"
    got = [(b.kind, b.text, b.heading_path) for b in blocks(source)]
    assert got == [
        (UnitKind.HEADING, "A", ()),
        (UnitKind.SENTENCE, "a.", ("A",)),
        (UnitKind.HEADING, "B", ("A",)),
        (UnitKind.SENTENCE, "b.", ("A", "B")),
        (UnitKind.HEADING, "C", ("A", "B")),
        (UnitKind.SENTENCE, "c.", ("A", "B", "C")),
        (UnitKind.HEADING, "D", ("A",)),
        (UnitKind.SENTENCE, "d.", ("A", "D")),
        (UnitKind.HEADING, "E", ()),
        (UnitKind.HEADING, "F", ("E",)),
        (UnitKind.SENTENCE, "f.", ("E", "F")),
    ]


def test_heading_text_is_plain_and_setext_spans_lines() -> None:
    got = [(b.text, b.line_start, b.line_end) for b in blocks("# The `x.py` *tool* #\n\nTwo\nlines\n---\n")]
    assert got == [("The x.py tool", 1, 1), ("Two\nlines", 3, 4)]  # the underline is not text


def test_a_headings_anchor_attributes_are_no_part_of_its_title() -> None:
    source = (
        "# Guide {#guide}\n\n## Is it fast? {#is-it-fast .faq}\n\ntext\n\n"
        "## Style {: .wide}\n\n## {{ name }} docs\n"
    )
    got = [(b.text, b.heading_path) for b in blocks(source)]
    assert got == [
        ("Guide", ()),
        ("Is it fast?", ("Guide",)),
        ("text", ("Guide", "Is it fast?")),
        ("Style", ("Guide",)),
        ("{{ name }} docs", ("Guide",)),
    ]
    assert parse_markdown("# Guide {#guide}\n").title == "Guide"


def test_custom_container_fences_are_markup_and_their_text_keeps_its_lines() -> None:
    source = "# G\n\n::: tip Note\nKeep it short.\n:::\n\n:::\n\n:::warning\nCareful.\n:::\n\nA ::: B.\n"
    got = [(b.kind, b.text.strip(), b.line_start) for b in blocks(source)]
    assert got == [
        (UnitKind.HEADING, "G", 1),
        (UnitKind.SENTENCE, "Keep it short.", 3),
        (UnitKind.SENTENCE, "Careful.", 9),
        (UnitKind.SENTENCE, "A ::: B.", 13),
    ]


def test_a_details_summary_titles_what_it_hides_until_the_details_close() -> None:
    source = (
        "# Kafka\n\n## FAQ\n\n<details>\n  <summary>Does it work with **Schema Registry**?</summary>\n\n"
        "Yes. It uses converters.\n\n</details>\n\n<details><summary>\nDebezium?\n</summary>\n\n"
        "### Setup\n\nUse a transform.\n\n</details>\n\nAfter the FAQ.\n\n<div>no summary</div>\n\n## Next\n"
    )
    got = [
        (b.kind, " ".join(b.text.split()), b.heading_path, b.line_start, b.line_end) for b in blocks(source)
    ]
    faq = ("Kafka", "FAQ")
    assert got == [
        (UnitKind.HEADING, "Kafka", (), 1, 1),
        (UnitKind.HEADING, "FAQ", ("Kafka",), 3, 3),
        (UnitKind.HEADING, "Does it work with Schema Registry?", faq, 6, 6),
        (UnitKind.SENTENCE, "Yes. It uses converters.", (*faq, "Does it work with Schema Registry?"), 8, 8),
        (UnitKind.HEADING, "Debezium?", faq, 12, 14),
        (UnitKind.HEADING, "Setup", (*faq, "Debezium?"), 16, 16),
        (UnitKind.SENTENCE, "Use a transform.", (*faq, "Debezium?", "Setup"), 18, 18),
        (UnitKind.SENTENCE, "After the FAQ.", faq, 22, 22),
        (UnitKind.HEADING, "Next", ("Kafka",), 26, 26),
    ]


def test_a_stray_details_close_or_an_empty_summary_changes_no_heading_path() -> None:
    source = "# A\n\n</details>\n\ntext\n\n<details><summary> </summary>\n\nmore\n"
    assert [(b.text, b.heading_path) for b in blocks(source)] == [
        ("A", ()),
        ("text", ("A",)),
        ("more", ("A",)),
    ]


def test_only_a_summary_inside_details_titles_and_only_the_first_four_levels_of_them() -> None:
    nested = "".join(f"<details><summary>Level {i}</summary>\n\nText {i}.\n\n" for i in range(1, 7))
    source = (
        "# A\n\n<summary>Stray</summary>\n\nfree\n\n"
        "<details><summary>First</summary><summary>Second</summary>\n\nanswer\n\n</details>\n\n" + nested
    )
    got = [(b.text, b.heading_path) for b in blocks(source)]
    levels = ("A", "Level 1", "Level 2", "Level 3", "Level 4")
    assert got[:5] == [
        ("A", ()),
        ("free", ("A",)),
        ("First", ("A",)),
        ("Second", ("A",)),
        ("answer", ("A", "Second")),
    ]
    assert got[-2:] == [("Text 5.", levels), ("Text 6.", levels)]
    assert max(len(path) for _, path in got) == len(levels)


def test_a_github_alerts_marker_is_markup_in_a_quote_and_its_text_keeps_its_lines() -> None:
    source = (
        "# A\n\n> [!NOTE]\n> Apps go out of sync.\n\n> [!warning] Careful now.\n\n"
        "> [!TIP]\n>\n> Use tabs.\n\n[!NOTE] stays outside a quote.\n"
    )
    got = [
        (b.text.strip(), b.line_start + b.text.count("\n", 0, len(b.text) - len(b.text.lstrip())))
        for b in blocks(source)
    ]
    assert got == [
        ("A", 1),
        ("Apps go out of sync.", 4),
        ("Careful now.", 6),
        ("Use tabs.", 10),
        ("[!NOTE] stays outside a quote.", 12),
    ]


def test_empty_heading_does_not_enter_the_path() -> None:
    got = [(b.text, b.heading_path) for b in blocks("# A\n\n##\n\ntext\n")]
    assert got == [("A", ()), ("", ("A",)), ("text", ("A",))]


# --- lists, quotes, tables ------------------------------------------------------------------------------


def test_list_items_are_separate_blocks_with_their_lines() -> None:
    source = (
        "Intro:\n\n- first item\n  continues here\n- second\n  1. nested one\n  2. nested two\n\n3) third\n"
    )
    got = [(b.text, b.line_start, b.line_end) for b in blocks(source)]
    assert got == [
        ("Intro:", 1, 1),
        ("first item\ncontinues here", 3, 4),
        ("second", 5, 5),
        ("nested one", 6, 6),
        ("nested two", 7, 7),
        ("third", 9, 9),
    ]


def test_loose_list_item_with_two_paragraphs() -> None:
    got = [(b.text, b.line_start) for b in blocks("- one\n\n  still one\n- two\n")]
    assert got == [("one", 1), ("still one", 3), ("two", 4)]


def test_block_quotes_nested_and_lazy() -> None:
    source = "> quoted line\nlazy continuation\n>\n> > inner quote\n> > - inner item\n"
    got = [(b.text, b.line_start, b.line_end) for b in blocks(source)]
    assert got == [
        ("quoted line\nlazy continuation", 1, 2),
        ("inner quote", 4, 4),
        ("inner item", 5, 5),
    ]


def test_table_rows_join_cells() -> None:
    source = "Before.\n\n| Name | Meaning |\n|------|:-------:|\n| `a\\|b` | **bold** [x](y) |\n| | empty |\n"
    got = [(b.kind, b.text, b.line_start, b.line_end) for b in blocks(source)]
    assert got == [
        (UnitKind.SENTENCE, "Before.", 1, 1),
        (UnitKind.TABLE_ROW, "Name | Meaning", 3, 3),
        (UnitKind.TABLE_ROW, "a|b | bold x", 5, 5),
        (UnitKind.TABLE_ROW, " | empty", 6, 6),
    ]


# --- code -----------------------------------------------------------------------------------------------

CODE_DOC = "\n".join(
    [
        "Text.",
        "",
        "```rust",
        "fn main() {",
        "    x.y();",
        "}",
        "```",
        "",
        "    indented code",
        "",
        "~~~",
        "unclosed fence. Not prose.",
        "",
    ]
)


def test_code_is_skipped_in_skip_mode() -> None:
    assert [b.text for b in blocks(CODE_DOC, CodeMode.SKIP)] == ["Text."]


def test_code_blocks_are_units_by_default() -> None:
    assert [b.kind for b in parse_markdown(CODE_DOC).blocks].count(UnitKind.CODE) == 3


def test_code_blocks_are_whole_units_in_block_mode() -> None:
    got = [(b.kind, b.text, b.line_start, b.line_end) for b in blocks(CODE_DOC, CodeMode.BLOCK)]
    assert got == [
        (UnitKind.SENTENCE, "Text.", 1, 1),
        (UnitKind.CODE, "fn main() {\n    x.y();\n}\n", 3, 7),
        (UnitKind.CODE, "indented code\n", 9, 9),
        (UnitKind.CODE, "unclosed fence. Not prose.\n", 11, 12),
    ]


# --- inline markup --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "text"),
    [
        ("Some *em*, **strong**, _under_ and __both__.", "Some em, strong, under and both."),
        ("snake_case_name and a * b and 2 * 3 stay.", "snake_case_name and a * b and 2 * 3 stay."),
        ('See [the docs](https://x.org/a.html "Title") now.', "See the docs now."),
        ("An ![alt *text*](img.png) image.", "An alt text image."),
        ("Badge [![CI](ci.svg)](https://ci) here.", "Badge CI here."),
        (
            "Go to <https://example.com/a?b=c> or <me@example.com>.",
            "Go to https://example.com/a?b=c or me@example.com.",
        ),
        ("Run `x.py` and ``a ` tick`` now.", "Run x.py and a ` tick now."),
        ("Wrap them in backticks (`` ` ``) here.", "Wrap them in backticks (`) here."),
        ("Code `[not](a link)` stays.", "Code [not](a link) stays."),
        ("Escapes: \\*star\\* \\_u\\_ \\[b\\] \\`t\\`.", "Escapes: *star* _u_ [b] `t`."),
        ("Entities &amp; &lt;T&gt; &#x41; &copy; &bogus; ok.", "Entities & <T> A © &bogus; ok."),
        ('Tags <span class="k">kept text</span><br/> and <!-- hidden --> gone.', "Tags kept text and gone."),
        ("Unknown [ref] and [a][nope] stay literal.", "Unknown [ref] and [a][nope] stay literal."),
        ("Slices [T] and a[i] stay.", "Slices [T] and a[i] stay."),
        ("Ref [full][r], [r][] and [R].\n\n[r]: https://example.com", "Ref full, r and R."),
        ("Footnote here.[^note] More.\n\n[^note]: The note.", "Footnote here. More."),
        (
            "{{#include ../src/main.rs:2:4}} is mdBook text.",
            "{{#include ../src/main.rs:2:4}} is mdBook text.",
        ),
        ("Unmatched ` tick and [bracket and *star.", "Unmatched ` tick and [bracket and star."),
    ],
)
def test_inline_markup_is_stripped(source: str, text: str) -> None:
    assert texts(source)[0] == text


def test_code_spans_point_at_code_text() -> None:
    (block,) = blocks("Call `foo.bar()` then *see* `x.py`.")
    assert [block.text[s:e] for s, e in block.code_spans] == ["foo.bar()", "x.py"]


def test_html_blocks_are_skipped_but_markdown_inside_details_is_not() -> None:
    source = '<div class="warning">\nNot *indexed*.\n</div>\n\n<details>\n\nInside details.\n\n</details>\n'
    assert texts(source) == ["Inside details."]


def test_newlines_in_text_match_source_lines() -> None:
    source = "A [link\nwith](http://x\n'title\nlines') and <span\nclass=x>tag</span>\nend.\n"
    (block,) = blocks(source)
    assert block.text.count("\n") == block.line_end - block.line_start == 5


# --- odd input ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "source",
    [
        "",
        " \n\t\n",
        "---\ntitle: only\n---\n",
        "---\ntitle: unclosed front matter\n",
        "```\nunclosed",
        "".join("  " * i + "- deep\n" for i in range(300)),
        ">" * 5000 + " deep quote",
        "[" * 50_000 + "]" * 50_000,
        "*" * 50_000 + "x" + "*" * 50_000,
        "a\0b\r\nc\rd\x0c\u2028e",
        "lone \ud800 surrogate",
        "| a |\n|",
        "word " * 250_000,
    ],
)
def test_odd_input_never_raises(source: str) -> None:
    for mode in CodeMode:
        parse_markdown(source, code_mode=mode)


@pytest.mark.parametrize(
    "source",
    [
        "".join("`" * i + " x " for i in range(1, 1400)),  # ~1 MB of backtick runs that never close
        "x <!-- x " * 100_000,  # unclosed HTML comments
        'x [a](b "x ' * 100_000,  # unclosed link titles
        "x [a](<x " * 100_000,
    ],
)
def test_hostile_inline_markup_stays_fast(source: str) -> None:
    """Each case took seconds to minutes with an uncapped scan per opener; now well under a second."""
    (block,) = parse_markdown(source).blocks
    assert block.text


def test_an_mkdocs_admonitions_body_is_prose_under_its_section_and_keeps_its_lines() -> None:
    source = (
        '# Guide\n\n!!! note "Heads up"\n    The cache lives in the target folder.\n\n    It grows large.\n\n'
        "Back to prose.\n\n??? tip\n    Outer tip.\n\n"
        "    !!! warning\n        Inner warning.\n\n    More outer.\n\n"
        "```\n!!! note\n    not a box\n```\n\n    indented code stays code\n"
    )
    got = [(b.kind, " ".join(b.text.split()), b.line_start) for b in blocks(source, CodeMode.BLOCK)]
    assert got == [
        (UnitKind.HEADING, "Guide", 1),
        (UnitKind.SENTENCE, "The cache lives in the target folder.", 4),
        (UnitKind.SENTENCE, "It grows large.", 6),
        (UnitKind.SENTENCE, "Back to prose.", 8),
        (UnitKind.SENTENCE, "Outer tip.", 11),
        (UnitKind.SENTENCE, "Inner warning.", 14),
        (UnitKind.SENTENCE, "More outer.", 16),
        (UnitKind.CODE, "!!! note not a box", 18),
        (UnitKind.CODE, "indented code stays code", 23),
    ]


def test_a_paragraph_of_images_alone_is_a_figure_and_makes_no_unit() -> None:
    source = (
        "# What is T?\n\n![Architecture](arch.png)\n\n[![Build](b.svg)](ci) [![PyPI](v.svg)](pypi)\n\n"
        "T is a proxy, drawn as ![a box](box.png) here.\n\n![Flow](flow.png)\n```\nt run\n```\n"
    )
    got = [(b.kind, b.text, b.intro) for b in blocks(source, CodeMode.BLOCK)]
    assert got == [
        (UnitKind.HEADING, "What is T?", None),
        (UnitKind.SENTENCE, "T is a proxy, drawn as a box here.", None),
        (UnitKind.CODE, "t run\n", None),
    ]
