"""The keystroke search's parts: how a typed query is read, how the word being typed completes, how
the dense channel ranks sections by their passages and keeps its best in view, how exercises yield
to the sections that teach, and where the matched words stand in a snippet."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from apiserver import hashed_retriever
from bookwise.ingest.payload import ChunkPayload
from bookwise.retrieval.instant import (
    InstantHit,
    InstantSearch,
    ParsedQuery,
    PassageVectors,
    SectionIndex,
    keep_dense_first,
    snippet,
)
from bookwise.retrieval.retriever import Retriever
from examplesite import EXAMPLE_SITE


def payload(page: str, anchor: str, heading: str, text: str, **extra: str) -> ChunkPayload:
    return ChunkPayload(
        doc_path=f"{page.strip('/')}.md",
        title=page.strip("/").title(),
        page_url=page,
        anchor=anchor,
        url=f"{page}#{anchor}" if anchor else page,
        heading=heading,
        text=text,
        **extra,  # type: ignore[arg-type]
    )


BOOK = [
    payload(
        "/pid", "windup", "Windup and saturation", "The integral term winds up while the output saturates."
    ),
    payload("/pid", "gains", "Choosing the gains", "Raise the proportional gain until the wheel oscillates."),
    payload("/kalman", "", "", "A Kalman filter weighs a prediction against a measurement."),
    payload("/kalman", "ekf", "The extended filter", "Linearise the models around the estimate."),
]


def test_the_last_word_is_being_typed_unless_a_space_or_mark_ends_it() -> None:
    assert ParsedQuery.parse("how do I tune the gai") == ParsedQuery(("tune",), "gai")
    assert ParsedQuery.parse("how do I tune the gain ") == ParsedQuery(("tune", "gain"), "")
    assert ParsedQuery.parse("what is a kalman filter?") == ParsedQuery(("kalman", "filter"), "")


def test_a_half_typed_word_finds_the_sections_of_the_words_it_begins() -> None:
    index = SectionIndex("g1", BOOK)
    assert sorted(index.completions("satur")) == ["saturates", "saturation"]
    hits = index.search(ParsedQuery.parse("satur"), None, 5)
    assert [index.sections[hit.section].url for hit in hits] == ["/pid#windup"]
    # Whole words alone do not complete: "gain" is in the heading, "gains" is not "gain".
    hits = index.search(ParsedQuery.parse("proportional gai"), None, 5)
    assert index.sections[hits[0].section].url == "/pid#gains"


def test_a_heading_word_outranks_the_same_word_in_text() -> None:
    index = SectionIndex("g1", BOOK)
    hits = index.search(ParsedQuery.parse("filter "), None, 5)
    assert index.sections[hits[0].section].url == "/kalman#ekf"


def test_a_version_no_section_has_means_the_whole_book() -> None:
    index = SectionIndex("g1", [*BOOK, payload("/pid", "windup", "Windup", "Old text.", version="1.0")])
    assert index.allowed("9.9", None) is None
    only = index.allowed("1.0", None)
    assert only is not None and len(only) == 1


def test_snippet_marks_are_offsets_of_the_matched_words() -> None:
    text = "Intro words. " * 20 + "The integral term winds up while the output saturates."
    found = snippet(text, frozenset({"winds", "saturates"}))
    assert found.text.startswith("…")
    assert [found.text[start:end] for start, end in found.marks] == ["winds", "saturates"]
    assert len(found.text) <= 162


def test_a_stop_word_being_typed_is_that_word_not_the_words_it_begins() -> None:
    extra = [payload("/odometry", "", "Offsets", "An offset of the wheel. Filtering the noise.")]
    index = SectionIndex("g1", [*BOOK, *extra])
    # "of" does not stand for "offset": the query is the integral term, and nothing else.
    terms = index.terms(ParsedQuery.parse("integral of"))
    assert terms == [[("integral", 1.0)]]
    # A prefix that is a whole word already ("filter") may be finished: its longer words count less.
    assert dict(index.terms(ParsedQuery.parse("filter"))[0]) == {"filter": 1.0, "filtering": 0.5}
    assert dict(index.terms(ParsedQuery.parse("filt"))[0]) == {"filter": 0.8, "filtering": 0.8}


def test_a_section_with_two_close_passages_outranks_one_with_a_single_closer_one() -> None:
    def unit(cosine: float) -> list[float]:  # a vector at this cosine to the query (1, 0)
        return [cosine, float(np.sqrt(1 - cosine**2))]

    owners = np.array([1, 0, 0, 2], dtype=np.intp)
    vectors = np.array([unit(0.9), unit(0.85), unit(0.8), unit(0.1)], dtype=np.float32)
    passages = PassageVectors(owners, vectors, sections=3)
    assert passages.rank([1.0, 0.0], None, 3) == [0, 1, 2]  # 0.85 + 0.1 * 0.8 > 0.9
    only = np.array([False, True, True])
    assert passages.rank([1.0, 0.0], only, 3) == [1, 2]  # the reader's version or locale only
    assert passages.rank([1.0, 0.0, 0.0], None, 3) is None  # a query vector of another model


@pytest.fixture(scope="module")
def example_hashed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Retriever]:
    """The example book indexed with the deterministic embedder, opened once for the module."""
    with hashed_retriever(EXAMPLE_SITE, tmp_path_factory.mktemp("instant") / "data") as retriever:
        yield retriever


def test_kalman_gai_ranks_the_section_that_teaches_the_gain_above_the_exercises(
    example_hashed: Retriever,
) -> None:
    # The example book's exercises ask about the Kalman gain more often than the section that teaches
    # it mentions it: typed "kalman gai", the Exercises section came first.
    search = InstantSearch(example_hashed)
    for dense in (False, True):
        urls = [section["url"] for section in search.search("kalman gai", dense=dense).sections]
        assert urls[0] == "/docs/sensing/kalman-filter#kalman-1d", (dense, urls)
        assert "/docs/sensing/kalman-filter#exercises" in urls[:3]  # below it, not gone


def test_the_dense_rankings_kept_are_bounded(example_hashed: Retriever) -> None:
    search = InstantSearch(example_hashed)
    search._dense.capacity = 2
    queries = ["kalman filter ", "wheel odometry ", "lidar scan "]
    for query in queries:
        assert search.search(query).dense
    assert len(search._dense) == 2
    assert search.search_ready(queries[0]) is None  # forgotten: it would embed again
    assert search.search_ready(queries[-1]) is not None


def test_an_exercise_section_yields_a_near_tie_but_not_a_clear_match() -> None:
    teaching = payload("/kalman", "gain", "The update", "The Kalman gain weighs the measurement.")
    exercises = payload("/kalman", "exercises", "Exercises", "What does the Kalman gain weigh?")
    index = SectionIndex("g1", [teaching, exercises])
    assert [index.sections[n].exercise for n in range(2)] == [False, True]
    hits = index.search(ParsedQuery.parse("kalman gai"), None, 5)
    assert [index.sections[hit.section].url for hit in hits] == ["/kalman#gain", "/kalman#exercises"]
    # Looking for the exercises finds them first.
    hits = index.search(ParsedQuery.parse("kalman exerc"), None, 5)
    assert index.sections[hits[0].section].url == "/kalman#exercises"
    # A page the site declares a quiz is exercises throughout; a heading that mentions problems is not.
    quiz = payload("/quiz", "gain", "The gain", "Which gain?", content_type="quiz")
    faq = payload("/faq", "memory", "Will caching cause memory problems?", "No.")
    assert {s.url: s.exercise for s in SectionIndex("g1", [quiz, faq]).sections} == {
        "/quiz#gain": True,
        "/faq#memory": False,
    }


def test_a_short_query_s_dense_text_reads_the_word_being_typed_when_the_book_has_that_word() -> None:
    index = SectionIndex("g1", BOOK)
    # "Kalman" is a word of the book: the reader may have finished it (a space would not change the text).
    assert index.dense_text(ParsedQuery.parse("tune the Kalman")) == "tune the Kalman"
    assert index.dense_text(ParsedQuery.parse("tune the Kalman ")) == "tune the Kalman"
    assert index.dense_text(ParsedQuery.parse("tune the Kalm")) == "tune the"  # not a word yet
    assert index.dense_text(ParsedQuery.parse("tune the")) == "tune"  # a stop word being typed
    # Three complete words carry the meaning: the word being typed waits for its space.
    assert index.dense_text(ParsedQuery.parse("tune integral gains of the wheel")) == (
        "tune integral gains of the"
    )


def test_while_the_query_is_short_the_dense_channel_s_best_sections_keep_places_among_the_first() -> None:
    fused = [InstantHit(n, 1.0 / (n + 1), frozenset()) for n in range(8)]
    order = [hit.section for hit in keep_dense_first(fused, [7, 6], 5)]
    assert order == [0, 1, 2, 7, 6, 3, 4, 5]  # the last places of the first five, in the dense order
    order = [hit.section for hit in keep_dense_first(fused, [6, 2], 5)]
    assert order == [0, 1, 2, 3, 6, 4, 5, 7]  # 2 is there already
    assert keep_dense_first(fused, [1, 3], 5) == fused  # already there
    assert keep_dense_first(fused, [], 5) == fused
