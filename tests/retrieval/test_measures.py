"""A question asking for a measure ("how long", "how often") or a formula, and the passages that state one."""

from __future__ import annotations

from pathlib import Path

import pytest

from apiserver import one_page_book
from bookwise.retrieval.measures import asks_for_formula, measures_asked, states_measure, writes_formula


@pytest.mark.parametrize(
    ("question", "asked"),
    [
        ("How long should the lab take?", ["long"]),
        ("how often should the control loop run?", ["often"]),
        ("How fast can the wheel spin, and how far does it go?", ["fast", "far"]),
        ("What is a long-running task?", []),
        ("How do I make the page longer?", []),
        ("How much memory does the server need?", ["much"]),
    ],
)
def test_the_measure_a_question_asks_for(question: str, asked: list[str]) -> None:
    assert measures_asked(question) == asked


@pytest.mark.parametrize(
    ("text", "word", "states"),
    [
        ("Allow about an hour.", "long", True),
        ("RTK Query keeps unused data for 60 seconds by default.", "long", True),
        ("A track width of 30 centimetres.", "long", True),
        ("Print the wheel speed every 0.02 s.", "long", False),  # the system's time, in a symbol
        ("With 100 ms of latency, the robot has moved 10 cm.", "long", False),
        ("Keep titles under 60 characters.", "long", True),
        ("The loop runs at 100 Hz.", "often", True),
        ("Poll every 5 s, or every minute when idle.", "often", True),
        ("The loop runs at a steady rate.", "often", False),
        ("Asking for v = 0.3 m/s gives 3 rad/s at the wheels.", "fast", True),
        ("The sensor reaches 12 metres.", "far", True),
        ("It takes a while, so be patient.", "long", False),
        ("A long list of options.", "long", False),
        ("A message with a time stamp.", "long", False),
        ("The server uses about 400 MB of memory.", "much", True),
        ("Memory is about 190 bytes per client.", "much", True),
        ("Overshoot grows to 20 % of the step.", "much", True),
        ("The figures move as much as between sizes.", "much", False),
        ("Set `Kp = 2` and run it 3 times.", "much", False),
    ],
)
def test_a_passage_states_the_measure_or_not(text: str, word: str, states: bool) -> None:
    assert states_measure(text, word) is states


@pytest.mark.parametrize(
    ("question", "asks"),
    [
        ("kalman gain formula", True),
        ("What is the formula for the curvature in pure pursuit?", True),
        ("What's the equation for odometry?", True),
        ("What equations does the EKF use?", True),
        ("What is a step-by-step way to pick the gains by experiment, without any formulas?", False),
        ("Should I use degrees or radians in the formulas?", False),
    ],
)
def test_a_question_asks_for_a_formula_or_only_names_one(question: str, asks: bool) -> None:
    assert asks_for_formula(question) is asks


@pytest.mark.parametrize(
    ("text", "writes"),
    [
        ("The two steps are:\n\n```text\ncorrect:  K  = P⁻ / (P⁻ + R)\n```", True),
        ("This arc has curvature `κ = 2·y_L / L²`, so the turn rate is `ω = v·κ`.", True),
        ("The error `e = setpoint − measurement`.", True),
        ("The **Kalman gain** `K` is between 0 and 1.", False),
        ("With `Kp = 2` and a 5 rad/s setpoint.", False),  # a value, not a formula
        ("A prediction has `P⁻ = 0.04 m²` and `v = 0.5 m/s`.", False),  # units are no operators
        ("```python\nk = p / (p + r)\n```", False),  # a program's assignment
    ],
)
def test_a_passage_writes_a_formula_or_not(text: str, writes: bool) -> None:
    assert writes_formula(text) is writes


def test_how_much_memory_was_held_by_as_much_as_regression(tmp_path: Path) -> None:
    """ "How much memory does the server need?" counted "much" as held by a benchmark's "the figures
    move as much as between sizes", which states no amount; the sizing passage, "400 MB", states one."""
    book = (
        "# Sizing\n\n## Memory\n\nThe server uses about 400 MB of memory for a small book.\n\n"
        "## Benchmarks\n\nFor the server's memory, the figures move as much as between sizes.\n"
    )
    with one_page_book(tmp_path, book) as retriever:
        question = "How much memory does the server need?"
        ranked = retriever.rank_passages(question, retriever.search(question).sections)
        coverage = {p.passage.text.split()[0]: p.coverage for p in ranked}
        assert coverage["The"] == pytest.approx(1.0)
        assert coverage["For"] < coverage["The"]
