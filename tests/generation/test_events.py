"""The typed answer events: their SSE form is the recorded wire bytes, their JSON Schema describes
every recorded event, and an answer's summary says how it ended whoever reads it."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from bookwise.errors import LLMTimeoutError
from bookwise.generation.events import (
    EVENT_TYPES,
    AnswerEvent,
    Done,
    ErrorEvent,
    Meta,
    Source,
    Sources,
    Timings,
    Token,
    answer_events_schema,
    summarize,
)

RECORDED = Path(__file__).parent / "wire" / "answers.json"
TIMINGS = '{"retrieval": 1.5, "first_token": null, "total": 2.5}'
BY_NAME = {event.name: event for event in EVENT_TYPES}
DONE = {
    "answer_kind": "extractive", "citations": [], "dropped_citations": 0, "quotes": [],
    "finish_reason": "stop", "widen": None, "timings_ms": json.loads(TIMINGS), "usage": None,
}  # fmt: skip


def recorded_frames() -> list[tuple[str, str]]:
    """Every (event, data) frame of the recorded answers, the masked timings made real again."""
    frames = []
    for body in json.loads(RECORDED.read_text(encoding="utf-8")).values():
        for frame in body.replace("<timings>", TIMINGS).split("\r\n\r\n"):
            if frame:
                event, data = frame.split("\r\n")
                frames.append((event.removeprefix("event: "), data.removeprefix("data: ")))
    return frames


def test_each_recorded_frame_is_its_typed_events_sse_form_byte_for_byte() -> None:
    frames = recorded_frames()
    assert {name for name, _ in frames} == set(BY_NAME)
    for name, data in frames:
        assert BY_NAME[name].model_validate_json(data).sse() == (name, data)


def test_the_schema_describes_every_recorded_event_and_refuses_a_wrong_one() -> None:
    schema = answer_events_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for name, data in recorded_frames():
        validator.validate({"event": name, "data": json.loads(data)})
    assert validator.is_valid({"event": "done", "data": DONE})
    assert not validator.is_valid({"event": "done", "data": {**DONE, "answer_kind": "answered"}})
    assert not validator.is_valid({"event": "done", "data": {**DONE, "verdict": "fine"}})
    assert not validator.is_valid({"event": "token", "data": DONE})


def test_every_string_of_an_event_is_valid_unicode_once_made() -> None:
    token = Token(text="half \ud800 of a pair")
    assert token.text == "half \ufffd of a pair"
    error = ErrorEvent.of(LLMTimeoutError("slow \udfff"), "r\ud800")
    assert error.request_id == "r\ufffd"
    error.sse()[1].encode("utf-8")


META = Meta(
    request_id="r1", mode="normal", action="ask", scope="book", quiz_turn=None, index_version="g1",
    query="q", query_rewritten=False, query_method="as_asked", answer_mode="llm", model="m",
)  # fmt: skip
SOURCES = Sources(
    sources=[
        Source(
            n=n,
            doc_path=f"p{n}.md",
            doc_id=f"p{n}",
            title=f"P{n}",
            heading="",
            heading_text="",
            heading_level=1,
            breadcrumb=[],
            url=f"/p{n}",
            page_url=f"/p{n}",
            anchor="",
            module=None,
            chapter=None,
            version=None,
            locale=None,
            content_type="prose",
            score=0.5,
            snippet="",
        )  # fmt: skip
        for n in (1, 2, 3)
    ],
    sufficient_context=True,
)


TIMED_OUT = ErrorEvent(code="llm_timeout", message="m", retryable=True, request_id="r1")


def _done(kind: str, citations: list[int]) -> Done:
    return Done.model_validate(
        {
            "answer_kind": kind,
            "citations": citations,
            "dropped_citations": 0,
            "quotes": [],
            "finish_reason": "stop",
            "widen": None,
            "timings_ms": json.loads(TIMINGS),
            "usage": None,
        }  # fmt: skip
    )


@pytest.mark.parametrize(
    ("ending", "outcome", "log_outcome", "cited"),
    [
        ([_done("generated", [3, 1])], "answered", "done", ["/p1", "/p3"]),
        ([_done("extractive", [2])], "answered", "done", ["/p2"]),
        ([_done("not_covered", [])], "not_covered", "done", []),
        ([_done("not_in_selection", [])], "not_in_selection", "done", []),
        (
            [ErrorEvent(code="llm_timeout", message="m", retryable=True, request_id="r1")],
            "error",
            "llm_timeout",
            [],
        ),
        ([], "client_disconnected", "client_disconnected", []),
    ],
)
def test_the_summary_says_how_the_answer_ended(
    ending: list[AnswerEvent], outcome: str, log_outcome: str, cited: list[str]
) -> None:
    answer = summarize([META, SOURCES, Token(text="Odometry "), Token(text="drifts [1]."), *ending])
    assert (answer.outcome, answer.ending) == (outcome, log_outcome)
    assert answer.declined == (outcome in ("not_covered", "not_in_selection"))
    assert [source.url for source in answer.cited] == cited
    assert answer.text == "Odometry drifts [1]."
    assert answer.timings == (Timings(retrieval=1.5, first_token=None, total=2.5) if answer.done else None)
