"""Which words of a question are spelled as names (what the book may never mention)."""

from __future__ import annotations

import pytest

from bookwise.retrieval.topics import named_words


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
