"""Which words of a question are spelled as names (what the book may never mention)."""

from __future__ import annotations

import pytest

from bookwise.retrieval.topics import defined_terms, named_words, stems, topic_phrases


@pytest.mark.parametrize(
    ("question", "names"),
    [
        (
            "How do I publish my site to IPFS, for example through Fleek or Pinata?",
            ["IPFS", "Fleek", "Pinata"],
        ),
        (
            "Can I write pages in AsciiDoc or reStructuredText instead of Markdown/MDX?",
            ["AsciiDoc", "reStructuredText", "Markdown", "MDX"],
        ),
        ("Does it run on Node.js or C++?", ["Node.js", "C++"]),
        ("What is a Kalman filter? Kalman filters are neat.", ["Kalman"]),  # not at a sentence's start only
        ("Can I use S3? I think so.", ["S3"]),  # "I" is no name
        ("how do i deploy to firebase", []),  # typed in lower case: no names
        ("What does `Provider` do?", []),  # code spans are not read as names
    ],
)
def test_named_words(question: str, names: list[str]) -> None:
    assert named_words(question) == names


@pytest.mark.parametrize(
    ("question", "phrases"),
    [
        ("How do I tune a model predictive controller?", [("model", "predictive", "controller")]),
        ("How does a particle filter work?", [("particle", "filter")]),
        # A hyphenated word, a stop word, a generic word or a joining word ends a run.
        ("I call my createSelector-based selector", []),
        (
            "How do I put a danger callout inside an info callout?",
            [("danger", "callout"), ("info", "callout")],
        ),
    ],
)
def test_runs_of_topic_words_that_may_name_one_thing(question: str, phrases: list[tuple[str, ...]]) -> None:
    assert topic_phrases(question) == phrases


@pytest.mark.parametrize(
    ("question", "terms"),
    [
        ("What is odometry?", ["odometry"]),
        ("What's the Kalman gain?", ["Kalman gain"]),
        ("What is the difference between bias and noise in a sensor reading?", ["bias", "noise"]),
        ("What does Ku mean?", ["Ku"]),
        ("What is a step-by-step way to pick the gains of the wheel speed loop?", []),
        ("How does the integral term work?", []),
    ],
)
def test_the_terms_a_question_asks_the_definition_of(question: str, terms: list[str]) -> None:
    assert defined_terms(question) == terms


def test_stems_join_a_plural_to_its_singular_and_skip_stop_words() -> None:
    assert stems("the particle filters") == stems("particle filter")
    assert stems("sensors that measure") == stems("sensor measures")
