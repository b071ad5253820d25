import pytest

from bookwise.ingest.headings import heading_id, parse_heading
from bookwise.ingest.slugger import GithubSlugger, slugify

# Verified against Docusaurus 3.10.2 / github-slugger 1.5.0 (notes/stack-facts.md §3a).
CASES = [
    ("Hello `code` and [link](https://x) **bold**", "hello-code-and-link-bold"),
    ("Émoji 🎉 & Ünïcode — dash “quotes”", "émoji---ünïcode--dash-quotes"),
    ("C++ / C# vs. Node.js (v18)!", "c--c-vs-nodejs-v18"),
    ("1. Numbered heading", "1-numbered-heading"),
    ("_private_ and snake_case", "private-and-snake_case"),
    ("With ![alt text](pathname:///img.png) image", "with-alt-text-image"),
    ("Escaped \\# hash &amp; entity", "escaped--hash--entity"),
    ("x² + y½", "x--y"),
    ("<Highlight>JSX</Highlight> in heading", "jsx-in-heading"),
    ("a  b", "a--b"),
    ("`isAction`", "isaction"),
    ("Ⓐ circled", "ⓐ-circled"),
]


@pytest.mark.parametrize(("source", "expected"), CASES)
def test_heading_ids_match_docusaurus(source: str, expected: str) -> None:
    assert heading_id(parse_heading(source), GithubSlugger()) == expected


def test_duplicates_get_numbered_like_github_slugger() -> None:
    slugger = GithubSlugger()
    assert [slugger.slug(t) for t in ("Hello World", "Hello World", "Hello World-1")] == [
        "hello-world",
        "hello-world-1",
        "hello-world-1-1",
    ]
    assert [slugger.slug(t) for t in ("Über", "über")] == ["über", "über-1"]


def test_explicit_ids_do_not_register_in_the_slugger() -> None:
    slugger = GithubSlugger()
    ids = [
        heading_id(parse_heading(raw), slugger) for raw in ("Custom Id", "Other {#custom-id}", "Custom Id")
    ]
    assert ids == ["custom-id", "custom-id", "custom-id-1"]


@pytest.mark.parametrize(
    ("raw", "source", "explicit"),
    [
        ("Custom {#my-custom-id}", "Custom", "my-custom-id"),
        ("Comment id {/* #mdx-comment-id */}", "Comment id", "mdx-comment-id"),
        ("Html comment <!-- #html-id -->", "Html comment", None),
        ("Not an id {/* just a comment */}", "Not an id {/* just a comment */}", None),
        ("`code` in heading {#x}", "`code` in heading", "x"),
    ],
)
def test_explicit_id_syntaxes(raw: str, source: str, explicit: str | None) -> None:
    parsed = parse_heading(raw)
    assert (parsed.source, parsed.explicit_id) == (source, explicit)


def test_maintain_case_keeps_case() -> None:
    assert slugify("Hello World", maintain_case=True) == "Hello-World"


def test_html_comment_id_is_not_an_id_and_leaves_a_trailing_dash() -> None:
    """Docusaurus 3.10.2 (mdx1Compat.comments) renders `## Text <!-- #x -->` with id `text-`."""
    assert heading_id(parse_heading("Html comment id <!-- #html-comment-id -->"), GithubSlugger()) == (
        "html-comment-id-"
    )
