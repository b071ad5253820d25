"""Markdown/MDX → sections: structure, anchors, kept and dropped content, offsets."""

from pathlib import Path

from bookwise.ingest.documents import DocumentBuilder
from bookwise.ingest.models import Document
from bookwise.ingest.site import DocsSource, SiteConfig
from bookwise.ingest.source import parse_front_matter


def build(text: str, name: str = "page.mdx", tmp: Path | None = None) -> Document:
    site = SiteConfig(site_dir=tmp or Path("/nonexistent"), base_url="/", route_base_path="docs")
    directory = tmp or Path("/nonexistent/docs")
    builder = DocumentBuilder(site, 1, 2, 10_000_000)
    parsed = parse_front_matter(text, name)
    return builder.build(DocsSource(directory, "current", "en", "/docs"), directory / name, parsed)


def anchors(doc: Document) -> list[tuple[str, int, str]]:
    return [(s.heading, s.level, s.anchor) for s in doc.sections]


def test_code_fence_hash_lines_are_not_headings() -> None:
    doc = build("## Real\n\n```bash\n# not a heading\n## nor this\n```\n\n~~~\n# still code\n~~~\n")
    assert anchors(doc) == [("Real", 2, "real")]
    assert "# not a heading" in doc.sections[0].blocks[0].text


def test_h1_consumes_its_slug_and_is_cited_by_page_url() -> None:
    doc = build("# Overview\n\nIntro text.\n\n## Overview\n\nMore.\n")
    assert doc.title == "Overview"
    assert anchors(doc) == [("Overview", 1, ""), ("Overview", 2, "overview-1")]


def test_intro_section_and_front_matter_title() -> None:
    doc = build(
        "---\ntitle: The Title\ndescription: Desc\ntags: [a, {label: b}]\n---\nIntro here.\n\n## Next\n\nx\n"
    )
    assert doc.title == "The Title"
    assert doc.description == "Desc"
    assert doc.tags == ("a", "b")
    assert anchors(doc) == [("", 1, ""), ("Next", 2, "next")]
    assert doc.sections[1].breadcrumb == ("The Title",)


def test_skipped_levels_and_breadcrumbs() -> None:
    doc = build("# Top\n\n#### Deep\n\ntext\n\n## Mid\n\n### Low\n\nt\n")
    crumbs = {s.heading: s.breadcrumb for s in doc.sections}
    assert crumbs["Deep"] == ("Top",)
    assert crumbs["Low"] == ("Top", "Mid")


def test_setext_headings() -> None:
    doc = build("Title Line\n==========\n\nSub heading\n-----------\n\nbody\n\n---\n\nafter rule\n")
    assert anchors(doc) == [("Title Line", 1, ""), ("Sub heading", 2, "sub-heading")]
    assert "after rule" in doc.sections[1].blocks[-1].text


def test_mdx_is_cleaned_but_text_is_kept() -> None:
    text = (
        "import Tabs from '@theme/Tabs';\nimport TabItem from '@theme/TabItem';\n\n"
        "export const meta = {\n  a: 1,\n};\n\n"
        "## Install {#install}\n\n"
        "{/* an MDX comment */}\n<!-- an HTML comment -->\n\n"
        '<Tabs groupId="pm">\n<TabItem value="npm" label="npm" default>\n\nRun npm install.\n\n</TabItem>\n'
        '<TabItem value="yarn" label="Yarn">\n\nRun yarn add.\n\n</TabItem>\n</Tabs>\n\n'
        "<details>\n<summary>More details</summary>\n\nHidden text.\n\n</details>\n\n"
        ":::tip[Custom **title**]\n\nTip body.\n\n:::\n\n"
        "| a | b |\n|---|---|\n| 1 | 2 |\n\n"
        '```js title="hello.js"\nconsole.log(1)\n```\n'
    )
    doc = build(text)
    (section,) = doc.sections
    body = "\n".join(b.text for b in section.blocks)
    for kept in (
        "Run npm install.",
        "Run yarn add.",
        "Yarn:",
        "More details",
        "Hidden text.",
        "Tip body.",
        "**Tip: Custom **title****",
        "| 1 | 2 |",
        'title="hello.js"',
        "console.log(1)",
    ):
        assert kept in body, kept
    for dropped in (
        "import",
        "export const",
        "MDX comment",
        "HTML comment",
        "<Tabs",
        "</TabItem>",
        "<details>",
    ):
        assert dropped not in body, dropped
    assert section.anchor == "install"
    flags = section.flags
    assert (flags.has_code, flags.has_table, flags.has_admonition) == (True, True, True)


def test_an_mdx_code_block_is_read_as_the_page_own_mdx_regression() -> None:
    """Docusaurus renders an ``mdx-code-block`` fence's content as MDX. Read as code, an answer about
    C# highlighting quoted "```mdx-code-block <BrowserWindow> ```" twice."""
    text = (
        "## Languages\n\nSome text.\n\n```mdx-code-block\nimport Tabs from '@theme/Tabs';\n\n"
        "<BrowserWindow>\n```\n\nInside the window.\n\n```mdx-code-block\n</BrowserWindow>\n```\n\n"
        "```js\nconst a = 1;\n```\n"
    )
    (section,) = build(text).sections
    body = "\n".join(b.text for b in section.blocks)
    assert "Inside the window." in body and "const a = 1;" in body
    for dropped in ("mdx-code-block", "BrowserWindow", "import Tabs"):
        assert dropped not in body, dropped
    assert section.flags.has_code


def test_a_live_demo_of_the_example_above_quoted_as_an_answer_regression() -> None:
    """ "How do I put a danger callout inside an info callout?" led with "**Danger** Some **content**
    with _Markdown_ `syntax`. Check this `api`.": the page shows each admonition's source, then renders
    it in a ``<BrowserWindow>``, and the rendered placeholder was indexed as the page's own text. A
    demo that repeats the code block right above it is dropped; one that differs is kept."""
    text = (
        "## Admonitions\n\nExample:\n\n```md\n:::danger\n\nSome **content** here.\n\n:::\n```\n\n"
        "```mdx-code-block\n<BrowserWindow>\n\n:::danger\n\nSome **content** here.\n\n:::\n\n"
        "</BrowserWindow>\n```\n\n"
        "```md\n:::tip\n\nA tip.\n\n:::\n```\n\n"
        "```mdx-code-block\n<BrowserWindow>\n\n:::tip\n\nA different tip, rendered.\n\n:::\n\n"
        "</BrowserWindow>\n```\n"
    )
    (section,) = build(text).sections
    kinds_and_text = [(b.kind, b.text) for b in section.blocks]
    assert ("admonition", "**Danger**") not in kinds_and_text
    assert sum("Some **content** here." in t for _, t in kinds_and_text) == 1  # in the code only
    assert ("admonition", "**Tip**") in kinds_and_text
    assert any("A different tip, rendered." in t for _, t in kinds_and_text)


def test_magic_comments_quoted_in_code_regression() -> None:
    """Quoted code carried ``// highlight-start`` and ``// highlight-end`` lines, which the site never
    shows (Docusaurus strips its magic comments) and a reader's copy button would paste."""
    text = (
        "## Config\n\n```js\nexport default {\n  // highlight-next-line\n  a: 1,\n  // highlight-start\n"
        "  b: 2,\n  // highlight-end\n  // a real comment about highlight-start\n};\n```\n\n"
        "```jsx\n{/* highlight-start */}\n<Tabs />\n{/* highlight-end */}\n```\n\n"
        "```bash\n# highlight-next-line\nnpm run build\n```\n\n"
        "```html\n<!-- highlight-start -->\n<p>x</p>\n<!-- highlight-end -->\n```\n"
    )
    (section,) = build(text).sections
    body = "\n".join(b.text for b in section.blocks)
    assert "highlight-next-line" not in body and "highlight-end" not in body
    assert "  a: 1,\n  b: 2,\n  // a real comment about highlight-start\n};" in body
    assert "<Tabs />" in body and "npm run build" in body and "<p>x</p>" in body


def test_char_offsets_point_into_the_source_file() -> None:
    text = "---\ntitle: T\n---\n\n## First\n\nAlpha paragraph.\n\n## Second\n\nBeta paragraph.\n"
    doc = build(text)
    first, second = doc.sections
    assert text[first.char_start : first.char_end].startswith("## First")
    block = second.blocks[0]
    assert text[block.char_start : block.char_end] == "Beta paragraph."


def test_partials_are_inlined_with_their_own_slugger(tmp_path: Path) -> None:
    (tmp_path / "_shared.mdx").write_text("## Setup\n\nShared text.\n", encoding="utf-8")
    doc = build("import Shared from './_shared.mdx';\n\n## Setup\n\nMine.\n\n<Shared />\n", tmp=tmp_path)
    assert anchors(doc) == [("Setup", 2, "setup"), ("Setup", 2, "setup")]
    assert doc.sections[1].blocks[0].text == "Shared text."
    assert len({s.key for s in doc.sections}) == 2


def test_unclosed_comment_is_a_markdown_error() -> None:
    import pytest

    from bookwise.errors import MarkdownError

    with pytest.raises(MarkdownError) as info:
        build("## A\n\ntext\n\n{/* never closed\n\nmore\n")
    assert info.value.line is not None and info.value.line >= 5


def test_jsx_inside_inline_code_is_kept_as_text() -> None:
    # Regression: `<Provider>` in backticks was stripped as a JSX tag, losing the component name from
    # chunk text (and from heading slugs: Docusaurus keeps inline code content).
    doc = build("## Using `<Provider store>`\n\nThe `<Provider>` component <b>wraps</b> the app.\n")
    assert anchors(doc) == [("Using `<Provider store>`", 2, "using-provider-store")]
    assert doc.sections[0].blocks[0].text == "The `<Provider>` component wraps the app."


def test_a_demo_fence_wrapped_by_two_mdx_code_blocks_read_twice_regression() -> None:
    """ "Can the gutter numbers begin at 3?" quoted the `showLineNumbers=3` example, then the same code
    again: the page renders it between an ``mdx-code-block`` that opens ``<BrowserWindow>`` and one
    that closes it, a form of live demo the inline check did not see. A wrapped fence that repeats the
    example above is dropped; one that differs (a live playground) is kept."""
    example = "```jsx showLineNumbers=3\nexport default function A() {\n  return <div>Foo</div>;\n}\n```"
    text = (
        f"## Line numbers\n\nPass a custom start:\n\n````md\n{example}\n````\n\n"
        f"```mdx-code-block\n<BrowserWindow>\n```\n\n{example}\n\n```mdx-code-block\n</BrowserWindow>\n```\n\n"
        "Try it live:\n\n```mdx-code-block\n<BrowserWindow>\n```\n\n"
        "```jsx live\nfunction Clock() {\n  return <p>Now</p>;\n}\n```\n\n"
        "```mdx-code-block\n</BrowserWindow>\n```\n"
    )
    (section,) = build(text).sections
    code = [b.text for b in section.blocks if b.kind == "code"]
    assert len(code) == 2, code
    assert code[0].startswith("````md") and "function Clock()" in code[1]
