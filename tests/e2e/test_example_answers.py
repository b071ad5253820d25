"""What a reader sees without a language model, on real books with the real local embedder.

The example textbook (built by Docusaurus: the session's ``example_local``) and a slice of the
Docusaurus docs are indexed with MiniLM (not adapted, for speed) and asked the questions that used to
get fragments, the wrong section or a wrong refusal. Each test is named after what a reader saw.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from bookwise.generation.answer import Answerer, checked
from bookwise.generation.events import AnswerEvent
from bookwise.generation.models import ChatRequest, Page
from bookwise.generation.prompts import Turn
from bookwise.index.build import run_ingest
from bookwise.index.factory import open_store
from bookwise.ingest.site import read_site_config
from bookwise.retrieval.retriever import Retriever
from bookwise.settings import Settings

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpora" / "docusaurus-docs"
CORPUS_SLICE = (
    "api/docusaurus.config.js.mdx",
    "api/plugins/plugin-sitemap.mdx",
    "deployment.mdx",
    "advanced/routing.mdx",
    "seo.mdx",
    "static-assets.mdx",
)


def answerer(settings: Settings) -> Iterator[Answerer]:
    retriever = Retriever.open(settings)
    try:
        yield Answerer(settings, retriever, llm=None)
    finally:
        retriever.close()


@pytest.fixture(scope="module")
def book(example_local: Settings) -> Iterator[Answerer]:
    yield from answerer(example_local)


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Answerer]:
    if not CORPUS.is_dir():
        pytest.skip("the docusaurus-docs corpus is not beside this checkout")
    site = tmp_path_factory.mktemp("docusaurus-slice")
    for name in CORPUS_SLICE:
        target = site / "docs" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(CORPUS / "docs" / name, target)
    settings = Settings(  # type: ignore[call-arg]
        _env_file=None,
        data_dir=tmp_path_factory.mktemp("docusaurus-local"),
        embedding_provider="local",
        embedding_adapt=False,
        llm_base_url=None,
    )
    store = open_store(settings)
    try:
        run_ingest(settings, read_site_config(site), store=store)
    finally:
        store.close()
    yield from answerer(settings)


class Answer:
    def __init__(self, events: list[AnswerEvent]) -> None:
        self.events = events
        self.meta: dict[str, Any] = events[0].data
        self.sources: list[dict[str, Any]] = events[1].data["sources"]
        self.done: dict[str, Any] = events[-1].data
        self.text = "".join(e.data["text"] for e in events if e.name == "token")
        # As rendered: a source line break inside a quoted paragraph reads as a space.
        self.flat = re.sub(r"[ \t]*\n>?[ \t]*(?=\S)", " ", self.text)

    def first_source(self) -> str:
        return f"{self.sources[0]['title']} › {self.sources[0]['heading']}"


def ask(answerer: Answerer, question: str, **fields: Any) -> Answer:
    async def run() -> list[AnswerEvent]:
        prepared = await answerer.prepare(checked(ChatRequest(question=question, **fields), answerer.limits))
        return [event async for event in answerer.stream(prepared)]

    answer = Answer(anyio.run(run))
    assert answer.events[-1].name == "done", answer.events[-1].data
    return answer


def test_the_frames_question_quotes_whole_sentences_about_both_frames(book: Answerer) -> None:
    answer = ask(book, "What are the body frame and the world frame?")
    assert answer.done["answer_kind"] == "extractive"
    assert "with its origin midway between the drive wheels" in answer.flat  # not cut at "the"
    assert "The **world frame**" in answer.flat


def test_the_two_steps_of_the_kalman_filter_are_both_quoted(book: Answerer) -> None:
    answer = ask(book, "What are the two steps of the Kalman filter?")
    assert "**Predict.**" in answer.text and "**Correct.**" in answer.text
    assert answer.text.index("two steps") < answer.text.index("**Predict.**")  # with its lead-in


def test_what_the_integral_term_does_in_a_pid_controller_opens_with_the_pid_definition_regression(
    book: Answerer,
) -> None:
    """ "What does the integral term do?" opened with the I term; with "in a PID controller" after it, the
    question was no longer read as asking what the term does, and the answer opened with the
    controller's general definition."""
    answer = ask(book, "What does the integral term do in a PID controller?")
    assert answer.first_source().endswith("› Integral"), answer.text
    lead = answer.flat.index("The I term adds up the error over time.")
    assert "controller is by far" not in answer.flat[:lead], answer.text


@pytest.mark.parametrize("question", ["What happens if R is too small?", "How do I choose Q and R?"])
def test_the_q_and_r_questions_are_answered_from_choosing_the_noise_parameters(
    book: Answerer, question: str
) -> None:
    answer = ask(book, question)
    assert answer.done["answer_kind"] == "extractive", answer.text
    assert "Choosing the noise parameters" in answer.first_source()
    assert answer.done["citations"][0] == 1  # the first quote cites source 1: numbered as shown


def test_the_atan2_follow_up_is_about_atan2(book: Answerer) -> None:
    history = (
        Turn("user", "What is the Kalman gain?"),
        Turn("assistant", "*From the book…*\n\n> The Kalman gain `K` is between 0 and 1. [1]"),
    )
    answer = ask(book, "what's atan2 for", history=history)
    assert answer.meta["query"] == "what's atan2 for" and answer.meta["query_method"] == "as_asked"
    assert "atan2" in answer.text
    assert "Kalman gain" not in answer.text


def test_widening_a_selection_to_the_book_searches_the_question(book: Answerer) -> None:
    selection = "The controller output is proportional to the error: u = Kp · e."
    page = Page(url="/docs/control/pid-control")
    answer = ask(
        book,
        "What is a Kalman filter?",
        mode="selected_text",
        selected_text=selection,
        page=page,
        scope="book",
    )
    assert answer.meta["query"] == "What is a Kalman filter?"
    assert "Kalman" in answer.first_source() or "kalman" in answer.sources[0]["url"]
    assert "Kalman" in answer.text


def test_every_quoted_passage_is_whole(book: Answerer) -> None:
    """No quote starts or stops mid-sentence: each is one of its section's passages, verbatim."""
    for question in (
        "How does a differential drive robot turn?",
        "What does the integral term do?",
        "How do I tune a PID controller?",
    ):
        answer = ask(book, question)
        for quote in answer.text.split("\n\n> ")[1:]:
            body = quote.split(" [")[0].lstrip("> ").strip()
            assert body[:1].isupper() or body[:1] in "`*|-0123456789", body


def test_trailing_slash_leads_with_the_trailing_slash_reference(docs: Answerer) -> None:
    answer = ask(docs, "What does the trailingSlash option do?")
    assert answer.sources[0]["heading"] == "`trailingSlash`", answer.first_source()
    assert answer.done["citations"][0] == 1  # the first quote is from the trailingSlash reference
    assert "sitemap" not in answer.flat.split("[1]")[0].lower()  # not the sitemap's lastmod


def test_github_pages_deploy_is_answered_with_whole_passages(docs: Answerer) -> None:
    answer = ask(docs, "How can I deploy my site to GitHub Pages?")
    assert answer.done["answer_kind"] == "extractive"
    # The deployment guide's GitHub Pages part leads ("Deploying to GitHub Pages", or its "Deploy" step).
    assert answer.sources[0]["url"].split("#")[0].endswith("/docs/deployment"), answer.first_source()
    assert "Deploys your site with GitHub Pages.\n" not in answer.text  # no bare step label
    quoted = answer.text.split("\n\n", 1)[1]
    assert len(quoted.split()) > 25
    # The command itself, with the sentence before the tabs ("Finally, to deploy your site…, run:").
    assert "GIT_USER=<GITHUB_USERNAME> yarn deploy" in answer.text
