"""Landing on a citation in a real Chromium, on the built example textbook: the passage the answer quoted
is what gets highlighted, on the page the reader is on and on another page; the whole section when the
answer quoted nothing of it or the page no longer has the quoted text.

Real parts end to end as in test_example_browser_study.py: the Docusaurus build with the plugin,
`bookwise serve`'s app serving it, the hash-embedded index, and a fake OpenAI-compatible LLM (or none:
extractive answers, which are made of quoted passages).
"""

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from browser import page_without_errors, part, visit
from examplesite import serving_example
from fakellm import FakeLLM

pytestmark = pytest.mark.docusaurus

INTRO = "/docs/intro"
KALMAN = "/docs/sensing/kalman-filter"
# The EKF section's last paragraph, below the fold of a short window once its heading is scrolled to.
VIEWPORT_HEIGHT = 480
SENTENCE = (
    "Its third column is why heading uncertainty spreads into position uncertainty as the robot drives."
)

HYDRATED = "() => document.documentElement.hasAttribute('data-bookwise-hydrated')"
LANDED = """() => {
  const highlight = CSS.highlights.get('bookwise-landed');
  return highlight ? [...highlight].map((range) => range.toString()) : null;
}"""
SECTION_TEXT = """(id) => {
  const heading = document.getElementById(id);
  let text = heading.textContent;
  for (let next = heading.nextElementSibling; next && !/^H[1-6]$/.test(next.tagName);
       next = next.nextElementSibling) text += ' ' + next.textContent;
  return text;
}"""


@pytest.fixture(scope="module")
def site_url(tmp_path_factory: pytest.TempPathFactory, llm_server: tuple[FakeLLM, str]) -> Iterator[str]:
    with serving_example(tmp_path_factory.mktemp("example-landing"), llm_url=llm_server[1]) as url:
        yield url


@pytest.fixture(scope="module")
def no_llm_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving_example(tmp_path_factory.mktemp("example-landing-no-llm")) as url:
        yield url


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    with page_without_errors(browser) as page:
        yield page


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def ask_about_the_ekf_section(page: Any, site_url: str, fake: FakeLLM, answer: str) -> None:
    """On the Kalman page, a question about the EKF section's first paragraph, answered with `answer`:
    its one source is that section."""
    fake.tokens = [answer]
    fake.delay_s = 0.0
    visit(page, f"{site_url}{KALMAN}")
    # Before React hydrates, the page may still change under the test (the server-rendered text put
    # back, the code blocks' Ask buttons added): flaky on a loaded machine. The plugin marks <html>.
    page.wait_for_function(HYDRATED)
    passage = page.evaluate(
        "() => { let p = document.getElementById('ekf').nextElementSibling;"
        " while (p.tagName !== 'P') p = p.nextElementSibling; return p.textContent.trim(); }"
    )
    outcome = page.evaluate(
        "t => window.Bookwise.ask('What does this do?', {selectedText: t, headingId: 'ekf'})", passage
    )
    assert outcome == "done"


def landed(page: Any) -> list[str]:
    """The texts the landing highlight marks, once it is set."""
    marked: list[str] = page.wait_for_function(LANDED).json_value()
    return marked


def test_a_quoted_sentence_on_this_page_is_highlighted_not_its_whole_section(
    site_url: str, page: Any, fake: FakeLLM
) -> None:
    # The model quotes with Markdown of its own: emphasis and code marks are not on the page.
    quoted = SENTENCE.replace("third column", "*third column*").replace("heading", "`heading`", 1)
    ask_about_the_ekf_section(page, site_url, fake, f"Mostly this:\n\n> {quoted} [1]")
    page.set_viewport_size({"width": 1280, "height": VIEWPORT_HEIGHT})
    part(page, "answer").last.locator("[data-bw=cite]").first.click()
    page.wait_for_function("() => location.hash === '#ekf'")
    [marked] = landed(page)
    assert words(marked) == words(SENTENCE)
    assert marked.endswith("drives.")  # the sentence's full stop is marked with it
    assert len(marked) < len(page.evaluate(SECTION_TEXT, "ekf")) / 4
    # It was below the fold under its heading: scrolled to, the heading now above the window.
    box = page.evaluate(
        "() => [...CSS.highlights.get('bookwise-landed')][0].getBoundingClientRect().toJSON()"
    )
    assert 0 <= box["top"] and box["bottom"] <= VIEWPORT_HEIGHT
    assert page.evaluate("document.getElementById('ekf').getBoundingClientRect().bottom") < 0


def test_a_citation_to_another_page_highlights_the_passages_quoted_there(no_llm_url: str, page: Any) -> None:
    visit(page, f"{no_llm_url}{INTRO}")
    page.wait_for_function(HYDRATED)
    question = "How does the extended Kalman filter handle nonlinear motion and measurement models?"
    assert page.evaluate("q => window.Bookwise.ask(q)", question) == "done"
    answer = part(page, "answer").last
    cites = answer.locator("blockquote [data-bw=cite]")
    cite = next((c for c in cites.all() if urlsplit(c.get_attribute("href")).path != INTRO), None)
    assert cite is not None, answer.inner_html()  # what the reader got, should this ever fail again
    href = urlsplit(cite.get_attribute("href"))
    # An extractive answer may quote more than one passage of a section: each is marked.
    same_source = cites.locator(
        f"xpath=self::*[@data-n={cite.get_attribute('data-n')}]/ancestor::blockquote[1]"
    )
    quoted = [words(quote.inner_text())[:-1] for quote in same_source.all()]  # without the chip's number
    cite.click()
    page.wait_for_function(f"() => location.pathname === {href.path!r}")
    marked = [words(text) for text in landed(page)]
    assert {(m[:6], m[-6:]) for m in map(tuple, marked)} == {(q[:6], q[-6:]) for q in map(tuple, quoted)}
    assert sum(map(len, marked)) < len(words(page.evaluate(SECTION_TEXT, href.fragment)))


@pytest.mark.parametrize("why", ["no quote", "not on the page"])
def test_without_a_quote_found_the_whole_section_is_highlighted(
    site_url: str, page: Any, fake: FakeLLM, why: str
) -> None:
    if why == "no quote":  # a link of the answer's own, not a citation
        ask_about_the_ekf_section(page, site_url, fake, f"It linearises [1]: see [the EKF]({KALMAN}#ekf).")
        link = part(page, "answer").last.locator("a:not([data-bw=cite])")
    else:  # the page changed since it was indexed
        ask_about_the_ekf_section(page, site_url, fake, f"> {SENTENCE} [1]")
        page.evaluate(
            "() => { for (let e = document.getElementById('ekf').nextElementSibling; e.tagName !== 'H2';"
            " e = e.nextElementSibling) e.textContent = 'Gone.'; }"
        )
        link = part(page, "answer").last.locator("[data-bw=cite]").first
    link.click()
    page.wait_for_function("() => location.hash === '#ekf'")
    [marked] = landed(page)
    assert words(marked) == words(page.evaluate(SECTION_TEXT, "ekf"))
