"""Follow-up questions: only a question that refers back is rewritten into a standalone query.

"What about the second one?" cannot be searched on its own. With a language model configured, it
rewrites the question from the conversation; without one (or when it fails or is slow), the
deterministic fallback searches the question together with the reader's previous question.
A question that stands on its own is searched as asked.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from bookwise.errors import GenerationError
from bookwise.generation.prompts import Message, Turn, rewrite_messages

_REFERRING = re.compile(
    r"^(and|but|also|so|then|what about|how about|why not|same)\b"
    r"|\b(it|its|it's|that|this|these|those|they|them|their|there|one|ones|former|latter|"
    r"above|previous|earlier|same|else|instead|first|second|third|last)\b",
    re.IGNORECASE,
)
SHORT_FOLLOW_UP_WORDS = 3  # "and in tests?", "why?": too short to stand alone


class Completer(Protocol):
    async def complete(
        self, messages: Sequence[Message], *, timeout_s: float, max_tokens: int = 200
    ) -> str: ...


@dataclass(frozen=True)
class SearchQuery:
    text: str
    rewritten: bool
    method: str  # "as_asked", "llm" or "fallback"


def refers_back(question: str, history: Sequence[Turn]) -> bool:
    if not any(turn.role == "user" for turn in history):
        return False
    return len(question.split()) <= SHORT_FOLLOW_UP_WORDS or bool(_REFERRING.search(question))


def fallback_query(question: str, history: Sequence[Turn]) -> str:
    previous = next((t.content for t in reversed(history) if t.role == "user"), "")
    return " ".join(f"{question} {previous}".split())


async def standalone_query(
    question: str, history: Sequence[Turn], *, llm: Completer | None, timeout_s: float
) -> SearchQuery:
    if not refers_back(question, history):
        return SearchQuery(question, rewritten=False, method="as_asked")
    if llm is not None:
        try:
            rewritten = await llm.complete(rewrite_messages(question, history), timeout_s=timeout_s)
        except GenerationError:
            rewritten = ""
        rewritten = " ".join(rewritten.split())
        if rewritten and len(rewritten) <= 4 * (len(question) + 200):  # a rambling reply is no query
            return SearchQuery(rewritten, rewritten=True, method="llm")
    return SearchQuery(fallback_query(question, history), rewritten=True, method="fallback")
