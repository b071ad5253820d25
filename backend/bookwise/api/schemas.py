"""Request bodies. Closed enums, no unknown fields, bounded sizes: the API accepts only what the
widget sends. The rules on content (lengths, ``top_k``, filters, scope) are ``bookwise.validation``'s,
shared with the CLI and the Retriever.

Every string of every body (values and keys, however nested) must be text a reader can type: no
lone surrogates and no control characters but tab and line breaks. JSON delivers both: an escaped
``"\\ud800"``, or the raw bytes ``ED A0 80``, which Python's JSON parser decodes to the same lone
surrogate. A lone surrogate cannot be encoded as UTF-8, so the tokenizer, BM25, the log writer and
the stream writer would all raise on it, deep in shared machinery (one batch of query embeddings
serves many readers); control characters are never typed and only serve to confuse logs and models.
Both are refused here, once, before any work, naming the field.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StringConstraints, model_validator
from pydantic_core import PydanticCustomError

from bookwise.generation.models import ChatRequest, Page
from bookwise.generation.prompts import Turn

ShortText = Annotated[str, StringConstraints(max_length=200)]
FilterValue = ShortText | Annotated[list[ShortText], Field(max_length=50)]
Filters = Annotated[dict[ShortText, FilterValue], Field(max_length=10)]
FeedbackReason = Literal["incorrect", "not_what_i_asked", "unclear", "other"]


# Lone surrogates (a str holds no pairs) and C0 controls other than tab, line feed, carriage return.
_NOT_TEXT = re.compile(r"[\ud800-\udfff\x00-\x08\x0b\x0c\x0e-\x1f]")
_SHOWN_KEY_CHARS = 40


def _bad_text(value: str) -> str | None:
    """What makes ``value`` unacceptable as text, or None."""
    found = _NOT_TEXT.search(value)
    if found is None:
        return None
    char = found.group()
    kind = "a lone surrogate" if "\ud800" <= char <= "\udfff" else "a control character"
    return f"contains {kind} (U+{ord(char):04X}) at character {found.start()}; send valid Unicode text"


def _key_name(key: str) -> str:
    # A client's key in an error message: ASCII only, short (it may itself be the bad text).
    return json.dumps(key[:_SHOWN_KEY_CHARS])[1:-1]


def _check_text(value: Any, where: str) -> None:
    if isinstance(value, str):
        problem = _bad_text(value)
        if problem is not None:
            raise PydanticCustomError(
                "invalid_text", "{field} {problem}", {"field": where or "the body", "problem": problem}
            )
    elif isinstance(value, dict):
        for key, item in value.items():
            name = _key_name(str(key))
            path = f"{where}.{name}" if where else name
            _check_text(str(key), f"{path} (the key)")
            _check_text(item, path)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_text(item, f"{where}[{index}]")


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _only_text(cls, data: Any) -> Any:
        _check_text(data, "")
        return data


class PageBody(Body):
    url: Annotated[str, StringConstraints(max_length=2048)]
    heading_id: ShortText | None = None
    version: ShortText | None = None
    locale: ShortText | None = None


Action = Literal["ask", "explain", "example", "quiz", "summarize_page", "quiz_page"]


class TurnBody(Body):
    role: Literal["user", "assistant"]
    content: str
    action: Action = "ask"  # the action that produced the turn (a quiz answer follows a quiz question)


class ChatBody(Body):
    question: str
    mode: Literal["normal", "selected_text"] = "normal"
    scope: Literal["selection", "section", "book"] | None = None
    selected_text: str | None = None
    page: PageBody | None = None
    history: list[TurnBody] = Field(default_factory=list)
    filters: Filters | None = None
    top_k: StrictInt | None = Field(None, ge=1)  # never coerced: "5" and true are refused
    action: Action = "ask"  # a study action (docs/api.md: Study actions); "ask" is a plain question


class SearchBody(Body):
    query: str
    filters: Filters | None = None
    top_k: StrictInt | None = Field(None, ge=1)  # never coerced: "5" and true are refused


class FeedbackBody(Body):
    request_id: Annotated[str, StringConstraints(max_length=64)]
    rating: Literal["up", "down"]
    question: Annotated[str, StringConstraints(max_length=8000)] = ""
    answer: Annotated[str, StringConstraints(max_length=32000)] = ""
    sources: Annotated[list[dict[str, Any]], Field(max_length=50)] = Field(default_factory=list)
    comment: Annotated[str, StringConstraints(max_length=2000)] = ""
    reason: FeedbackReason | None = None  # why a thumbs-down; refused with a thumbs-up

    @model_validator(mode="after")
    def _reason_only_when_down(self) -> FeedbackBody:
        if self.reason is not None and self.rating != "down":
            raise PydanticCustomError("reason_with_up", "reason is for a thumbs-down rating only")
        return self


def chat_request(body: ChatBody, request_id: str) -> ChatRequest:
    """The body as the Answerer's request; its content rules are checked next, by
    ``bookwise.generation.answer.checked``."""
    page = body.page
    return ChatRequest(
        question=body.question,
        mode=body.mode,
        scope=body.scope,
        selected_text=body.selected_text or "",
        page=Page(page.url, page.heading_id, page.version, page.locale) if page else None,
        history=tuple(Turn(t.role, t.content, t.action) for t in body.history),
        filters=body.filters,
        top_k=body.top_k,
        request_id=request_id,
        action=body.action,
    )
