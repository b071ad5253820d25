"""Study actions' building blocks without a model: page intents, the book's exercises
and their solutions, fill-in-the-blank questions, and solutions kept out of quoted answers."""

from __future__ import annotations

from typing import cast

import pytest

from bookwise.generation.followup import SearchQuery
from bookwise.generation.models import ChatRequest, Page, Prepared
from bookwise.generation.prompts import Turn
from bookwise.generation.study import (
    BLANK,
    KEY_SENTENCES,
    blanks_of,
    exercises_of,
    explain_answer,
    page_intent,
    page_topic,
    quiz_turn,
    solution_start,
    without_solutions,
)
from bookwise.generation.study_prep import StudyPreparer, reader_answer
from bookwise.retrieval.models import SectionResult
from bookwise.retrieval.passage_rank import ScoredPassage
from bookwise.retrieval.passages import passages_of
from bookwise.retrieval.retriever import Retriever
from bookwise.retrieval.snippets import HELD_BACK, before_solutions, make_snippet
from conftest import SectionFactory

EXERCISES = (
    "1. What is the gain when `P⁻ = 0.04`?\n2. Why does the variance not depend on `z`?\n\n"
    "Show solution\n\n1. `K = 0.8`.\n2. It depends only on variances."
)


@pytest.mark.parametrize(
    ("question", "intent"),
    [
        ("Summarize this chapter", "summarize"),
        ("What is this page about?", "summarize"),
        ("What are the exercises on this page?", "exercises"),
        ("Quiz me on this section", "exercises"),
        ("Explain this section", "question"),
        ("Summarize this lab", "summarize"),
        ("What is the Kalman gain?", None),
        ("How do I summarize a chapter in this book?", None),
        ("How do I add a 'Was this page helpful?' widget to every doc?", None),
    ],
)
def test_page_intent(question: str, intent: str | None) -> None:
    assert page_intent(question) == intent


def test_exercises_come_with_their_solutions_matched_by_position() -> None:
    found = exercises_of(EXERCISES, 3)
    assert [(e.source, e.text, e.solution) for e in found] == [
        (3, "What is the gain when `P⁻ = 0.04`?", "`K = 0.8`."),
        (3, "Why does the variance not depend on `z`?", "It depends only on variances."),
    ]


def test_a_quiz_asks_each_exercise_once_and_shows_the_solution_after_the_answer() -> None:
    exercises = exercises_of(EXERCISES, 1)
    first = quiz_turn(exercises, [], (), None)
    assert "What is the gain" in first.text and "K = 0.8" not in first.text
    history = (Turn("assistant", first.text, "quiz"),)
    second = quiz_turn(exercises, [], history, "0.8")
    assert "K = 0.8" in second.text and "Why does the variance" in second.text
    third = quiz_turn(
        exercises, [], (*history, Turn("user", "0.8"), Turn("assistant", second.text, "quiz")), "x"
    )
    assert "It depends only on variances" in third.text and "last question" in third.text


def test_blanks_hide_a_term_of_the_passage_and_check_it() -> None:
    (blank,) = blanks_of("The **Kalman gain** weighs the measurement against the prediction.")
    assert blank.term == "Kalman gain" and BLANK in blank.question and "Kalman gain" not in blank.question
    asked = quiz_turn([], [blank], (), None).text
    right = quiz_turn([], [blank], (Turn("assistant", asked, "quiz"),), "the kalman gain").text
    wrong = quiz_turn([], [blank], (Turn("assistant", asked, "quiz"),), "the variance").text
    assert "Right" in right and "The passage has **kalman gain** here" in wrong


def test_a_quiz_page_is_not_answered_by_quoting_its_answers(section: SectionFactory) -> None:
    """Quoted answers without a model skip the blocks after the book's solution label."""
    quiz = section("Exercises", EXERCISES)
    assert solution_start(quiz.text) == 1  # the questions' list, then the label
    ranked = [ScoredPassage(p, 1.0, 1.0, 1.0) for p in passages_of(quiz.text)]
    kept = without_solutions(ranked, [quiz])
    assert kept and all("K = 0.8" not in p.passage.text for p in kept)
    assert any("K = 0.8" in p.passage.text for p in ranked)


def test_explain_dropped_the_sentence_that_names_the_term() -> None:
    """Key sentences were the passage's first five: the differential-drive passage lost its last
    sentence, the one that names what it describes ("nonholonomic")."""
    passage = (
        "The robot steers by driving its wheels at different speeds. Equal speeds move it straight ahead. "
        "Equal and opposite speeds spin it in place about the midpoint of the axle. Anything in between "
        "drives it along a circular arc. What it cannot do is slide sideways: the wheels would have to "
        "skid. A robot with this restriction is called nonholonomic."
    )
    answer = explain_answer(passage, None)
    assert "is called nonholonomic" in answer
    assert "Equal speeds move it straight ahead" in answer  # the passage's order, its start kept
    assert sum(line.startswith("> - ") for line in answer.splitlines()) == KEY_SENTENCES


@pytest.mark.parametrize(
    "label", ["Show solution", "**Answers:**", "<details><summary>Show solution</summary>", "Answer key"]
)
def test_quiz_solution_is_held_back_in_the_sources_snippet(label: str) -> None:
    text = EXERCISES.replace("Show solution", label)
    assert before_solutions(text).rstrip().endswith("depend on `z`?")
    for query in ("K = 0.8 gain", "depends only on variances"):  # asked for the solution's own words
        snippet = make_snippet(text, query)
        assert "0.8" not in snippet and "only on variances" not in snippet, snippet
    fenced = "Setup:\n\n```\nShow solution\n```\n\nThe gain is `K`."
    assert before_solutions(fenced) == fenced  # a code line that reads like a label is code


def quiz_page_prompt(quiz: SectionResult, question: str, history: tuple[Turn, ...]) -> str:
    request = ChatRequest(question=question, action="quiz_page", page=Page(quiz.page_url), history=history)
    preparer = StudyPreparer(
        cast(Retriever, None),
        with_model=True,
        book_title="B",
        retrieval_timeout_s=1,
        page_context_max_tokens=1,
    )  # the prompt needs no index: its material is given
    prepared = Prepared(
        request=request,
        query=SearchQuery(question, rewritten=False, method="as_asked"),
        sources=[quiz],
        sufficient=True,
        plan="llm",
        messages=[],
        index_version="v",
        retrieval_ms=0,
        started=0,
        page_use="quiz",
    )
    messages = preparer._messages(prepared, question, reader_answer(request))
    return "\n".join(m["content"] for m in messages)


def test_quiz_solution_is_held_back_in_the_quiz_page_prompt_until_the_reader_answers(
    section: SectionFactory,
) -> None:
    quiz = section("Exercises", EXERCISES)
    asking = quiz_page_prompt(quiz, "", ())
    assert "What is the gain" in asking and "K = 0.8" not in asking and "only on variances" not in asking
    assert HELD_BACK in asking  # the model knows the book has one, and is not shown it
    asked = Turn("assistant", "What is the gain when `P⁻ = 0.04`? [1]", action="quiz_page")
    grading = quiz_page_prompt(quiz, "0.8", (asked,))
    assert "K = 0.8" in grading  # the reader answered: the solution grades it


def test_this_chapter_with_a_topic_gets_the_page_outline_regression() -> None:
    """ "what does this chapter say about noise?" got the page outline: "about" read as "summarize"."""
    assert page_intent("what does this chapter say about noise?") == "question"
    assert page_topic("what does this chapter say about noise?") == "noise"
    assert page_intent("what is this chapter about?") == "summarize"
    assert page_intent("Give me an overview of this page") == "summarize"
