"""POST /api/chat on a real uvicorn server: event order and schema, both modes, extractive answers,
follow-ups, and the fake LLM's tokens, citations and usage."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from apiserver import B_WORDS, Stream, build_book, chat, running_api
from bookwise.generation.extractive import EXTRACTIVE_LABEL, SELECTION_LABEL
from bookwise.generation.prompts import NOT_IN_SELECTION
from bookwise.settings import Settings
from fakellm import FakeLLM

SOURCE_FIELDS = {
    "n", "title", "heading", "heading_text", "breadcrumb", "url", "page_url", "anchor", "doc_path",
    "doc_id", "heading_level", "module", "chapter", "version", "locale", "content_type", "snippet", "score",
}  # fmt: skip
DONE_FIELDS = {
    "answer_kind", "citations", "dropped_citations", "quotes", "finish_reason", "widen",
    "timings_ms", "usage",
}  # fmt: skip
FEEDING = "http://localhost:3000/docs/care/feeding"
SELECTION = "Offer fresh peppermint leaves and clean water before sunrise."


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return build_book(tmp_path_factory.mktemp("book"))


@pytest.fixture(scope="module")
def extractive_url(book: Settings) -> Iterator[str]:
    with running_api(book) as url:
        yield url


@pytest.fixture(scope="module")
def llm_url(tmp_path_factory: pytest.TempPathFactory, llm_server: tuple[FakeLLM, str]) -> Iterator[str]:
    settings = build_book(tmp_path_factory.mktemp("llmbook"), llm_base_url=llm_server[1], llm_model="fake-1")
    with running_api(settings) as url:
        yield url


def assert_well_formed(stream: Stream) -> None:
    assert stream.status == 200, stream.body
    names = stream.names()
    assert names[:2] == ["meta", "sources"]
    assert names[-1] in ("done", "error") and names.count("done") + names.count("error") == 1
    assert set(names[2:-1]) <= {"token"}
    for source in stream.first("sources")["sources"]:
        assert set(source) == SOURCE_FIELDS
    if names[-1] == "done":
        assert set(stream.first("done")) == DONE_FIELDS


def test_normal_extractive_answer_streams_meta_sources_tokens_done(extractive_url: str) -> None:
    stream = chat(extractive_url, {"question": "What do quokkas eat in the morning?"})
    assert_well_formed(stream)
    meta, sources, done = stream.first("meta"), stream.first("sources"), stream.first("done")
    assert meta["request_id"] == stream.headers["x-request-id"]
    assert meta["mode"] == "normal" and meta["answer_mode"] == "extractive" and meta["model"] is None
    assert meta["query"] == "What do quokkas eat in the morning?" and meta["index_version"]
    assert sources["sufficient_context"] is True
    assert sources["sources"][0]["url"] == "/docs/care/feeding#morning-feed"
    assert stream.answer.startswith(EXTRACTIVE_LABEL)
    assert (
        "> Quokkas eat leaves of the peppermint shrub every morning. Offer fresh peppermint leaves and "
        "clean water before sunrise. [1]"
    ) in stream.answer
    assert done["answer_kind"] == "extractive" and 1 in done["citations"]
    assert done["quotes"] == []  # every quoted sentence is already in the answer
    assert done["usage"] is None
    assert set(done["timings_ms"]) == {"retrieval", "first_token", "total"}


def test_llm_answer_keeps_valid_citations_and_drops_invented_ones(llm_url: str, fake: FakeLLM) -> None:
    fake.tokens = ["Quokkas eat peppermint", " leaves [", "1]. They", " fly south [7", "]."]
    stream = chat(llm_url, {"question": "What do quokkas eat in the morning?"})
    assert_well_formed(stream)
    assert stream.answer == "Quokkas eat peppermint leaves [1]. They fly south ."
    done = stream.first("done")
    assert done["answer_kind"] == "generated" and done["citations"] == [1] and done["dropped_citations"] == 1
    assert done["usage"] == {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16}
    assert done["quotes"][0]["n"] == 1 and "peppermint" in done["quotes"][0]["text"]
    assert done["quotes"][0]["url"] == "/docs/care/feeding#morning-feed"
    assert stream.first("meta")["model"] == "fake-1"
    messages = fake.last_request["messages"]
    assert messages[0]["role"] == "system" and re.search(r'<source-[0-9a-f]+ n="1"', messages[-1]["content"])
    assert fake.last_request["stream"] is True


def test_sources_event_arrives_before_the_first_token(llm_url: str, fake: FakeLLM) -> None:
    fake.mode, fake.delay_s = "slow", 0.05
    stream = chat(llm_url, {"question": "Where do quokkas sleep?"})
    assert stream.names().index("sources") < stream.names().index("token")


def test_insufficient_context_says_so_lists_closest_sections_and_never_calls_the_llm(
    tmp_path: Path, llm_server: tuple[FakeLLM, str], fake: FakeLLM
) -> None:
    settings = build_book(tmp_path, llm_base_url=llm_server[1], sufficiency_threshold=1.0)
    with running_api(settings) as url:
        stream = chat(url, {"question": "How do I tune a carburettor?"})
    assert_well_formed(stream)
    assert stream.first("sources")["sufficient_context"] is False
    assert stream.answer.startswith("The book does not seem to cover this.")
    assert "Closest sections:" in stream.answer and "](/docs/" in stream.answer
    done = stream.first("done")
    assert done["answer_kind"] == "not_covered" and done["citations"] == [] and done["quotes"] == []
    assert fake.calls == 0


def test_a_decline_names_what_the_book_never_mentions_and_the_model_is_told(
    tmp_path: Path, llm_server: tuple[FakeLLM, str], fake: FakeLLM
) -> None:
    settings = build_book(tmp_path, llm_base_url=llm_server[1], sufficiency_threshold=1.0)
    with running_api(settings) as url:
        declined = chat(url, {"question": "How do I feed quokkas with Purina chow?"})
    assert declined.answer.startswith("The book does not seem to cover this: it never mentions “Purina”.")
    answered = build_book(tmp_path / "answered", llm_base_url=llm_server[1], sufficiency_threshold=0.0)
    with running_api(answered) as url:
        chat(url, {"question": "How do I feed quokkas with Purina chow?"})
    assert "the book never mentions Purina." in fake.last_request["messages"][-1]["content"]


def test_selected_text_cites_its_own_section_with_a_text_fragment(extractive_url: str) -> None:
    stream = chat(
        extractive_url,
        {
            "question": "When should the water be offered?",
            "mode": "selected_text",
            "selected_text": SELECTION,
            "page": {"url": FEEDING + "?tab=1#top"},
        },
    )
    assert_well_formed(stream)
    (source,) = stream.first("sources")["sources"]
    assert source["url"] == (
        "/docs/care/feeding#morning-feed:~:text=Offer%20fresh%20peppermint%20leaves,clean%20water%20before%20sunrise."
    )
    assert source["heading"] == "Morning feed" and source["snippet"] == SELECTION
    assert stream.answer.startswith(SELECTION_LABEL) and f"> {SELECTION} [1]" in stream.answer
    done = stream.first("done")
    assert done["citations"] == [1] and done["widen"] is None and stream.first("meta")["scope"] == "selection"


def test_selected_text_heading_id_from_the_widget_wins(extractive_url: str) -> None:
    stream = chat(
        extractive_url,
        {
            "question": "explain this",
            "mode": "selected_text",
            "selected_text": "Never feed bread",
            "page": {"url": FEEDING, "heading_id": "evening-feed"},
        },
    )
    assert (
        stream.first("sources")["sources"][0]["url"]
        == "/docs/care/feeding#evening-feed:~:text=Never%20feed%20bread"
    )
    assert "> Never feed bread [1]" in stream.answer or "Never feed bread" in stream.answer


def test_selection_that_cannot_answer_offers_to_widen_then_the_section_answers(extractive_url: str) -> None:
    body = {
        "question": "What do quokkas eat in the evening?",
        "mode": "selected_text",
        "selected_text": SELECTION,
        "page": {"url": FEEDING},
    }
    first = chat(extractive_url, {**body, "question": "How many joeys per litter?"})
    assert first.answer == NOT_IN_SELECTION
    done = first.first("done")
    assert done["answer_kind"] == "not_in_selection" and done["citations"] == []
    assert done["widen"]["scope"] == "section" and "Morning feed" in done["widen"]["label"]

    widened = chat(extractive_url, {**body, "question": "What do quokkas eat?", "scope": "section"})
    assert_well_formed(widened)
    assert widened.first("meta")["scope"] == "section"
    assert widened.first("sources")["sources"][0]["url"] == "/docs/care/feeding#morning-feed"
    assert "peppermint shrub" in widened.answer

    # Widened to the book, the reader's question is searched, not the selection.
    book = chat(extractive_url, {**body, "question": "What else do they eat?", "scope": "book"})
    assert_well_formed(book)
    assert book.first("meta")["query"] == "What else do they eat?"
    assert book.first("meta")["query_method"] == "as_asked" and book.first("sources")["sources"]
    # A question that names no topic of its own borrows it from the selection.
    explain = chat(extractive_url, {**body, "question": "What does this mean?", "scope": "book"})
    assert explain.first("meta")["query"] == f"What does this mean? {SELECTION}"
    assert explain.first("meta")["query_method"] == "selection"


def test_follow_up_is_rewritten_with_the_llm_and_meta_reports_the_searched_query(
    llm_url: str, fake: FakeLLM
) -> None:
    fake.completion = "What do quokkas eat in the evening?"
    history = [
        {"role": "user", "content": "What do quokkas eat in the morning?"},
        {"role": "assistant", "content": "Peppermint leaves [1]."},
    ]
    stream = chat(llm_url, {"question": "and in the evening?", "history": history})
    meta = stream.first("meta")
    assert meta["query"] == "What do quokkas eat in the evening?"
    assert meta["query_rewritten"] is True and meta["query_method"] == "llm"
    rewrite, answer = fake.requests
    assert (
        rewrite["stream"] is False
        and "Last question: and in the evening?" in rewrite["messages"][0]["content"]
    )
    assert [m["role"] for m in answer["messages"]] == ["system", "user", "assistant", "user"]


def test_follow_up_without_llm_uses_the_previous_question(extractive_url: str) -> None:
    history = [{"role": "user", "content": "What do quokkas eat in the evening?"}]
    stream = chat(extractive_url, {"question": "and why not bread?", "history": history})
    meta = stream.first("meta")
    assert meta["query_method"] == "fallback"
    assert meta["query"] == "and why not bread? quokkas eat evening"  # the previous question's topic
    standalone = chat(extractive_url, {"question": "Where do quokkas sleep at night?", "history": history})
    assert standalone.first("meta")["query_rewritten"] is False


def test_injected_instructions_in_the_book_stay_inside_their_source_block(
    llm_url: str, fake: FakeLLM
) -> None:
    chat(llm_url, {"question": "What does the injected note say about the system prompt?"})
    system, user = fake.last_request["messages"]
    assert "CANARY-7731" not in system["content"]
    # Present as quoted text, inside a block whose keyed closing tag the page cannot know.
    (tag,) = set(re.findall(r"<(source-[0-9a-f]+) n=", user["content"]))
    blocks = re.findall(rf"<{tag} [^>]*>\n(.*?)\n</{tag}>", user["content"], re.DOTALL)
    assert any("CANARY-7731" in block for block in blocks), user["content"]
    assert user["content"].count(f"<{tag} ") == len(blocks)


def test_selection_leaks_no_book_text_into_the_prompt_or_the_answer(llm_url: str, fake: FakeLLM) -> None:
    """Topic A selected on a page of a book that is all about topic B (quokkas)."""
    selection = "Photosynthesis turns light, water and carbon dioxide into glucose inside chloroplasts."
    fake.tokens = ["Plants make", " glucose from light [1]."]
    stream = chat(
        llm_url,
        {
            "question": "What does photosynthesis produce?",
            "mode": "selected_text",
            "selected_text": selection,
            "page": {"url": FEEDING, "heading_id": "morning-feed"},
        },
    )
    assert_well_formed(stream)
    prompt = "\n".join(m["content"] for m in fake.last_request["messages"])
    assert selection in prompt
    event_text = " ".join(str(data) for _, data in stream.events)
    for word in B_WORDS:
        assert word not in prompt.lower().replace("feeding quokkas", "")  # the page title is metadata
        assert word not in event_text.lower().replace("feeding quokkas", "").replace("care/feeding", "")
    assert stream.first("done")["citations"] == [1]


def test_llm_declining_the_selection_offers_to_widen(llm_url: str, fake: FakeLLM) -> None:
    fake.tokens = [NOT_IN_SELECTION[:20], NOT_IN_SELECTION[20:]]
    stream = chat(
        llm_url,
        {"question": "How old do quokkas get?", "mode": "selected_text", "selected_text": SELECTION,
         "page": {"url": FEEDING}},
    )  # fmt: skip
    done = stream.first("done")
    assert done["answer_kind"] == "not_in_selection" and done["widen"]["scope"] == "section"
