"""Study with the book in Chromium on the built example textbook: study actions, suggested questions, the
code-block button, continuity across navigation and reload, landing, keyboard and screen-reader semantics.

Real parts end to end as in test_example_browser.py: the Docusaurus build with the plugin, `bookwise
serve`'s app serving it, the API and the widget bundle on one loopback origin, the hash-embedded index,
and a fake OpenAI-compatible LLM (or none, for the fallbacks). Screenshots of the study actions are
written to widget/screenshots/ for the README.
"""

import json
import re
from collections.abc import Iterator
from html import escape
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

import local_http
from bookwise.generation.prompts import NOT_IN_SELECTION
from browser import HOST, page_without_errors, part, shadow_focus, visit, wait_state
from examplesite import EXAMPLE_SITE, serving_example
from fakellm import FakeLLM

pytestmark = pytest.mark.docusaurus

SCREENSHOTS = Path(__file__).resolve().parents[2] / "widget" / "screenshots"
# A code block's text as its lines (Docusaurus' innerText doubles each line break).
CODE_OF_BUTTON = (
    "b => [...b.parentElement.querySelectorAll('pre code .token-line')].map(l => l.textContent).join('\\n')"
    ".replace(/^\\s*\\n/, '').trimEnd()"
)
QUIZ_CHIP_WITHOUT_MODEL = "Quiz: your reply is compared with the book’s own words."  # widget/src/panel.js
KALMAN = "/docs/sensing/kalman-filter"
PID = "/docs/control/pid-control"
DRIVE = "/docs/foundations/differential-drive"
SENSORS = "/docs/sensing/sensors"  # in the sidebar's open category on the Kalman page


@pytest.fixture(scope="module")
def site_url(tmp_path_factory: pytest.TempPathFactory, llm_server: tuple[FakeLLM, str]) -> Iterator[str]:
    with serving_example(
        tmp_path_factory.mktemp("example-study"), llm_url=llm_server[1], suggestions=True
    ) as url:
        yield url


@pytest.fixture(scope="module")
def no_llm_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The same book without an LLM: every action must still do something honest."""
    with serving_example(tmp_path_factory.mktemp("example-study-no-llm")) as url:
        yield url


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    with page_without_errors(browser) as page:
        yield page


def chat_bodies(page: Any) -> list[dict[str, Any]]:
    """Every ChatBody the page sends from now on."""
    bodies: list[dict[str, Any]] = []
    page.on("request", lambda r: bodies.append(r.post_data_json) if r.url.endswith("/api/chat") else None)
    return bodies


def select_paragraph_after(page: Any, heading_id: str) -> str:
    """Select the first paragraph after a heading, as a reader's drag would; returns its text once the
    study actions are offered. The page settles first: a scroll (the site's own, on load) hides them."""
    page.wait_for_load_state("networkidle")
    text: str = page.evaluate(
        """(id) => {
          let node = document.getElementById(id).nextElementSibling;
          while (node && node.tagName !== 'P') node = node.nextElementSibling;
          node.scrollIntoView({block: 'center', behavior: 'instant'});
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
    expect(part(page, "popover-group")).to_be_visible()
    return text.strip()


def answer_text(page: Any) -> str:
    text: str = part(page, "answer").last.inner_text()
    return text


@pytest.mark.parametrize(
    ("action", "question"),
    [
        ("explain", "Explain this simply."),
        ("example", "Give an example of this."),
        ("quiz", "Quiz me on this."),
    ],
)
def test_each_selection_action_sends_its_action_with_the_passage(
    site_url: str, page: Any, fake: FakeLLM, action: str, question: str
) -> None:
    fake.tokens = ["In short: the wheels set the turn [1]."]
    fake.delay_s = 0.0
    visit(page, f"{site_url}{DRIVE}")
    heading_id = page.evaluate("document.querySelector('.theme-doc-markdown h2[id]').id")
    selected = select_paragraph_after(page, heading_id)
    bodies = chat_bodies(page)
    expect(part(page, "popover-group")).to_be_visible()
    part(page, f"popover-{action}").click()
    wait_state(page, "done")
    [body] = bodies
    # The button says what to do: no question is sent, the conversation shows the action's label.
    assert body["action"] == action and body["question"] == ""
    expect(page.locator(f"{HOST} .bw-question p").last).to_have_text(question)
    assert body["mode"] == "selected_text" and body["selected_text"] == selected
    assert body["page"]["url"] == DRIVE and body["page"]["heading_id"] == heading_id
    assert "the wheels set the turn" in answer_text(page)
    # The passage is what the model was given to work from.
    assert selected[:40] in fake.last_request["messages"][-1]["content"]
    expect(part(page, "popover-group")).to_be_hidden()


def test_a_quiz_is_an_exchange_until_the_reader_ends_it(site_url: str, page: Any, fake: FakeLLM) -> None:
    fake.tokens = ["Question 1: what sets the turn of a differential drive?"]
    fake.delay_s = 0.0
    visit(page, f"{site_url}{DRIVE}")
    heading_id = page.evaluate("document.querySelector('.theme-doc-markdown h2[id]').id")
    selected = select_paragraph_after(page, heading_id)
    bodies = chat_bodies(page)
    part(page, "popover-quiz").click()
    wait_state(page, "done")
    expect(part(page, "quiz-chip")).to_be_visible()
    expect(part(page, "input")).to_have_attribute("placeholder", "Your answer…")
    fake.tokens = ["Right: the difference of the wheel speeds [1]. Question 2: …"]
    part(page, "input").fill("The difference between the wheel speeds")
    page.keyboard.press("Enter")
    wait_state(page, "done")
    reply = bodies[1]
    assert reply["action"] == "quiz" and reply["question"] == "The difference between the wheel speeds"
    assert reply["mode"] == "selected_text" and reply["selected_text"] == selected
    assert reply["history"][0] == {"role": "user", "content": "Quiz me on this.", "action": "quiz"}
    assert reply["history"][1]["content"].startswith("Question 1") and reply["history"][1]["action"] == "quiz"
    assert bodies[0]["question"] == ""  # the quiz's first turn: a question, not an answer
    page.screenshot(path=str(SCREENSHOTS / "study-quiz.png"), animations="disabled")
    # "New question" skips: an empty question with the same action, passage and page.
    part(page, "quiz-next").click()
    wait_state(page, "done")
    skip = bodies[2]
    assert skip["action"] == "quiz" and skip["question"] == "" and skip["selected_text"] == selected
    assert skip["page"] == bodies[0]["page"]
    expect(part(page, "quiz-chip")).to_be_visible()
    part(page, "quiz-end").click()
    expect(part(page, "quiz-chip")).to_be_hidden()
    part(page, "input").fill("What is odometry?")
    page.keyboard.press("Enter")
    wait_state(page, "done")
    assert "action" not in bodies[3] and bodies[3]["mode"] == "normal"


def test_the_panels_page_actions_summarize_and_quiz_the_page_the_reader_is_on(
    site_url: str, page: Any, fake: FakeLLM
) -> None:
    fake.tokens = ["The Kalman filter predicts, then corrects [1]."]
    fake.delay_s = 0.0
    visit(page, f"{site_url}{KALMAN}")
    part(page, "launcher").click()
    bodies = chat_bodies(page)
    part(page, "study-summarize").click()
    wait_state(page, "done")
    assert bodies[0]["action"] == "summarize_page" and bodies[0]["question"] == ""
    assert bodies[0]["mode"] == "normal" and bodies[0]["page"]["url"] == KALMAN
    assert "heading_id" not in bodies[0]["page"]  # the whole page
    # "This section" is the one the reader scrolled to.
    page.evaluate("document.getElementById('ekf').scrollIntoView()")
    part(page, "study-quiz").click()
    wait_state(page, "done")
    assert bodies[1]["action"] == "quiz_page" and bodies[1]["page"] == bodies[0]["page"] | {
        "heading_id": "ekf"
    }
    expect(part(page, "quiz-chip")).to_be_visible()


@pytest.mark.parametrize("action", ["explain", "example", "quiz"])
def test_without_an_llm_each_selection_action_still_answers(no_llm_url: str, page: Any, action: str) -> None:
    visit(page, f"{no_llm_url}{KALMAN}")
    select_paragraph_after(page, "kalman-1d")
    part(page, f"popover-{action}").click()
    wait_state(page, "done", 20_000)
    assert answer_text(page).strip()


@pytest.mark.parametrize("action", ["summarize", "quiz"])
def test_without_an_llm_each_page_action_still_answers(no_llm_url: str, page: Any, action: str) -> None:
    visit(page, f"{no_llm_url}{KALMAN}")
    part(page, "launcher").click()
    part(page, f"study-{action}").click()
    wait_state(page, "done", 20_000)
    assert answer_text(page).strip()
    if action == "quiz":
        # The book's own exercise, then its solution once the reader has answered.
        bodies = chat_bodies(page)
        part(page, "input").fill("I am not sure")
        page.keyboard.press("Enter")
        wait_state(page, "done", 20_000)
        assert bodies[0]["action"] == "quiz_page" and bodies[0]["history"][-1]["action"] == "quiz_page"
        expect(part(page, "answer")).to_have_count(2)
        assert answer_text(page).strip()


def test_suggested_questions_follow_the_page_and_ask_when_clicked(
    site_url: str, page: Any, fake: FakeLLM
) -> None:
    fake.delay_s = 0.0
    expected = {
        path: local_http.get(f"{site_url}/api/suggestions", params={"url": path}).json()["questions"][:3]
        for path in (KALMAN, SENSORS)
    }
    assert expected[KALMAN] and expected[KALMAN] != expected[SENSORS]
    visit(page, f"{site_url}{KALMAN}")
    part(page, "launcher").click()
    suggestions = part(page, "suggestion")
    expect(suggestions).to_have_text(expected[KALMAN])
    # A client-side navigation (the sidebar) brings the next page's suggestions.
    page.locator(f".theme-doc-sidebar-menu a[href='{SENSORS}']").click()
    page.wait_for_function(f"() => location.pathname === {SENSORS!r}")
    expect(suggestions).to_have_text(expected[SENSORS])
    bodies = chat_bodies(page)
    suggestions.first.click()
    wait_state(page, "done")
    assert bodies[0]["question"] == expected[SENSORS][0] and bodies[0]["page"]["url"] == SENSORS


def with_attributes(page: Any, url: str, attributes: dict[str, str]) -> None:
    """Serve the page with more data-* attributes on the widget's script tag, as the plugin's owner
    options would write them."""

    def rewrite(route: Any) -> None:
        html = route.fetch().text()
        added = " ".join(f'{name}="{escape(value)}"' for name, value in attributes.items())
        # The widget's script tag (the minified HTML leaves its attributes unquoted): the navbar's
        # search button (data-bookwise-search) comes first.
        tag = re.search(r"<script src=\"?/widget\.js\"?", html)
        assert tag is not None
        route.fulfill(body=html.replace(tag[0], f"{tag[0]} {added}", 1), content_type="text/html")

    page.route(url, rewrite)


def test_the_owners_example_questions_replace_the_generated_ones(site_url: str, page: Any) -> None:
    examples = ["What is odometry?", "Why filter the derivative term?"]
    with_attributes(page, f"{site_url}{KALMAN}", {"data-examples": json.dumps(examples)})
    visit(page, f"{site_url}{KALMAN}")
    part(page, "launcher").click()
    expect(part(page, "suggestion")).to_have_text(examples)


def test_the_owners_look_placeholder_and_disclaimer(site_url: str, page: Any) -> None:
    with_attributes(
        page,
        f"{site_url}{KALMAN}",
        {
            "data-placeholder": "Ask about robots…",
            "data-disclaimer": "Answers may be wrong: check the cited sections.",
            "data-accent": "rgb(192, 57, 43)",
            "data-position": "left",
            "data-launcher-label": "Ask",
        },
    )
    visit(page, f"{site_url}{KALMAN}")
    launcher = part(page, "launcher")
    expect(launcher).to_have_text("✦ Ask")
    expect(launcher).to_have_css("background-color", "rgb(192, 57, 43)")
    box = launcher.bounding_box()
    assert box is not None and box["x"] < 100  # bottom left
    launcher.click()
    expect(part(page, "input")).to_have_attribute("placeholder", "Ask about robots…")
    expect(part(page, "disclaimer")).to_have_text("Answers may be wrong: check the cited sections.")
    panel = part(page, "panel").bounding_box()
    assert panel is not None and panel["x"] < 100


def test_a_code_blocks_ask_button_opens_the_widget_with_the_code_as_the_selection(
    site_url: str, page: Any, fake: FakeLLM
) -> None:
    fake.tokens = ["This computes the PID output [1]."]
    fake.delay_s = 0.0
    visit(page, f"{site_url}{PID}")
    blocks = page.locator(".theme-doc-markdown pre")
    buttons = page.locator(".theme-doc-markdown [data-bookwise-code-ask]")
    expect(buttons).to_have_count(blocks.count())
    button = buttons.nth(1)
    expect(button).to_have_attribute("aria-label", "Ask about this code")
    code = page.evaluate(CODE_OF_BUTTON, button.element_handle())
    button.click()
    assert part(page, "panel").is_visible()
    expect(part(page, "selection-chip")).to_contain_text(code.splitlines()[0])
    bodies = chat_bodies(page)
    part(page, "input").fill("What does this code do?")
    page.keyboard.press("Enter")
    wait_state(page, "done")
    assert bodies[0]["mode"] == "selected_text" and bodies[0]["selected_text"] == code
    assert "\n" in code  # the lines stay lines


def test_the_code_buttons_wait_for_hydration_regression(site_url: str, page: Any) -> None:
    """Buttons added to the server-rendered page before React hydrated it made React discard the markup
    and render the page again (minified error #418 in the console)."""
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    visit(page, f"{site_url}{PID}")
    expect(page.locator(".theme-doc-markdown [data-bookwise-code-ask]").first).to_be_visible()
    expect(page.locator(".navbar [data-bookwise-navbar]")).to_have_count(1)
    assert page.evaluate("document.documentElement.hasAttribute('data-bookwise-hydrated')")
    assert not [error for error in errors if "Recoverable" in error or "#418" in error]


def test_the_conversation_survives_navigation_and_reload_and_the_page_context_follows(
    site_url: str, page: Any, fake: FakeLLM
) -> None:
    fake.tokens = ["It predicts, then corrects [1]."]
    fake.delay_s = 0.0
    visit(page, f"{site_url}{KALMAN}")
    part(page, "launcher").click()
    part(page, "input").fill("What are the two steps?")
    page.keyboard.press("Enter")
    wait_state(page, "done")
    page.locator(f".theme-doc-sidebar-menu a[href='{SENSORS}']").click()
    page.wait_for_function(f"() => location.pathname === {SENSORS!r}")
    expect(part(page, "answer")).to_have_count(1)
    page.reload()
    page.wait_for_function("() => window.Bookwise && document.getElementById('bookwise-widget')")
    # The panel is open again, with the answer as it was: replayed, not asked again.
    expect(part(page, "panel")).to_be_visible()
    expect(part(page, "answer")).to_have_text("It predicts, then corrects 1.")
    assert fake.calls == 1
    bodies = chat_bodies(page)
    part(page, "input").fill("And why?")
    page.keyboard.press("Enter")
    wait_state(page, "done")
    assert bodies[0]["page"]["url"] == SENSORS
    assert bodies[0]["history"][0] == {"role": "user", "content": "What are the two steps?"}
    part(page, "clear").click()
    page.reload()
    page.wait_for_function("() => window.Bookwise && document.getElementById('bookwise-widget')")
    expect(part(page, "answer")).to_have_count(0)


def test_keyboard_and_screen_reader_semantics(site_url: str, page: Any, fake: FakeLLM) -> None:
    fake.tokens = ["It predicts, then corrects [1]."]
    fake.delay_s = 0.0
    visit(page, f"{site_url}{KALMAN}")
    # The launcher is the first Tab stop of the page, before the site's own links.
    page.keyboard.press("Tab")
    assert shadow_focus(page) == "launcher"
    page.keyboard.press("Enter")
    expect(part(page, "panel")).to_have_attribute("aria-modal", "true")
    expect(part(page, "messages")).to_have_attribute("role", "log")
    assert shadow_focus(page) == "input"
    page.keyboard.type("What are the two steps?")
    page.keyboard.press("Enter")
    wait_state(page, "done")
    announce = part(page, "announce")
    expect(announce).to_have_attribute("role", "status")
    expect(announce.locator("p").last).to_have_text("Answer complete.")
    # The sources were announced before: the status region said them while the answer streamed.
    titles = part(page, "source-link").all_inner_texts()
    assert titles
    page.keyboard.press("Escape")
    expect(part(page, "panel")).to_be_hidden()


def test_the_sources_and_the_end_of_the_answer_are_announced(site_url: str, page: Any, fake: FakeLLM) -> None:
    fake.tokens = ["It predicts", ", then corrects [1]."]
    fake.delay_s = 0.0
    visit(page, f"{site_url}{KALMAN}")
    part(page, "launcher").click()
    part(page, "input").fill("What are the two steps?")
    page.keyboard.press("Enter")
    wait_state(page, "done")
    said = part(page, "announce").locator("p").all_inner_texts()
    headings = [name.split(" › ")[-1] for name in part(page, "source-link").all_inner_texts()]
    assert said[0].startswith("Sources: ") and said[-1] == "Answer complete."
    assert all(heading.lstrip("0123456789") in said[0] for heading in headings)


def test_no_shortcut_hint_on_a_touch_screen(site_url: str, browser: Any) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = context.new_page()
    visit(page, f"{site_url}{KALMAN}")
    launcher = part(page, "launcher")
    assert "Ctrl" not in (launcher.get_attribute("title") or "")
    assert launcher.get_attribute("aria-keyshortcuts") is None
    launcher.click()
    expect(page.locator(f"{HOST} .bw-empty")).not_to_contain_text("Ctrl+I")
    context.close()
    desktop = browser.new_context(viewport={"width": 1280, "height": 860})
    page = desktop.new_page()
    visit(page, f"{site_url}{KALMAN}")
    part(page, "launcher").click()
    expect(page.locator(f"{HOST} .bw-empty")).to_contain_text("Ctrl+I")
    desktop.close()


def test_thumbs_down_asks_why_and_sends_the_reason(site_url: str, page: Any, fake: FakeLLM) -> None:
    fake.tokens = ["It predicts, then corrects [1]."]
    fake.delay_s = 0.0
    visit(page, f"{site_url}{KALMAN}")
    part(page, "launcher").click()
    part(page, "input").fill("What are the two steps?")
    page.keyboard.press("Enter")
    wait_state(page, "done")
    part(page, "thumb-down").click()
    reasons = part(page, "reasons")
    expect(reasons).to_be_visible()
    expect(reasons.locator("button")).to_have_text(["Incorrect", "Not what I asked", "Unclear", "Other"])
    with page.expect_request(lambda r: r.url.endswith("/api/feedback")) as sent:
        reasons.locator("button", has_text="Not what I asked").click()
    body = sent.value.post_data_json
    assert body["rating"] == "down" and body["reason"] == "not_what_i_asked"


def test_no_thumbs_down_on_a_not_in_the_selection_reply(site_url: str, page: Any, fake: FakeLLM) -> None:
    fake.tokens = [NOT_IN_SELECTION]
    fake.delay_s = 0.0
    visit(page, f"{site_url}{DRIVE}")
    outcome = page.evaluate(
        "t => window.Bookwise.ask('Who invented it?', {selectedText: t})", "The wheels set the turn."
    )
    assert outcome == "done"
    expect(page.locator(f"{HOST} [data-kind=not_in_selection]")).to_have_count(1)
    expect(part(page, "thumb-down")).to_have_count(0)


def land_on_a_citation_on_this_page(page: Any, site_url: str) -> None:
    """Ask about the EKF section's first paragraph from the top of the Kalman page, then follow the
    answer's citation, which is on this page."""
    visit(page, f"{site_url}{KALMAN}")
    passage = page.evaluate(
        "() => { let p = document.getElementById('ekf').nextElementSibling;"
        " while (p.tagName !== 'P') p = p.nextElementSibling; return p.textContent.trim(); }"
    )
    outcome = page.evaluate(
        "t => window.Bookwise.ask('What does this do?', {selectedText: t, headingId: 'ekf'})", passage
    )
    assert outcome == "done"
    assert page.evaluate("window.scrollY") == 0
    cite = part(page, "answer").last.locator("[data-bw=cite]").first
    assert (cite.get_attribute("href") or "").split("#")[0].endswith(KALMAN)
    cite.click()
    page.wait_for_function("() => CSS.highlights.has('bookwise-landed')")
    page.wait_for_function("() => location.hash === '#ekf'")
    assert page.evaluate("window.scrollY") > 0


def test_a_landed_citation_is_highlighted_uncovered_and_back_returns(
    site_url: str, browser: Any, fake: FakeLLM
) -> None:
    """Found by trying the demo: the panel covered the cited passage, nothing marked it, and Back after a
    citation on the same page left the page instead of returning to where the reader was."""
    fake.tokens = ["The extended filter linearizes the model [1]."]
    fake.delay_s = 0.0
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    land_on_a_citation_on_this_page(page, site_url)
    # A wide screen: the panel stays open, docked beside the page, and the section is not under it.
    target = page.locator("#ekf").bounding_box()
    panel = part(page, "panel").bounding_box()
    assert target is not None and panel is not None
    assert target["x"] + target["width"] <= panel["x"], "the panel covers the cited passage"
    page.go_back()
    page.wait_for_function("() => location.hash === '' && window.scrollY === 0")
    assert page.evaluate("location.pathname") == KALMAN
    context.close()


def test_on_a_narrower_desktop_the_panel_gets_out_of_the_landed_passages_way(
    site_url: str, page: Any, fake: FakeLLM
) -> None:
    fake.tokens = ["The extended filter linearizes the model [1]."]
    fake.delay_s = 0.0
    land_on_a_citation_on_this_page(page, site_url)  # 1280 px: no room to dock
    expect(part(page, "panel")).to_be_hidden()
    expect(part(page, "launcher")).to_be_visible()


def test_the_navbar_item_opens_the_panel(site_url: str, page: Any) -> None:
    visit(page, f"{site_url}{KALMAN}")
    item = page.locator(".navbar [data-bookwise-navbar]")
    expect(item).to_have_text("Ask the book")
    item.click()
    expect(part(page, "panel")).to_be_visible()


def test_the_study_popover_screenshot(site_url: str, page: Any) -> None:
    visit(page, f"{site_url}{DRIVE}")
    heading_id = page.evaluate("document.querySelector('.theme-doc-markdown h2[id]').id")
    select_paragraph_after(page, heading_id)
    expect(part(page, "popover-group")).to_be_visible()
    page.screenshot(path=str(SCREENSHOTS / "study-popover.png"), animations="disabled")


def test_on_a_phone_the_four_study_actions_fit_the_screen(site_url: str, browser: Any) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = context.new_page()
    visit(page, f"{site_url}{DRIVE}")
    select_paragraph_after(page, page.evaluate("document.querySelector('.theme-doc-markdown h2[id]').id"))
    for name in ("popover", "popover-explain", "popover-example", "popover-quiz"):
        box = part(page, name).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, name
    context.close()


def test_without_an_llm_the_quiz_chip_promised_a_check_that_never_happened_regression(
    no_llm_url: str, page: Any
) -> None:
    """Without a model the quiz chip said "your reply is checked against the book", and a wrong answer
    got "The passage has **between** here:", never saying it was wrong. The chip and the Explain button
    say what happens; a wrong answer is called so, a right one too."""
    visit(page, f"{no_llm_url}{KALMAN}")
    select_paragraph_after(page, "kalman-1d")
    expect(part(page, "popover-explain")).to_have_text("Define its terms")  # it shows where they are defined
    part(page, "popover-quiz").click()
    wait_state(page, "done", 20_000)
    expect(part(page, "quiz-chip")).to_be_visible()
    expect(part(page, "quiz-promise")).to_have_text(QUIZ_CHIP_WITHOUT_MODEL)
    assert "checked against the book" not in part(page, "quiz-chip").inner_text()
    for _ in range(4):  # the book's exercises, then blanks cut from the passage
        if "Fill in the blank" in answer_text(page):
            break
        part(page, "input").fill("I am not sure")
        page.keyboard.press("Enter")
        wait_state(page, "done", 20_000)
        assert "key terms of the book's solution" in answer_text(page)
    assert "Fill in the blank" in answer_text(page)
    part(page, "input").fill("zebra")
    page.keyboard.press("Enter")
    wait_state(page, "done", 20_000)
    assert "Not quite: the blank is" in answer_text(page) and "last question" not in answer_text(page)
    page.screenshot(path=str(SCREENSHOTS / "study-quiz-no-llm.png"), animations="disabled")


def test_with_an_llm_the_quiz_chip_says_replies_are_checked(site_url: str, page: Any, fake: FakeLLM) -> None:
    fake.tokens = ["Question 1: what sets the turn of a differential drive? [1]"]
    fake.delay_s = 0.0
    visit(page, f"{site_url}{DRIVE}")
    heading_id = page.evaluate("document.querySelector('.theme-doc-markdown h2[id]').id")
    select_paragraph_after(page, heading_id)
    expect(part(page, "popover-explain")).to_have_text("Explain simply")
    part(page, "popover-quiz").click()
    wait_state(page, "done")
    expect(part(page, "quiz-promise")).to_have_text("Quiz: your reply is checked against the book.")


def test_ask_on_a_code_block_showed_the_code_as_a_bullet_list_regression(no_llm_url: str, page: Any) -> None:
    """Without a model, a code block's Ask came back as a bulleted quote of its lines, indentation lost;
    then as the code shown back whole. It quotes what the page says about the code instead, and the
    code goes out with its lines as written."""
    visit(page, f"{no_llm_url}{PID}")
    button = page.locator(".theme-doc-markdown [data-bookwise-code-ask]").nth(1)  # pid.py
    code = page.evaluate(CODE_OF_BUTTON, button.element_handle())
    source = (EXAMPLE_SITE / "docs" / "03-control" / "01-pid-control.mdx").read_text(encoding="utf-8")
    assert code == source.split('```python title="pid.py"\n')[1].split("\n```")[0]  # the book's lines
    bodies = chat_bodies(page)
    button.click()
    part(page, "input").press("Enter")  # "Explain this passage."
    wait_state(page, "done", 20_000)
    assert bodies[0]["selected_text"] == code  # sent with its lines as written, none doubled
    answer = part(page, "answer").last
    expect(answer).to_contain_text("What the page says about this code")
    expect(answer).to_contain_text("A robot runs its controller in a loop at a fixed period")
    expect(answer.locator("pre code")).to_have_count(0)  # not the reader's code again
    expect(answer.locator("li")).to_have_count(0)
    page.screenshot(path=str(SCREENSHOTS / "study-ask-code-no-llm.png"), animations="disabled")
