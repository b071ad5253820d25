"""Declines and relevance without a language model, on the example textbook with the real local embedder
(the session's ``example_local``): each test is named after what a reader met in the widget."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import anyio
import pytest

from bookwise.generation.answer import Answerer, checked
from bookwise.generation.coverage import book_phrases, covers, spelled_search, unnamed_topics
from bookwise.generation.events import AnswerEvent, AnswerTrace
from bookwise.generation.models import ChatRequest, Page
from bookwise.generation.prompts import Turn
from bookwise.retrieval.retriever import Retriever
from bookwise.retrieval.topics import stems
from bookwise.settings import Settings

WALL = "My wheel overshoots wildly after the robot was stuck against a wall. Why?"
PID_PAGE = "/docs/control/pid-control"
# The Proportional paragraph as a reader selects it on the page.
PROPORTIONAL = (
    "The P term pushes in proportion to the current error. It is simple and fast, but on its own it leaves "
    "a steady-state error whenever a nonzero command is needed to hold the setpoint."
)


@pytest.fixture(scope="module")
def book(example_local: Settings, example_retriever: Retriever) -> Answerer:
    return Answerer(example_local, example_retriever, llm=None)


class Answer:
    def __init__(self, events: list[AnswerEvent]) -> None:
        trace = AnswerTrace()
        for event in events:
            trace.add(event)
        summary = trace.summary
        assert summary.done is not None, events[-1]
        self.done = summary.done
        self.kind = summary.done.answer_kind
        self.text = summary.text
        self.sources = summary.sources
        self.flat = re.sub(r"[ \t]*\n>?[ \t]*(?=\S)", " ", self.text)  # as rendered


def ask(answerer: Answerer, question: str, **fields: Any) -> Answer:
    async def run() -> list[AnswerEvent]:
        prepared = await answerer.prepare(checked(ChatRequest(question=question, **fields), answerer.limits))
        return [event async for event in answerer.stream(prepared)]

    return Answer(anyio.run(run))


def follow_up(answerer: Answerer, question: str, then: str) -> tuple[Answer, Answer]:
    """``question``'s answer, then ``then``'s, asked with the first exchange as its history."""
    first = ask(answerer, question)
    return first, ask(answerer, then, history=(Turn("user", question), Turn("assistant", first.text)))


def ask_about_proportional(answerer: Answerer, question: str, **fields: Any) -> Answer:
    """``question`` about the Proportional paragraph, selected on the PID page."""
    selected = {"mode": "selected_text", "selected_text": PROPORTIONAL}
    return ask(answerer, question, **selected, page=Page(url=PID_PAGE, heading_id="proportional"), **fields)


def test_the_example_index_carries_its_passage_vectors_as_bookwise_ingest_writes_them_regression(
    example_retriever: Retriever,
) -> None:
    """The tests' example index was built without the passage vectors `bookwise ingest` writes, so
    each process serving it embedded every passage again (about a minute of CPU per process)."""
    assert example_retriever.prefill_passages() == 0


@pytest.mark.parametrize(
    ("question", "never_mentioned"),
    [("How does SLAM build a map of the room?", "SLAM"), ("Write me a poem about robots", "poem")],
)
def test_a_question_about_what_the_book_never_mentions_is_answered_with_loosely_related_text_regression(
    book: Answerer, question: str, never_mentioned: str
) -> None:
    """It quoted the frame definitions (on "map" and "room") and the intro: the passage scores were fair,
    but what the question asks about is named nowhere in the book."""
    answer = ask(book, question)
    assert answer.kind == "not_covered", answer.text
    assert f"never mentions “{never_mentioned}”" in answer.text


def test_the_wall_question_is_still_answered_from_windup_though_the_book_says_pressed_not_stuck(
    book: Answerer,
) -> None:
    answer = ask(book, WALL)
    assert answer.kind == "extractive", answer.text
    assert "integral windup" in answer.flat


def test_a_verb_with_its_particle_that_the_book_writes_as_one_word_is_not_a_word_it_never_mentions_regression(
    book: Answerer,
) -> None:
    """ "How do I keep the integral term from winding up?" was declined on the example book: "winding"
    is in none of its chunks and sits close to the question, so it was taken for what the question asks
    about and the book never mentions; the book says "windup"."""
    answer = ask(book, "How do I keep the integral term from winding up?")
    assert answer.kind == "extractive", answer.text
    assert "integral windup" in answer.flat


def test_a_thing_a_title_names_in_another_word_order_is_not_named_only_in_passing_regression(
    book: Answerer,
) -> None:
    """ "What should I do in the tuning lab first?" was declined: "tuning lab" stands in one sentence of
    the book, so it was taken for a thing named only in passing, though the page's title, "Lab: Tuning
    a PID Loop", names it."""
    answer = ask(book, "What should I do in the tuning lab first?")
    assert answer.kind == "extractive", answer.text
    assert answer.sources[0].url.startswith("/docs/control/lab-tuning")


def test_a_name_followed_by_what_kind_of_thing_it_is_is_not_a_thing_the_book_never_names_regression(
    example_retriever: Retriever,
) -> None:
    """ "How do I call the simulate function?" was declined as asking about a "simulate function", which
    the book never names (and "What does the --trace option do?", with the site-adapted embedder, as
    asking about a "trace option"): "function" and "option" only say what kind of thing is named. A
    particle filter is still a thing the book names only in passing."""
    question = "How do I call the simulate function?"
    found = example_retriever.search(question, top_k=5)
    best = "Add `--trace` to print the wheel speed every 0.02 s."
    assert unnamed_topics(example_retriever, question, best, found.sections, found.unknown_names) == (
        [],
        False,
    )
    particle = unnamed_topics(example_retriever, "How does a particle filter work?", best, [])
    assert particle == ([], True)


def test_what_frame_is_the_lidar_data_in_was_declined_as_a_phrase_the_book_never_names_regression(
    book: Answerer,
) -> None:
    """ "What frame is the lidar data in?" was declined: "it never mentions 'lidar data'". The book names
    the lidar and says where its readings are ("A lidar reports distances from its own spinning head",
    the sensor frame); "data" only says what comes from the lidar, as "option" says what a name is."""
    answer = ask(book, "What frame is the lidar data in?")
    assert answer.kind == "extractive", answer.text
    assert "sensor frame" in answer.flat and "never mentions" not in answer.text
    assert any(s.anchor == "frames-overview" for s in answer.sources)


def test_how_long_should_the_lab_take_did_not_find_allow_about_an_hour_regression(
    example_retriever: Retriever,
) -> None:
    """The lab's opening paragraph says "Allow about an hour"; of the question's words it holds only
    "lab", as the setup passage does, which led. A passage stating a duration in words holds what "how
    long" asks for."""
    outline = example_retriever.page("/docs/control/lab-tuning")
    assert outline is not None
    sections = example_retriever.outline_sections(outline)
    ranked = example_retriever.rank_passages("How long should the lab take?", sections)
    assert "Allow about an hour." in ranked[0].passage.text
    setup = next(p for p in ranked if "You need Python 3.9" in p.passage.text)  # "lab", no duration
    assert setup.coverage < ranked[0].coverage


def test_the_pose_from_encoder_ticks_opened_with_bare_code_regression(book: Answerer) -> None:
    """The answer opened with `odometry.py` alone; the sentence and formulas introducing it, right above
    it, came after. They lead now, and the code follows."""
    answer = ask(book, "How do I compute the robot's pose from encoder ticks?")
    assert answer.text.split("\n\n")[1].startswith("> Each control cycle, convert the tick counts"), (
        answer.text
    )
    assert 'title="odometry.py"' in answer.text


@pytest.mark.parametrize("question", ["odometery drift", "how does odomtry work"])
def test_a_misspelled_word_is_not_a_word_the_book_never_mentions_regression(
    book: Answerer, question: str
) -> None:
    """ "odometery drift" was declined, though its closest section was "Why odometry drifts": the typo
    is in no chunk and embeds close to the question, so it was taken for what the question asks about
    and the book never mentions. The question is searched again as the book spells it."""
    answer = ask(book, question)
    assert answer.kind == "extractive", answer.text
    assert "odometry" in answer.text.lower()


@pytest.mark.parametrize(
    ("question", "heading"),
    [
        ("What is Q?", "Choosing the noise parameters Q and R"),
        ("What is L?", "Choosing the lookahead distance"),
    ],
)
def test_a_question_about_a_symbol_was_taken_for_one_that_names_nothing_regression(
    book: Answerer, question: str, heading: str
) -> None:
    """ "What is Q?" got "Ask about something it explains": a one-letter symbol is no topic word, so the
    question was taken for a greeting and not searched."""
    answer = ask(book, question)
    assert answer.kind == "extractive", answer.text
    assert answer.sources[0].heading_text == heading


def test_what_does_r_mean_led_with_a_note_on_formulas_for_its_lower_case_r_regression(book: Answerer) -> None:
    """ "what does R mean?" led with the note on how formulas are written (`v_r`) and then the wheel
    radius `r`: a symbol's term was held by any passage with an "r" in it, whatever its case. The
    first quote now writes `R` itself (the book's turning radius `R = v / ω`)."""
    answer = ask(book, "what does R mean?")
    assert answer.kind == "extractive", answer.text
    first = answer.text.split("\n\n> ", 1)[1].split(" [1]", 1)[0]
    assert re.search(r"(?<![A-Za-z])R(?![A-Za-z])", first), first


def test_what_about_the_derivative_one_led_with_all_three_terms_regression(book: Answerer) -> None:
    """After "What does the integral term of a PID do?", "what about the derivative one?" led with the
    section on all three terms: it was searched with "integral" too."""
    first = ask(book, "What does the integral term of a PID do?")
    history = (Turn("user", "What does the integral term of a PID do?"), Turn("assistant", first.text))
    answer = ask(book, "what about the derivative one?", history=history)
    assert answer.kind == "extractive", answer.text
    assert answer.sources[0].heading_text == "Derivative"


def test_what_is_r_in_small_letters_was_declined_regression(book: Answerer) -> None:
    """ "what is r?" was answered "The book does not seem to cover this": a small letter was no symbol,
    so the question named nothing. It now leads with the sentence that names it."""
    answer = ask(book, "what is r?")
    assert answer.kind == "extractive", answer.text
    assert answer.text.split("\n\n> ", 1)[1].startswith("Let `r` be the wheel radius"), answer.text


@pytest.mark.parametrize("question", ["thanks!", "why?", "hello", "u there?", "k thanks"])
def test_a_message_that_names_nothing_to_look_up_quotes_nothing_regression(
    book: Answerer, question: str
) -> None:
    """ "thanks!" on docusaurus-docs quoted "We recommend running the migration CLI, and complete the
    missing parts thanks to the manual migration process": a search for a message that names no topic
    finds whatever holds its words."""
    answer = ask(book, question)
    assert answer.kind == "not_covered", answer.text
    assert not answer.sources and ">" not in answer.text
    assert "Ask about something it explains" in answer.text


def test_a_follow_up_is_declined_although_its_answer_was_just_cited_regression(book: Answerer) -> None:
    """ "how do I fix it?" after the windup passage: the cure is that passage's last sentence, which
    was left out as already shown, and the rest did not answer."""
    _, answer = follow_up(book, WALL, "how do I fix it?")
    assert answer.kind == "extractive", answer.text
    assert any(source.heading == "Windup, noise and saturation" for source in answer.sources)


def test_a_fix_for_what_was_just_shown_leads_with_a_worked_example_regression(book: Answerer) -> None:
    """ "how do I fix that?" after "Why does my robot drift to one side …?" led with a worked example
    of encoder ticks: the passage on drift, which says it is calibrated out or corrected with other
    sensors, had just been shown and was left out."""
    question = "Why does my robot drift to one side when it should drive straight?"
    first, answer = follow_up(book, question, "how do I fix that?")
    assert "calibrated out" in first.flat
    assert answer.kind == "extractive", answer.text
    first_quote = answer.flat.split("[1]")[0]
    assert "calibrated out" in first_quote, answer.text
    assert answer.sources[0].heading == "Why odometry drifts"


def test_a_follow_up_about_the_symbol_just_asked_about_is_answered_from_its_passage_regression(
    book: Answerer,
) -> None:
    """ "what if it's too small?" after "How does pure pursuit work?" and "how do I choose L?" was
    declined, the closest section listed first the one on choosing the lookahead `L`."""
    history: tuple[Turn, ...] = ()
    for question in ("How does pure pursuit work?", "how do I choose L?"):
        history += (Turn("user", question), Turn("assistant", ask(book, question, history=history).text))
    answer = ask(book, "what if it's too small?", history=history)
    assert answer.kind == "extractive", answer.text
    assert "A short `L`" in answer.text


def test_a_selection_quotes_sentences_that_do_not_answer_regression(book: Answerer) -> None:
    """With the Proportional paragraph selected, "What does the derivative term do?" was answered with
    "The P term pushes…" (it shares "term"): the selection never names the derivative."""
    for question in ("What does the derivative term do?",):
        answer = ask_about_proportional(book, question)
        assert answer.kind == "not_in_selection", answer.text
        assert answer.done.widen is not None and answer.done.widen.scope == "section"


def test_a_symbol_the_selection_never_writes_got_every_sentence_of_it_regression(book: Answerer) -> None:
    """With the Proportional paragraph selected, "what is G?" was read as a request about the passage
    ("explain this": it has no word of two letters) and got all its sentences, presented as the ones
    that bear on the question; G is the motor's gain, defined in the next paragraph."""
    answer = ask_about_proportional(book, "what is G?")
    assert answer.kind == "not_in_selection", answer.text
    assert answer.done.widen is not None and answer.done.widen.scope == "section"
    held = ask_about_proportional(book, "what is P?")
    assert held.kind == "extractive", held.text
    assert "The P term pushes" in held.flat


def test_a_selection_that_holds_the_answer_is_still_quoted(book: Answerer) -> None:
    answer = ask_about_proportional(book, "Why does proportional control leave a steady-state error?")
    assert answer.kind == "extractive", answer.text
    assert "steady-state error" in answer.flat


def test_a_what_is_question_bound_to_a_section_does_not_quote_the_books_defining_section_regression(
    book: Answerer,
) -> None:
    """With the Proportional paragraph selected and the question widened to its section, "What is the
    derivative term?" was answered from the Derivative section: the section that defines a "what is"
    question's term was added from the whole book, whatever the scope."""
    answer = ask_about_proportional(book, "What is the derivative term?", scope="section")
    assert answer.kind == "not_covered", answer.text
    assert all("#derivative" not in source.url for source in answer.sources)


def test_widening_to_the_section_says_the_book_does_not_cover_it_regression(book: Answerer) -> None:
    """The section step said "The book does not seem to cover this", then offered the whole book,
    which answered."""
    answer = ask_about_proportional(book, "What does the derivative term do?", scope="section")
    assert answer.kind == "not_covered"
    assert "The book does not seem" not in answer.text
    assert "section [PID Control › Proportional]" in answer.text
    assert answer.done.widen is not None and answer.done.widen.scope == "book"


def test_this_chapter_with_a_topic_gets_the_page_outline_regression(book: Answerer) -> None:
    """ "what does this chapter say about noise?" on the PID page listed the page's headings ("about"
    read as a request for a summary): the page narrows the search, it does not replace it."""
    answer = ask(book, "what does this chapter say about noise?", page=Page(url=PID_PAGE))
    assert answer.kind == "extractive"
    assert "What the page covers" not in answer.text
    assert "Its weakness is noise" in answer.flat
    summary = ask(book, "what is this chapter about?", page=Page(url=PID_PAGE))
    assert "What the page covers" in summary.text


def test_this_chapter_on_a_topic_the_page_never_discusses_gets_the_page_outline_regression(
    book: Answerer,
) -> None:
    """ "what does this chapter say about delay?" on the PID page, which never discusses delay, got the
    page's outline as if it were the answer. It says the page is silent and offers the whole book, which
    is then searched for delay (the lab's wheel reads its speed 0.05 s late), not for "this chapter"."""
    question = "what does this chapter say about delay?"
    answer = ask(book, question, page=Page(url=PID_PAGE))
    assert answer.kind == "not_in_selection", answer.text
    assert "What the page covers" not in answer.text
    assert "does not seem to say anything about delay" in answer.text
    assert [source.url for source in answer.sources] == [PID_PAGE]
    assert answer.done.widen is not None and answer.done.widen.scope == "book"
    widened = ask(book, question, page=Page(url=PID_PAGE), scope="book")
    assert widened.kind == "extractive", widened.text
    assert "That delay is what makes the loop hard to tune" in widened.flat


def test_another_chapters_exercises_are_quoted_for_how_do_i_choose_l_regression(book: Answerer) -> None:
    """The differential-drive exercises ("A robot with `b = 0.30 m` commands…") were quoted second:
    an exercise that states its data before it asks read as an answer."""
    answer = ask(book, "how do I choose L?")
    assert answer.kind == "extractive"
    assert "The lookahead is the main tuning parameter" in answer.flat
    cited = {answer.sources[n - 1].heading for n in answer.done.citations}
    assert "Exercises" not in cited
    assert "A robot with" not in answer.flat


def test_mcp_search_reports_covered_for_a_question_the_chat_declines_regression(
    mcp_search: Callable[[str], dict[str, Any]], book: Answerer
) -> None:
    """`covered` was retrieval's verdict alone (true for SLAM and a poem); the chat declined them."""
    for question, covered in (
        ("How does SLAM build a map of the room?", False),
        ("Write me a poem about robots", False),
        (WALL, True),
    ):
        assert mcp_search(question)["covered"] is covered, question
        assert (ask(book, question).kind == "not_covered") is not covered, question


def test_a_near_topic_question_whose_phrase_the_book_never_names_is_answered_regression(
    book: Answerer,
) -> None:
    """ "How do I tune a model predictive controller?" quoted the lab's wheel, then `pid_lab.py`: the
    book has "model", "predict" and "controller", never "model predictive controller"."""
    answer = ask(book, "How do I tune a model predictive controller?")
    assert answer.kind == "not_covered", answer.text
    assert "never mentions “model predictive controller”" in answer.text


def test_a_topic_the_book_names_only_in_passing_is_answered_regression(book: Answerer) -> None:
    """ "How does a particle filter work?" quoted "Its third column…": the book's one sentence on
    particle filters says they are "the usual next step", and explains nothing."""
    answer = ask(book, "How does a particle filter work?")
    assert answer.kind == "not_covered", answer.text


def test_a_term_the_book_introduces_in_bold_once_is_still_answered(book: Answerer) -> None:
    answer = ask(book, "What is a rigid transform?")
    assert answer.kind == "extractive", answer.text
    assert "This is a **rigid transform**" in answer.text


def test_what_is_odometry_opens_with_odometry_drifts_regression(book: Answerer) -> None:
    """It opened with the introduction's "Odometry drifts, so…", and "The wheel odometry model", whose
    first sentence says what odometry is, was not among the sources."""
    answer = ask(book, "What is odometry?")
    assert answer.kind == "extractive", answer.text
    first = answer.text.split("\n\n")[1]
    assert first.startswith("> Odometry applies the forward kinematics"), answer.text
    assert answer.sources[0].heading == "The wheel odometry model"


def test_the_bias_and_noise_definition_never_appears_and_a_quote_stops_at_the_formula_regression(
    book: Answerer,
) -> None:
    """A quote ended at `z = x + bias + noise`: the sentence that defines both ("where `x` is the true
    value, the **bias** is an offset…") opens in lower case after the formula and was dropped."""
    answer = ask(book, "What is the difference between bias and noise in a sensor reading?")
    assert answer.kind == "extractive", answer.text
    first = answer.text.split("\n\n> **Tip")[0]
    assert "z = x + bias + noise" in first
    assert "the **bias** is an offset that stays roughly constant" in answer.flat


def test_the_wall_question_quotes_the_labs_danger_box_regression(book: Answerer) -> None:
    """After the windup passage it quoted "Danger: Real motors are not simulations", a warning about
    tuning on a real robot that shares only "wheel" and "robot" with the question."""
    answer = ask(book, WALL)
    assert answer.kind == "extractive", answer.text
    assert "integral windup" in answer.flat
    assert "Real motors are not simulations" not in answer.text


def test_mcp_search_reports_covered_for_a_near_topic_question_regression(
    mcp_search: Callable[[str], dict[str, Any]],
) -> None:
    for question in ("How do I tune a model predictive controller?", "How does a particle filter work?"):
        found = mcp_search(question)
        assert found["covered"] is False, question


def test_the_book_knows_which_sections_each_heading_names(example_retriever: Retriever) -> None:
    """Where a "what is" question's term is defined: the sections headed by it, found without a search."""
    headed = book_phrases(example_retriever).headed
    assert ("/docs/control/pid-control", "integral") in headed[stems("integral")]
    assert ("/docs/control/pid-control", "") in headed[stems("pid control")]  # a page's title: its opening


def test_the_agents_covered_agrees_with_the_chat_on_a_misspelled_question(
    example_retriever: Retriever,
) -> None:
    """The MCP ``search`` tool respells and decides as the chat does: "odometery drift" is covered."""
    search = functools.partial(example_retriever.asearch, top_k=5)
    spelled, found = anyio.run(spelled_search, example_retriever, "odometery drift", search)
    assert spelled == "odometry drift"
    assert anyio.run(covers, example_retriever, found)


def test_an_american_spelling_is_searched_as_the_books_british_one_regression(
    example_retriever: Retriever,
) -> None:
    """ "How is this course organized into modules?" searched "organized", which the book (heading "How
    the book is organised") never contains; the search went well enough that only a word the question
    asks about was respelled. The book's other spelling of a word is now always taken, and a word that
    is no such spelling still only when asked about."""
    search = functools.partial(example_retriever.asearch, top_k=5)
    question = "How is this course organized into modules?"
    spelled, found = anyio.run(spelled_search, example_retriever, question, search)
    assert spelled == "How is this course organised into modules?"
    assert found.sections[0].heading_text == "How the book is organised"


def test_a_verb_and_particle_is_searched_as_the_books_one_word_regression(
    example_retriever: Retriever,
) -> None:
    """ "why does it wind up?" after a question about the integral term missed the section on integral
    windup: the book never writes "wind" alone, only "windup", and BM25 matched nothing of the pair.
    A verb the book writes alone keeps the reader's words ("set up" is not respelled "setup")."""
    search = functools.partial(example_retriever.asearch, top_k=5)
    question = "why does it wind up? integral term PID"  # the follow-up as searched without a model
    assert "Windup, noise and saturation" not in [
        s.heading_text for s in example_retriever.search(question).sections
    ]
    spelled, found = anyio.run(spelled_search, example_retriever, question, search)
    assert spelled == "why does it windup? integral term PID"
    assert "Windup, noise and saturation" in [s.heading_text for s in found.sections]
    kept = "How do I set up the simulated wheel?"
    assert anyio.run(spelled_search, example_retriever, kept, search)[0] == kept


def test_a_term_the_book_introduces_in_quotes_is_not_named_only_in_passing_regression(book: Answerer) -> None:
    """ "What's the derivative kick?" was declined: the book names it once, in the sentence that says
    what it is ("… so that a step in the setpoint does not produce a spike (a "derivative kick")"), which
    read as a passing mention. A term in quotes is one the book introduces, as in bold or italics."""
    answer = ask(book, "What's the derivative kick?")
    assert answer.kind == "extractive", answer.text
    assert 'a "derivative kick"' in answer.text


def test_show_me_the_code_after_a_question_quotes_that_topics_code_regression(book: Answerer) -> None:
    """ "show me the code" after "How does the discrete PID work?" was declined: searched as asked,
    it found no code about "show"."""
    first = ask(book, "How does the discrete PID work?")
    history = (Turn("user", "How does the discrete PID work?"), Turn("assistant", first.text))
    answer = ask(book, "show me the code", history=history)
    assert answer.kind == "extractive", answer.text
    assert "```" in answer.text
    assert answer.sources[0].heading == "A discrete-time PID in code"


CURVATURE = (
    "A little geometry shows that this arc has curvature `κ = 2·y_L / L²`, so the turn rate is `ω = v·κ`."
)


def test_a_greek_letter_asked_by_its_name_is_the_formulas_letter_regression(book: Answerer) -> None:
    """ "what is kappa here?" about the selected curvature sentence was "not in the selection", and
    "what is kappa in pure pursuit?" was declined: the book writes κ, never "kappa"."""
    selected = {"mode": "selected_text", "selected_text": CURVATURE}
    page = Page(url="/docs/control/path-following", heading_id="pure-pursuit")
    answer = ask(book, "what is kappa here?", **selected, page=page)
    assert answer.kind == "extractive", answer.text
    assert "curvature `κ = 2·y_L / L²`" in answer.text
    answer = ask(book, "what is kappa in pure pursuit?")
    assert answer.kind == "extractive", answer.text
    assert answer.sources[0].heading == "Pure pursuit"


def test_asking_for_a_chapters_exercises_quoted_the_books_welcome_regression(book: Answerer) -> None:
    """ "What are the exercises in the Kalman chapter?" quoted the welcome page's chapter overview:
    an exercise list is never quoted as an answer, even to a question asking for it. It leads now;
    its solutions stay hidden."""
    answer = ask(book, "What are the exercises in the Kalman chapter?")
    assert answer.kind == "extractive", answer.text
    assert answer.sources[0].heading == "Exercises"
    assert answer.sources[0].page_url == "/docs/sensing/kalman-filter"
    assert "What is the Kalman gain, and" in answer.flat
    assert "Show solution" not in answer.text and "`K = 0.04 / 0.05 = 0.8`" not in answer.text


def test_what_is_a_kalman_filter_led_with_the_extended_filter_regression(book: Answerer) -> None:
    """ "What is a Kalman filter?" led with the EKF section, whose heading holds the term, over the
    page's opening, which says what the filter does: an opening has no heading of its own, and the
    page's title ("The Kalman Filter") was not read as one."""
    answer = ask(book, "What is a Kalman filter?")
    assert answer.kind == "extractive", answer.text
    assert (answer.sources[0].page_url, answer.sources[0].anchor) == ("/docs/sensing/kalman-filter", "")
    assert "The Kalman filter combines the two into a single estimate" in answer.flat


def test_a_term_typed_alone_quoted_the_tail_of_a_program_regression(book: Answerer) -> None:
    """ "pid?" quoted the last two lines of `pid.py`: a term typed alone, as into a search box, asks
    what it is, and the page says so in words."""
    answer = ask(book, "pid?")
    assert answer.kind == "extractive", answer.text
    first_quote = answer.text.split("\n> ", 1)[1]
    assert first_quote.startswith("The proportional-integral-derivative controller is")


def test_a_summary_of_chapter_3_was_declined_regression(book: Answerer) -> None:
    """ "Give me a summary of chapter 3" was declined: its one topic word with a number, "3", found
    "Python 3.9 or newer". The book calls its third part "Module 3: Control", and the welcome page's
    section of that name is its overview."""
    answer = ask(book, "Give me a summary of chapter 3")
    assert answer.kind == "extractive", answer.text
    assert answer.sources[0].heading == "Module 3: Control"
    assert "Python 3.9" not in answer.text.split("\n\n")[1]
    angles = ask(book, "What does module 1 say about angles?")  # a topic of its own: searched as asked
    assert angles.sources[0].heading == "Pitfalls with angles"


def test_what_does_tu_stand_for_was_declined_regression(book: Answerer) -> None:
    """ "What does Tu stand for?" was declined: "stand" was a word the passage had to hold, and the
    Ziegler–Nichols passage ("the period `Tu` of that oscillation") held half the question's terms."""
    answer = ask(book, "What does Tu stand for?")
    assert answer.kind == "extractive", answer.text
    assert answer.sources[0].heading == "Tuning from the ultimate gain"
    assert "the period `Tu` of that oscillation" in answer.flat


def test_what_does_theta_mean_led_with_code_that_names_it_regression(book: Answerer) -> None:
    """ "What does theta mean in the pose?" led with `transforms.py`, whose tuples are `(x, y, theta)`:
    the pose's definition writes the letter, "`(x, y, θ)`: … the rotation angle of its `x` axis", and
    held only half the question's words. A Greek letter asked by its name is held where it is written."""
    answer = ask(book, "What does theta mean in the pose?")
    assert answer.kind == "extractive", answer.text
    first = answer.text.split("\n\n")[1]
    assert "the rotation angle of its `x` axis" in first and "```" not in first


def test_slowing_down_before_a_sharp_turn_was_declined_regression(book: Answerer) -> None:
    """ "How do I slow down before a sharp turn?" was declined as a question about a "sharp turn" the
    book never mentions, with "Slowing down for curves and stops" first among the closest sections: the
    book says "how sharply to turn", which BM25 stems apart from "sharp"."""
    answer = ask(book, "How do I slow down before a sharp turn?")
    assert answer.kind == "extractive", answer.text
    assert answer.sources[0].heading == "Slowing down for curves and stops"
    assert "skid on tight curves" in answer.flat


def test_three_quotes_of_one_section_read_backwards_regression(book: Answerer) -> None:
    """ "How do I slow down before a sharp turn?" quoted the section's closing note ("Limit how fast `v`
    may change as well"), then the sentence after its two limits, then the paragraph that introduces
    them: three passages scoring 0.56, 0.54 and 0.53. Near-ties of one section read in the book's order."""
    answer = ask(book, "How do I slow down before a sharp turn?")
    quotes = answer.text.split("\n\n> ")[1:]
    assert quotes[0].startswith("A path follower that always drives at full speed"), answer.text
    assert "as well" in quotes[-1]


def test_how_do_i_fix_this_widened_to_the_section_was_declined_regression(book: Answerer) -> None:
    """With "… Its weakness is noise." selected in the Derivative section and the question widened to
    its section, "How do I fix this?" said the section does not answer: its passages were ranked by a
    question that names nothing, though the section ends "Derivative terms are almost always low-pass
    filtered for this reason". A question with no topic of its own is about the selection."""
    selected = (
        "The D term responds to how fast the error is changing, acting like a damper that brakes the "
        "response before it overshoots. Its weakness is noise."
    )
    answer = ask(
        book,
        "How do I fix this?",
        mode="selected_text",
        selected_text=selected,
        page=Page(url=PID_PAGE, heading_id="derivative"),
        scope="section",
    )
    assert answer.kind == "extractive", answer.text
    assert "low-pass filtered for this reason" in answer.flat
    assert [source.heading for source in answer.sources] == ["Derivative"]


def test_kalman_gain_formula_quoted_what_the_gain_does_not_its_formula_regression(book: Answerer) -> None:
    """ "kalman gain formula" quoted "The **Kalman gain** `K` is between 0 and 1…" first: the update
    that gives it, "K = P⁻ / (P⁻ + R)", says "gain" nowhere. A question that asks for a formula leads
    with a passage that writes one, when it scores near the best."""
    answer = ask(book, "kalman gain formula")
    assert answer.kind == "extractive", answer.text
    first = answer.text.split("\n\n")[1]
    assert "K  = P⁻ / (P⁻ + R)" in first, first


def test_what_is_a_quadrature_encoder_was_declined_as_named_in_passing_regression(book: Answerer) -> None:
    """ "what is a quadrature encoder" was declined as a question about something the book names only
    in passing, as it names particle filters: one sentence, no heading. But that sentence is about it,
    "A quadrature encoder with 256 lines produces 1024 counts per revolution, because it counts both
    edges of two offset channels"."""
    answer = ask(book, "what is a quadrature encoder")
    assert answer.kind == "extractive", answer.text
    assert "counts both edges of two offset channels" in answer.flat
    assert ask(book, "How does a particle filter work?").kind == "not_covered"


def test_converting_wheel_speeds_to_velocity_leads_with_the_formula_that_way(book: Answerer) -> None:
    """ "how do i convert wheel speeds to linear and angular velocity" led with "The driver node
    converts each command into wheel speeds" and its program: the formula the other way round. A
    passage that converts the other way from the question (by its heading, "From body velocity to
    wheel speeds", or its own prose) gives way to one that goes the way asked."""
    answer = ask(book, "how do i convert wheel speeds to linear and angular velocity")
    assert answer.kind == "extractive", answer.text
    first = answer.flat.split("[1]")[0]
    assert "The robot's forward speed is the average of the two" in first, answer.text
    assert answer.sources[0].heading == "From wheel speeds to body velocity"
    assert "def wheel_speeds" not in answer.text  # the program the other way round


def test_the_other_way_round_quoted_the_same_conversion_again_regression(book: Answerer) -> None:
    """ "and the other way round?" after "How do I compute the wheel speeds from a cmd_vel message?"
    quoted the cmd_vel passage and the wheel-speed program again: it was searched as the same question,
    and a passage of prose and code was not seen as shown, its citation marker standing between them in
    the answer. It is searched as the conversion reversed, and what was shown is not quoted again."""
    question = "How do I compute the wheel speeds from a cmd_vel message?"
    first, answer = follow_up(book, question, "and the other way round?")
    assert "`linear.x` is `v`" in first.flat
    assert answer.kind == "extractive", answer.text
    assert answer.sources[0].heading == "From wheel speeds to body velocity"
    assert "`linear.x` is `v`" not in answer.flat and "def wheel_speeds" not in answer.text


KALMAN_PAGE = "/docs/sensing/kalman-filter"


def test_how_do_i_tune_it_on_the_kalman_page_quoted_the_pid_lab_regression(book: Answerer) -> None:
    """A first question that points at the page it is asked from ("how do I tune it?" on the Kalman
    filter's page) was searched as it stood, and the PID lab, which says "tune" most, answered it."""
    on_kalman = ask(book, "how do I tune it?", page=Page(url=KALMAN_PAGE))
    assert on_kalman.flat.split("[1]")[0].count("tuning knobs") == 1, on_kalman.text
    on_path = ask(book, "how do I tune it?", page=Page(url="/docs/control/path-following"))
    assert "The lookahead is the main tuning parameter" in on_path.flat.split("[1]")[0], on_path.text
    # A symbol the page defines: "what does e mean?" on the PID page led with path following's `e_y`.
    symbol = ask(book, "what does e mean?", page=Page(url=PID_PAGE))
    assert "`e = setpoint − measurement`" in symbol.flat.split("[1]")[0], symbol.text
    # "what does it do?" names nothing at all: it was told the book does not cover it.
    on_pid = ask(book, "what does it do?", page=Page(url=PID_PAGE))
    assert on_pid.kind == "extractive" and on_pid.sources[0].page_url == PID_PAGE, on_pid.text


def test_a_question_naming_its_topic_is_answered_from_its_page_wherever_asked(book: Answerer) -> None:
    """The reader's page is preferred only near the best passage: "What is odometry?" asked on the
    sensors page, which mentions odometry, still opens with the sentence that says what it is."""
    answer = ask(book, "What is odometry?", page=Page(url="/docs/sensing/sensors"))
    first = answer.flat.split("[1]")[0]
    assert first.count("Odometry applies the forward kinematics") == 1, answer.text
    kalman = ask(book, "How does the Kalman filter work?", page=Page(url=PID_PAGE))
    assert all(source.page_url == KALMAN_PAGE for source in kalman.sources[:1]), kalman.sources
