"""Study actions' building blocks without a model: page intents, the book's exercises
and their solutions, fill-in-the-blank questions, and solutions kept out of quoted answers."""

from __future__ import annotations

from typing import cast

import pytest

from bookwise.generation.evidence import plan_passages
from bookwise.generation.followup import SearchQuery
from bookwise.generation.models import ChatRequest, Page, Prepared
from bookwise.generation.prompts import Turn
from bookwise.generation.study import (
    BLANK,
    NO_WORKED_EXAMPLE,
    NO_WORKED_EXAMPLE_ON_PAGE,
    blanks_of,
    compare_with_solution,
    example_answer,
    example_quotes,
    exercises_of,
    explain_answer,
    holds_code,
    is_exercise_section,
    page_intent,
    page_topic,
    quiz_turn,
    section_blanks,
    solution_start,
    term_definitions,
    without_solutions,
)
from bookwise.generation.study_prep import StudyPreparer, reader_answer
from bookwise.retrieval.models import SectionResult
from bookwise.retrieval.passage_rank import ScoredPassage
from bookwise.retrieval.passages import Passage, passages_of
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
    assert "It depends only on variances" in third.text


def test_the_quiz_ended_after_its_last_question_or_opened_with_it_regression() -> None:
    """Once every question had been asked, the quiz said "That was the last question…", also as the
    first turn of a new quiz on the same passage. It goes round again, on from where it was."""
    exercises = exercises_of(EXERCISES, 2)
    blanks = blanks_of("The **Kalman gain** weighs the measurement against the prediction.")
    history: list[Turn] = []
    asked = []
    for answer in [None, "0.8", "variances", "gain", "no idea", None]:
        turn = quiz_turn(exercises, blanks, history, answer).text
        assert "last question" not in turn and "*Reply with your answer.*" in turn
        asked.append(next(line for line in turn.split("\n\n") if line.startswith(("**Question", "**Fill"))))
        history += [Turn("user", answer or "Quiz me on this.", "quiz"), Turn("assistant", turn, "quiz")]
    assert asked[:3] == [
        "**Question:** What is the gain when `P⁻ = 0.04`? [2]",
        "**Question:** Why does the variance not depend on `z`? [2]",
        f"**Fill in the blank:** The {BLANK} weighs the measurement against the prediction. [1]",
    ]
    assert asked[3:] == asked[:3]  # round again, the longest unasked first
    # The client sends a short history: the first question drops out of it, the round goes on.
    short = history[-4:]
    nxt = quiz_turn(exercises, blanks, short, "x").text
    assert "Fill in the blank" not in nxt or "Why does the variance" in nxt


def test_a_wrong_blank_was_never_called_wrong_regression() -> None:
    """A wrong answer got "The passage has **between** here:", which never says it was wrong."""
    (blank,) = blanks_of("The **Kalman gain** weighs the measurement against the prediction.")
    assert blank.term == "Kalman gain" and BLANK in blank.question and "Kalman gain" not in blank.question
    asked = quiz_turn([], [blank], (), None).text
    right = quiz_turn([], [blank], (Turn("assistant", asked, "quiz"),), "the kalman gain").text
    wrong = quiz_turn([], [blank], (Turn("assistant", asked, "quiz"),), "the variance").text
    assert "**Right.**" in right and "Not quite" not in right
    assert "**Not quite:** the blank is **kalman gain**" in wrong and "Right" not in wrong


def test_a_blank_from_the_section_was_cut_at_a_wrapped_line_regression() -> None:
    """Blanks from the selection's section were its source lines ("…and a measurement" ended one), and
    blanked one-letter symbols. A paragraph is one paragraph; the selection's own sentences are not
    asked twice; a blank is a word."""
    section = (
        "For a single position `x` with variance `P`, a motion `u` with noise variance `Q`, and a\n"
        "measurement `z` with noise variance `R`, the two steps are:\n\n```text\nK = P / (P + R)\n```\n\n"
        "The **Kalman gain** `K` is between 0 and 1.\nIt weighs the prediction against the\nmeasurement."
    )
    selection = "The Kalman gain K is between 0 and 1."
    blanks = section_blanks(selection, section)
    assert [b.sentence for b in blanks] == [
        "For a single position `x` with variance `P`, a motion `u` with noise variance `Q`, and a "
        "measurement `z` with noise variance `R`, the two steps are:",
        "It weighs the prediction against the measurement.",
    ]
    assert [b.term for b in blanks] == ["measurement", "measurement"] and "K = P" not in str(blanks)


def test_the_quiz_never_compared_an_answer_with_the_books_solution_regression() -> None:
    """The solution was shown with "Compare your answer…": the reader was left to do it. The answer is
    compared with the solution's key terms (its results, not the numbers the question gave), and the
    reply says which it has and which it misses, as words, not as a verdict on meaning."""
    question = "A prediction has `P⁻ = 0.04 m²` and a measurement has `R = 0.01 m²`. What is the Kalman gain?"
    solution = "`K = 0.04 / 0.05 = 0.8`. The measurement is four times more certain, so it gets more weight."
    full = compare_with_solution("K is 0.80, it is more certain so more weight", solution, question)
    assert full.startswith("Your answer has every key term") and "**0.8**" in full and "0.04" not in full
    part = compare_with_solution("0.8", solution, question)
    assert "has **0.8** but not" in part and "**certain**" in part
    none = compare_with_solution("I am not sure", solution, question)
    assert none.startswith("Your answer has none of the key terms")
    exercises = exercises_of(EXERCISES, 1)
    first = quiz_turn(exercises, [], (), None).text
    reply = quiz_turn(exercises, [], (Turn("assistant", first, "quiz"),), "K is 0.8").text
    assert "Your answer has every key term of the book's solution (**0.8**)" in reply
    assert "> `K = 0.8`. [1]" in reply


def test_a_quiz_page_is_not_answered_by_quoting_its_answers(section: SectionFactory) -> None:
    """Quoted answers without a model skip the blocks after the book's solution label."""
    quiz = section("Exercises", EXERCISES)
    assert solution_start(quiz.text) == 1  # the questions' list, then the label
    ranked = [ScoredPassage(p, 1.0, 1.0, 1.0) for p in passages_of(quiz.text)]
    kept = without_solutions(ranked, [quiz])
    assert kept and all("K = 0.8" not in p.passage.text for p in kept)
    assert any("K = 0.8" in p.passage.text for p in ranked)


def test_explain_repeated_the_passage_as_key_sentences_regression(section: SectionFactory) -> None:
    """Explain without a model quoted the passage back ("Key sentences of the passage"). It shows where
    the page introduces the terms the passage uses, never a sentence of the passage itself."""
    gain = section(
        "A one-dimensional Kalman filter",
        "For a position `x` with variance `P` and a measurement `z` with noise variance `R`, the two steps "
        "are:\n\n```text\nK = P / (P + R)\n```\n\nThe **Kalman gain** `K` is between 0 and 1. When the "
        "prediction is very uncertain (`P` much larger than `R`), `K` is close to 1.",
    )
    intro = section("Kálmán's insight", "A **variance** describes how uncertain a guess is.", n=2)
    selection = (
        "The Kalman gain K is between 0 and 1. When the prediction is very uncertain (P much larger than R), "
        "K is close to 1."
    )
    found = term_definitions(selection, gain, [(1, gain), (2, intro)])
    assert found == [
        (
            "For a position `x` with variance `P` and a measurement `z` with noise variance `R`, the two "
            "steps are:",
            1,
        ),
    ]
    text = explain_answer(found)
    assert "Key sentences" not in text and "is between 0 and 1" not in text
    explained = "The filter weighs each reading by its variance and the measurement noise R."
    defined = term_definitions(explained, gain, [(1, gain), (2, intro)])
    assert ("A **variance** describes how uncertain a guess is.", 2) in defined  # bold on the page


def test_give_an_example_only_pointed_to_the_lab_regression(section: SectionFactory) -> None:
    """With no "Worked example" heading on the page, Give an example listed the chapter's lab and nothing
    else, though the passage's own section works a case out. It quotes that; when the book has no
    example at all it says so plainly, and the lab follows."""
    proportional = section(
        "Proportional",
        "The P term pushes in proportion to the current error. It is simple and fast. With `Kp = 2` and a "
        "5 rad/s setpoint, the wheel settles at 4 rad/s, 1 rad/s short.",
    )
    lab = section("Lab: Tuning a PID Loop", "Tune it.", n=3)
    selection = "The P term pushes in proportion to the current error."
    answer = example_answer(example_quotes(selection, (1, proportional), []), [(2, lab)])
    assert answer is not None
    assert (
        "> With `Kp = 2` and a 5 rad/s setpoint, the wheel settles at 4 rad/s, 1 rad/s short. [1]" in answer
    )
    assert "The P term pushes" not in answer and NO_WORKED_EXAMPLE not in answer
    plain = section("Proportional", "The P term pushes in proportion to the current error.")
    bare = example_answer(example_quotes(selection, (1, plain), []), [(2, lab)])
    assert bare is not None and NO_WORKED_EXAMPLE in bare and "[Lab: Tuning a PID Loop]" in bare
    assert example_answer(example_quotes(selection, (1, plain), []), []) is None


def test_give_an_example_said_the_book_had_no_code_beside_the_pages_code_regression(
    section: SectionFactory,
) -> None:
    """On the Integral passage, Give an example said "the book gives no worked example or code for it",
    a few paragraphs above "A discrete-time PID in code", whose class keeps the integral. The page's
    code is now listed, as the chapter's labs are, and the sentence no longer says there is none."""
    integral = section("Integral", "The I term adds up the error over time.")
    code = section(
        "A discrete-time PID in code",
        'The integral becomes a running sum.\n\n```python title="pid.py"\nself.integral += error * dt\n```',
        n=2,
    )
    lab = section("Lab: Tuning a PID Loop", "Tune it.", n=3)
    selection = "The I term adds up the error over time."
    answer = example_answer(example_quotes(selection, (1, integral), []), [(3, lab)], [(2, code)])
    assert answer is not None
    assert NO_WORKED_EXAMPLE not in answer and NO_WORKED_EXAMPLE_ON_PAGE in answer
    assert "**Code on this page:**\n\n- [A discrete-time PID in code]" in answer
    assert answer.index("Code on this page") < answer.index("the chapter's labs")
    # A passage with an example of its own quotes it and lists no other code.
    worked = section("Integral", "The I term adds up the error. With `Ki = 5` the error is gone in 0.4 s.")
    answer = example_answer(example_quotes(selection, (1, worked), []), [], [(2, code)])
    assert answer is not None and "`Ki = 5`" in answer and "Code on this page" not in answer


def test_a_fence_of_formulas_is_no_code_to_list(section: SectionFactory) -> None:
    assert holds_code(section("Odometry", "```python\nx += ds\n```"))
    assert holds_code(section("Odometry", "~~~cpp\nx += ds;\n~~~"))
    assert not holds_code(section("Kinematics", "```text\nv = (v_r + v_l) / 2\n```"))
    assert not holds_code(section("Kinematics", "```\nv = (v_r + v_l) / 2\n```"))
    assert not holds_code(section("Kinematics", "Prose that mentions ```python in a sentence."))
    assert not holds_code(section("Tabs", "```mdx-code-block\n<Tabs><TabItem>x</TabItem></Tabs>\n```"))


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


def test_a_heading_that_mentions_problems_is_not_an_exercise_section_regression(
    section: SectionFactory,
) -> None:
    """The answer took "Common MDX problems" or the Redux FAQ's "Will caching remote data cause memory
    problems?" for exercises (any heading with "problems" in it, where the keystroke search reads only
    a heading's first words), so the lists of causes and fixes in them were never quoted."""
    for heading in ("Common MDX problems", "Will caching remote data cause memory problems?", "Problems?"):
        assert not is_exercise_section(section(heading, "text"))
    for heading in ("Exercises", "Quiz: the gain", "Check your understanding", "Practice"):
        assert is_exercise_section(section(heading, "text"))
    fixes = "- Escape a `<` in prose as `&lt;`.\n- Close every JSX tag, `<br />` too."
    sources = [section("Common MDX problems", fixes, 1)]
    ranked = [ScoredPassage(Passage(0, fixes, ("list",), 0), 1.2, dense=0.6, coverage=0.8)]
    assert [quote.text for quote in plan_passages(ranked, sources, (), retrieval_sufficient=True).quoted] == [
        fixes
    ]
