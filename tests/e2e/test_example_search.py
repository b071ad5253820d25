"""The search box on the example textbook, in headless Chromium: the plugin's `search` option puts its
button in the navbar (the theme's SearchBar, no swizzling), the reader types, walks the results with
the keyboard, lands on the heading as a citation lands, and turns a query into an asked question;
the search it settled on is reported once, with how it ended.

Real parts: the Docusaurus build of the example (its plugin options have `search: true`),
`bookwise serve`'s app serving it, the Edge index (hash embedder: a one-word query is matched by its
letters, not by meaning), no LLM (the answer is extractive).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from apiserver import running_api
from browser import HOST, page_without_errors, part, visit, wait_state
from examplesite import build_example, index_example

pytestmark = pytest.mark.docusaurus


@pytest.fixture(scope="module")
def site_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    build_dir = build_example()
    data = tmp_path_factory.mktemp("example-search") / "data"
    settings, _ = index_example(data, build_dir, site_dir=build_dir)
    with running_api(settings) as url:
        yield url


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    with page_without_errors(browser) as page:
        yield page


def search_box(page: Any) -> Any:
    return page.locator(f"{HOST} [role=combobox]")


def selected(page: Any) -> Any:
    return page.locator(f"{HOST} [role=option][aria-selected=true]")


def test_type_walk_the_results_and_land_on_the_heading(site_url: str, page: Any) -> None:
    visit(page, f"{site_url}/docs/intro")
    # The navbar's button is the theme's SearchBar, rendered by the site's own build.
    button = page.locator(".navbar [data-bookwise-search]")
    expect(button).to_be_visible()
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url) if "/widget-search.js" in r.url else None)
    button.click()
    expect(part(page, "search")).to_be_visible()
    assert len(requests) == 1  # the modal's script, loaded on first use
    box = search_box(page)
    expect(box).to_be_focused()
    page.keyboard.type("windu", delay=40)
    expect(box).to_have_attribute("aria-expanded", "true")
    expect(part(page, "search-count")).to_have_text(re.compile(r"^\d+ results?$"))
    target = "/docs/control/pid-control#pid-pitfalls"
    expect(page.locator(f'{HOST} [role=option][data-url="{target}"] mark').first).to_have_text("Windup")
    # Walk down until the Windup section is the active option, as a screen reader is told.
    for _ in range(10):
        if selected(page).get_attribute("data-url") == target:
            break
        page.keyboard.press("ArrowDown")
    assert selected(page).get_attribute("data-url") == target
    assert box.get_attribute("aria-activedescendant") == selected(page).get_attribute("id")
    # The search it settled on is reported once, with the result opened (for the question log).
    with page.expect_request(lambda r: r.url.endswith("/api/search/instant/log")) as settled:
        page.keyboard.press("Enter")
    report = settled.value.post_data_json
    assert (report["opened"], report["asked"]) == (target, False)
    assert report["query"] in ("wind", "windu")  # the query whose results were on screen
    assert report["page_url"].endswith("/docs/intro")
    expect(part(page, "search")).to_be_hidden()
    page.wait_for_function("() => location.pathname === '/docs/control/pid-control'")
    page.wait_for_function(
        """() => {
          const heading = document.getElementById('pid-pitfalls');
          const box = heading && heading.getBoundingClientRect();
          return box && box.top >= 0 && box.top < window.innerHeight;
        }"""
    )
    # Landed as a citation lands: the section is highlighted.
    assert page.evaluate("() => CSS.highlights.has('bookwise-landed')")


def test_a_query_becomes_an_asked_question(site_url: str, page: Any) -> None:
    visit(page, f"{site_url}/docs/intro")
    page.evaluate("() => document.activeElement?.blur()")  # `/` is a shortcut outside a field
    page.keyboard.press("/")
    box = search_box(page)
    expect(box).to_be_focused()
    question = "how does a kalman filter combine sensors"
    page.keyboard.type(question, delay=10)
    ask = page.locator(f"{HOST} [role=option][data-kind=ask]")
    expect(ask).to_contain_text(question)
    page.keyboard.press("ArrowUp")  # from the first row up to the last: the ask row
    expect(ask).to_have_attribute("aria-selected", "true")
    with (
        page.expect_request(lambda r: r.url.endswith("/api/search/instant/log")) as settled,
        page.expect_request(lambda r: r.url.endswith("/api/chat")) as asked,
    ):
        page.keyboard.press("Enter")
    assert asked.value.post_data_json["question"] == question
    report = settled.value.post_data_json
    assert (report["query"], report["opened"], report["asked"]) == (question, None, True)
    expect(part(page, "search")).to_be_hidden()
    assert part(page, "panel").is_visible()
    wait_state(page, "done", timeout_ms=30_000)
    # The search is remembered: the next opening lists it.
    page.keyboard.press("Control+k")
    expect(page.locator(f"{HOST} [role=option][data-kind=recent]").first).to_have_text(question)
    page.keyboard.press("Escape")
    expect(part(page, "search")).to_be_hidden()
