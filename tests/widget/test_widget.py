"""The widget as a reader meets it: a real Chromium on a Docusaurus-like page, a real API, a fake LLM."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from playwright.sync_api import expect
from widgethost import host_page, serve_site

from apiserver import build_book, running_api
from bookwise import __version__
from bookwise.generation.prompts import NOT_IN_SELECTION
from bookwise.settings import Settings
from browser import HOST, fresh_page, part, shadow_focus, visit, wait_state
from fakellm import FakeLLM
from servers import closed_port_url

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

FEEDING = """
<h2 id="morning-feed">Morning feed</h2>
<p id="morning">Quokkas eat leaves of the peppermint shrub every morning.</p>
<div style="height: 3000px"></div>
<h2 id="evening-feed">Evening feed</h2>
<p id="evening">Quokkas graze on grasses near the burrow. Never feed bread to a quokka.</p>
<div style="height: 3000px"></div>
"""
_MAJOR, _MINOR = (int(part) for part in __version__.split(".")[:2])
OTHER_MINOR = f"{_MAJOR}.{_MINOR + 1}.0"
# The site's own theme colours (Infima's variable), which the widget must pick up in both modes.
# A code block longer than the owner's cap (data-max-selection) on its page.
CAPPED_CODE = "kalman_gain = covariance / (covariance + measurement_noise)"
CAP = 24
THEMED = """<style>
:root { --ifm-color-primary: rgb(10, 20, 30); }
html[data-theme="dark"] { --ifm-color-primary: rgb(30, 40, 50); }
</style>"""


@dataclass
class Site:
    url: str
    api: str
    root: Path

    def page_url(self, path: str) -> str:
        return self.url + path


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, llm_server: tuple[FakeLLM, str]) -> Iterator[Site]:
    """Three APIs (answering, LLM down, book silent) behind three pages of one site."""
    root = tmp_path_factory.mktemp("site")
    llm_url = llm_server[1]

    def book(name: str, **overrides: Any) -> Settings:
        values = {"llm_base_url": llm_url, "llm_api_key": "test", "allowed_origins": [site_url]}
        return build_book(tmp_path_factory.mktemp(name), **(values | overrides))

    with serve_site(root) as site_url:
        answering = book("answering")
        down = book("down", llm_base_url=closed_port_url(), llm_max_retries=0)
        silent = book("silent", sufficiency_threshold=1.0)
        with running_api(answering) as api, running_api(down) as down_api, running_api(silent) as silent_api:
            pages = {
                "docs/care/feeding.html": host_page(
                    "Feeding quokkas",
                    api,
                    script_attributes='data-show-version="true"',
                    body=THEMED + FEEDING,
                ),
                "docs/care/housing.html": host_page("Housing", api, body='<h2 id="burrows">Burrows</h2>'),
                "docs/care/capped.html": host_page(
                    "Capped",
                    api,
                    script_attributes=f'data-max-selection="{CAP}"',
                    body=f'<h2 id="gain">Gain</h2><div><pre><code>{CAPPED_CODE}</code></pre></div>',
                ),
                "docs/care/titled.html": host_page(
                    "Titled", api, script_attributes='data-title="Ask My Site"', body='<h2 id="t">T</h2>'
                ),
                "down.html": host_page("LLM down", down_api),
                "silent.html": host_page("Silent book", silent_api),
                # A plugin of another minor version than the server (0.x: minors differ in their API).
                "mismatch.html": host_page(
                    "Mismatch", api, script_attributes=f'data-plugin-version="{OTHER_MINOR}"'
                ),
            }
            for relative, html in pages.items():
                path = root / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(html, encoding="utf-8")
            yield Site(site_url, api, root)


@pytest.fixture
def page(browser: Browser, site: Site) -> Iterator[Page]:
    clipboard = ("clipboard-read", "clipboard-write")
    with fresh_page(
        browser, permissions=clipboard, origin=site.url, viewport={"width": 1280, "height": 800}
    ) as page:
        yield page


def ask(page: Page, question: str) -> None:
    """Ask as a reader does: open the panel if it is closed, type, press Enter."""
    if part(page, "launcher").is_visible():
        part(page, "launcher").click()
    part(page, "input").fill(question)
    part(page, "input").press("Enter")


def route_to(page: Page, path: str) -> None:
    """Change the route as a single-page app does: pushState, then popstate."""
    page.evaluate(
        "path => { history.pushState({}, '', path); dispatchEvent(new PopStateEvent('popstate')) }", path
    )


def test_mounts_once_across_a_second_script_and_client_side_navigation(page: Page, site: Site) -> None:
    visit(page, site.page_url("/docs/care/feeding"))
    version = page.evaluate("() => window.Bookwise.version")
    page.evaluate(
        """api => new Promise(resolve => {
            const script = document.createElement('script');
            Object.assign(script, {src: api + '/widget.js', onload: resolve});
            script.dataset.apiUrl = api;
            document.head.append(script);
        })""",
        site.api,
    )
    route_to(page, "/docs/care/housing")
    page.evaluate("() => { document.getElementById('__docusaurus').innerHTML = '<main>re-rendered</main>' }")
    assert page.locator(HOST).count() == 1
    assert page.evaluate("() => window.Bookwise.version") == version == "0.1.0"
    expect(part(page, "launcher")).to_be_visible()


def test_shortcut_opens_with_focus_in_the_input_tab_stays_inside_escape_restores_focus(
    page: Page, site: Site
) -> None:
    visit(page, site.page_url("/docs/care/feeding"))
    page.focus("#home")
    page.keyboard.press("Control+i")
    expect(part(page, "panel")).to_be_visible()
    expect(part(page, "panel")).to_have_attribute("role", "dialog")
    assert shadow_focus(page) == "input"
    for _ in range(6):
        page.keyboard.press("Tab")
        assert page.evaluate("() => document.activeElement.id") == "bookwise-widget"
    page.keyboard.press("Escape")
    expect(part(page, "panel")).to_be_hidden()
    assert page.evaluate("() => document.activeElement.id") == "home"


def test_sources_show_before_the_first_token_then_the_answer_streams_with_citation_chips(
    page: Page, site: Site, fake: FakeLLM
) -> None:
    fake.mode, fake.delay_s = "slow", 0.5
    fake.tokens = ["Quokkas eat **peppermint** leaves [1]", ". They drink water [1, 2] [1][2]."]
    visit(page, site.page_url("/docs/care/feeding"))
    ask(page, "What do quokkas eat in the morning?")
    page.wait_for_function(
        """() => {
            const host = document.getElementById('bookwise-widget');
            const answer = host.shadowRoot.querySelector('[data-bw=answer]');
            const links = host.shadowRoot.querySelectorAll('[data-bw=sources] [data-bw=source-link]');
            return host.dataset.state === 'streaming' && links.length > 0
                && answer.textContent === '' && answer.getAttribute('aria-busy') === 'true';
        }"""
    )
    wait_state(page, "done")
    answer = part(page, "answer")
    expect(answer).to_have_text("Quokkas eat peppermint leaves 1. They drink water 12 12.")
    expect(answer).to_have_attribute("aria-busy", "false")
    expect(answer.locator("strong")).to_have_text("peppermint")
    first_source = part(page, "sources").locator('[data-bw="source-link"]').first
    chip = part(page, "cite").first
    expect(chip).to_have_attribute("data-n", "1")
    assert chip.get_attribute("href") == first_source.get_attribute("href")
    assert chip.evaluate("a => a.href") == site.page_url("/docs/care/feeding#morning-feed")
    expect(part(page, "cite")).to_have_count(5)
    expect(part(page, "version")).to_contain_text("Index 2")  # the index version is a UTC timestamp


def test_a_citation_to_another_page_navigates_client_side_and_keeps_the_panel_open(
    page: Page, site: Site, fake: FakeLLM
) -> None:
    fake.tokens = ["Burrows need dry sand [1]."]
    visit(page, site.page_url("/docs/care/feeding"))
    page.evaluate(
        "() => { window.__marker = 'same document'; addEventListener('popstate', () => window.__pops = 1) }"
    )
    page.evaluate("() => window.Bookwise.ask('What does a quokka burrow need?')")
    chip = part(page, "cite").first
    target = chip.evaluate("a => new URL(a.href).pathname")
    assert target != "/docs/care/feeding"
    chip.click()
    page.wait_for_function("path => location.pathname === path", arg=target)
    assert page.evaluate("() => [window.__marker, window.__pops]") == ["same document", 1]
    expect(part(page, "panel")).to_be_visible()


def test_ask_resolved_before_a_late_markdown_renderer_had_rendered_the_answer_regression(
    page: Page, site: Site, fake: FakeLLM
) -> None:
    """The renderer is a second script loaded when the panel opens. An answer that ended before it
    arrived showed as plain text, yet `Bookwise.ask` had resolved and the state said done: whoever
    read the answer then found no citation chips."""
    fake.tokens = ["Quokkas eat **peppermint** leaves [1]."]
    held: list[Any] = []
    page.route(re.compile(r"markdown[^/]*\.js(\?|$)"), lambda route: held.append(route))  # held back
    visit(page, site.page_url("/docs/care/feeding"))
    page.evaluate("() => { window.Bookwise.ask('What do quokkas eat?').then((s) => (window.__ended = s)); }")
    expect(part(page, "answer")).to_have_attribute("aria-busy", "false")  # the stream is over
    expect(part(page, "answer")).to_have_text("Quokkas eat **peppermint** leaves [1].")  # its plain text
    assert len(held) == 1
    assert page.evaluate("() => window.__ended") is None
    assert page.locator(HOST).get_attribute("data-state") == "streaming"
    held[0].continue_()
    page.wait_for_function("() => window.__ended === 'done'")
    # At once, with no waiting: what a script reads as soon as the answer is over.
    assert page.evaluate(
        """() => {
            const root = document.getElementById('bookwise-widget').shadowRoot;
            return [root.host.dataset.state, root.querySelectorAll('[data-bw=answer] [data-bw=cite]').length,
                    root.querySelector('[data-bw=answer] strong')?.textContent];
        }"""
    ) == ["done", 1, "peppermint"]


def test_a_markdown_renderer_that_never_starts_leaves_the_answer_as_plain_text_that_ends(
    page: Page, site: Site, fake: FakeLLM
) -> None:
    """A script in the renderer's place that runs and hands nothing over (a proxy's page, a stale
    file): the answer must still end, as its plain text, and the next question be askable."""
    fake.tokens = ["Quokkas eat **peppermint** leaves [1]."]
    page.route(
        re.compile(r"markdown[^/]*\.js(\?|$)"),
        lambda route: route.fulfill(body="/* not the renderer */", content_type="text/javascript"),
    )
    visit(page, site.page_url("/docs/care/feeding"))
    page.evaluate("() => { window.Bookwise.ask('What do quokkas eat?').then((s) => (window.__ended = s)); }")
    page.wait_for_function("() => window.__ended === 'done'", timeout=10_000)  # not a hang: an end
    wait_state(page, "done")
    expect(part(page, "answer")).to_have_text("Quokkas eat **peppermint** leaves [1].")
    expect(part(page, "input")).to_be_enabled()


def test_stop_aborts_the_stream_and_keeps_the_partial_answer(page: Page, site: Site, fake: FakeLLM) -> None:
    fake.mode, fake.delay_s = "slow", 0.3
    fake.tokens = [f"word{n} " for n in range(40)]
    visit(page, site.page_url("/docs/care/feeding"))
    ask(page, "Tell me everything about quokkas.")
    expect(part(page, "answer")).to_contain_text("word0")
    expect(part(page, "send")).to_be_hidden()
    part(page, "stop").click()
    assert fake.disconnected.wait(5), "the LLM stream stayed open after Stop"
    wait_state(page, "idle")
    expect(part(page, "stopped")).to_be_visible()
    expect(part(page, "answer")).to_contain_text("word0")
    expect(part(page, "send")).to_be_visible()


def test_llm_down_shows_the_error_and_a_working_retry(page: Page, site: Site) -> None:
    visit(page, site.page_url("/down"))
    ask(page, "What do quokkas eat?")
    wait_state(page, "error")
    expect(part(page, "error")).to_have_attribute("role", "alert")
    expect(part(page, "error")).not_to_be_empty()
    with page.expect_request(lambda request: request.url.endswith("/api/chat")) as retried:
        part(page, "retry").click()
    assert retried.value.post_data_json["question"] == "What do quokkas eat?"
    wait_state(page, "error")
    expect(part(page, "retry")).to_be_enabled()


def test_a_refused_request_shows_the_apis_message(page: Page, site: Site) -> None:
    visit(page, site.page_url("/docs/care/feeding"))
    assert page.evaluate("() => window.Bookwise.ask('x'.repeat(5000))") == "error"
    expect(part(page, "error")).to_contain_text("question is too long")
    expect(part(page, "retry")).to_have_count(0)  # the API said it is not retryable


def test_a_refused_cross_origin_request_names_the_server_and_the_origin_setting(
    page: Page, site: Site
) -> None:
    # The same pages from another origin, which the API does not allow: the browser refuses the
    # request, and fetch fails exactly as if the server were down. The panel said only "Could not
    # reach the book."; the cause was in the console.
    with serve_site(site.root) as other_origin:
        visit(page, f"{other_origin}/docs/care/housing")
        assert page.evaluate("() => window.Bookwise.ask('Where do quokkas sleep?')") == "error"
        error = part(page, "error")
        expect(error).to_have_attribute("role", "alert")
        expect(error).to_contain_text(f"the Bookwise server at {site.api} is not running")
        expect(error).to_contain_text(f"set BOOKWISE_ALLOWED_ORIGINS={other_origin} on the server")
        expect(part(page, "retry")).to_be_visible()


def test_a_plugin_of_another_version_than_the_server_is_said_in_the_panel(page: Page, site: Site) -> None:
    visit(page, site.page_url("/mismatch"))
    part(page, "launcher").click()
    notice = part(page, "version-mismatch")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text(f"server is {__version__}")
    expect(notice).to_contain_text(f"docusaurus-plugin-bookwise is {OTHER_MINOR}")
    expect(notice).to_contain_text(f"Upgrade the Bookwise server to {_MAJOR}.{_MINOR + 1}.x.")
    # A matching plugin (or none) shows no notice.
    visit(page, site.page_url("/docs/care/housing"))
    page.evaluate("() => window.Bookwise.open()")
    expect(part(page, "panel")).to_be_visible()
    expect(part(page, "version-mismatch")).to_be_hidden()


def test_feedback_is_posted_once_and_stored(page: Page, site: Site, fake: FakeLLM) -> None:
    fake.tokens = ["Peppermint leaves [1]."]
    visit(page, site.page_url("/docs/care/feeding"))
    page.evaluate("() => window.Bookwise.ask('What do quokkas eat?')")
    with page.expect_response(lambda response: response.url.endswith("/api/feedback")) as stored:
        part(page, "thumb-up").click()
    assert stored.value.status == 201
    body = stored.value.request.post_data_json
    assert body["rating"] == "up" and body["request_id"] and body["question"] == "What do quokkas eat?"
    assert body["answer"] == "Peppermint leaves [1]."
    assert set(body["sources"][0]) == {"n", "url", "title", "heading"}
    expect(page.locator(f"{HOST} .bw-thanks")).to_have_text("Thanks!")
    expect(part(page, "thumb-down")).to_be_disabled()
    expect(part(page, "thumb-up")).to_have_attribute("aria-pressed", "true")


def test_a_follow_up_carries_the_earlier_turns_as_history(page: Page, site: Site, fake: FakeLLM) -> None:
    fake.tokens = ["Peppermint leaves [1]."]
    visit(page, site.page_url("/docs/care/feeding"))
    page.evaluate("() => window.Bookwise.ask('What do quokkas eat?')")
    with page.expect_request(lambda request: request.url.endswith("/api/chat")) as follow_up:
        ask(page, "And in the evening?")
    assert follow_up.value.post_data_json["history"] == [
        {"role": "user", "content": "What do quokkas eat?"},
        {"role": "assistant", "content": "Peppermint leaves [1]."},
    ]
    wait_state(page, "done")


def test_a_browser_names_its_reader_on_every_request_and_keeps_the_name(
    page: Page, site: Site, fake: FakeLLM
) -> None:
    """Cross-origin (the API allows the header in its preflight), and the same id after a reload, so a
    classroom behind one address is counted reader by reader."""
    fake.tokens = ["Peppermint leaves [1]."]
    visit(page, site.page_url("/docs/care/feeding"))
    with page.expect_request(lambda request: request.url.endswith("/api/chat")) as first:
        page.evaluate("() => window.Bookwise.ask('What do quokkas eat?')")
    wait_state(page, "done")
    reader = first.value.headers.get("x-bookwise-reader", "")
    assert re.fullmatch(r"[0-9a-f]{32}", reader)
    visit(page, site.page_url("/docs/care/feeding"))
    with page.expect_request(lambda request: request.url.endswith("/api/chat")) as again:
        page.evaluate("() => window.Bookwise.ask('And in the evening?')")
    wait_state(page, "done")
    assert again.value.headers.get("x-bookwise-reader") == reader


def test_a_question_the_book_does_not_cover_lists_the_closest_sections(
    page: Page, site: Site, fake: FakeLLM
) -> None:
    visit(page, site.page_url("/silent"))
    ask(page, "How do I tune a carburettor?")
    wait_state(page, "done")
    expect(part(page, "not-covered")).to_contain_text("The book doesn’t seem to cover this.")
    assert part(page, "not-covered").locator('[data-bw="source-link"]').count() > 0
    expect(part(page, "sources")).to_have_count(0)
    assert fake.calls == 0


def test_a_model_that_declines_keeps_its_words_and_offers_the_closest_sections(
    page: Page, site: Site, fake: FakeLLM
) -> None:
    fake.tokens = ["Ce livre ne parle pas ", "de carburateurs."]  # any words, any language: no citation
    visit(page, site.page_url("/docs/care/feeding"))
    ask(page, "How do I tune a carburettor?")
    wait_state(page, "done")
    expect(part(page, "answer").last).to_have_text("Ce livre ne parle pas de carburateurs.")
    assert part(page, "not-covered").locator('[data-bw="source-link"]').count() > 0
    assert fake.calls == 1


def test_highlight_to_ask_sends_the_selection_with_its_section(page: Page, site: Site, fake: FakeLLM) -> None:
    fake.tokens = ["It says never to feed bread [1]."]
    visit(page, site.page_url("/docs/care/feeding"))
    page.evaluate(
        """() => {
            const paragraph = document.getElementById('evening');
            paragraph.scrollIntoView();
            const text = paragraph.firstChild;
            const start = text.data.indexOf('Never');
            const range = document.createRange();
            range.setStart(text, start);
            range.setEnd(text, text.data.indexOf('quokka.', start) + 'quokka.'.length);
            getSelection().addRange(range);
        }"""
    )
    part(page, "popover").click()
    expect(part(page, "selection-chip")).to_contain_text("Never feed bread to a")
    assert shadow_focus(page) == "input"
    with page.expect_request(lambda request: request.url.endswith("/api/chat")) as sent:
        part(page, "input").press("Enter")
    assert sent.value.post_data_json == {
        "question": "Explain this passage.",
        "mode": "selected_text",
        "selected_text": "Never feed bread to a quokka.",
        "page": {
            "url": "/docs/care/feeding",
            "heading_id": "evening-feed",
            "version": "current",
            "locale": "en",
        },
    }
    wait_state(page, "done")
    expect(part(page, "selection-chip")).to_be_hidden()
    expect(part(page, "popover")).to_be_hidden()
    source = part(page, "source-link").first
    assert "#evening-feed:~:text=" in (source.get_attribute("href") or "")
    page.evaluate("() => window.scrollTo(0, 0)")
    source.click()
    page.wait_for_function(
        "() => Math.abs(document.getElementById('evening-feed').getBoundingClientRect().top) < 2"
    )
    # A source on this page adds a history entry with its anchor (Back returns to the reader's
    # place); the text fragment stays out of the address.
    assert page.evaluate("() => location.pathname + location.hash") == "/docs/care/feeding#evening-feed"


def test_a_code_blocks_ask_is_cut_at_the_owners_selection_cap_regression(
    page: Page, site: Site, fake: FakeLLM
) -> None:
    # A code block's Ask sent its whole text, past the owner's data-max-selection (a selection is cut).
    fake.tokens = ["It weighs the prediction against the measurement [1]."]
    visit(page, site.page_url("/docs/care/capped"))
    page.evaluate("() => dispatchEvent(new CustomEvent('bookwise:hydrated'))")
    page.locator("[data-bookwise-code-ask]").click()
    expect(part(page, "selection-chip")).to_have_text(CAPPED_CODE[:CAP] + "×")
    with page.expect_request(lambda request: request.url.endswith("/api/chat")) as sent:
        part(page, "input").press("Enter")
    body = sent.value.post_data_json
    assert body["selected_text"] == CAPPED_CODE[:CAP]
    assert body["page"]["heading_id"] == "gain"
    wait_state(page, "done")


def test_a_selection_that_cannot_answer_offers_to_widen_to_its_section(
    page: Page, site: Site, fake: FakeLLM
) -> None:
    fake.tokens = [NOT_IN_SELECTION]
    visit(page, site.page_url("/docs/care/feeding"))
    outcome = page.evaluate(
        "options => window.Bookwise.ask('Where do they sleep?', options)",
        {"selectedText": "Never feed bread to a quokka.", "headingId": "evening-feed"},
    )
    assert outcome == "done"
    expect(page.locator(f"{HOST} [data-kind=not_in_selection]")).to_have_count(1)
    widen = part(page, "widen")
    expect(widen).to_have_text("Ask about the whole section “Evening feed”")
    fake.tokens = ["At night they sleep in burrows [1]."]
    with page.expect_request(lambda request: request.url.endswith("/api/chat")) as sent:
        widen.click()
    body = sent.value.post_data_json
    assert body["scope"] == "section" and body["mode"] == "selected_text"
    assert (
        body["question"] == "Where do they sleep?"
        and body["selected_text"] == "Never feed bread to a quokka."
    )
    wait_state(page, "done")


def test_colours_follow_the_sites_variables_and_its_dark_mode(page: Page, site: Site) -> None:
    visit(page, site.page_url("/docs/care/feeding"))
    part(page, "launcher").click()

    def colours() -> list[str]:
        return [
            part(page, name).evaluate("element => getComputedStyle(element).backgroundColor")
            for name in ("send", "panel")
        ]

    assert colours() == ["rgb(10, 20, 30)", "rgb(255, 255, 255)"]
    page.evaluate("() => document.documentElement.setAttribute('data-theme', 'dark')")
    expect(page.locator(HOST)).to_have_attribute("data-theme", "dark")
    assert colours() == ["rgb(30, 40, 50)", "rgb(36, 37, 38)"]


def test_an_owner_gives_the_widget_colours_of_its_own_from_the_sites_css(page: Page, site: Site) -> None:
    """The manual's recipe: the widget's variables set on its element in the site's CSS win over the
    defaults it takes from Infima, in light and dark mode, and leave the site's own colours alone."""
    visit(page, site.page_url("/docs/care/feeding"))
    page.add_style_tag(
        content="#bookwise-widget { --bw-accent: rgb(200, 0, 0); }\n"
        "html[data-theme='dark'] #bookwise-widget { --bw-accent: rgb(0, 0, 200); --bw-bg: rgb(1, 2, 3); }"
    )
    part(page, "launcher").click()

    def colour(name: str) -> str:
        return str(part(page, name).evaluate("element => getComputedStyle(element).backgroundColor"))

    assert colour("send") == "rgb(200, 0, 0)"
    page.evaluate("() => document.documentElement.setAttribute('data-theme', 'dark')")
    expect(page.locator(HOST)).to_have_attribute("data-theme", "dark")
    assert (colour("send"), colour("panel")) == ("rgb(0, 0, 200)", "rgb(1, 2, 3)")
    site_primary = "getComputedStyle(document.documentElement).getPropertyValue('--ifm-color-primary')"
    assert page.evaluate(site_primary).strip() == "rgb(30, 40, 50)"


def test_code_blocks_get_a_copy_button(page: Page, site: Site, fake: FakeLLM) -> None:
    fake.tokens = ["Run:\n\n```sh\nbookwise serve\n```\n"]
    visit(page, site.page_url("/docs/care/feeding"))
    page.evaluate("() => window.Bookwise.ask('How do I start the API?')")
    expect(part(page, "answer").locator("pre code.language-sh")).to_have_text("bookwise serve")
    part(page, "copy").click()
    expect(part(page, "copy")).to_have_text("Copied")
    assert page.evaluate("() => navigator.clipboard.readText()") == "bookwise serve"


def test_copy_button_does_not_cover_the_first_line_of_code_regression(
    page: Page, site: Site, fake: FakeLLM
) -> None:
    # On a phone the button sat over the first line and hid its end.
    fake.tokens = ["Run:\n\n```sh\nbookwise serve --site build --port 8000 --host 0.0.0.0\n```\n"]
    visit(page, site.page_url("/docs/care/feeding"))
    page.evaluate("() => window.Bookwise.ask('How do I start the API?')")
    code = part(page, "answer").locator("pre code")
    expect(code).to_contain_text("bookwise serve")
    button = part(page, "copy").bounding_box()
    text = code.bounding_box()
    assert button is not None and text is not None
    assert button["y"] + button["height"] <= text["y"]


WIDE_TABLE = (
    "| Increase | Rise time | Overshoot | Settling time | Steady-state error |\n"
    "|---|---|---|---|---|\n"
    "| Kp | decreases | increases | small change | decreases, but does not vanish |\n"
)
WORDS_CUT_IN_CELLS = """() => {
  const root = document.getElementById('bookwise-widget').shadowRoot;
  const cut = [];
  for (const cell of root.querySelectorAll('[data-bw=answer] :is(td, th)')) {
    const style = getComputedStyle(cell);
    const room = cell.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    // Words as the browser may break them: at spaces and after hyphens (Steady-state).
    for (const word of cell.textContent.split(/[\\s-]+/).filter(Boolean)) {
      const probe = document.createElement('span');
      probe.style.whiteSpace = 'nowrap';
      probe.textContent = word;
      cell.append(probe);
      if (probe.getBoundingClientRect().width > room + 0.5) cut.push(word);
      probe.remove();
    }
  }
  return cut;
}"""


def test_table_cells_keep_their_words_whole_regression(page: Page, site: Site, fake: FakeLLM) -> None:
    """A quoted table in the narrow panel split "change" into "chang e": it scrolls instead."""
    fake.tokens = [f"The rules of thumb [1]:\n\n{WIDE_TABLE}"]
    visit(page, site.page_url("/docs/care/feeding"))
    page.evaluate("() => window.Bookwise.ask('What does raising Kp do?')")
    wait_state(page, "done")
    assert part(page, "answer").last.locator("td").count() == 5
    assert page.evaluate(WORDS_CUT_IN_CELLS) == []


def test_on_a_phone_the_panel_fills_the_screen_at_once_with_reduced_motion(
    browser: Browser, site: Site
) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 740}, reduced_motion="reduce")
    try:
        phone = context.new_page()
        visit(phone, site.page_url("/docs/care/feeding"))
        part(phone, "launcher").click()
        assert part(phone, "panel").bounding_box() == {"x": 0, "y": 0, "width": 390, "height": 740}
    finally:
        context.close()


def reload_widget_on_housing_only(page: Page, site: Site) -> None:
    """The feeding page, with the widget loaded again to show only under /docs/care/housing."""
    visit(page, site.page_url("/docs/care/feeding"))
    page.evaluate(
        """api => {
            window.Bookwise.destroy();
            const script = Object.assign(document.createElement('script'), {src: api + '/widget.js'});
            Object.assign(script.dataset, {apiUrl: api, paths: '/docs/care/housing'});
            document.head.append(script);
        }""",
        site.api,
    )
    page.wait_for_function("() => window.Bookwise && document.getElementById('bookwise-widget')")


def test_the_widget_shows_only_on_its_paths(page: Page, site: Site) -> None:
    reload_widget_on_housing_only(page, site)
    expect(part(page, "launcher")).to_be_hidden()
    route_to(page, "/docs/care/housing")
    expect(part(page, "launcher")).to_be_visible()


def test_the_plugins_navigate_event_rechecks_the_paths_after_a_route_change_no_click_made(
    page: Page, site: Site
) -> None:
    # The plugin's client module dispatched `bookwise:navigate` and nothing listened to it.
    reload_widget_on_housing_only(page, site)
    expect(part(page, "launcher")).to_be_hidden()
    page.evaluate(
        """() => {
            history.pushState({}, '', '/docs/care/housing');  // a router's push: no click, no popstate
            dispatchEvent(new CustomEvent('bookwise:navigate', {detail: {pathname: location.pathname}}));
        }"""
    )
    expect(part(page, "launcher")).to_be_visible()


LONG_LINE = "ros2 topic pub --once /cmd_vel geometry_msgs/msg/Twist '{linear: {x: 0.2}, angular: {z: 0.5}}'"
FOCUSED = """() => {
  const active = document.getElementById('bookwise-widget').shadowRoot.activeElement;
  return active && (active.dataset.bw ? active.dataset.bw + (active.dataset.n || '') : active.tagName);
}"""


def test_tab_from_a_code_block_in_an_answer_reaches_every_control_after_it_in_order_regression(
    page: Page, site: Site, fake: FakeLLM
) -> None:
    # Tab from a code block of an answer (Chromium makes a scrolling block a Tab stop) went back to
    # "New conversation": Copy, the later citations, Yes/No, the study buttons and the question box
    # were never reached. The trap took any element it did not list for focus lost.
    fake.tokens = [f"Send one [1]:\n\n```sh\n{LONG_LINE}\n```\n\nThen watch it [2]."]
    visit(page, site.page_url("/docs/care/feeding"))
    page.evaluate("() => window.Bookwise.ask('How do I send a command?')")
    wait_state(page, "done")
    code = part(page, "answer").last.locator("pre")
    code.focus()
    assert page.evaluate(FOCUSED) == "PRE"
    # The passages quoted under the answer ("From the book") link to their sections too.
    quoted = [
        f"source-link{n}"
        for n in part(page, "quotes")
        .locator("[data-bw=source-link]")
        .evaluate_all("links => links.map(a => a.dataset.n)")
    ]
    after_code = ["copy", "cite2", *quoted, "thumb-up", "thumb-down", "study-summarize", "study-quiz"]
    after_code += ["input", "send"]
    # Past the last stop, Tab wraps to the first (the dialog keeps the focus) and goes on in order.
    expected = [*after_code, "clear", "close", "source-link1"]
    reached = []
    for _ in expected:
        page.keyboard.press("Tab")
        reached.append(page.evaluate(FOCUSED))
    assert reached == expected
    for back in reversed(expected[:-1]):
        page.keyboard.press("Shift+Tab")
        assert page.evaluate(FOCUSED) == back
    page.keyboard.press("Shift+Tab")
    assert page.evaluate(FOCUSED) == "PRE"


def test_the_launcher_stays_the_first_tab_stop_when_the_site_adds_to_the_body_regression(
    page: Page, site: Site
) -> None:
    # The launcher was the first Tab stop only as long as nothing was put before it in the body.
    prepend = (
        "text => { const link = Object.assign(document.createElement('a'), {href: '#', textContent: text});"
        " document.body.prepend(link); }"
    )
    visit(page, site.page_url("/docs/care/feeding"))
    page.evaluate(prepend, "A banner")
    page.keyboard.press("Tab")
    assert shadow_focus(page) == "launcher"
    # Not moved while it has the focus (that would lose it); first again once the reader leaves it.
    page.evaluate(prepend, "Another banner")
    assert shadow_focus(page) == "launcher"
    page.keyboard.press("Tab")
    expect(page.locator("body > :first-child")).to_have_id("bookwise-widget")


def test_a_long_answer_keeps_its_question_in_view_regression(page: Page, site: Site, fake: FakeLLM) -> None:
    # A finished answer taller than the panel opened scrolled to its end: the question and the first
    # quote were out of view. Its start stays at the top; the rest waits for the reader to scroll.
    fake.mode, fake.delay_s = "slow", 0.02
    fake.tokens = [f"Paragraph {n}: quokkas eat leaves of the peppermint shrub [1].\n\n" for n in range(40)]
    visit(page, site.page_url("/docs/care/feeding"))
    ask(page, "Tell me all about feeding.")
    wait_state(page, "done")
    question = page.locator(f"{HOST} .bw-question").last.bounding_box()
    messages = part(page, "messages").bounding_box()
    assert question is not None and messages is not None
    assert messages["y"] <= question["y"] < messages["y"] + 40
    expect(part(page, "answer").last).to_contain_text("Paragraph 0")
    assert (
        part(page, "answer").last.locator("p").first.bounding_box()["y"] < messages["y"] + messages["height"]
    )
    # The next question's start is shown in its turn; a reader who scrolls on to the end while it
    # streams is followed there.
    fake.tokens = [f"Line {n} [1].\n\n" for n in range(40)]
    fake.delay_s = 0.05
    ask(page, "What do quokkas eat in the evening?")
    expect(part(page, "answer").last).to_contain_text("Line 20")
    second = page.locator(f"{HOST} .bw-question").last.bounding_box()
    assert second is not None and messages["y"] <= second["y"] < messages["y"] + 40
    part(page, "messages").evaluate("m => m.scrollTo(0, m.scrollHeight)")
    wait_state(page, "done")
    expect(part(page, "answer").last).to_contain_text("Line 39")
    assert part(page, "messages").evaluate("m => m.scrollHeight - m.scrollTop - m.clientHeight") < 2


def test_sources_are_listed_in_the_order_of_their_numbers_regression(
    page: Page, site: Site, fake: FakeLLM
) -> None:
    # Sources were grouped by module, so a list read 1, 2, 4, 5, 3 when source 3 stood outside the
    # module of the others. They are listed by number (the server's rank, which the answer's chips
    # use). Here a source stands between two of Care: Care would be headed twice, so the list has no
    # headings at all (a heading each time the module changes cluttered six sources with six).
    fake.tokens = ["They sleep in burrows [4], not where they eat [1][3]."]
    visit(page, site.page_url("/docs/care/feeding"))
    page.evaluate("() => window.Bookwise.ask('Where do quokkas sleep?')")
    wait_state(page, "done")
    sources = part(page, "sources")
    pages = sources.locator("[data-bw=source-link]").evaluate_all(
        "l => l.map(a => a.getAttribute('title').split(' › ')[0])"
    )
    # The intro page (outside Care) between pages of Care: the book's ranking, as this test needs it.
    assert "Welcome" in pages[1:-1], pages
    assert sources.locator(".bw-group").count() == 0
    numbers = [
        int(n) for n in sources.locator("[data-bw=source-link]").evaluate_all("l => l.map(a => a.dataset.n)")
    ]
    assert numbers == sorted(numbers) == list(range(1, len(numbers) + 1))
    for chip in part(page, "cite").all():
        n = chip.get_attribute("data-n")
        assert chip.inner_text() == n
        link = sources.locator(f"[data-bw=source-link][data-n='{n}']")
        assert chip.get_attribute("href") == link.get_attribute("href")
        assert link.locator(".bw-n").inner_text() == n


def test_the_empty_panel_and_the_question_box_name_what_the_title_names_regression(
    page: Page, site: Site
) -> None:
    # "Ask anything about the book" was fixed text, under a title such as "Ask My Site".
    visit(page, site.page_url("/docs/care/titled"))
    part(page, "launcher").click()
    expect(part(page, "panel").locator(".bw-empty")).to_contain_text("Ask anything about My Site:")
    expect(part(page, "input")).to_have_attribute("placeholder", "Ask a question about My Site…")
    visit(page, site.page_url("/docs/care/housing"))  # the default title, "Ask the book"
    page.evaluate("() => window.Bookwise.open()")  # open again after a reload in this tab
    expect(part(page, "panel").locator(".bw-empty")).to_contain_text("Ask anything about the book:")
    expect(part(page, "input")).to_have_attribute("placeholder", "Ask a question about the book…")
