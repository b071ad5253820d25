"""Extractive answers: the book's best-matching sentences, quoted verbatim with their citations."""

from __future__ import annotations

from bookwise.generation.citations import cited_numbers
from bookwise.generation.extractive import (
    EXTRACTIVE_LABEL,
    NOT_COVERED,
    best_passages,
    extractive_answer,
    quotable_sentences,
)
from conftest import SectionFactory


def test_the_sentences_sharing_the_rarest_question_words_are_quoted(section: SectionFactory) -> None:
    sources = [
        section("Store", "The store holds the whole state tree. It is created once per app.", 1),
        section(
            "Reducers", "A reducer must never mutate the state it receives. Reducers are pure functions.", 2
        ),
    ]
    passages = best_passages("Why must a reducer never mutate state?", sources, limit=1)
    assert (
        passages[0].text == "A reducer must never mutate the state it receives." and passages[0].source == 2
    )
    answer = extractive_answer("Why must a reducer never mutate state?", sources, sufficient=True)
    assert answer.startswith(EXTRACTIVE_LABEL)
    assert "> A reducer must never mutate the state it receives. [2]" in answer
    assert set(cited_numbers(answer)) <= {1, 2}


def test_no_answer_is_made_up_when_the_book_does_not_cover_it(section: SectionFactory) -> None:
    sources = [section("Store", "The store holds the whole state tree.")]
    assert extractive_answer("How do I encrypt persisted state?", sources, sufficient=False) == NOT_COVERED
    assert extractive_answer("zebra quokka", sources, sufficient=True) == NOT_COVERED  # nothing shared


def test_fragments_and_ellipses_are_not_quoted(section: SectionFactory) -> None:
    sources = [section("Store", "Store.\n\n…\n\nThe store state can be read with getState at any time.")]
    assert [p.text for p in best_passages("store state", sources)] == [
        "The store state can be read with getState at any time."
    ]


def test_quoted_markdown_links_keep_only_their_text_regression() -> None:
    """The example site's quotes showed `[differential drive](../01-foundations/x.mdx)`: a source file
    path is no URL on the site, and a quoted image would load from anywhere."""
    text = (
        "The [differential drive](../01-foundations/02-differential-drive.mdx#odometry-model) chapter "
        "showed the wheel speeds. A ![robot](http://127.0.0.1:9/x.png) drives in a straight line here."
    )
    assert quotable_sentences(text) == [
        "The differential drive chapter showed the wheel speeds.",
        "A robot drives in a straight line here.",
    ]
