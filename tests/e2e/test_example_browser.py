"""Must-show 1 and 4: the widget on the built example textbook, in headless Chromium.

Real parts end to end: the Docusaurus build with the plugin's script tag, `bookwise serve`'s app
serving that build, the API and the widget bundle on one loopback origin, the Edge index of the
textbook, and a fake OpenAI-compatible LLM (the one edge that cannot be reached offline).
Screenshots of the widget (light, dark, phone) answering from the book without an LLM (the demo: local
embedder, passage answers) are written to widget/screenshots/ for the README.
"""

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect

import local_http
from apiserver import running_api
from bookwise.settings import Settings
from browser import page_without_errors, part, shadow_focus, visit, wait_state
from examplesite import serving_example
from fakellm import FakeLLM

pytestmark = pytest.mark.docusaurus

SCREENSHOTS = Path(__file__).resolve().parents[2] / "widget" / "screenshots"
ANSWER = [
    "A differential drive ",
    "turns by running its wheels ",
    "at different speeds [1]",
    ". ",
    "See [2][3][4].",
]


@pytest.fixture(scope="module")
def site_url(tmp_path_factory: pytest.TempPathFactory, llm_server: tuple[FakeLLM, str]) -> Iterator[str]:
    with serving_example(tmp_path_factory.mktemp("example-browser"), llm_url=llm_server[1]) as url:
        yield url


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    with page_without_errors(browser) as page:
        yield page


def record_render_order(page: Any) -> None:
    """Note when the sources and the first answer text appear, as the DOM changes (no timing)."""
    page.evaluate(
        """() => {
          const root = document.getElementById('bookwise-widget').shadowRoot;
          window.__order = [];
          new MutationObserver(() => {
            const sources = root.querySelectorAll('[data-bw=source-link]').length > 0;
            const answers = [...root.querySelectorAll('[data-bw=answer]')];
            const text = answers.length > 0 && answers[answers.length - 1].textContent.trim() !== '';
            if (sources && !window.__order.includes('sources')) window.__order.push('sources');
            if (text && !window.__order.includes('answer')) window.__order.push('answer');
          }).observe(root, {subtree: true, childList: true, characterData: true});
        }"""
    )


def test_ask_stream_and_follow_a_citation_to_its_heading(site_url: str, page: Any, fake: FakeLLM) -> None:
    fake.tokens = ANSWER
    fake.delay_s = 0.05
    visit(page, f"{site_url}/docs/intro")
    page.keyboard.press("Control+i")
    assert part(page, "panel").is_visible()
    assert shadow_focus(page) == "input"
    record_render_order(page)
    part(page, "input").fill("How does a differential drive robot turn?")
    page.keyboard.press("Enter")
    wait_state(page, "done")
    assert page.evaluate("window.__order") == ["sources", "answer"]
    answer = part(page, "answer").last
    assert "turns by running its wheels at different speeds" in answer.inner_text()

    cites = answer.locator("[data-bw=cite]")
    hrefs = [urlsplit(cites.nth(i).get_attribute("href")) for i in range(cites.count())]
    assert all(href.netloc == urlsplit(site_url).netloc for href in hrefs)
    # A citation to a section of another page: the reader must land on that heading.
    index, href = next((i, h) for i, h in enumerate(hrefs) if h.fragment and h.path != "/docs/intro")
    page_url, anchor = href.path, href.fragment
    cites.nth(index).click()
    page.wait_for_function(f"() => location.pathname === {page_url!r}")
    target = page.locator(f"[id={anchor!r}]")
    target.wait_for()
    page.wait_for_function(
        f"""() => {{
          const box = document.getElementById({anchor!r}).getBoundingClientRect();
          return box.top >= 0 && box.top < window.innerHeight;
        }}"""
    )
    assert fake.calls == 1


def select_paragraph_after(page: Any, heading_id: str) -> str:
    """Select the first paragraph after a heading, as a reader's drag would; returns its text."""
    return page.evaluate(
        """(id) => {
          let node = document.getElementById(id).nextElementSibling;
          while (node && node.tagName !== 'P') node = node.nextElementSibling;
          const range = document.createRange();
          range.selectNodeContents(node);
          const selection = window.getSelection();
          selection.removeAllRanges();
          selection.addRange(range);
          node.dispatchEvent(new MouseEvent('mouseup', {bubbles: true}));
          return selection.toString();
        }""",
        heading_id,
    )


def test_highlight_a_passage_and_ask_about_it(site_url: str, page: Any, fake: FakeLLM) -> None:
    fake.tokens = ["This passage says the wheels ", "set the turn [1]."]
    fake.delay_s = 0.0
    visit(page, f"{site_url}/docs/foundations/differential-drive")
    heading_id = page.evaluate("document.querySelector('.theme-doc-markdown h2[id]').id")
    selected = select_paragraph_after(page, heading_id)
    assert selected.strip()
    requests: list[dict[str, Any]] = []
    page.on("request", lambda r: requests.append(r.post_data_json) if r.url.endswith("/api/chat") else None)
    part(page, "popover").click()
    assert part(page, "selection-chip").is_visible()
    part(page, "input").fill("What does this mean?")
    page.keyboard.press("Enter")
    wait_state(page, "done")
    [body] = requests
    assert body["mode"] == "selected_text"
    assert body["selected_text"] == selected.strip()
    assert body["page"]["url"] == "/docs/foundations/differential-drive"
    assert body["page"]["heading_id"] == heading_id
    href = urlsplit(part(page, "answer").last.locator("[data-bw=cite]").first.get_attribute("href"))
    assert href.path == "/docs/foundations/differential-drive"
    assert href.fragment.startswith(f"{heading_id}:~:text=")
    assert selected.strip()[:40] in fake.last_request["messages"][-1]["content"]


@pytest.fixture(scope="module")
def passage_site_url(example_local: Settings) -> Iterator[str]:
    """The example site and API with the local embedder and no LLM: what the demo shows."""
    with running_api(example_local) as url:
        # The first question loads the local model; on a busy CI machine that alone can take seconds.
        local_http.post(f"{url}/api/search", json={"query": PASSAGE_QUESTION}, timeout=120).raise_for_status()
        yield url


PASSAGE_QUESTION = "What are the two steps of the Kalman filter?"
LOCAL_ANSWER_MS = 60_000  # passages are ranked with the local model on CPU, shared with the rest of the suite


def test_passage_answers_in_light_dark_and_phone_screenshots(passage_site_url: str, browser: Any) -> None:
    """The README's screenshots: the demo's extractive answers are whole passages, Markdown rendered."""
    SCREENSHOTS.mkdir(exist_ok=True)
    for name, viewport in (
        ("light", {"width": 1280, "height": 860}),
        ("dark", {"width": 1280, "height": 860}),
        ("phone", {"width": 390, "height": 844}),
    ):
        context = browser.new_context(viewport=viewport, color_scheme="dark" if name == "dark" else "light")
        page = context.new_page()
        visit(page, f"{passage_site_url}/docs/sensing/kalman-filter")
        if name == "dark":
            page.evaluate("document.documentElement.setAttribute('data-theme', 'dark')")
        part(page, "launcher").click()
        part(page, "input").fill(PASSAGE_QUESTION)
        page.keyboard.press("Enter")
        wait_state(page, "done", LOCAL_ANSWER_MS)
        answer = part(page, "answer").last
        # The lead-in and both steps, as a rendered list inside the quote, not raw Markdown.
        assert answer.locator("blockquote ol li").count() == 2
        assert "Predict." in answer.inner_text() and "Correct." in answer.inner_text()
        assert "**" not in answer.inner_text()
        if name == "dark":
            assert page.evaluate("document.getElementById('bookwise-widget').dataset.theme") == "dark"
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), animations="disabled")
        context.close()


def test_a_quoted_code_block_keeps_its_copy_button(passage_site_url: str, page: Any) -> None:
    visit(page, f"{passage_site_url}/docs/control/pid-control")
    part(page, "launcher").click()
    part(page, "input").fill("Show me a PID controller implemented in Python code")
    page.keyboard.press("Enter")
    wait_state(page, "done", LOCAL_ANSWER_MS)
    answer = part(page, "answer").last
    assert answer.locator("pre code").count() >= 1
    assert answer.locator("[data-bw=copy]").count() == answer.locator("pre").count()


SCROLL_AT_REST = """() => new Promise(resolve => {
    const before = window.scrollY;
    setTimeout(() => resolve(before > 600 && window.scrollY === before), 150);
})"""


def test_the_launcher_does_not_cover_docusaurus_back_to_top_button_regression(
    site_url: str, page: Any
) -> None:
    """The launcher sat on Docusaurus' "back to top" button, bottom right, once the reader scrolled."""
    visit(page, f"{site_url}/docs/sensing/kalman-filter")
    page.mouse.wheel(0, 4000)
    # Wait for the scroll down to come to rest: on a loaded machine a wheel sent straight after
    # it merged with it, the page never scrolled up, and the theme never showed its button.
    page.wait_for_function(SCROLL_AT_REST)
    shown = ".theme-back-to-top-button[class*=backToTopButtonShow]"
    for _ in range(4):
        page.mouse.wheel(0, -200)  # the theme shows the button while the reader scrolls back up
        try:
            page.wait_for_selector(shown, timeout=5000)
            break
        except PlaywrightTimeoutError:
            continue
    else:
        pytest.fail("Docusaurus never showed its back-to-top button while the reader scrolled up")
    button = page.locator(".theme-back-to-top-button").bounding_box()
    launcher = part(page, "launcher").bounding_box()
    assert button is not None and launcher is not None
    apart_vertically = (
        launcher["y"] + launcher["height"] <= button["y"] or button["y"] + button["height"] <= launcher["y"]
    )
    apart_horizontally = (
        launcher["x"] + launcher["width"] <= button["x"] or button["x"] + button["width"] <= launcher["x"]
    )
    assert apart_vertically or apart_horizontally


DRIVE = "/docs/foundations/differential-drive"
CMD_VEL = "reading-the-cmd_vel-topic"
VELOCITY_QUESTION = "How do I send a velocity command to the robot from the terminal?"
MARKED_TOP = "() => [...CSS.highlights.get('bookwise-landed')][0].getBoundingClientRect().top"
TOP_OF = "id => document.getElementById(id).getBoundingClientRect().top"


@pytest.mark.parametrize("width", [1440, 1920])
def test_a_citation_on_a_wide_screen_lands_on_its_passage_beside_the_docked_panel_regression(
    site_url: str, page: Any, fake: FakeLLM, width: int
) -> None:
    """At 1,400 px and wider, citation 1 of the velocity-command answer landed about 700 px past its
    heading, the marked passage off screen, and the panel closed. The quoted command's line, scrolling
    sideways in its code block, reached under the docked panel, which closed for it; the page then
    reflowed to its full width, shorter above the window, and the passage moved out of view."""
    page.set_viewport_size({"width": width, "height": 900})
    visit(page, f"{site_url}{DRIVE}")
    page.wait_for_function("() => document.documentElement.hasAttribute('data-bookwise-hydrated')")
    paragraph, code = page.evaluate(
        """id => {
          let node = document.getElementById(id).nextElementSibling;
          while (node.tagName !== 'P') node = node.nextElementSibling;
          const pre = node.nextElementSibling.querySelector('pre');
          return [node.textContent.trim(), pre.innerText.trim()];
        }""",
        CMD_VEL,
    )
    quoted_code = "\n".join(f"> {line}" for line in code.splitlines())
    fake.tokens = [f"> {paragraph}\n>\n> ```bash\n{quoted_code}\n> ```\n>\n> [1]"]
    fake.delay_s = 0.0
    asked = page.evaluate(
        "([q, t, id]) => window.Bookwise.ask(q, {selectedText: t, headingId: id})",
        [VELOCITY_QUESTION, paragraph, CMD_VEL],
    )
    assert asked == "done"
    assert page.evaluate("document.documentElement.hasAttribute('data-bookwise-docked')")
    page.evaluate("() => window.scrollTo(0, 0)")
    part(page, "answer").last.locator("[data-bw=cite]").first.click()
    page.wait_for_function("() => CSS.highlights.get('bookwise-landed')")
    height = page.evaluate("innerHeight")
    assert 0 <= page.evaluate(TOP_OF, CMD_VEL) < height
    assert 0 <= page.evaluate(MARKED_TOP) < height
    expect(part(page, "panel")).to_be_visible()  # docked beside the page, it covers nothing
    # It fills the column the page leaves it, not a card at the column's foot under an empty space.
    box = part(page, "panel").bounding_box()
    assert box is not None and box["height"] >= height - 2 * 16 - 1, box
    # Closing the docked panel widens the page; what the reader was looking at stays where it was.
    heading_top = page.evaluate(TOP_OF, CMD_VEL)
    part(page, "close").click()
    expect(part(page, "panel")).to_be_hidden()
    assert abs(page.evaluate(TOP_OF, CMD_VEL) - heading_top) <= 1
