"""The events of one answer's stream, typed, and the one summary of what the answer was.

``Answerer.stream`` yields ``Meta``, ``Sources``, ``Token``…, then exactly one ``Done`` or ``ErrorEvent``.
Each event is a frozen pydantic model whose fields are its SSE ``data`` in wire order: ``sse()``
gives the frame's name and JSON (``json.dumps``, non-ASCII kept), and ``answer_events_schema()`` the
JSON Schema that the HTTP reference and the widget's tests read. Every string an event holds is valid
Unicode (``Text``): a lone surrogate from the model, the history or a library caller becomes U+FFFD
when the event is made, so no event can fail to encode in the stream writer.

``AnswerTrace`` folds the events a reader was sent into an ``AnswerSummary``: its outcome, its answer
kind, what it cited and its timings. The API's log line, its question log, its metrics,
``bookwise ask`` and the answer evaluation all read the answer from it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic.json_schema import models_json_schema

from bookwise.errors import BookwiseError

Mode = Literal["normal", "selected_text"]
Scope = Literal["selection", "section", "book"]
Action = Literal["ask", "explain", "example", "quiz", "summarize_page", "quiz_page"]
AnswerMode = Literal["llm", "extractive", "not_covered"]
AnswerKind = Literal["generated", "extractive", "not_covered", "not_in_selection"]
QueryMethod = Literal["as_asked", "llm", "fallback", "selection", "page"]
QuizTurn = Literal["question", "answer"]
# How an answer ended for its reader, as the question log records it.
Outcome = Literal["answered", "not_covered", "not_in_selection", "error", "client_disconnected"]
DECLINED_KINDS: frozenset[str] = frozenset({"not_covered", "not_in_selection"})

SURROGATE = re.compile(r"[\ud800-\udfff]")  # in a str, only a half of a pair is one


def valid_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD, so it can always be encoded."""
    return SURROGATE.sub("\ufffd", text)


Text = Annotated[str, AfterValidator(valid_text)]


class _Data(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _Event(_Data):
    name: ClassVar[str]

    @property
    def data(self) -> dict[str, Any]:
        """The event's JSON data, as sent."""
        return self.model_dump()

    def sse(self) -> tuple[str, str]:
        """The SSE frame's event name and data."""
        return self.name, json.dumps(self.model_dump(), ensure_ascii=False)


class Meta(_Event):
    """What runs: the request as understood, the query searched and how the answer is made."""

    name: ClassVar[str] = "meta"
    request_id: Text = Field(
        description="The answer's id, made by the server: its `X-Request-ID`, and feedback's."
    )
    mode: Mode = Field(description="The request's mode.")
    action: Action = Field(description="The study action asked for (`ask`: a question).")
    scope: Literal["selection", "section", "book", "page"] = Field(
        description="What the answer reads: the selection, its section, the book, or the reader's `page`."
    )
    quiz_turn: QuizTurn | None = Field(
        description="A quiz's turn: its `question`, then the reader's `answer`."
    )
    index_version: Text = Field(description="The index generation that answers.")
    query: Text = Field(description="What was searched.")
    query_rewritten: bool = Field(description="Whether the query differs from the question as asked.")
    query_method: QueryMethod = Field(
        description="How the query was made: as asked, rewritten by the model (`llm`) or without it "
        "(`fallback`), a widened question with the selection's topic (`selection`), or a question about "
        "the reader's page widened to the book, searched for what it asks about (`page`)."
    )
    answer_mode: AnswerMode = Field(
        description="Who answers: the model, the book's own passages, or nobody (`not_covered`: retrieval "
        "judged the book silent; the answer says so and lists the closest sections)."
    )
    model: Text | None = Field(description="The language model answering, in `llm` mode.")


class Source(_Data):
    """One section behind the answer: `[n]` in the answer cites the source numbered `n`."""

    n: int = Field(description="The source's number, from 1.")
    doc_path: Text = Field(description="The source file, relative to the docs folder.")
    doc_id: Text = Field(description="The Docusaurus document id.")
    title: Text = Field(description="The page's title.")
    heading: Text = Field(description="The section's heading (Markdown), empty for a page's introduction.")
    heading_text: Text = Field(description="The heading as plain text.")
    heading_level: int = Field(description="The heading's level (1 for a page's title).")
    breadcrumb: list[Text] = Field(description="The page title and headings above the section.")
    url: Text = Field(description="The section's site-relative URL (with a text fragment for a selection).")
    page_url: Text = Field(description="The page's site-relative URL.")
    anchor: Text = Field(description="The heading's id, empty for a page's introduction.")
    module: Text | None = Field(
        description="The page's module (front matter `module`, else a folder's label)."
    )
    chapter: Text | None = Field(
        description="The page's chapter (front matter `chapter`, else a folder's label)."
    )
    version: Text | None = Field(description="The docs version.")
    locale: Text | None = Field(description="The site locale.")
    content_type: Text = Field(
        description="The page's type: `prose`, or one it declares or names in its path (`lab`, `quiz`, …)."
    )
    score: float = Field(description="The retrieval score (rank order; not comparable across questions).")
    snippet: Text = Field(description="A short excerpt (for a selection, the selection itself).")


class Sources(_Event):
    """The sections the answer draws on, always before the first token."""

    name: ClassVar[str] = "sources"
    sources: list[Source] = Field(description="The sections, numbered from 1.")
    sufficient_context: bool = Field(description="Whether retrieval judged the sections enough to answer.")


class Token(_Event):
    """A piece of the answer's Markdown."""

    name: ClassVar[str] = "token"
    text: Text = Field(
        description="Markdown; `[n]` markers name existing sources only (others are dropped and counted)."
    )


class Quote(_Data):
    """A verbatim passage of a cited source that the answer does not already quote."""

    n: int = Field(description="The source quoted.")
    text: Text = Field(description="The passage, Markdown.")
    url: Text = Field(description="The source's URL.")


class Widen(_Data):
    """An offer to ask the same question again about more of the book."""

    scope: Literal["section", "book"] = Field(description="The scope to ask again with.")
    label: Text = Field(description="The offer's words, for a button.")


class Timings(_Data):
    """Milliseconds from the start of the request."""

    retrieval: float = Field(description="Retrieval's own time.")
    first_token: float | None = Field(description="Until the first token (null without one).")
    total: float = Field(description="Until the answer ended.")


class Usage(_Data):
    """The model's token counts, as the provider reported them."""

    prompt_tokens: int = Field(description="The prompt's tokens.")
    completion_tokens: int = Field(description="The answer's tokens.")
    total_tokens: int = Field(description="Both.")


class Done(_Event):
    """The answer's end: what it was and what it cited."""

    name: ClassVar[str] = "done"
    answer_kind: AnswerKind = Field(
        description="What the answer is; `not_covered` and `not_in_selection` decline. A model's answer "
        "that cites nothing declined, whatever its wording."
    )
    citations: list[int] = Field(description="The source numbers cited, in order of first use.")
    dropped_citations: int = Field(description="Markers removed because no such source exists.")
    quotes: list[Quote] = Field(description="Passages of cited sources (none for extractive answers).")
    finish_reason: Text | None = Field(description="Why the answer stopped: `stop`, or `length` when cut.")
    widen: Widen | None = Field(description="An offer to ask about more of the book, if there is one.")
    timings_ms: Timings = Field(description="How long it took.")
    usage: Usage | None = Field(description="The model's token counts, when it reported them.")


class ErrorEvent(_Event):
    """The answer failed after the stream opened."""

    name: ClassVar[str] = "error"
    code: str = Field(description="The error's code (see Errors).")
    message: Text = Field(description="What went wrong, for the reader.")
    retryable: bool = Field(description="Whether asking again may succeed.")
    request_id: Text = Field(description="The answer's id, as in `meta`.")

    @classmethod
    def of(cls, error: BookwiseError, request_id: str) -> ErrorEvent:
        return cls(code=error.code, message=error.shown, retryable=error.retryable, request_id=request_id)


AnswerEvent = Meta | Sources | Token | Done | ErrorEvent
EVENT_TYPES: tuple[type[_Event], ...] = (Meta, Sources, Token, Done, ErrorEvent)


def answer_events_schema() -> dict[str, Any]:
    """The JSON Schema of one event as a client sees it: ``{"event": name, "data": {...}}``."""
    refs, defs = models_json_schema(
        [(event, "serialization") for event in EVENT_TYPES], ref_template="#/$defs/{model}"
    )
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Bookwise answer events",
        "description": (
            "The Server-Sent Events of POST /api/chat: meta, sources, token…, then exactly one of done or "
            "error. `event` is the SSE event name, `data` its JSON data."
        ),
        "oneOf": [
            {
                "type": "object",
                "properties": {"event": {"const": event.name}, "data": refs[(event, "serialization")]},
                "required": ["event", "data"],
                "additionalProperties": False,
            }
            for event in EVENT_TYPES
        ],
        **defs,
    }


def outcome_of(kind: AnswerKind | None, *, failed: bool) -> Outcome:
    """How an answer ended, from its ``done`` kind (None without a ``done``) and whether it sent an
    ``error``: a stream cut before either is the client's disconnect, a declining kind names how it
    declined, any other kind answered."""
    if failed:
        return "error"
    if kind is None:
        return "client_disconnected"
    return kind if kind == "not_covered" or kind == "not_in_selection" else "answered"


@dataclass(frozen=True)
class AnswerSummary:
    """What one answer's reader was sent, decided once: every reader of an answer asks it here."""

    meta: Meta | None = None
    sources: tuple[Source, ...] = ()
    text: str = ""  # the answer's Markdown, every token joined
    done: Done | None = None
    error: ErrorEvent | None = None

    @property
    def kind(self) -> AnswerKind | None:
        return self.done.answer_kind if self.done is not None else None

    @property
    def outcome(self) -> Outcome:
        return outcome_of(self.kind, failed=self.error is not None)

    @property
    def declined(self) -> bool:
        return self.kind in DECLINED_KINDS

    @property
    def ending(self) -> str:
        """How the stream ended, as the log line and the metrics say it: ``done``, the error's code,
        or ``client_disconnected``."""
        if self.error is not None:
            return self.error.code
        return "done" if self.done is not None else "client_disconnected"

    @property
    def citations(self) -> tuple[int, ...]:
        return tuple(self.done.citations) if self.done is not None else ()

    @property
    def cited(self) -> tuple[Source, ...]:
        """The sources the answer cites, in the order they were sent."""
        numbers = set(self.citations)
        return tuple(source for source in self.sources if source.n in numbers)

    @property
    def timings(self) -> Timings | None:
        return self.done.timings_ms if self.done is not None else None


@dataclass
class AnswerTrace:
    """The events of one answer, folded as they come (or as they are sent) into its summary."""

    meta: Meta | None = None
    sources: tuple[Source, ...] = ()
    tokens: list[str] = field(default_factory=list)
    done: Done | None = None
    error: ErrorEvent | None = None

    def add(self, event: AnswerEvent) -> None:
        if isinstance(event, Token):
            self.tokens.append(event.text)
        elif isinstance(event, Meta):
            self.meta = event
        elif isinstance(event, Sources):
            self.sources = tuple(event.sources)
        elif isinstance(event, Done):
            self.done = event
        else:
            self.error = event

    @property
    def summary(self) -> AnswerSummary:
        return AnswerSummary(self.meta, self.sources, "".join(self.tokens), self.done, self.error)


def summarize(events: Iterable[AnswerEvent]) -> AnswerSummary:
    trace = AnswerTrace()
    for event in events:
        trace.add(event)
    return trace.summary
