"""Citation markers through a token stream: valid ones kept, invalid ones dropped, splits handled."""

from __future__ import annotations

import pytest

from bookwise.generation.citations import CitationFilter, cited_numbers


def stream(deltas: list[str], sources: int) -> tuple[str, CitationFilter]:
    citations = CitationFilter(sources)
    shown = "".join(citations.feed(d) for d in deltas) + citations.flush()
    return shown, citations


def test_valid_markers_pass_and_invalid_ones_are_dropped() -> None:
    shown, citations = stream(["Use a store [1]. Also [7] see [2]."], sources=2)
    assert shown == "Use a store [1]. Also  see [2]."
    assert citations.used == [1, 2] and citations.dropped == 1


@pytest.mark.parametrize("cut", range(1, 12))
def test_a_marker_split_anywhere_across_deltas(cut: int) -> None:
    text = "Pure [12] and [3, 9]."
    shown, citations = stream([text[:cut], text[cut:]], sources=12)
    assert shown == "Pure [12] and [3][9]."
    assert citations.used == [12, 3, 9]


def test_text_is_not_held_back_longer_than_needed() -> None:
    citations = CitationFilter(3)
    assert citations.feed("The answer is ") == "The answer is "
    assert citations.feed("[") == ""
    assert citations.feed("2") == ""
    assert citations.feed("] done") == "[2] done"


def test_links_and_other_brackets_are_left_alone() -> None:
    shown, citations = stream(["See [the guide](https://x.dev/a) and [note] or array[0]x", "[1]"], sources=1)
    assert shown == "See [the guide](https://x.dev/a) and [note] or array[0]x[1]"
    assert citations.dropped == 0 and citations.used == [1]  # array[0] is code, not a citation


def test_an_unfinished_marker_at_the_end_is_plain_text() -> None:
    assert stream(["Ends with [1"], sources=3)[0] == "Ends with [1"


def test_cited_numbers_in_order_of_first_use() -> None:
    assert cited_numbers("a [2] b [1, 2] c [3]") == [2, 1, 3]
