"""Study actions on a real uvicorn: explain, example, quiz on a selection, summarize and
quiz on the reader's page, with the fake LLM (only the passage or the page reaches the prompt) and
without a model (the book's own material); page-context questions on the example book."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from apiserver import B_WORDS, Stream, build_book, chat, hash_settings, ingest_hashed, running_api
from bookwise.settings import Settings
from examplesite import EXAMPLE_SITE
from fakellm import FakeLLM

FEEDING = "http://localhost:3000/docs/care/feeding"
PHOTOSYNTHESIS = "Photosynthesis turns light, water and carbon dioxide into glucose inside chloroplasts."
KALMAN = "http://localhost:3000/docs/sensing/kalman-filter"
KALMAN_PATH = "/docs/sensing/kalman-filter"
GAIN = (
    "The **Kalman gain** `K` is between 0 and 1. When the prediction is very uncertain (`P⁻` much larger "
    "than `R`), `K` is close to 1 and the filter follows the measurement."
)
KALMAN_SOLUTION = "K = 0.04 / 0.05 = 0.8"


@pytest.fixture(scope="module")
def llm_url(tmp_path_factory: pytest.TempPathFactory, llm_server: tuple[FakeLLM, str]) -> Iterator[str]:
    settings = build_book(tmp_path_factory.mktemp("llmbook"), llm_base_url=llm_server[1], llm_model="fake-1")
    with running_api(settings) as url:
        yield url


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    settings = hash_settings(tmp_path_factory.mktemp("example") / "data")
    ingest_hashed(settings, EXAMPLE_SITE)
    return settings


@pytest.fixture(scope="module")
def example_url(example: Settings) -> Iterator[str]:
    with running_api(example) as url:
        yield url


@pytest.fixture(scope="module")
def example_llm_url(example: Settings, llm_server: tuple[FakeLLM, str]) -> Iterator[str]:
    with running_api(
        example.model_copy(update={"llm_base_url": llm_server[1], "llm_model": "fake-1"})
    ) as url:
        yield url


def selection_body(action: str, selection: str, url: str, **extra: Any) -> dict[str, Any]:
    return {"question": "", "action": action, "mode": "selected_text", "selected_text": selection,
            "page": {"url": url}, **extra}  # fmt: skip


def prompt_of(fake: FakeLLM) -> str:
    return "\n".join(m["content"] for m in fake.last_request["messages"])


def assert_citations_resolve(stream: Stream) -> None:
    """Every cited number names a source of the stream, and the answer cites only those."""
    assert stream.status == 200, stream.body
    done, sources = stream.first("done"), stream.first("sources")["sources"]
    assert done["citations"], stream.answer
    assert set(done["citations"]) <= {s["n"] for s in sources}
    assert {int(n) for n in re.findall(r"\[(\d+)\]", stream.answer)} <= {s["n"] for s in sources}


def no_book_words(text: str) -> None:
    lowered = text.lower().replace("feeding quokkas", "").replace("care/feeding", "")
    for word in B_WORDS:
        assert word not in lowered, word


# -- with a model: only the passage (or the page) reaches the prompt --------------------------------


@pytest.mark.parametrize("action", ["explain", "example", "quiz"])
def test_selection_actions_prompt_holds_only_the_passage(llm_url: str, fake: FakeLLM, action: str) -> None:
    """Topic A selected in a book all about topic B: no word of B in the prompt or the events."""
    fake.tokens = ["Plants make glucose", " from light [1]."]
    stream = chat(llm_url, selection_body(action, PHOTOSYNTHESIS, FEEDING))
    assert_citations_resolve(stream)
    prompt = prompt_of(fake)
    assert PHOTOSYNTHESIS in prompt
    no_book_words(prompt)
    no_book_words(" ".join(str(data) for _, data in stream.events))
    meta = stream.first("meta")
    assert meta["action"] == action and meta["scope"] == "selection"
    assert meta["quiz_turn"] == ("question" if action == "quiz" else None)


def test_each_selection_action_has_its_own_template(llm_url: str, fake: FakeLLM) -> None:
    users = {}
    for action in ("explain", "example", "quiz"):
        chat(llm_url, selection_body(action, PHOTOSYNTHESIS, FEEDING))
        users[action] = fake.last_request["messages"][-1]["content"]
    assert "Explain the selected passage simply" in users["explain"]
    assert "example" in users["example"].lower() and "Explain the selected" not in users["example"]
    assert "one short question whose answer is stated in the passage" in users["quiz"]


def test_summarize_page_prompt_holds_only_the_readers_page(llm_url: str, fake: FakeLLM) -> None:
    """The feeding page, in a book whose other page holds a canary and burrows: neither reaches it."""
    fake.tokens = ["Quokkas eat peppermint leaves [1]", " and graze in the evening [2]."]
    stream = chat(llm_url, {"question": "", "action": "summarize_page", "page": {"url": FEEDING}})
    assert_citations_resolve(stream)
    prompt = prompt_of(fake)
    assert "peppermint shrub" in prompt and "grasses near the burrow entrance" in prompt
    assert "CANARY" not in prompt and "dry sand" not in prompt and "husbandry" not in prompt
    sources = stream.first("sources")["sources"]
    assert {s["page_url"] for s in sources} == {"/docs/care/feeding"}
    assert stream.first("meta")["scope"] == "page"


def test_quiz_turns_stay_grounded_in_the_passage(llm_url: str, fake: FakeLLM) -> None:
    """Question turn, then answer turn: the reader's answer is assessed against the same passage."""
    fake.tokens = ["What does photosynthesis produce? [1]"]
    first = chat(llm_url, selection_body("quiz", PHOTOSYNTHESIS, FEEDING))
    assert first.first("meta")["quiz_turn"] == "question"
    assert "reader's answer" not in fake.last_request["messages"][-1]["content"].split("Never ask")[0]
    history = [{"role": "assistant", "content": first.answer, "action": "quiz"}]
    fake.tokens = ["Right: glucose [1].", " Next: where does it happen? [1]"]
    second = chat(
        llm_url, selection_body("quiz", PHOTOSYNTHESIS, FEEDING, question="glucose", history=history)
    )
    assert_citations_resolve(second)
    assert second.first("meta")["quiz_turn"] == "answer"
    user = fake.last_request["messages"][-1]["content"]
    assert PHOTOSYNTHESIS in user and "assess the answer against the passage" in user
    (block,) = re.findall(r"<(selection-[0-9a-f]+)-answer>\nglucose\n</\1-answer>", user)
    assert block
    no_book_words(prompt_of(fake))
    # The same history after a plain answer (not a quiz question) starts a new quiz.
    history = [{"role": "assistant", "content": first.answer, "action": "ask"}]
    third = chat(
        llm_url, selection_body("quiz", PHOTOSYNTHESIS, FEEDING, question="glucose", history=history)
    )
    assert third.first("meta")["quiz_turn"] == "question"


def test_a_quiz_question_that_cites_nothing_is_not_offered_as_grounded(llm_url: str, fake: FakeLLM) -> None:
    fake.tokens = ["What is the capital of France?"]
    stream = chat(llm_url, selection_body("quiz", PHOTOSYNTHESIS, FEEDING))
    assert stream.first("done")["answer_kind"] == "not_in_selection"


def test_page_question_prompt_holds_only_the_page(example_llm_url: str, fake: FakeLLM) -> None:
    fake.tokens = ["The page has two exercises [8]."]
    stream = chat(
        example_llm_url, {"question": "What are the exercises on this page?", "page": {"url": KALMAN}}
    )
    assert_citations_resolve(stream)
    prompt = prompt_of(fake)
    assert "Kalman gain" in prompt and "PID" not in prompt and "differential drive" not in prompt.lower()
    assert {s["page_url"] for s in stream.first("sources")["sources"]} == {KALMAN_PATH}


# -- without a model: the book's own material -------------------------------------------------------


def test_summarize_this_chapter_on_the_kalman_page_returned_other_pages(example_url: str) -> None:
    stream = chat(example_url, {"question": "Summarize this chapter", "page": {"url": KALMAN}})
    assert_citations_resolve(stream)
    sources = stream.first("sources")["sources"]
    assert {s["page_url"] for s in sources} == {KALMAN_PATH}
    assert "Fusing a motion prediction with noisy measurements" in stream.answer  # its description
    assert "Choosing the noise parameters Q and R" in stream.answer  # its headings
    assert "language model would summarize" in stream.answer
    assert stream.first("meta")["scope"] == "page"


def test_the_exercises_on_this_page_are_the_kalman_pages_without_solutions(example_url: str) -> None:
    stream = chat(example_url, {"question": "What are the exercises on this page?", "page": {"url": KALMAN}})
    assert_citations_resolve(stream)
    assert "What is the Kalman gain" in stream.answer and "never depend on the value" in stream.answer
    assert KALMAN_SOLUTION not in stream.answer
    assert [s["url"] for s in stream.first("sources")["sources"]] == [f"{KALMAN_PATH}#exercises"]


def test_a_question_not_about_the_page_still_searches_the_book(example_url: str) -> None:
    stream = chat(example_url, {"question": "How do I tune a PID loop?", "page": {"url": KALMAN}})
    assert stream.first("meta")["scope"] == "book"


def test_summarize_page_without_llm_gives_description_and_headings(example_url: str) -> None:
    stream = chat(example_url, {"question": "", "action": "summarize_page", "page": {"url": KALMAN}})
    assert_citations_resolve(stream)
    assert stream.first("done")["answer_kind"] == "extractive"
    assert "[Exercises](/docs/sensing/kalman-filter#exercises)" in stream.answer


def test_quiz_page_without_llm_asks_the_books_exercises_then_shows_the_solution(example_url: str) -> None:
    body = {"question": "", "action": "quiz_page", "page": {"url": KALMAN}}
    first = chat(example_url, body)
    assert_citations_resolve(first)
    assert "What is the Kalman gain" in first.answer and KALMAN_SOLUTION not in first.answer
    history = [{"role": "assistant", "content": first.answer, "action": "quiz_page"}]
    second = chat(example_url, {**body, "question": "0.8", "history": history})
    assert_citations_resolve(second)
    assert second.first("meta")["quiz_turn"] == "answer"
    assert KALMAN_SOLUTION in second.answer  # the book's solution, once the reader answered
    assert "never depend on the value of the measurement" in second.answer  # the next exercise


def test_explain_without_llm_repeated_the_passage_and_listed_its_source_twice_regression(
    example_url: str,
) -> None:
    """Explain without a model quoted the passage back as "Key sentences", and listed the passage's
    section twice: as the selection [1] and as itself [2]. It shows where the page introduces the
    passage's terms, and the selection's section is one source."""
    page = {"url": KALMAN, "heading_id": "kalman-1d"}
    stream = chat(example_url, selection_body("explain", GAIN, KALMAN, page=page))
    assert_citations_resolve(stream)
    assert "Key sentences" not in stream.answer and "is between 0 and 1" not in stream.answer
    assert "noise variance `R`" in stream.answer  # where the page introduces `R`, which the passage uses
    assert "language model would explain" in stream.answer
    sources = stream.first("sources")["sources"]
    assert len({(s["page_url"], s["anchor"]) for s in sources}) == len(sources)


def test_explain_on_code_without_llm_said_the_page_defined_none_of_its_terms_regression(
    example_url: str,
) -> None:
    """Explain on the `wheel_speeds` code answered that the page introduces none of the passage's
    terms: a program's identifiers are no bold terms. The page introduces the code ("The driver node
    converts each command into wheel speeds") and works out what it computes in "From body velocity
    to wheel speeds"; both are quoted and cited (not the section going the other direction)."""
    selection = (  # as a browser's selection of the code arrives: indentation gone
        "def wheel_speeds(v, omega, track=0.30, radius=0.05, max_wheel=0.5):\n"
        '"""Body velocity (m/s, rad/s) to wheel speeds (rad/s), returned as (left, right)."""\n'
        "v_l = v - omega * track / 2\nv_r = v + omega * track / 2"
    )
    page = "http://localhost:3000/docs/foundations/differential-drive"
    stream = chat(example_url, selection_body("explain", selection, page))
    assert_citations_resolve(stream)
    assert stream.first("done")["answer_kind"] == "extractive"
    assert "does not introduce or define" not in stream.answer
    assert "The driver node converts each command into wheel speeds" in stream.answer
    assert "v_l = v − ω·b / 2" in stream.answer  # the inverse formula the code implements
    urls = [s["url"] for s in stream.first("sources")["sources"]]
    assert "/docs/foundations/differential-drive#from-body-velocity-to-wheel-speeds" in urls
    assert "works it through in** [From body velocity to wheel speeds]" in stream.answer  # not the forward


def test_explain_on_a_later_tabs_code_found_no_program_regression(example_url: str) -> None:
    """Explain on the C++ tab of `wheel_speeds` said the page defines none of its terms: the page's
    copy of a long section keeps its first tab and leaves the others out, so the program was not
    found. It is looked for in the section as the selection located it, and answered as the Python
    tab is, introduced by the sentence over both tabs."""
    source = (EXAMPLE_SITE / "docs" / "01-foundations" / "02-differential-drive.mdx").read_text(
        encoding="utf-8"
    )
    code = source.split('```cpp title="diff_drive.cpp"\n')[1].split("\n```")[0]
    selection = "\n".join(line.strip() for line in code.splitlines())  # indentation lost
    page = "http://localhost:3000/docs/foundations/differential-drive"
    stream = chat(example_url, selection_body("explain", selection, page))
    assert_citations_resolve(stream)
    assert "does not introduce or define" not in stream.answer
    assert "The driver node converts each command into wheel speeds" in stream.answer
    urls = [s["url"] for s in stream.first("sources")["sources"]]
    assert "/docs/foundations/differential-drive#from-body-velocity-to-wheel-speeds" in urls


def test_a_code_blocks_ask_without_llm_showed_the_code_back_regression(example_url: str) -> None:
    """A code block's Ask ("Explain this passage.") without a model answered "Bookwise cannot explain
    this code; here it is as the book gives it" and showed the program the reader had just read. It
    quotes what the page says about it: the paragraph introducing `pid.py` and the section its
    anti-windup comment points to."""
    source = (EXAMPLE_SITE / "docs" / "03-control" / "01-pid-control.mdx").read_text(encoding="utf-8")
    code = source.split('```python title="pid.py"\n')[1].split("\n```")[0]
    page = "http://localhost:3000/docs/control/pid-control"
    body = {"question": "Explain this passage.", "mode": "selected_text", "selected_text": code,
            "page": {"url": page}}  # fmt: skip
    stream = chat(example_url, body)
    assert_citations_resolve(stream)
    assert stream.first("done")["answer_kind"] == "extractive"
    assert "here it is as the book gives it" not in stream.answer and "class PID" not in stream.answer
    assert "A robot runs its controller in a loop at a fixed period" in stream.answer
    urls = [s["url"] for s in stream.first("sources")["sources"]]
    assert "/docs/control/pid-control#pid-pitfalls" in urls
    # A question about the code that is not a plain "explain" is answered from the selection, as before.
    asked = chat(example_url, {**body, "question": "What does u_max do in this code?"})
    assert "What the page says about this code" not in asked.answer


def test_example_without_llm_quotes_code_and_the_worked_example(example_url: str) -> None:
    stream = chat(
        example_url, selection_body("example", GAIN, KALMAN, page={"url": KALMAN, "heading_id": "kalman-1d"})
    )
    assert_citations_resolve(stream)
    assert "```text" in stream.answer and "K = 0.0125 / (0.0125 + 0.01) = 0.556" in stream.answer
    sources = stream.first("sources")["sources"]
    assert f"{KALMAN_PATH}#worked-example-the-corridor-robot" in [s["url"] for s in sources]
    assert len({(s["page_url"], s["anchor"]) for s in sources}) == len(sources)  # none listed twice


def test_example_without_llm_offers_the_chapters_lab(example_url: str) -> None:
    selection = "The proportional term pushes harder the further the wheel is from its set-point."
    page = "http://localhost:3000/docs/control/pid-control"
    stream = chat(example_url, selection_body("example", selection, page))
    assert "the chapter's labs" in stream.answer and "/docs/control/lab-tuning" in stream.answer


def test_example_without_llm_said_no_code_on_a_page_that_has_it_regression(example_url: str) -> None:
    """Give an example on the Integral passage answered "the book gives no worked example or code for
    it"; the same page has "A discrete-time PID in code". That section is listed, cited, and no
    sentence says the book has no code."""
    selection = "The I term adds up the error over time."
    page = "http://localhost:3000/docs/control/pid-control"
    stream = chat(example_url, selection_body("example", selection, page))
    assert_citations_resolve(stream)
    assert "no worked example or code" not in stream.answer
    assert "Code on this page" in stream.answer and "A discrete-time PID in code" in stream.answer
    urls = [s["url"] for s in stream.first("sources")["sources"]]
    assert "/docs/control/pid-control#a-discrete-time-pid-in-code" in urls


def test_quiz_without_llm_and_without_exercises_blanks_the_passages_own_words(example_url: str) -> None:
    selection = "Odometry is smooth and fast but drifts without limit, while range sensors do not drift."
    page = "http://localhost:3000/docs/intro"  # a page with no exercises section
    first = chat(example_url, selection_body("quiz", selection, page))
    assert "Fill in the blank" in first.answer and "_____" in first.answer
    history = [{"role": "assistant", "content": first.answer, "action": "quiz"}]
    second = chat(example_url, selection_body("quiz", selection, page, question="odometry", history=history))
    assert selection.split(",")[0] in second.answer  # the passage's own sentence, cited
    assert_citations_resolve(second)


def test_page_action_on_a_page_not_in_the_index_says_so(example_url: str) -> None:
    stream = chat(example_url, {"question": "", "action": "summarize_page", "page": {"url": "/blog/hello"}})
    assert stream.first("done")["answer_kind"] == "not_covered"
    assert stream.first("sources")["sources"] == []


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"question": "", "action": "explain"}, "works on a selection"),
        ({"question": "x", "action": "quiz", "mode": "selected_text", "selected_text": "a b",
          "scope": "book"}, "works on a selection"),
        ({"question": "", "action": "summarize_page"}, "needs page.url"),
        ({"question": "", "action": "quiz_page", "mode": "selected_text", "selected_text": "a b",
          "page": {"url": KALMAN}}, "works on the reader's page"),
        ({"question": "", "page": {"url": KALMAN}}, "question is empty"),
        ({"question": "x", "action": "teach"}, "action"),
        ({"question": "x", "history": [{"role": "assistant", "content": "y", "action": "sing"}]}, "action"),
    ],
)  # fmt: skip
def test_actions_are_refused_without_what_they_need(
    example_url: str, body: dict[str, Any], message: str
) -> None:
    stream = chat(example_url, body)
    assert stream.status == 422 and stream.body is not None
    error = stream.body["error"]
    assert error["code"] == "invalid_request" and message in error["message"], error


def test_prompts_folder_has_one_template_per_action() -> None:
    folder = Path(__file__).parents[2] / "backend" / "bookwise" / "generation" / "prompts"
    for action in ("explain", "example", "quiz", "summarize_page", "quiz_page"):
        assert (folder / f"{action}.j2").is_file()


def test_an_earlier_answer_about_other_pages_does_not_reach_a_study_prompt(
    llm_url: str, fake: FakeLLM
) -> None:
    """History may quote the rest of the book: only a quiz's own exchange is carried."""
    earlier = [
        {"role": "user", "content": "Where do quokkas live?"},
        {"role": "assistant", "content": "On Rottnest island, in a burrow [1].", "action": "ask"},
    ]
    for action in ("explain", "example", "quiz"):
        chat(llm_url, selection_body(action, PHOTOSYNTHESIS, FEEDING, history=earlier))
        no_book_words(prompt_of(fake))
    question = {"role": "assistant", "content": "What does it produce? [1]", "action": "quiz"}
    chat(
        llm_url,
        selection_body("quiz", PHOTOSYNTHESIS, FEEDING, question="glucose", history=[*earlier, question]),
    )
    roles = [m["role"] for m in fake.last_request["messages"]]
    assert roles == ["system", "assistant", "user"] and "What does it produce?" in prompt_of(fake)
    no_book_words(prompt_of(fake))


STUDY_BOOK = {
    "docs/intro.md": "# Welcome\n\nA short course on sensor fusion for small robots.\n",
    "docs/filters/_category_.json": '{"label": "Filters"}',
    "docs/filters/fusion.md": (
        "---\ntitle: Sensor fusion\ndescription: Combining two noisy sensors into one estimate.\n"
        "learning_objectives:\n  - Explain why a weighted average beats either sensor\n"
        "  - Compute the fused variance of two readings\n---\n\n"
        "Fusion combines readings from several sensors.\n\n"
        "## Weighted averages\n\nA **weighted average** gives each reading a weight inversely "
        "proportional to its variance. The fused variance is smaller than either input variance.\n"
    ),
    "docs/filters/check.md": (
        "---\ntitle: Check your understanding\ncontent_type: quiz\n---\n\n## Questions\n\n"
        "1. Why is the fused variance smaller than either input variance?\n"
        "2. Which reading gets the larger weight?\n\n**Answers**\n\n"
        "1. Because combining independent information always removes uncertainty, zebra-crossing.\n"
        "2. The reading with the smaller variance.\n"
    ),
    "docs/filters/lab-fusion.md": (
        "---\ntitle: 'Lab: Fusing two rangefinders'\ncontent_type: lab\n---\n\n"
        "## Setup\n\nMount two rangefinders side by side and log both at 10 Hz.\n"
    ),
}
FUSION = "http://localhost:3000/docs/filters/fusion"
WEIGHTED = (
    "A weighted average gives each reading a weight inversely proportional to its variance. "
    "The fused variance is smaller than either input variance."
)


@pytest.fixture(scope="module")
def study_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("study")
    for relative, content in STUDY_BOOK.items():
        path = root / "site" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
    settings = hash_settings(root / "data")
    ingest_hashed(settings, root / "site")
    with running_api(settings) as url:
        yield url


def test_summarize_page_without_llm_lists_the_learning_objectives(study_url: str) -> None:
    stream = chat(study_url, {"question": "", "action": "summarize_page", "page": {"url": FUSION}})
    assert_citations_resolve(stream)
    assert "**Learning objectives**" in stream.answer
    assert "Compute the fused variance of two readings" in stream.answer
    assert "Combining two noisy sensors into one estimate." in stream.answer


def test_quiz_without_llm_asks_the_chapters_quiz_page_and_holds_its_answers_back(study_url: str) -> None:
    first = chat(study_url, selection_body("quiz", WEIGHTED, FUSION))
    assert_citations_resolve(first)
    assert "Why is the fused variance smaller" in first.answer and "zebra" not in first.answer
    cited = {s["page_url"] for s in first.first("sources")["sources"]}
    assert "/docs/filters/check" in cited
    history = [{"role": "assistant", "content": first.answer, "action": "quiz"}]
    second = chat(study_url, selection_body("quiz", WEIGHTED, FUSION, question="less noise", history=history))
    assert "zebra-crossing" in second.answer and "Which reading gets the larger weight?" in second.answer


def test_example_without_llm_offers_a_declared_lab_of_the_chapter(study_url: str) -> None:
    stream = chat(study_url, selection_body("example", WEIGHTED, FUSION))
    assert "the chapter's labs" in stream.answer and "/docs/filters/lab-fusion" in stream.answer
    assert_citations_resolve(stream)


def test_a_quiz_pages_questions_are_not_answered_by_quoting_its_answers(study_url: str) -> None:
    """Asked the quiz's own question, the book quotes its chapter, never the answer key."""
    stream = chat(study_url, {"question": "Does combining independent information remove uncertainty?"})
    assert "zebra" not in stream.answer, stream.answer
    on_page = chat(
        study_url,
        {
            "question": "What are the questions on this page?",
            "page": {"url": "http://localhost:3000/docs/filters/check"},
        },
    )
    assert "Which reading gets the larger weight?" in on_page.answer and "zebra" not in on_page.answer


def test_this_section_with_a_heading_id_is_that_section_only(example_llm_url: str, fake: FakeLLM) -> None:
    fake.tokens = ["It linearises both models [1]."]
    body = {"question": "Explain this section", "page": {"url": KALMAN, "heading_id": "ekf"}}
    stream = chat(example_llm_url, body)
    assert_citations_resolve(stream)
    assert [s["url"] for s in stream.first("sources")["sources"]] == [f"{KALMAN_PATH}#ekf"]
    prompt = prompt_of(fake)
    assert "Jacobian" in prompt and "corridor" not in prompt and "rangefinder" not in prompt
