"""The citations block: a supporting quote per cited source, skipped when the answer already has it."""

from __future__ import annotations

from bookwise.generation.quotes import quotes_for
from conftest import SectionFactory


def test_each_cited_source_gets_its_passage_closest_to_the_claim(section: SectionFactory) -> None:
    sources = [
        section("Store", "The store is created once.\n\nDispatch sends actions to the store reducer.", 1),
        section("Thunks", "Thunks run async logic before dispatching actions.\n\nThey receive getState.", 2),
    ]
    answer = "Dispatch actions to the store [1]. Use thunks for async logic [2]."
    quotes = quotes_for(answer, sources, [1, 2, 9])  # 9 is not a source: ignored
    assert [(q.n, q.text, q.url) for q in quotes] == [
        (1, "Dispatch sends actions to the store reducer.", "/p1#store"),
        (2, "Thunks run async logic before dispatching actions.", "/p2#thunks"),
    ]


def test_text_already_quoted_in_the_answer_is_not_quoted_twice(section: SectionFactory) -> None:
    sources = [section("Store", "The store holds the whole state tree.")]
    answer = "> The store holds the whole state tree. [1]"
    assert quotes_for(answer, sources, [1]) == []
