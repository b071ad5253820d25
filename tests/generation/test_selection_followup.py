from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest

from bookwise.errors import LLMTimeoutError
from bookwise.generation.followup import fallback_query, refers_back, standalone_query, with_page_topic
from bookwise.generation.models import Page
from bookwise.generation.prompts import Message, Turn
from bookwise.generation.selection import selection_source, text_fragment, with_text_fragment
from bookwise.retrieval.retriever import page_paths
from conftest import SectionFactory

HISTORY = (Turn("user", "How do I configure the store?"), Turn("assistant", "Use configureStore [1]."))


def test_text_fragment_encodes_directive_characters_and_uses_start_end_for_long_text() -> None:
    assert text_fragment("a-b, c & d") == ":~:text=a%2Db%2C%20c%20%26%20d"
    long = "one two three four five six seven eight nine ten"
    assert text_fragment(long) == ":~:text=one%20two%20three%20four,seven%20eight%20nine%20ten"
    assert with_text_fragment("/p#h", "x y") == "/p#h:~:text=x%20y"
    assert with_text_fragment("/p", "x") == "/p#:~:text=x"
    assert with_text_fragment("/p", "  ") == "/p"


def test_selection_source_keeps_the_sections_metadata_but_only_the_selections_text(
    section: SectionFactory,
) -> None:
    located = section("Store", "The store holds state. Secret book text.")
    source = selection_source("The store holds state.", located, "/p1")
    assert source.text == "The store holds state." and source.snippet == "The store holds state."
    assert source.url.startswith("/p1#store:~:text=") and source.heading == "Store"
    orphan = selection_source("Pasted text.", None, "https://site/x/y?q=1")
    assert orphan.url == "/x/y#:~:text=Pasted%20text." and orphan.title == "Selected passage"


@pytest.mark.parametrize(
    ("url", "paths"),
    [
        ("https://site.org/docs/intro?x=1#h", ["/docs/intro", "/docs/intro/"]),
        ("/docs/intro/", ["/docs/intro", "/docs/intro/"]),
        ("/docs/caf%C3%A9", ["/docs/café", "/docs/café/"]),
        ("/", ["/"]),
        ("javascript:alert(1)", []),
    ],
)
def test_page_paths_match_the_index_forms(url: str, paths: list[str]) -> None:
    assert page_paths(url) == paths


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("what about the second one?", True),
        ("and in tests?", True),
        ("Why?", True),
        ("How do I test it with Jest?", True),
        ("How do I write a reducer with immer in Redux Toolkit?", False),
        ("what's atan2 for", False),  # short, but it names its topic
        ("how do I fix it?", True),
    ],
)
def test_refers_back(question: str, expected: bool) -> None:
    assert refers_back(question, HISTORY) is expected
    assert refers_back(question, ()) is False  # nothing to refer back to


class _Completer:
    def __init__(self, reply: str | Exception) -> None:
        self.reply = reply
        self.calls = 0

    async def complete(self, messages: Sequence[Message], *, timeout_s: float, max_tokens: int = 200) -> str:
        self.calls += 1
        if isinstance(self.reply, Exception):
            raise self.reply
        return self.reply


def test_standalone_query_uses_the_llm_and_falls_back_when_it_fails() -> None:
    async def run(completer: _Completer | None, question: str) -> tuple[str, str]:
        found = await standalone_query(question, HISTORY, llm=completer, timeout_s=1)
        return found.text, found.method

    good = _Completer("How do I configure the store in tests?")
    assert anyio.run(run, good, "and in tests?") == ("How do I configure the store in tests?", "llm")
    failing = _Completer(LLMTimeoutError("slow"))
    assert anyio.run(run, failing, "and in tests?") == (fallback_query("and in tests?", HISTORY), "fallback")
    assert anyio.run(run, None, "and in tests?") == (
        "and in tests? configure store",
        "fallback",
    )
    untouched = _Completer("never used")
    question = "How do I write a reducer with immer in Redux Toolkit?"
    assert anyio.run(run, untouched, question) == (question, "as_asked") and untouched.calls == 0


def test_a_short_follow_up_that_names_its_topic_is_searched_as_asked_regression() -> None:
    """ "what's atan2 for" after a Kalman question was searched as "what's atan2 for What is the Kalman
    gain?" and answered about the Kalman gain."""
    history = (Turn("user", "What is the Kalman gain?"), Turn("assistant", "It weighs [1]."))
    found = anyio.run(lambda: standalone_query("what's atan2 for", history, llm=None, timeout_s=1))
    assert (found.text, found.method) == ("what's atan2 for", "as_asked")
    fix = anyio.run(lambda: standalone_query("how do I fix it?", history, llm=None, timeout_s=1))
    assert fix.text == "how do I fix it? Kalman gain"  # its own ask, the previous topic


def conversation(*said: str) -> tuple[Turn, ...]:
    """The reader's questions and the answers, in turn."""
    return tuple(Turn("user" if i % 2 == 0 else "assistant", text) for i, text in enumerate(said))


def test_the_topic_comes_from_the_latest_question_that_had_one() -> None:
    history = conversation("How do I tune the PID gains?", "Start with P [1].", "why?", "Because [1].")
    assert fallback_query("and then?", history) == "and then? tune PID gains"


def test_a_follow_up_borrows_the_one_letter_symbol_the_previous_question_asked_about_regression() -> None:
    """ "what if it's too small?" after "how do I choose L?" was searched as "… choose": the lookahead
    `L` was dropped as a one-letter word, and the passage on a short `L` that was just quoted scored too
    low to answer it."""
    history = conversation(
        "How does pure pursuit work?",
        "It steers toward a point ahead [1].",
        "how do I choose L?",
        "A short `L` tracks the path tightly [1].",
    )
    assert fallback_query("what if it's too small?", history) == "what if it's too small? choose L"
    assert fallback_query("what if L is too small?", history) == "what if L is too small? choose"
    tried = conversation("How do I fix it? I tried", "x")
    assert fallback_query("and then?", tried) == "and then? tried"  # "I" is a word, not a symbol


def test_a_follow_up_to_a_follow_up_keeps_the_topic_the_first_one_borrowed_regression() -> None:
    """ "and the sidebar?" after "How do I add a blog?" and "how do I change its URL?" was searched
    as "and the sidebar? change URL" and answered about the docs' sidebar: the blog was two questions back."""
    history = conversation(
        "How do I add a blog?", "Create a blog directory [1].", "how do I change its URL?", "x"
    )
    assert fallback_query("and the sidebar?", history) == "and the sidebar? change URL add blog"
    # A question that stands on its own lends only its own topic.
    history = conversation("How do I add a blog?", "x", "How do I deploy to Netlify?", "y")
    assert fallback_query("and the sidebar?", history) == "and the sidebar? deploy Netlify"


def test_a_follow_up_that_asks_only_for_a_form_of_the_answer_borrows_the_topic_regression() -> None:
    """ "show me the code" after "How does the discrete PID work?" was searched as asked and declined on
    the example book: "show" and "code" read as its topic. Words that ask for a form of the answer
    (code, formula, diagram, steps, an example) name no topic of their own."""
    history = conversation("How does the discrete PID work?", "A robot runs its controller [1].")
    assert refers_back("show me the code", history)
    assert fallback_query("show me the code", history) == "show me the code discrete PID"
    assert refers_back("give me the formula", history)
    assert not refers_back("show me the code for the Kalman filter", history)  # names its topic
    assert not refers_back("show me the code", ())  # nothing to refer back to


def test_what_about_the_derivative_one_asks_about_the_derivative_term_not_the_integral_regression() -> None:
    """ "what about the derivative one?" after "What does the integral term of a PID do?" was searched
    as "… integral term PID" and led with the section on all three terms: "one" stands for the term,
    and "derivative" names the one meant in place of "integral", where the book writes "derivative term"."""
    book = {("derivative", "term"), ("blue", "buttons")}

    def holds(phrase: Sequence[str]) -> bool:
        return tuple(w.lower() for w in phrase) in book

    history = conversation("What does the integral term of a PID do?", "It sums the error [1].")
    asked = fallback_query("what about the derivative one?", history, holds)
    assert asked == "what about the derivative term? PID"
    plural = conversation("How do I style the red buttons?", "x")
    assert fallback_query("and the blue ones?", plural, holds).startswith("and the blue buttons? style")
    # "the newer one" qualifies the term the book does not call "newer term": the whole topic is kept.
    newer = fallback_query("and the newer one?", history, holds)
    assert newer == "and the newer one? integral term PID"
    # Without the book's phrases (a model's rewrite failed), and where "one" is a pronoun: as before.
    assert fallback_query("what about the derivative one?", history) == (
        "what about the derivative one? integral term PID"
    )
    rigid = conversation("What is a rigid transform?", "x")
    assert fallback_query("how do I invert one?", rigid, holds) == "how do I invert one? rigid transform"
    # Nothing for "one" to stand for: no noun after a determiner with a word before it.
    assert fallback_query("what about the derivative one?", conversation("What is PID?", "x"), holds) == (
        "what about the derivative one? PID"
    )


def test_a_clients_empty_heading_id_is_no_heading() -> None:
    """The Retriever reads a heading id of "" as the page's opening; a client's "" means it found no
    heading, so the section is looked up by the selection's text."""
    assert Page("/docs/intro", "").heading_id is None
    assert Page("/docs/intro", "setup").heading_id == "setup"


def test_the_other_way_round_searches_the_latest_conversion_reversed() -> None:
    history = [
        Turn("user", "How do I compute the wheel speeds from a cmd_vel message?"),
        Turn("assistant", "…"),
    ]
    assert refers_back("vice versa?", history)
    assert fallback_query("and the other way round?", history) == "from the wheel speeds to a cmd_vel message"
    # No conversion asked before: the topic is borrowed as for any follow-up.
    tuned = [Turn("user", "How do I tune PID gains?"), Turn("assistant", "…")]
    assert fallback_query("and the other way round?", tuned) == "and the other way round? tune PID gains"


@pytest.mark.parametrize(
    ("question", "history", "topic"),
    [
        ("how do I tune it?", (), "The Kalman Filter"),  # the reader's page is what "it" is
        ("why does it drift?", (), "The Kalman Filter"),
        ("How do I tune the process noise Q?", (), None),  # names its own topic: no pronoun
        ("how do I choose the lookahead distance for it on a fast robot?", (), None),  # names enough
        ("how do I tune it?", (Turn("user", "What is a PID loop?"),), None),  # the conversation says
    ],
)
def test_a_first_question_pointing_at_the_page_takes_its_topic_from_the_page(
    question: str, history: tuple[Turn, ...], topic: str | None
) -> None:
    found = with_page_topic(question, history, "The Kalman Filter")
    assert found == ([Turn("user", topic)] if topic else history)
    if topic:
        assert refers_back(question, found)
        assert fallback_query(question, found) == f"{question} Kalman Filter"
