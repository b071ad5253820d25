"""One question asked as the API asks it (``Answerer.prepare`` then ``Answerer.stream``), its events
collected into an ``AnswerRun``; a ``done.widen`` offer is accepted, as a reader clicking it would."""

from __future__ import annotations

import dataclasses
import hashlib
import time
from dataclasses import dataclass
from typing import Literal

from bookwise.errors import BookwiseError
from bookwise.evaluation.retrieval import Question, SectionKey
from bookwise.generation.answer import Answerer, checked
from bookwise.generation.citations import cited_numbers
from bookwise.generation.events import DECLINED_KINDS, AnswerKind, AnswerSummary, AnswerTrace, outcome_of
from bookwise.generation.models import ChatRequest, Page, Scope
from bookwise.retrieval.retriever import Retriever

Outcome = Literal["answered", "declined", "error"]
# The page every question is asked from (``page.url``, as the widget sends the reader's): none, the
# page of one of its gold sections, or another page of the book.
ReaderPage = Literal["none", "gold", "other"]
MAX_WIDENINGS = 2  # selection → section → book
WIDER: dict[str, Scope] = {"section": "section", "book": "book"}  # what done.widen may offer


@dataclass(frozen=True)
class Source:
    n: int
    key: SectionKey  # (doc_path, heading), as the sources event gives it
    text: str  # what the model was given (for the judge); never reported


@dataclass(frozen=True)
class AnswerRun:
    scopes: tuple[str, ...]  # the scopes asked, in order (more than one after a widening)
    answer: str = ""
    answer_kind: AnswerKind | None = None  # from done; None when the answer ended in an error
    sources: tuple[Source, ...] = ()
    citations: tuple[int, ...] = ()
    quotes: tuple[str, ...] = ()
    widen: Scope | None = None  # the scope done.widen offered
    error: str | None = None  # the error code (prepare refused, or the stream's error event)
    latency_ms: float = 0.0

    @property
    def outcome(self) -> Outcome:
        """The answer's outcome as the API decides it (``outcome_of``), a decline of either kind as one."""
        decided = outcome_of(self.answer_kind, failed=self.error is not None)
        return "answered" if decided == "answered" else "declined" if decided in DECLINED_KINDS else "error"

    def source(self, n: int) -> Source | None:
        return self.sources[n - 1] if 1 <= n <= len(self.sources) else None

    @property
    def first_cited(self) -> int | None:
        """The first ``[n]`` marker of the answer naming a source, else the first of done.citations."""
        if self.outcome != "answered":
            return None
        in_text = [n for n in cited_numbers(self.answer) if self.source(n) is not None]
        if in_text:
            return in_text[0]
        return self.citations[0] if self.citations else None


async def ask(answerer: Answerer, request: ChatRequest) -> AnswerRun:
    """One request through prepare + stream, its events collected."""
    scopes = (request.effective_scope,)
    try:
        prepared = await answerer.prepare(checked(request, answerer.limits))
    except BookwiseError as refused:
        return AnswerRun(scopes, error=refused.code)
    trace = AnswerTrace()
    async for event in answerer.stream(prepared):
        trace.add(event)
    return _run(scopes, trace.summary, texts=[section.text for section in prepared.sources])


def _run(scopes: tuple[str, ...], answer: AnswerSummary, texts: list[str]) -> AnswerRun:
    sources = tuple(Source(s.n, (s.doc_path, s.heading), texts[s.n - 1]) for s in answer.sources)
    done = answer.done
    if done is None:
        error = answer.error.code if answer.error is not None else "no_done_event"
        return AnswerRun(scopes, answer.text, sources=sources, error=error)
    return AnswerRun(
        scopes,
        answer.text,
        answer_kind=done.answer_kind,
        sources=sources,
        citations=answer.citations,
        quotes=tuple(quote.text for quote in done.quotes),
        widen=WIDER.get(done.widen.scope) if done.widen else None,
    )


async def _page_of(retriever: Retriever, question: Question) -> Page | None:
    """The reader's page for a selected-text question: where its first gold document is published."""
    if not question.selected_text or not question.gold:
        return None
    result = await retriever.asearch(
        question.selected_text, top_k=1, filters={"doc_path": question.gold[0][0]}
    )
    return Page(result.sections[0].page_url) if result.sections else None


async def reader_page_of(retriever: Retriever, question: Question, asked_from: ReaderPage) -> Page | None:
    """The page a question is asked from, as the widget sends it: ``gold``, a page where one of its gold
    documents is published (the first by URL); ``other``, a page of the book that holds none of its
    gold documents (so is an unanswerable question's page), the same for the same question on every
    run."""
    if asked_from == "none":
        return None
    outlines = await retriever.arun(retriever.outlines)
    gold_docs = {doc_path for doc_path, _heading in question.gold}
    if asked_from == "gold":
        found = sorted(url for url, page in outlines.items() if page.doc_path in gold_docs)
        return Page(found[0]) if found else None
    others = sorted(url for url, page in outlines.items() if page.doc_path not in gold_docs)
    if not others:
        return None
    pick = int(hashlib.sha256(question.id.encode()).hexdigest(), 16) % len(others)
    return Page(others[pick])


async def answer_question(
    answerer: Answerer, question: Question, asked_from: ReaderPage = "none"
) -> AnswerRun:
    started = time.monotonic()
    page = await _page_of(answerer.retriever, question)
    if page is None:
        page = await reader_page_of(answerer.retriever, question, asked_from)
    request = ChatRequest(
        question=question.question,
        mode="selected_text" if question.selected_text else "normal",
        selected_text=question.selected_text or "",
        page=page,
        request_id=f"eval-{question.id}",
    )
    scopes: tuple[str, ...] = ()
    run = await ask(answerer, request)
    scopes += run.scopes
    for _ in range(MAX_WIDENINGS):
        if run.widen is None:
            break
        request = dataclasses.replace(request, scope=run.widen)  # as the reader accepting the offer
        run = await ask(answerer, request)
        scopes += run.scopes
    return dataclasses.replace(run, scopes=scopes, latency_ms=(time.monotonic() - started) * 1000)
