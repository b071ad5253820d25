"""Follow-up questions: only a question that refers back is rewritten into a standalone query.

"What about the second one?" cannot be searched on its own. With a language model configured, it
rewrites the question from the conversation; without one (or when it fails or is slow), the
deterministic fallback searches the question with the topic words of the reader's latest question
that had a topic (not the whole question: "how do I fix it?" keeps "fix" as what it asks), and "the
other way round?" searches the latest conversion asked the other way. A
question that stands on its own is searched as asked, however short: "what's atan2 for" names its
topic. Widening a question about a selection to the book searches the question too; the selection
only supplies the topic of a question that names none ("what does this mean?").
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from bookwise.errors import GenerationError
from bookwise.generation.events import QueryMethod
from bookwise.generation.prompts import Message, Turn, rewrite_messages
from bookwise.retrieval.direction import asks_the_other_way, direction_asked
from bookwise.retrieval.topics import is_symbol, names_a_topic, topic_words

_REFERRING = re.compile(
    r"^(and|but|also|so|then|what about|how about|why not|same)\b"
    r"|\b(it|its|it's|that|this|these|those|they|them|their|there|one|ones|former|latter|"
    r"above|previous|earlier|same|else|instead|first|second|third|last)\b",
    re.IGNORECASE,
)
_TOKEN = re.compile(r"[\w.'-]+")
_PRONOUN = re.compile(r"\b(it|its|it's|this|that|these|those|they|them|their)\b", re.IGNORECASE)
PAGE_REFERENT_WORDS = 2  # "how do I tune it?": "tune"; "what are its limits?": "limits"
_POINTING = ("the", "a", "an", "this", "that", "these", "those")  # articles and demonstratives
_DETERMINERS = frozenset((*_POINTING, "my", "your", "our", "its", "their"))
Holds = Callable[[Sequence[str]], bool]  # whether the book writes these words together
# "the derivative one", "those blue ones"; not "how do I invert one?", where "one" is no noun's stand-in.
_INSTEAD = re.compile(rf"\b(?:{'|'.join(_POINTING)})\s+([A-Za-z][\w-]*)\s+(ones?)\b", re.IGNORECASE)
SELECTION_TOPIC_WORDS = 30  # of a selection, for a widened question that names no topic
# Words that ask for a form of the answer (and whom to show it), not for a topic: "show me the code"
# after "How does the discrete PID work?" asks for the PID's code.
ANSWER_FORMS = frozenset(
    "me us show give see write code snippet implementation formula formulas equation equations diagram "
    "figure picture proof derivation steps step".split()
)


class Completer(Protocol):
    async def complete(
        self, messages: Sequence[Message], *, timeout_s: float, max_tokens: int = 200
    ) -> str: ...


@dataclass(frozen=True)
class SearchQuery:
    text: str
    rewritten: bool
    method: QueryMethod


def refers_back(question: str, history: Sequence[Turn]) -> bool:
    if not any(turn.role == "user" for turn in history):
        return False
    return (
        topic_words(question) <= ANSWER_FORMS
        or bool(_REFERRING.search(question))
        or asks_the_other_way(question)
    )


def points_at_page(question: str, history: Sequence[Turn]) -> bool:
    """Whether ``question`` is a first question that points at something it does not name ("how do I
    tune it?"): a pronoun and at most ``PAGE_REFERENT_WORDS`` topic words, nothing asked before."""
    if any(turn.role == "user" for turn in history) or not _PRONOUN.search(question):
        return False
    return len(topic_words(question)) <= PAGE_REFERENT_WORDS


def with_page_topic(question: str, history: Sequence[Turn], page_title: str) -> Sequence[Turn]:
    """``history``, or, for a question that ``points_at_page`` ("how do I tune it?" asked on the Kalman
    filter's page), the reader's page as the topic asked before."""
    if not page_title or not points_at_page(question, history):
        return history
    return [Turn("user", page_title)]


def previous_topic(history: Sequence[Turn]) -> list[str]:
    """The topic words of the reader's latest question that had a topic, in the order asked, with its
    one-letter symbols ("what if it's too small?" after "how do I choose L?" is about `L`); when that
    question referred back itself, with the topic it borrowed: "and the sidebar?" after "How do I add
    a blog?" and "how do I change its URL?" is about the blog's sidebar."""
    at = _latest_topic_turn(history)
    if at is None:
        return []
    question = history[at].content
    tokens = (t.strip(".'-") for t in _TOKEN.findall(question))
    own = [t for t in tokens if t and (names_a_topic(t) or is_symbol(t))]
    if refers_back(question, history[:at]):
        own += previous_topic(history[:at])
    return list(dict.fromkeys(own))


def _latest_topic_turn(history: Sequence[Turn]) -> int | None:
    """Where the reader's latest question that had a topic is in ``history``."""
    return next(
        (at for at in range(len(history) - 1, -1, -1)
         if history[at].role == "user" and names_a_topic(history[at].content)),
        None,
    )  # fmt: skip


def _named_instead(question: str, history: Sequence[Turn], holds: Holds | None) -> tuple[str, set[str]]:
    """``question`` with "the X one" written as the noun it stands for, and the words X replaces:
    "what about the derivative one?" after "What does the integral term of a PID do?" asks about the
    derivative *term*, not the integral one as well. The noun ends the first run of topic words after a
    determiner in the latest question with a topic ("the integral term"); the words before it are what
    X replaces. Only when the book writes "X noun" (``holds``): "the newer one" or "the cheapest one"
    qualifies the thing asked about rather than naming another, and keeps the whole previous topic."""
    instead = _INSTEAD.search(question)
    if holds is None or instead is None or not names_a_topic(instead.group(1)):
        return question, set()
    at = _latest_topic_turn(history)
    previous = history[at].content if at is not None else ""
    tokens = [t.strip(".'-") for t in _TOKEN.findall(previous)]
    for start, token in enumerate(tokens[:-1]):
        if token.lower() not in _DETERMINERS:
            continue
        run = list(itertools.takewhile(names_a_topic, tokens[start + 1 :]))
        if len(run) < 2:
            continue
        if not holds((instead.group(1), run[-1])):
            return question, set()
        plural = instead.group(2).lower() == "ones" and not run[-1].lower().endswith("s")
        noun = run[-1] + ("s" if plural else "")
        return question[: instead.start(2)] + noun + question[instead.end(2) :], set(run[:-1])
    return question, set()


def fallback_query(question: str, history: Sequence[Turn], holds: Holds | None = None) -> str:
    """The question with the previous topic's words; ``holds``: whether the book writes a phrase, which
    lets "the X one" name X's kind of the previous topic (``_named_instead``)."""
    if asks_the_other_way(question) and (reversed_ := _previous_reversed(history)) is not None:
        return reversed_
    question, replaced = _named_instead(question, history, holds)
    own, asked = topic_words(question), set(_TOKEN.findall(question))
    borrowed = [
        word
        for word in previous_topic(history)
        if word not in replaced and ((is_symbol(word) and word not in asked) or not topic_words(word) <= own)
    ]
    return " ".join([*question.split(), *borrowed])


def _previous_reversed(history: Sequence[Turn]) -> str | None:
    """The reader's latest conversion, asked the other way: "and the other way round?" after "How do
    I compute the wheel speeds from a cmd_vel message?" is "from the wheel speeds to a cmd_vel
    message", not the same question again with the same answer."""
    at = _latest_topic_turn(history)
    asked = direction_asked(history[at].content) if at is not None else None
    return asked.reversed().question() if asked is not None else None


def widened_query(question: str, selection: str) -> SearchQuery:
    if names_a_topic(question):
        return SearchQuery(question, rewritten=False, method="as_asked")
    passage = " ".join(selection.split()[:SELECTION_TOPIC_WORDS])
    return SearchQuery(f"{question} {passage}", rewritten=True, method="selection")


async def standalone_query(
    question: str,
    history: Sequence[Turn],
    *,
    llm: Completer | None,
    timeout_s: float,
    holds: Holds | None = None,
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
    return SearchQuery(fallback_query(question, history, holds), rewritten=True, method="fallback")
