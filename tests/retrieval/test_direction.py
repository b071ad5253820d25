"""A question that asks to go one way, and the sections and passages that go the other."""

from __future__ import annotations

from pathlib import Path

import pytest

from apiserver import one_page_book
from bookwise.retrieval.direction import (
    AGAINST,
    ALONG,
    NEITHER,
    Direction,
    asks_the_other_way,
    direction_asked,
    way_of,
)
from bookwise.retrieval.passage_rank import PassageWeights

FORWARD = "From wheel speeds to body velocity"
INVERSE = "From body velocity to wheel speeds"


@pytest.mark.parametrize(
    ("question", "asked"),
    [
        (
            "how do i convert wheel speeds to linear and angular velocity",
            ("wheel speeds", "linear and angular velocity"),
        ),
        (
            "How do I compute the wheel speeds from a cmd_vel message?",
            ("a cmd_vel message", "the wheel speeds"),
        ),
        ("How do I get from a path to velocity commands?", ("a path", "velocity commands")),
        ("What is the capital of France?", None),
        ("How do I tune a PID loop?", None),
    ],
)
def test_the_conversion_a_question_asks_for(question: str, asked: tuple[str, str] | None) -> None:
    found = direction_asked(question)
    assert (found.source, found.target) == asked if found else asked is None


@pytest.mark.parametrize(
    ("question", "heading", "other_way"),
    [
        ("how do i convert wheel speeds to linear and angular velocity", INVERSE, True),
        ("how do i convert wheel speeds to linear and angular velocity", FORWARD, False),
        ("How do I compute the wheel speeds from a cmd_vel message?", FORWARD, True),
        ("How do I compute the wheel speeds from a cmd_vel message?", INVERSE, False),
        # One shared word is no inverse: "velocity" alone.
        ("How do I get from a path to velocity commands?", INVERSE, False),
        ("how do I go from the body frame to the world frame", FORWARD, False),
    ],
)
def test_a_heading_converts_the_way_asked_or_the_other(question: str, heading: str, other_way: bool) -> None:
    asked = direction_asked(question)
    assert asked is not None
    assert (way_of(asked, heading) == AGAINST) is other_way


def test_under_a_heading_without_a_direction_the_passages_own_prose_decides() -> None:
    asked = Direction("wheel speeds", "body velocity")
    driver = "The driver node converts each command into wheel speeds, clipping them as described above:"
    assert way_of(asked, "Reading the cmd_vel topic", driver) == AGAINST
    assert way_of(asked, "Reading the cmd_vel topic", "A ground robot uses two fields.") == NEITHER
    both = f"{driver} The odometry node converts wheel speeds into body velocity."
    assert way_of(asked, "Reading the cmd_vel topic", both) == NEITHER  # it says both ways
    assert way_of(asked, "Odometry", "The odometry node converts wheel speeds into body velocity.") == ALONG
    # A program's code is not read, its names go every way; its docstrings and comments are.
    assert (
        way_of(asked, "Reading the cmd_vel topic", "```python\nv_l = wheel_speeds(body_velocity)\n```")
        == NEITHER
    )


@pytest.mark.parametrize(
    ("question", "other_way"),
    [
        ("and the other way round?", True),
        ("The other way around?", True),
        ("vice versa?", True),
        ("what about the inverse?", True),
        ("and the reverse?", True),
        ("how do I fix it?", False),
        ("what is the inverse of a transform?", False),
    ],
)
def test_a_follow_up_asks_for_the_conversion_reversed(question: str, other_way: bool) -> None:
    assert asks_the_other_way(question) is other_way


def test_a_reversed_direction_reads_as_a_question() -> None:
    assert Direction("a cmd_vel message", "the wheel speeds").reversed().question() == (
        "from the wheel speeds to a cmd_vel message"
    )


def test_the_passage_that_converts_the_other_way_ranks_below_the_one_asked_for(tmp_path: Path) -> None:
    """Both sections share their words; the inverse even repeats the question's. The one that goes
    the way asked is ranked first."""
    book = (
        "# Drive\n\n## From body velocity to wheel speeds\n\nEach wheel speed follows from the body "
        "velocity: the wheel speeds are the velocity plus or minus half the turn rate times the track.\n\n"
        "## From wheel speeds to body velocity\n\nThe body velocity is the average of the wheel speeds, "
        "and the turn rate their difference over the track.\n"
    )
    with one_page_book(tmp_path, book) as retriever:
        question = "How do I convert wheel speeds to body velocity?"
        sections = retriever.search(question).sections
        ranked = retriever.rank_passages(question, sections)
        assert sections[ranked[0].passage.section].heading_text == "From wheel speeds to body velocity"
        inverse = "How do I convert body velocity to wheel speeds?"
        ranked = retriever.rank_passages(inverse, sections)
        assert sections[ranked[0].passage.section].heading_text == "From body velocity to wheel speeds"


def test_a_passage_whose_prose_goes_the_way_asked_gains_and_the_other_way_loses(tmp_path: Path) -> None:
    book = (
        "# Frames\n\n## Transforms\n\nGoing from world coordinates into the body frame uses the inverse "
        "transform.\n\nWorld coordinates and body coordinates are both in use on a robot.\n\n"
        "The forward transform maps body frame coordinates into world coordinates.\n"
    )
    with one_page_book(tmp_path, book) as retriever:
        question = "How do I convert world coordinates to body frame coordinates?"
        sections = retriever.search(question).sections

        def scores(weights: PassageWeights) -> dict[str, float]:
            ranked = retriever.rank_passages(question, sections, weights)
            return {p.passage.text.split()[0]: p.score for p in ranked}

        weighed, unweighed = scores(PassageWeights()), scores(PassageWeights(way_asked=0, other_way=0))
        assert weighed["Going"] - unweighed["Going"] == pytest.approx(PassageWeights().way_asked)
        assert unweighed["The"] - weighed["The"] == pytest.approx(PassageWeights().other_way)
        assert weighed["World"] == pytest.approx(unweighed["World"])  # no direction: neither


def test_the_inverse_program_was_quoted_second_for_its_docstring_went_unread_regression() -> None:
    """ "how do i convert wheel speeds to linear and angular velocity" quoted, after the right formula,
    the program converting body velocity to wheel speeds: only its docstring says so."""
    asked = Direction("wheel speeds", "linear and angular velocity")
    program = (
        'Python:\n\n```python title="diff_drive.py"\ndef wheel_speeds(v, omega, track=0.30):\n'
        '    """Body velocity (m/s, rad/s) to wheel speeds (rad/s), returned as (left, right)."""\n'
        "    v_l = v - omega * track / 2\n    # both wheels scaled alike\n    return v_l\n```"
    )
    assert way_of(asked, "Reading the cmd_vel topic", program) == AGAINST
    odometry = "```cpp\n// From wheel speeds to body velocity\ndouble v = (v_r + v_l) / 2;\n```"
    assert way_of(asked, "Odometry", odometry) == ALONG
