"""The LLM judge: its prompt (``judge.j2``, beside this module), and its reply read leniently into a
``Verdict`` of every sentence supported, or not, by the sources the answer cites."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from bookwise.errors import BookwiseError
from bookwise.evaluation.answers.run import AnswerRun, Source
from bookwise.evaluation.answers.sentences import answer_sentences
from bookwise.generation.llm import LLMClient
from bookwise.generation.prompts import Message, attribute, block_tags

JUDGE_MAX_TOKENS = 2000  # one short verdict per sentence; reasoning models need room to think

_templates = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).parent),
    autoescape=False,  # a plain-text prompt; the untrusted answer and sources are fenced by keyed tags
    undefined=jinja2.StrictUndefined,
)
_templates.filters["attribute"] = attribute


def judge_messages(
    question: str, sentences: Sequence[str], sources: Sequence[Source], *, book_title: str
) -> list[Message]:
    answer = json.dumps(list(sentences), ensure_ascii=False, indent=1)
    prompt = _templates.get_template("judge.j2").render(
        book_title=book_title,
        question=question,
        sentences=answer,
        sources=sources,
        tags=block_tags([question, answer, *(source.text for source in sources)]),
    )
    return [{"role": "user", "content": prompt.strip()}]


@dataclass(frozen=True)
class JudgedSentence:
    n: int
    text: str
    supported: bool | None  # None: the judge said nothing usable about it
    reason: str = ""


@dataclass(frozen=True)
class Verdict:
    model: str
    sentences: tuple[JudgedSentence, ...] = ()
    error: str | None = None  # the judge failed or its reply could not be read

    @property
    def supported(self) -> bool | None:
        """True when every sentence is supported, False when one is not, None when unknown."""
        if self.error is not None or not self.sentences:
            return None
        values = [s.supported for s in self.sentences]
        if False in values:
            return False
        return None if None in values else True

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "supported": self.supported,
            "error": self.error,
            "sentences": [dataclasses.asdict(s) for s in self.sentences],
        }


_JSON_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def _json_in(reply: str) -> Any:
    """The JSON value in a reply that may wrap it in a code fence or in prose; None when there is none."""
    fenced = _JSON_FENCE.search(reply)
    candidates = [fenced.group(1)] if fenced else []
    candidates.append(reply)
    for text in candidates:
        text = text.strip()
        for opening, closing in (("{", "}"), ("[", "]")):
            start, end = text.find(opening), text.rfind(closing)
            if 0 <= start < end:
                try:
                    return json.loads(text[start : end + 1])
                except ValueError:
                    continue
    return None


def _truth(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().lower().replace("_", " ")
        if word in ("true", "yes", "supported"):
            return True
        if word in ("false", "no", "unsupported", "not supported"):
            return False
    return None


def parse_verdict(reply: str, sentences: Sequence[str], *, model: str) -> Verdict:
    """The judge's reply read leniently: a ``{"sentences": [...]}`` object or a bare list, items
    matched by ``n`` (else by position); anything missing or unreadable is unknown, never supported."""
    data = _json_in(reply)
    items = data.get("sentences") if isinstance(data, dict) else data
    if not isinstance(items, list):
        return Verdict(model, error="unreadable judge reply")
    said: dict[int, tuple[bool | None, str]] = {}
    for position, item in enumerate(items, start=1):
        if not isinstance(item, dict):
            continue
        try:
            n = int(item.get("n", position))
        except (TypeError, ValueError):
            n = position
        said.setdefault(n, (_truth(item.get("supported")), str(item.get("reason", ""))))
    judged = tuple(
        JudgedSentence(n, text, *said.get(n, (None, ""))) for n, text in enumerate(sentences, start=1)
    )
    return Verdict(model, judged)


class Judge:
    """Asks a model whether each sentence of an answer is supported by the sources it cites."""

    def __init__(self, client: LLMClient, *, book_title: str, timeout_s: float) -> None:
        self.client = client
        self.book_title = book_title
        self.timeout_s = timeout_s

    async def judge(self, question: str, run: AnswerRun) -> Verdict:
        sentences = answer_sentences(run.answer)
        cited = [s for s in run.sources if s.n in run.citations]
        messages = judge_messages(question, sentences, cited, book_title=self.book_title)
        try:
            reply = await self.client.complete(
                messages, timeout_s=self.timeout_s, max_tokens=JUDGE_MAX_TOKENS
            )
        except BookwiseError as error:
            return Verdict(self.client.model, error=error.code)
        return parse_verdict(reply, sentences, model=self.client.model)
