"""A question asking for a measure ("how long", "how often") and the passages that state one."""

from __future__ import annotations

import pytest

from bookwise.retrieval.measures import measures_asked, states_measure


@pytest.mark.parametrize(
    ("question", "asked"),
    [
        ("How long should the lab take?", ["long"]),
        ("how often should the control loop run?", ["often"]),
        ("How fast can the wheel spin, and how far does it go?", ["fast", "far"]),
        ("What is a long-running task?", []),
        ("How do I make the page longer?", []),
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
    ],
)
def test_a_passage_states_the_measure_or_not(text: str, word: str, states: bool) -> None:
    assert states_measure(text, word) is states
