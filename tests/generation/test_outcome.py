"""A model's refusal is read from what it did (no citation), never from its exact wording."""

from __future__ import annotations

from typing import cast

import anyio
import pytest

from bookwise.generation import answer
from bookwise.generation.answer import Answerer, checked
from bookwise.generation.events import AnswerEvent, Done, summarize
from bookwise.generation.models import ChatRequest
from bookwise.generation.outcome import declines
from bookwise.retrieval.retriever import Retriever
from bookwise.settings import Settings
from conftest import SectionFactory


@pytest.mark.parametrize(
    "reply",
    [
        "The selected passage does not answer this question.",
        "Sorry — the highlighted passage doesn't say anything about litter sizes.",
        "I can't find that in the passage you selected. Try asking about the whole section!",
        "Le passage sélectionné ne répond pas à cette question.",
        "Der markierte Abschnitt beantwortet diese Frage nicht.",
        "この選択範囲には答えがありません。",
        "Well, hmm. The book does not seem to cover how to encrypt persisted state, sorry.",
    ],
)
def test_refusals_in_any_words_or_language_are_declines(reply: str, section: SectionFactory) -> None:
    assert declines(reply, [], [section("Feeding", "Quokkas eat leaves and grasses at night.")])


def test_a_cited_answer_is_never_a_decline_even_if_it_mentions_what_is_missing(
    section: SectionFactory,
) -> None:
    reply = "Quokkas eat leaves [1]. The passage does not answer how much they drink."
    assert not declines(reply, [1], [section("Feeding", "Quokkas eat leaves.")])


def test_a_long_uncited_answer_in_the_books_words_is_an_answer(section: SectionFactory) -> None:
    text = (
        "Quokkas eat leaves, grasses, stems and bark at night. They rarely drink water because the "
        "plants they eat hold enough of it. In summer they rest in shade under dense shrubs and come "
        "out after dark to feed on the plants near their shelters and along the swamp edges."
    )
    assert not declines(text, [], [section("Feeding", text)])


class NoIndex:
    """Selection-scope answers never search: the retriever is only warmed, and asked which words of
    the question the selection lacks (none here: the answer's wording decides nothing either way)."""

    index_version = "g1"

    async def awarm(self) -> None:
        return None

    async def amissing_key_words(self, query: str, text: str) -> tuple[str, ...]:
        return ()


def test_answer_kind_is_carried_from_the_decision_not_read_from_the_text(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A reworded refusal that happens to hold "[1]" was read as a cited, extractive answer.
    monkeypatch.setattr(answer, "NOT_IN_SELECTION", "Nicht in der Auswahl, siehe [1].")
    answerer = Answerer(settings, cast(Retriever, NoIndex()), None)
    request = ChatRequest(
        "How many joeys per litter?", mode="selected_text", selected_text="Offer fresh leaves at sunrise."
    )

    async def run() -> list[AnswerEvent]:
        return [
            event
            async for event in answerer.stream(await answerer.prepare(checked(request, answerer.limits)))
        ]

    summary = summarize(anyio.run(run))
    done = summary.done
    assert isinstance(done, Done) and done.answer_kind == "not_in_selection"
    assert done.citations == [] and done.widen is not None and done.widen.scope == "book"
    assert summary.outcome == "not_in_selection" and summary.cited == ()
    assert summary.text == "Nicht in der Auswahl, siehe [1]."
