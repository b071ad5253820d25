"""The values one answer passes between its phases: the request and what ``prepare`` decided.

Shared by ``answer.py`` (the two phases) and ``study_prep.py`` (study actions and questions about
the reader's page), and by every caller: the API, ``bookwise ask`` and the answer evaluation. The
events the stream yields are in ``events.py``, with the words the request and the events share.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from bookwise.generation.events import Action, AnswerKind, AnswerMode, Mode, QuizTurn, Scope
from bookwise.generation.evidence import PassagePlan
from bookwise.generation.followup import SearchQuery
from bookwise.generation.prompts import Message, Turn
from bookwise.retrieval.models import SectionResult

__all__ = [
    "Action",
    "AnswerKind",
    "ChatRequest",
    "Mode",
    "Page",
    "PageUse",
    "Plan",
    "Prepared",
    "Scope",
    "Written",
]

# What the reader's page is used for: a page action, or a question about "this page".
PageUse = Literal["summarize", "exercises", "question", "quiz"]
Plan = AnswerMode  # what prepare decided, sent as meta's answer_mode


@dataclass(frozen=True)
class Page:
    url: str
    heading_id: str | None = None  # a client's "" is no heading (to ``Retriever.locate``, the opening)
    version: str | None = None
    locale: str | None = None

    def __post_init__(self) -> None:
        if self.heading_id == "":
            object.__setattr__(self, "heading_id", None)


@dataclass(frozen=True)
class ChatRequest:
    question: str
    mode: Mode = "normal"
    scope: Scope | None = None  # selected_text only; default "selection"
    selected_text: str = ""
    page: Page | None = None
    history: tuple[Turn, ...] = ()
    filters: Mapping[str, Sequence[str] | str] | None = None
    top_k: int | None = None
    request_id: str = ""
    action: Action = "ask"

    @property
    def effective_scope(self) -> Scope:
        return "book" if self.mode == "normal" else (self.scope or "selection")


@dataclass
class Prepared:
    request: ChatRequest
    query: SearchQuery
    sources: list[SectionResult]
    sufficient: bool
    plan: Plan
    messages: list[Message]
    index_version: str
    retrieval_ms: float
    started: float
    located: bool = False
    passages: PassagePlan | None = None  # extractive answers: the passages to quote, sources renumbered
    evidence: float | None = None  # the retrieval's sufficiency score (book scope; the question log's)
    unknown_names: tuple[str, ...] = ()  # names in the question that the book never mentions
    selection_missing: tuple[str, ...] = ()  # words the question asks about that the selection lacks
    page_use: PageUse | None = None  # answered from the reader's page (a page action or "this page")
    quiz_turn: QuizTurn | None = None
    study: Written | None = None  # a study action's answer without a model, written in prepare


@dataclass(frozen=True)
class Written:
    """An answer written without a model, with its kind decided where its text is chosen."""

    text: str
    kind: AnswerKind
