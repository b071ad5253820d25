"""Hostile answers, streamed by the fake LLM through the real API into the widget, stay inert.

Each payload of `xss_payloads.py` is delivered whole and in 3-character tokens to one long-lived
page. A MutationObserver in the page inspects every node and attribute the widget ever inserts,
even ones a later re-render removes; after the answer ends, the whole widget and document are
inspected again. Nothing may run (no `window.__pwned`, no dialog), nothing may load from anywhere
but the site and the API (the trap server sees no request), and no dangerous markup may exist.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import TYPE_CHECKING

import pytest
from playwright.sync_api import expect
from widgethost import Trap, host_page, serve_site, serving
from xss_payloads import PAYLOADS

from apiserver import build_book, running_api
from browser import part, visit
from fakellm import FakeLLM

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

QUESTION = "What do quokkas eat?"


@pytest.fixture(scope="module")
def trap() -> Iterator[Trap]:
    """A loopback server that records every request: the payloads aim their loads at it."""
    trap = Trap()
    with serving(ThreadingHTTPServer(("127.0.0.1", 0), trap.handler())) as url:
        trap.url = url
        yield trap


# `inspect(element, problems)` judges one element; the observers judge everything inserted.
INSPECT = r"""
const FORBIDDEN = new Set([
    'script', 'iframe', 'frame', 'object', 'embed', 'img', 'image', 'picture', 'source', 'video',
    'audio', 'svg', 'math', 'style', 'form', 'input', 'meta', 'link', 'base', 'noscript', 'template',
]);
const BAD_URL = /^(javascript|data|vbscript):/;
const WIDGET_BUTTONS = ['copy', 'retry', 'widen', 'thumb-up', 'thumb-down', 'reason', 'suggestion'];
// The widget's own Markdown renderer, which it loads from its API when the panel first opens.
const RENDERER = new URL('/widget-markdown.js', document.querySelector('script[src$="/widget.js"]').src).href;
function inspect(element, problems) {
    const name = element.localName;
    const renderer = name === 'script' && element.parentNode === document.head && element.src === RENDERER;
    if (FORBIDDEN.has(name) && !renderer) problems.push(`<${name}>: ${element.outerHTML.slice(0, 120)}`);
    for (const { name: attribute, value } of element.attributes) {
        if (attribute.startsWith('on')) problems.push(`${attribute} on <${name}>`);
        if (BAD_URL.test(value.replace(/[\u0000-\u0020]/g, '').toLowerCase())) {
            problems.push(`${attribute}="${value}" on <${name}>`);
        }
    }
    if (element.closest('[data-bw=messages]')) {
        if (element.hasAttribute('style')) problems.push(`style on <${name}> in an answer`);
        if (name === 'button' && !WIDGET_BUTTONS.includes(element.dataset.bw)) {
            problems.push(`a button that is not the widget's: ${element.outerHTML.slice(0, 120)}`);
        }
    }
    if (name === 'a' && element.hasAttribute('href')) {
        const url = new URL(element.href);
        if (!['http:', 'https:'].includes(url.protocol) || url.origin !== location.origin) {
            problems.push(`a link off the site: ${element.href}`);
        }
        if (element.getRootNode() === document && element.id !== 'home') {
            problems.push(`a link outside the widget: ${element.outerHTML.slice(0, 120)}`);
        }
    }
}
"""

WATCH = (
    "() => {"
    + INSPECT
    + r"""
    window.__violations = [];
    const judge = node => {
        if (node.nodeType !== Node.ELEMENT_NODE) return;
        for (const element of [node, ...node.querySelectorAll('*')]) inspect(element, window.__violations);
    };
    const observer = new MutationObserver(records => records.forEach(record => {
        // Only the element whose attribute changed (the widget marks <html> while its panel is docked).
        if (record.type === 'attributes') inspect(record.target, window.__violations);
        record.addedNodes.forEach(judge);
    }));
    const options = { subtree: true, childList: true, attributes: true };
    observer.observe(document.getElementById('bookwise-widget').shadowRoot, options);
    observer.observe(document.documentElement, options);
}"""
)

# Everything that is wrong now or was wrong at any point since the last reset.
CHECK = (
    "() => {"
    + INSPECT
    + r"""
    const host = document.getElementById('bookwise-widget');
    const problems = window.__violations.splice(0);
    for (const element of host.shadowRoot.querySelectorAll('*')) inspect(element, problems);
    for (const element of document.querySelectorAll('body *')) inspect(element, problems);
    if (document.querySelectorAll('#bookwise-widget').length !== 1) problems.push('the host was cloned');
    if (typeof window.Bookwise.ask !== 'function') problems.push('window.Bookwise was clobbered');
    if (window.__pwned !== undefined) problems.push('a payload ran');
    return problems;
}"""
)


@dataclass
class Harness:
    page: Page
    site: str
    api: str
    dialogs: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def ask(self) -> str:
        """Ask in a new conversation, so each answer is judged on its own."""
        part(self.page, "clear").dispatch_event("click")  # the panel may be closed
        return str(self.page.evaluate("question => window.Bookwise.ask(question)", QUESTION))


@pytest.fixture(scope="module")
def harness(
    browser: Browser, tmp_path_factory: pytest.TempPathFactory, llm_server: tuple[FakeLLM, str]
) -> Iterator[Harness]:
    root = tmp_path_factory.mktemp("site")
    with serve_site(root) as site_url:
        settings = build_book(
            tmp_path_factory.mktemp("book"),
            llm_base_url=llm_server[1],
            llm_api_key="test",
            allowed_origins=[site_url],
        )
        with running_api(settings) as api:
            page_file = root / "docs" / "care" / "feeding.html"
            page_file.parent.mkdir(parents=True)
            page_file.write_text(host_page("Feeding quokkas", api), encoding="utf-8")
            context = browser.new_context()
            page = context.new_page()
            harness = Harness(page, site_url, api)
            page.on("dialog", lambda dialog: (harness.dialogs.append(dialog.message), dialog.dismiss()))
            page.on("request", lambda request: harness.requests.append(request.url))
            visit(page, f"{site_url}/docs/care/feeding")
            page.evaluate(WATCH)
            yield harness
            context.close()


def arm(payload: str, trap: Trap) -> str:
    return payload.replace("{trap}", trap.url).replace("{trap_host}", trap.url.removeprefix("http://"))


@pytest.mark.parametrize("delivery", ["whole", "3-character tokens"])
@pytest.mark.parametrize("name", PAYLOADS)
def test_hostile_answer_renders_inert(
    harness: Harness, trap: Trap, fake: FakeLLM, name: str, delivery: str
) -> None:
    payload = arm(PAYLOADS[name], trap)
    fake.tokens = (
        [payload] if delivery == "whole" else [payload[i : i + 3] for i in range(0, len(payload), 3)]
    )
    dialogs, requests, trapped = len(harness.dialogs), len(harness.requests), len(trap.requests)
    assert harness.ask() == "done", f"{name}: the answer did not complete"
    assert harness.page.evaluate(CHECK) == [], f"{name} ({delivery})"
    assert harness.dialogs[dialogs:] == [], f"{name} ({delivery}) opened a dialog"
    assert trap.requests[trapped:] == [], f"{name} ({delivery}) reached the trap server"
    foreign = [url for url in harness.requests[requests:] if not url.startswith((harness.site, harness.api))]
    assert foreign == [], f"{name} ({delivery}) made the page fetch elsewhere"


def test_raw_html_is_shown_as_text(harness: Harness, fake: FakeLLM) -> None:
    fake.tokens = ["Use <b>bold</b> and <script>alert(1)</script> here."]
    assert harness.ask() == "done"
    answer = part(harness.page, "answer").last
    expect(answer).to_have_text("Use <b>bold</b> and <script>alert(1)</script> here.")
    expect(answer.locator("b")).to_have_count(0)


def test_images_become_their_alt_text(harness: Harness, trap: Trap, fake: FakeLLM) -> None:
    fake.tokens = [arm("A ![labelled diagram]({trap}/diagram.png) here.", trap)]
    assert harness.ask() == "done"
    expect(part(harness.page, "answer").last).to_have_text("A labelled diagram here.")


def test_only_links_within_the_site_stay_links(harness: Harness, fake: FakeLLM) -> None:
    fake.tokens = [
        "[inside](/docs/care/housing#burrows), [outside](https://evil.example/), [script](javascript:x)."
    ]
    assert harness.ask() == "done"
    answer = part(harness.page, "answer").last
    expect(answer).to_have_text("inside, outside, script.")
    expect(answer.locator("a")).to_have_count(1)
    expect(answer.locator("a")).to_have_attribute("href", f"{harness.site}/docs/care/housing#burrows")
    expect(answer.locator("a")).to_have_attribute("rel", "noopener noreferrer")
