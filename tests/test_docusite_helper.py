"""The fixture-site helper builds the real Docusaurus site and reads what it rendered.

Slow the first time (npm ci + build, ~1-2 min); later runs reuse node_modules and the build.
"""

from __future__ import annotations

import pytest

from docusite import FIXTURE_SITE, BuiltPage, build_fixture_site, parse_built_page, read_built_pages

pytestmark = pytest.mark.docusaurus

BASE = "/mysite/docs"


@pytest.fixture(scope="module")
def pages() -> dict[str, BuiltPage]:
    return read_built_pages(build_fixture_site())


# url -> (doc id, heading ids in document order) for every doc page of the fixture site.
EXPECTED: dict[str, tuple[str | None, tuple[str, ...]]] = {
    f"{BASE}/intro": ("intro", ("what-is-inside",)),
    f"{BASE}/CamelCase": ("CamelCase", ("mixed-case-heading",)),
    # Number prefixes are stripped from folders and files; category indexes end with "/".
    f"{BASE}/guides/": ("guides/index", ("pick-a-guide",)),
    f"{BASE}/guides/install": ("guides/install", ("requirements", "steps")),
    # "02-things/things.md": the raw folder name is "02-things", so things.md is not an index.
    f"{BASE}/things/things": ("things/things", ("thing-one",)),
    f"{BASE}/numbered/first": ("numbered/first", ("about-first",)),
    f"{BASE}/numbered/1.5-dotted": ("numbered/1.5-dotted", ("about-dotted",)),
    f"{BASE}/numbered/underscore": ("numbered/underscore", ("about-underscore",)),
    f"{BASE}/numbered/date": ("numbered/date", ("about-date",)),
    f"{BASE}/tutorial/": ("tutorial/README", ("getting-started",)),
    f"{BASE}/tutorial/lesson": ("tutorial/lesson", ("exercise",)),
    f"{BASE}/api/": ("api/api", ("endpoints",)),
    f"{BASE}/api/client": ("api/client", ("usage",)),
    # id / slug front matter.
    f"{BASE}/misc/custom-id": ("misc/custom-id", ("id-section",)),
    f"{BASE}/absolute-slug": ("misc/slug-abs", ("absolute-section",)),
    f"{BASE}/misc/relative-slug": ("misc/slug-rel", ("relative-section",)),
    f"{BASE}/up-one": ("misc/slug-up", ("up-section",)),  # slug: ../up-one from misc/
    f"{BASE}/misc/doc with space": ("misc/doc with space", ("space-section",)),  # literal space
    f"{BASE}/unlisted": ("unlisted", ("unlisted-section",)),  # built, with robots noindex
    # _category_.json with link generated-index: a docs page without a doc id.
    f"{BASE}/category/miscellaneous": (None, ()),
    # Headings.
    f"{BASE}/headings/duplicates": ("headings/duplicates", ("setup", "setup-1", "setup-1-1", "setup-2")),
    f"{BASE}/headings/overview": ("headings/overview", ("overview-1",)),  # the H1 consumed "overview"
    f"{BASE}/headings/explicit-ids": (
        "headings/explicit-ids",
        (
            "my-custom-id",
            "mdx-comment-id",
            # <!-- #id --> is NOT an id with the default mdx1Compat.comments: the comment is parsed
            # as a comment node, the text keeps its trailing space -> trailing dash.
            "html-comment-id-",
            "custom-id",
            "custom-id",  # {#custom-id} does not reserve the slug...
            "custom-id-1",  # ...so the next auto slug is -1, not -2
            "spaced-id",  # {#  spaced-id  } is trimmed
        ),
    ),
    f"{BASE}/headings/commonmark": (
        "headings/commonmark",
        ("html-comment-id-", "html-comment-without-hash-", "raw-html-heading", "classic-in-md"),
    ),
    f"{BASE}/headings/inline": (
        "headings/inline",
        (
            "hello-code-and-link-bold",
            "jsx-in-heading",
            "with-alt-text-image",
            "data-tiny-pic-uri",
            "escaped--hash--entity",
            "emphasis-and-more",
        ),
    ),
    f"{BASE}/headings/unicode": (
        "headings/unicode",
        (
            "émoji---ünïcode--dash-quotes",
            "c--c-vs-nodejs-v18",
            "1-numbered-heading",
            "x--y",
            "private-and-snake_case",
            "über",
            "über-1",
            "two--spaces",
        ),
    ),
    # The mid-page setext H1 renders without an id but consumes its slug.
    f"{BASE}/headings/levels": (
        "headings/levels",
        ("deep-heading", "setext-heading", "level-five", "level-six", "setext-level-one-later-1"),
    ),
    f"{BASE}/headings/setext-title": ("headings/setext-title", ("after-setext",)),
    # The synthetic H1 from front matter title does not consume a slug.
    f"{BASE}/headings/no-h1": ("headings/no-h1", ("starts-at-two", "front-matter-title")),
    # Content: headings inside admonitions, tabs and <details> get ids like any other heading.
    f"{BASE}/content/code-and-admonitions": (
        "content/code-and-admonitions",
        ("shell-example", "notes", "inside-warning", "after-admonitions"),
    ),
    f"{BASE}/content/tabs": (
        "content/tabs",
        (
            "install-tabs",
            "with-npm",
            "with-yarn",
            "folded",
            "hidden-heading",
            "table",
            "footnotes",
            "footnote-label",  # GFM's generated <h2 id="footnote-label" class="sr-only">
        ),
    ),
    f"{BASE}/content/md-with-esm": ("content/md-with-esm", ("choose",)),
    # The partial's headings are slugged by the partial's own slugger: "shared-setup" twice.
    f"{BASE}/content/partial-user": (
        "content/partial-user",
        ("shared-setup", "partial-details", "shared-setup", "own-section"),
    ),
}


def test_build_returns_the_build_dir() -> None:
    build_dir = build_fixture_site()
    assert build_dir == FIXTURE_SITE / "build"
    assert (build_dir / "docs" / "intro" / "index.html").is_file()
    # A second call finds the build fresh and returns at once.
    assert build_fixture_site() == build_dir


def test_every_doc_page_has_the_expected_url_doc_id_and_heading_ids(pages: dict[str, BuiltPage]) -> None:
    got = {url: (page.doc_id, page.heading_ids) for url, page in pages.items()}
    assert got == EXPECTED


def test_excluded_docs_are_absent(pages: dict[str, BuiltPage]) -> None:
    doc_ids = {page.doc_id for page in pages.values()}
    assert "draft" not in doc_ids  # draft: true is absent from a production build
    assert not any(doc_id and "secret" in doc_id for doc_id in doc_ids)  # _private/ folder
    assert not any(doc_id and "partial" in doc_id and doc_id != "content/partial-user" for doc_id in doc_ids)
    assert f"{BASE}/draft" not in pages
    assert "/mysite/" not in pages  # the home page (pages plugin) is not a doc page


def test_element_ids_cover_headings_and_footnotes(pages: dict[str, BuiltPage]) -> None:
    tabs = pages[f"{BASE}/content/tabs"]
    assert set(tabs.heading_ids) <= tabs.element_ids
    assert {"user-content-fn-note", "user-content-fnref-note"} <= tabs.element_ids
    partial_user = pages[f"{BASE}/content/partial-user"]
    assert partial_user.element_ids == {"shared-setup", "partial-details", "own-section"}


def test_h1_never_has_an_id(pages: dict[str, BuiltPage]) -> None:
    build_dir = build_fixture_site()
    for rel in ("headings/overview", "headings/no-h1", "headings/levels", "intro"):
        html = (build_dir / "docs" / rel / "index.html").read_text(encoding="utf-8")
        assert "<h1>" in html
        assert "<h1 " not in html


def test_parse_built_page_on_synthetic_html() -> None:
    html = (
        '<html class="docs-wrapper docs-doc-page docs-doc-id-a/b c">'
        '<head><link rel="canonical" href="https://h.test/base/docs/a/b%20c/"></head>'
        '<body><h2 id="outside">x</h2><article><div id="crumbs"><br><svg><path d="M0"/></svg></div>'
        '<div class="theme-doc-markdown markdown"><header><h1>T</h1></header>'
        '<h2 id="one">One</h2><p>text<img src="x.png" id="img"></p><h3 id="two">Two</h3></div>'
        '<nav id="after"></nav></article><h2 id="later">y</h2></body></html>'
    )
    page = parse_built_page(html)
    assert page == BuiltPage(
        url="/base/docs/a/b c/",
        element_ids=frozenset({"crumbs", "one", "img", "two", "after"}),
        heading_ids=("one", "two"),
        doc_id="a/b c",
    )
    not_a_doc = '<html class="mdx-page"><link rel="canonical" href="https://h.test/"></html>'
    assert parse_built_page(not_a_doc) is None
