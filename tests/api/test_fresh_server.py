"""A just-started server without a model answers its first readers at full speed: what every answer
needs once per index generation is made before the port answers, not by the first questions."""

from __future__ import annotations

from pathlib import Path

import pytest

import local_http
from apiserver import build_book, running_api
from bookwise.generation import coverage


def test_the_first_questions_of_a_fresh_server_waited_for_the_books_phrases_regression(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first answers of a server without a model read and stemmed every chunk of the book (the
    phrases a decline names): the first four questions asked of a fresh docusaurus-docs server each
    waited about 2 s for it. They are read when the server opens the index."""
    settings = build_book(tmp_path)
    read: list[int] = []
    made = coverage.BookPhrases.of

    def counted(*args: object, **kwargs: object) -> coverage.BookPhrases:
        read.append(1)
        return made(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(coverage.BookPhrases, "of", staticmethod(counted))
    with running_api(settings) as url:
        assert len(read) == 1  # at start, before any question
        for question in ("How do I feed a quokka?", "Where do quokkas sleep?"):
            response = local_http.post(f"{url}/api/chat", json={"question": question}, timeout=30)
            assert response.status_code == 200 and "event: done" in response.text
        assert len(read) == 1
