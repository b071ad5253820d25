"""Declines without a language model for a question about a product or thing the book never names,
inside a phrase whose other words the book knows ("a Mecanum wheel", "Firebase Hosting", "wheel
suspension stiffness"), on the example textbook with the real local embedder."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from bookwise.generation.answer import Answerer, checked
from bookwise.generation.events import AnswerTrace
from bookwise.generation.models import ChatRequest
from bookwise.retrieval.retriever import Retriever
from bookwise.retrieval.topics import topic_phrases
from bookwise.settings import Settings

MECANUM = "How does a Mecanum wheel drive sideways?"
SUSPENSION = "How do I tune the wheel suspension stiffness?"


def _answer(answerer: Answerer, question: str) -> AnswerTrace:
    async def run() -> AnswerTrace:
        prepared = await answerer.prepare(checked(ChatRequest(question=question), answerer.limits))
        trace = AnswerTrace()
        async for event in answerer.stream(prepared):
            trace.add(event)
        return trace

    return anyio.run(run)


def test_a_question_about_a_product_the_book_never_names_is_answered_with_loosely_related_text_regression(
    example_local: Settings, example_retriever: Retriever
) -> None:
    """ "Mecanum" alone embeds too far from the question to count as what it asks about, so the
    wheel passages that scored on "wheel" and "drive" were quoted; the phrase "Mecanum wheel" is
    what it asks about, and the book never names it. The decline names the word once."""
    summary = _answer(Answerer(example_local, example_retriever, llm=None), MECANUM).summary
    assert summary.done is not None
    assert summary.done.answer_kind == "not_covered", summary.text
    assert "it never mentions “Mecanum”. " in summary.text


def test_mcp_search_reports_covered_for_a_product_the_book_never_names_regression(
    mcp_search: Callable[[str], dict[str, Any]],
) -> None:
    """The agent's ``covered`` agrees with the chat's decline."""
    assert mcp_search(MECANUM)["covered"] is False


def test_a_capitalised_name_ending_in_ing_is_cut_from_its_phrase_regression() -> None:
    """ "Hosting" reads as a participle after a noun ("a symlink pointing to …"), so "Firebase Hosting"
    was no phrase and the question was answered from the book's hosting passage."""
    assert ("Firebase", "Hosting") in topic_phrases(
        "What's the recommended way to deploy a Docusaurus site to Firebase Hosting?"
    )
    # A participle in lower case still opens a clause after a noun.
    assert topic_phrases("Is the docs folder pointing to the symlink followed?") == [("docs", "folder")]


def test_a_plain_word_the_book_never_contains_beside_known_words_is_answered_with_loose_text_regression(
    example_local: Settings, example_retriever: Retriever
) -> None:
    """ "suspension" and "stiffness" occur nowhere in the book and are no names, so only retrieval
    judged them, and the tuning and wheel passages that scored on "tune" and "wheel" were quoted. The
    phrase "wheel suspension stiffness" is what the question asks about, and the book never names it."""
    summary = _answer(Answerer(example_local, example_retriever, llm=None), SUSPENSION).summary
    assert summary.done is not None
    assert summary.done.answer_kind == "not_covered", summary.text
    assert "suspension" in summary.text


def test_a_plain_word_the_book_lacks_after_a_phrase_it_names_still_answers(
    example_local: Settings, example_retriever: Retriever
) -> None:
    """ "integral term mandatory": the book never writes "mandatory", but the question asks about its
    integral term, which it names."""
    question = "Is the integral term mandatory in a PID controller?"
    summary = _answer(Answerer(example_local, example_retriever, llm=None), question).summary
    assert summary.done is not None
    assert summary.done.answer_kind != "not_covered", summary.text


def test_mcp_search_reports_covered_for_a_phrase_with_a_word_the_book_never_contains_regression(
    mcp_search: Callable[[str], dict[str, Any]],
) -> None:
    assert mcp_search(SUSPENSION)["covered"] is False
