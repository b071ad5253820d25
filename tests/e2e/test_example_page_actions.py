"""Must-show 2 (page actions): on the built example textbook, with `bookwise llms` run into the build
and `bookwise serve`'s app serving it, headless Chromium shows "Copy page as Markdown", "Open in ChatGPT"
and "Open in Claude" under a doc's title; Copy puts exactly the page's `.md` twin on the clipboard and the
Open-in links ask for the twin's absolute URL. Client-side navigation re-renders them, once per page."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from apiserver import running_api
from bookwise.cli import main
from browser import page_without_errors, visit
from examplesite import EXAMPLE_SITE, build_example, index_example

pytestmark = pytest.mark.docusaurus

GROUP = "[data-bookwise-actions]"


def action(page: Any, name: str) -> Any:
    return page.locator(f'{GROUP} [data-bookwise-action="{name}"]')


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the session's build (shared with other tests) with the twins written into it."""
    out = tmp_path_factory.mktemp("example-actions") / "build"
    shutil.copytree(build_example(), out)
    assert main(["llms", str(EXAMPLE_SITE), "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def site_url(tmp_path_factory: pytest.TempPathFactory, site: Path) -> Iterator[str]:
    settings, _ = index_example(tmp_path_factory.mktemp("example-actions-data"), site, site_dir=site)
    with running_api(settings) as url:
        yield url


@pytest.fixture
def page(browser: Any, site_url: str) -> Iterator[Any]:
    clipboard = ("clipboard-read", "clipboard-write")
    with page_without_errors(browser, permissions=clipboard, origin=site_url) as page:
        yield page


def asks_to_read(href: str, host: str, path: str) -> str:
    """The URL the Open-in link asks the assistant to read (checking where the link goes)."""
    parts = urlsplit(href)
    assert (parts.scheme, parts.netloc, parts.path) == ("https", host, path)
    prompt = parse_qs(parts.query)["q"][0]
    assert prompt.startswith("Read ") and prompt.endswith(" so I can ask questions about it.")
    return prompt.removeprefix("Read ").removesuffix(" so I can ask questions about it.")


def check_actions(page: Any, site: Path, site_url: str, twin: str) -> None:
    from playwright.sync_api import expect

    expect(page.locator(GROUP)).to_have_count(1)
    # Right under the doc's title, inside its header.
    assert page.evaluate(
        "() => document.querySelector('.theme-doc-markdown header h1').nextElementSibling"
        ".matches('[data-bookwise-actions]')"
    )
    for name, host, path in (("chatgpt", "chatgpt.com", "/"), ("claude", "claude.ai", "/new")):
        link = action(page, name)
        assert asks_to_read(link.get_attribute("href"), host, path) == f"{site_url}{twin}"
        assert link.get_attribute("target") == "_blank"
        assert "noopener" in link.get_attribute("rel")
    copy = action(page, "copy")
    expect(copy).to_have_text("Copy page as Markdown")
    copy.click()
    expect(copy).to_have_text("Copied")
    expect(page.locator(f"{GROUP} [role=status]")).to_have_text("Page copied to the clipboard as Markdown.")
    expected = (site / twin.lstrip("/")).read_text(encoding="utf-8")
    assert page.evaluate("() => navigator.clipboard.readText()") == expected


def test_page_actions_copy_the_twin_and_open_assistants_on_it(page: Any, site: Path, site_url: str) -> None:
    visit(page, f"{site_url}/docs/intro")
    check_actions(page, site, site_url, "/docs/intro.md")
    # Real buttons and links, reachable by keyboard, named for screen readers.
    assert (
        page.evaluate(f"() => document.querySelector('{GROUP} [data-bookwise-action=copy]').tagName")
        == "BUTTON"
    )
    assert action(page, "claude").get_attribute("aria-label").startswith("Open in Claude")


def test_page_actions_follow_client_side_navigation_once_per_doc_page(
    page: Any, site: Path, site_url: str
) -> None:
    from playwright.sync_api import expect

    visit(page, f"{site_url}/docs/control/pid-control")
    expect(page.locator(GROUP)).to_have_count(1)
    page.evaluate("() => { window.__sameDocument = true; }")  # gone if the browser loads a new page
    page.locator("article a[href='/docs/foundations/differential-drive']").first.click()
    expect(page).to_have_url(f"{site_url}/docs/foundations/differential-drive")
    assert page.evaluate("() => window.__sameDocument") is True
    check_actions(page, site, site_url, "/docs/foundations/differential-drive.md")
    # A generated category page has no twin: no actions there.
    page.locator("nav.theme-doc-breadcrumbs a[href='/docs/category/module-1-foundations']").click()
    expect(page.locator(".generatedIndexPage_vN6x")).to_be_visible()
    expect(page.locator(GROUP)).to_have_count(0)


def test_copy_shows_an_error_when_the_page_has_no_twin(page: Any, site: Path, site_url: str) -> None:
    from playwright.sync_api import expect

    (site / "docs" / "intro.md").rename(site / "docs" / "intro.md.away")
    try:
        visit(page, f"{site_url}/docs/intro")
        action(page, "copy").click()
        expect(action(page, "copy")).to_have_text("Copy failed")
        expect(page.locator(f"{GROUP} [role=status]")).to_have_text("Could not copy the page as Markdown.")
    finally:
        (site / "docs" / "intro.md.away").rename(site / "docs" / "intro.md")
