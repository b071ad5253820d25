"""Request bodies. Closed enums, no unknown fields, bounded sizes: the API accepts only what the
widget sends. Limits that are settings are checked in ``chat_request`` against the one Settings."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from bookwise.errors import InvalidRequestError
from bookwise.generation.answer import ChatRequest, Page
from bookwise.generation.prompts import Turn
from bookwise.settings import Settings

ShortText = Annotated[str, StringConstraints(max_length=200)]
FilterValue = ShortText | Annotated[list[ShortText], Field(max_length=50)]
Filters = Annotated[dict[ShortText, FilterValue], Field(max_length=10)]


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PageBody(Body):
    url: Annotated[str, StringConstraints(max_length=2048)]
    heading_id: ShortText | None = None
    version: ShortText | None = None
    locale: ShortText | None = None


class TurnBody(Body):
    role: Literal["user", "assistant"]
    content: str


class ChatBody(Body):
    question: str
    mode: Literal["normal", "selected_text"] = "normal"
    scope: Literal["selection", "section", "book"] | None = None
    selected_text: str | None = None
    page: PageBody | None = None
    history: list[TurnBody] = Field(default_factory=list)
    filters: Filters | None = None
    top_k: int | None = Field(None, ge=1)


class SearchBody(Body):
    query: str
    filters: Filters | None = None
    top_k: int | None = Field(None, ge=1)


class FeedbackBody(Body):
    request_id: Annotated[str, StringConstraints(max_length=64)]
    rating: Literal["up", "down"]
    question: Annotated[str, StringConstraints(max_length=8000)] = ""
    answer: Annotated[str, StringConstraints(max_length=32000)] = ""
    sources: Annotated[list[dict[str, Any]], Field(max_length=50)] = Field(default_factory=list)
    comment: Annotated[str, StringConstraints(max_length=2000)] = ""


def _limit(name: str, value: str, most: int) -> None:
    if len(value) > most:
        raise InvalidRequestError(f"{name} is too long: {len(value)} characters, at most {most}")


def check_question(question: str, settings: Settings) -> None:
    if not question.strip():
        raise InvalidRequestError("question is empty")
    _limit("question", question, settings.max_question_chars)


def chat_request(body: ChatBody, settings: Settings, request_id: str) -> ChatRequest:
    check_question(body.question, settings)
    _limit("selected_text", body.selected_text or "", settings.max_selection_chars)
    if len(body.history) > settings.max_history_turns:
        raise InvalidRequestError(
            f"history has {len(body.history)} turns, at most {settings.max_history_turns}"
        )
    for turn in body.history:
        _limit("a history turn", turn.content, settings.max_history_chars)
    if body.mode == "normal" and (body.scope not in (None, "book") or body.selected_text):
        raise InvalidRequestError("normal mode takes no selected_text or scope; use mode selected_text")
    if body.top_k is not None and body.top_k > settings.retrieval_max_top_k:
        raise InvalidRequestError(f"top_k must be between 1 and {settings.retrieval_max_top_k}")
    page = body.page
    return ChatRequest(
        question=body.question,
        mode=body.mode,
        scope=body.scope,
        selected_text=body.selected_text or "",
        page=Page(page.url, page.heading_id, page.version, page.locale) if page else None,
        history=tuple(Turn(t.role, t.content) for t in body.history),
        filters=body.filters,
        top_k=body.top_k,
        request_id=request_id,
    )
