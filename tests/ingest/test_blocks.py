"""The Markdown/MDX block syntax that ingest's scanner and retrieval share."""

from __future__ import annotations

import pytest

from bookwise.ingest import blocks


def test_fence_spans_pair_each_opening_with_its_closing_line() -> None:
    lines = [
        "text",
        '```python title="a.py"',
        "~~~",  # another character: code, not a closing line
        "```",
        "between",
        "    ~~~~",  # any indent opens, as Docusaurus' MDX reads a fence inside a JSX wrapper
        "~~~ not a close",  # a closing line carries no info string
        "~~~",  # shorter than the opening: code
        "~~~~~",
        "after",
    ]
    assert blocks.fence_spans(lines) == [(1, 3), (5, 8)]


def test_an_unclosed_fence_runs_to_the_last_line() -> None:
    assert blocks.fence_spans(["a", "````", "```", "b"]) == [(1, 3)]
    assert blocks.fence_spans(["```"]) == [(0, 0)]
    assert blocks.fence_spans([]) == []


def test_fence_lang_title_and_unindent() -> None:
    fence = blocks.fence_opening("  ```jsx title='src/App.js' showLineNumbers")
    assert fence is not None
    assert (fence.indent, fence.marker, fence.lang, fence.title) == ("  ", "```", "jsx", "src/App.js")
    assert fence.unindent("    x = 1") == "  x = 1"
    assert fence.unindent(" y") == "y"  # less indented than the fence: its own indent goes
    assert blocks.fence_opening("``not a fence") is None


@pytest.mark.parametrize(
    ("line", "heading"),
    [("## Title ##", (2, "Title")), ("# C#", (1, "C#")), ("#NoSpace", None), ("    # code", None)],
)
def test_atx_headings(line: str, heading: tuple[int, str] | None) -> None:
    assert blocks.atx_heading(line) == heading


def test_setext_tables_admonitions_and_mdx_lines() -> None:
    assert (blocks.setext_level("==="), blocks.setext_level("--- "), blocks.setext_level("- a")) == (
        1,
        2,
        None,
    )
    assert blocks.is_table_row("| a | b |") and blocks.is_table_row(":--- | ---:")
    assert not blocks.is_table_row("a | b")
    assert blocks.admonition_opening(":::tip[Be careful]") == ("tip", "Be careful")
    assert blocks.admonition_opening(":::Note Old style") == ("Note", "Old style")
    assert blocks.admonition_opening(":::details") is None  # not an admonition keyword
    assert blocks.closes_admonition("::::") and not blocks.closes_admonition(":::tip")
    assert blocks.partial_import("import Intro from './_intro.mdx';") == ("Intro", "./_intro.mdx")
    assert blocks.self_closing_component("<Intro />") == "Intro"
    assert blocks.opens_multiline_tag("<Tabs") and not blocks.opens_multiline_tag("<Tabs>")
    assert (
        blocks.comment_closer("  <!-- x"),
        blocks.comment_closer("{/* x"),
        blocks.comment_closer("x"),
    ) == (
        "-->",
        "*/}",
        None,
    )
    assert blocks.is_magic_comment("  // highlight-next-line") and not blocks.is_magic_comment("// highlight")


def test_split_blocks_keeps_a_fenced_block_whole() -> None:
    markdown = (
        "Intro line\nsecond line\n\n\n```py\nx = 1\n\ny = 2\n```\nAfter the fence.\n\n"
        "- a\n- b\n~~~\nopen to the end\n\n"
    )
    assert blocks.split_blocks(markdown) == [
        "Intro line\nsecond line",
        "```py\nx = 1\n\ny = 2\n```",
        "After the fence.",
        "- a\n- b",
        "~~~\nopen to the end\n\n",
    ]
    assert blocks.split_blocks("") == []
