"""The bytes of ``POST /api/chat`` answers, pinned: typing the answer events changed no byte on the wire.

Each case is one answer of a real uvicorn over the small hash-embedded book (extractive, declined,
selection, study actions, the fake LLM's answers and an error event). Only what differs between runs
is masked before comparing: the request id, the index generation and the timings. The expected
bodies were recorded from the server before the events were typed (``wire/answers.json``). A change
to the protocol that is meant records them again: run this test with ``RECORD_ANSWER_WIRE=1`` (it
writes the file and fails, so that the diff is read before it is committed).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import local_http
from apiserver import build_book, running_api
from bookwise.settings import Settings
from fakellm import FakeLLM

RECORDED = Path(__file__).parent / "wire" / "answers.json"
FEEDING = "http://localhost:3000/docs/care/feeding"
SELECTION = "Offer fresh peppermint leaves and clean water before sunrise."
_MASKS = (
    (re.compile(r'"request_id": "[0-9a-f]+"'), '"request_id": "<id>"'),
    (re.compile(r'"index_version": "[^"]*"'), '"index_version": "<generation>"'),
    (re.compile(r'"timings_ms": \{[^}]*\}'), '"timings_ms": <timings>'),
)


def _selected(question: str, **extra: Any) -> dict[str, Any]:
    page = {"url": FEEDING}
    return {"question": question, "mode": "selected_text", "selected_text": SELECTION, "page": page} | extra


EXTRACTIVE: dict[str, dict[str, Any]] = {
    "extractive": {"question": "What do quokkas eat in the morning?"},
    "extractive_follow_up": {
        "question": "And in the evening?",
        "history": [
            {"role": "user", "content": "What do quokkas eat in the morning?"},
            {"role": "assistant", "content": "Peppermint leaves [1]."},
        ],
    },
    "selection_answered": _selected("What should I offer before sunrise?"),
    "selection_not_in_selection": _selected("How many joeys per litter?"),
    "selection_widened_to_section": _selected("What do quokkas eat?", scope="section"),
    "selection_widened_to_book": _selected("What does this mean?", scope="book"),
    "study_quiz_selection": _selected("", action="quiz"),
    "study_summarize_page": {"question": "", "action": "summarize_page", "page": {"url": FEEDING}},
}
DECLINED: dict[str, dict[str, Any]] = {
    "declined_not_covered": {"question": "How do I tune a carburettor?"},
    "declined_unknown_name": {"question": "How do I feed quokkas with Purina chow?"},
}
# The fake model's reply for each LLM case: an invented citation, a lone surrogate and curly quotes.
WITH_MODEL: dict[str, tuple[dict[str, Any], list[str]]] = {
    "llm_answer": (
        {"question": "What do quokkas eat in the morning?"},
        ["Quokkas eat peppermint", " leaves [", "1]. They", " fly south [7", "]. \ud800 “fresh”"],
    ),
    "llm_declines": ({"question": "What do quokkas eat in the morning?"}, ["The book does not say."]),
    "llm_selection_explain": (_selected("", action="explain"), ["Fresh leaves before sunrise [1]."]),
}


def masked(body: str) -> str:
    for pattern, replacement in _MASKS:
        body = pattern.sub(replacement, body)
    return body


def answer_body(url: str, body: dict[str, Any]) -> str:
    with (
        local_http.client(timeout=20) as client,
        client.stream("POST", f"{url}/api/chat", json=body) as response,
    ):
        assert response.status_code == 200, response.read()
        return masked(response.read().decode("utf-8"))


def record(book: Settings, llm: tuple[FakeLLM, str]) -> dict[str, str]:
    """Every case's masked body, in a stable order."""
    bodies: dict[str, str] = {}
    with running_api(book) as url:
        bodies |= {name: answer_body(url, body) for name, body in EXTRACTIVE.items()}
    with running_api(book.model_copy(update={"sufficiency_threshold": 1.0})) as url:
        bodies |= {name: answer_body(url, body) for name, body in DECLINED.items()}
    fake, base_url = llm
    model = {"llm_base_url": base_url, "llm_model": "fake-1", "llm_max_retries": 0}
    with running_api(book.model_copy(update=model)) as url:
        for name, (body, tokens) in WITH_MODEL.items():
            fake.reset()
            fake.tokens = tokens
            bodies[name] = answer_body(url, body)
        fake.reset()
        fake.mode = "500"
        bodies["llm_error"] = answer_body(url, {"question": "What do quokkas eat in the morning?"})
        fake.reset()
    return bodies


@pytest.fixture(scope="module")
def book(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return build_book(tmp_path_factory.mktemp("wire-book"))


@pytest.fixture(scope="module")
def bodies(book: Settings, llm_server: tuple[FakeLLM, str]) -> Iterator[dict[str, str]]:
    yield record(book, llm_server)


def test_answer_event_bytes_are_unchanged_by_typed_events(bodies: dict[str, str]) -> None:
    if os.environ.get("RECORD_ANSWER_WIRE") == "1":
        RECORDED.write_text(json.dumps(bodies, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        pytest.fail(f"recorded {RECORDED.name}: read its diff, then run again without RECORD_ANSWER_WIRE")
    expected: dict[str, str] = json.loads(RECORDED.read_text(encoding="utf-8"))
    assert sorted(bodies) == sorted(expected)
    for name, body in expected.items():
        assert bodies[name] == body, name


def test_the_recorded_cases_cover_every_event_and_answer_kind(bodies: dict[str, str]) -> None:
    """The pinned bodies are worth pinning: every event name and every answer kind is among them."""
    joined = "".join(bodies.values())
    for name in ("meta", "sources", "token", "done", "error"):
        assert f"event: {name}\r\n" in joined, name
    for kind in ("generated", "extractive", "not_covered", "not_in_selection"):
        assert f'"answer_kind": "{kind}"' in joined, kind
    assert "\\ufffd" in joined or "\ufffd" in joined  # the model's lone surrogate, made encodable
