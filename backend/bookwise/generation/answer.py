"""One answer, in two phases: ``prepare`` (everything that can fail or be refused) and ``stream``.

``checked`` applies the rules the API and the CLI share (``bookwise.validation``), once; ``prepare``
takes only a checked request, rewrites a
follow-up, retrieves (or locates a selection) and plans the answer; any error it raises is returned
before a stream opens. ``stream`` yields the typed events of ``events.py``: ``meta``, ``sources``,
``token``…, then exactly one of ``done`` or ``error``. The API and ``bookwise ask`` both run this code.

Plans: ``llm`` (the model answers from the sources or the selection), ``extractive`` (no model:
the book's own passages, quoted whole), ``not_covered`` (the book judged silent: say so and
list the closest sections, never guess). In selected-text mode the scope is the selection, then on
the reader's request the enclosing section, then the book; only the selection reaches the model
in the first scope. Study actions and questions about the reader's page read their material
whole instead of searching: ``study_prep.StudyPreparer`` prepares them.
"""

from __future__ import annotations

import functools
import logging
import re
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, NewType

import anyio

from bookwise import validation
from bookwise.errors import BookwiseError, InvalidRequestError, RetrievalTimeoutError
from bookwise.generation.citations import CitationFilter
from bookwise.generation.completion import Completion
from bookwise.generation.coverage import book_phrases, book_phrases_ready, passage_plan, spelled_search
from bookwise.generation.events import (
    AnswerEvent,
    Done,
    ErrorEvent,
    Meta,
    Source,
    Sources,
    Timings,
    Token,
    Usage,
    Widen,
    valid_text,
)
from bookwise.generation.evidence import PassagePlan
from bookwise.generation.extractive import (
    NOTHING_FOUND,
    is_code,
    is_generic_ask,
    not_covered_text,
    passage_answer,
    selection_answer,
)
from bookwise.generation.followup import (
    SearchQuery,
    points_at_page,
    refers_back,
    standalone_query,
    widened_query,
    with_page_topic,
)
from bookwise.generation.models import AnswerKind, ChatRequest, Plan, Prepared, Scope, Written
from bookwise.generation.outcome import declines
from bookwise.generation.prompts import (
    NOT_IN_SELECTION,
    Message,
    Turn,
    normal_messages,
    selected_text_messages,
)
from bookwise.generation.quotes import quotes_for
from bookwise.generation.selection import selection_source
from bookwise.generation.study import page_intent, page_topic
from bookwise.generation.study_prep import StudyPreparer, page_use_of
from bookwise.retrieval.direction import asks_the_other_way
from bookwise.retrieval.models import RetrievalResult, SectionResult, code_spans, plain_text
from bookwise.retrieval.retriever import Retriever
from bookwise.retrieval.snippets import words
from bookwise.retrieval.topics import letters_named, names_a_topic
from bookwise.settings import AnswererSettings
from bookwise.validation import RequestLimits

if TYPE_CHECKING:
    from bookwise.generation.llm import LLMClient  # its SDK loads only when a model is configured

CLOSEST_LISTED = 3
_PIECE = re.compile(r"\S+\s*|\s+")
WORDS_PER_TOKEN_EVENT = 6  # extractive answers are streamed in small pieces too
_log = logging.getLogger("bookwise.generation")


CheckedChat = NewType("CheckedChat", ChatRequest)
"""A request that passed ``checked``: ``Answerer.prepare`` takes only these, so every entry checks
once, before any work, and none twice."""


def checked(request: ChatRequest, limits: RequestLimits) -> CheckedChat:
    """``request`` once the shared rules (``bookwise.validation``) pass; every failure is
    ``invalid_request``. The API refuses text with lone surrogates (422) before this;
    ``bookwise ask`` and library callers get them replaced, so no tokenizer, URL quoting or stream
    writer meets one."""
    request = replace(
        request,
        question=valid_text(request.question),
        selected_text=valid_text(request.selected_text),
        history=tuple(Turn(t.role, valid_text(t.content), t.action) for t in request.history),
    )
    validation.chat(
        asked=request.question,
        mode=request.mode,
        scope=request.scope,
        selected_text=request.selected_text,
        history=[turn.content for turn in request.history],
        top=request.top_k,
        wanted=request.filters,
        limits=limits,
        action=request.action,
        page_url=request.page.url if request.page else None,
    )
    return CheckedChat(request)


def _pieces(text: str) -> list[str]:
    parts = _PIECE.findall(text)
    return [
        "".join(parts[i : i + WORDS_PER_TOKEN_EVENT]) for i in range(0, len(parts), WORDS_PER_TOKEN_EVENT)
    ]


def _label(source: SectionResult) -> str:
    """A Markdown link text: plain text, its brackets escaped so it cannot end the link."""
    title, heading = plain_text(source.title), plain_text(source.heading_text, code_spans(source.heading))
    label = f"{title} › {heading}" if heading and heading != title else title
    return re.sub(r"([\\\[\]])", r"\\\1", label)


def not_covered_answer(sources: Sequence[SectionResult], unknown_names: Sequence[str] = ()) -> str:
    if not sources:
        return NOTHING_FOUND
    closest = [f"- [{_label(s)}]({s.url})" for s in sources[:CLOSEST_LISTED]]
    return not_covered_text(unknown_names) + "\n\nClosest sections:\n" + "\n".join(closest)


def section_silent_text(section: SectionResult) -> str:
    """The decline of a question asked about one section: that section is silent, not the book."""
    return (
        f"The section [{_label(section)}]({section.url}) does not seem to answer this. "
        "The rest of the book may: ask the whole book."
    )


@dataclass(frozen=True)
class _Retrieved:
    """What ``Answerer.prepare`` found for a question within its scope, before it plans the answer."""

    sources: list[SectionResult]
    sufficient: bool
    located: SectionResult | None = None  # the selection's section, when the reader's page gave one
    evidence: float | None = None  # the search's sufficiency score (book scope)
    unknown_names: tuple[str, ...] = ()  # names in the question that the book never mentions
    asked_unknown: tuple[str, ...] = ()  # those the question asks about
    absent_words: tuple[str, ...] = ()  # the question's words the book never contains
    passages: PassagePlan | None = None  # answers without a model: the passages to quote
    missing: tuple[str, ...] = ()  # words the question asks about that the selection lacks


class Answerer:
    def __init__(self, settings: AnswererSettings, retriever: Retriever, llm: LLMClient | None) -> None:
        self.settings = settings
        self.limits = RequestLimits.from_settings(settings)
        self.retriever = retriever
        self.llm = llm
        self.study_prep = StudyPreparer(
            retriever,
            with_model=llm is not None,
            book_title=settings.book_title,
            retrieval_timeout_s=settings.retrieval_timeout_s,
            page_context_max_tokens=settings.page_context_max_tokens,
        )

    # -- phase 1: before the stream -------------------------------------------------------------

    async def prepare(self, request: CheckedChat) -> Prepared:
        started = time.monotonic()
        question = " ".join(request.question.split())
        scope = request.effective_scope
        selection = request.selected_text.strip()
        if selection:  # "what is kappa here?" asks about the selection's κ
            written = set(words(selection)) | set(selection)
            question = letters_named(question, written.__contains__)
        page_use = page_use_of(request, question)
        if page_use is not None or request.action != "ask":
            return await self.study_prep.prepare(request, question, page_use, started)
        await self._warm(scope)
        query = await self._search_query(request, question, scope, selection)
        mark = time.monotonic()
        try:
            with anyio.fail_after(self.settings.retrieval_timeout_s):
                found = await self._retrieve(request, question, scope, selection, query.text)
        except TimeoutError as error:
            raise RetrievalTimeoutError("retrieval took too long; try again") from error
        retrieval_ms = (time.monotonic() - mark) * 1000
        plan = self._plan(found)
        messages = (
            self._messages(request, question, scope, found.sources, found.unknown_names)
            if plan == "llm"
            else []
        )
        prepared = Prepared(
            request=request,
            query=query,
            sources=found.sources,
            sufficient=found.sufficient,
            plan=plan,
            messages=messages,
            index_version=self.retriever.index_version,
            retrieval_ms=retrieval_ms,
            started=started,
            located=found.located is not None,
            passages=found.passages,
            evidence=found.evidence,
            unknown_names=found.unknown_names,
            selection_missing=found.missing,
        )
        if plan == "extractive" and scope == "selection" and is_code(selection) and is_generic_ask(question):
            # A code block's Ask ("Explain this passage."): without a model, what the page says about
            # the program, rather than the program the reader has just read, shown back.
            page_url = request.page.url if request.page is not None else "/"
            explained = await self.study_prep.code_explanation(selection, found.located, page_url)
            if explained is not None:
                prepared.sources = [*prepared.sources, *explained[0]]
                prepared.study = explained[1]
        return prepared

    async def _search_query(
        self, request: ChatRequest, question: str, scope: Scope, selection: str
    ) -> SearchQuery:
        """What is searched: in the book, the question made standalone (or widened from a selection);
        in a selection, the question as asked; in a selection's section, the question, or the selection
        for one that names no topic of its own ("how do I fix this?" ranks the section's passages by
        what the selection is about)."""
        if scope == "selection" or (scope == "section" and not selection):
            return SearchQuery(question, rewritten=False, method="as_asked")
        if selection:
            # Widened from a selection: the reader's question is searched; the selection only fills
            # in a question that names no topic of its own ("what does this mean?").
            return widened_query(question, selection)
        topic = page_topic(question) if request.scope == "book" and page_intent(question) else ""
        if topic:
            # Widened from the reader's page: "what does this chapter say about delay?" asks the book
            # about delay; "chapter" and "say" would find passages that say "this chapter".
            return SearchQuery(topic, rewritten=True, method="page")
        history: Sequence[Turn] = request.history
        if request.page is not None and points_at_page(question, history):
            # "how do I tune it?" asked first on the Kalman filter's page asks about the Kalman filter.
            page_url = request.page.url
            page = await self.retriever.arun(lambda: self.retriever.page(page_url))
            history = with_page_topic(question, history, page.title if page is not None else "")
        holds = None
        if self.llm is None and refers_back(question, history):
            # The book's phrases, read when the answer is warmed: "the derivative one" is its derivative
            # term only where the book says so.
            holds = (await self.retriever.arun(functools.partial(book_phrases, self.retriever))).holds
        return await standalone_query(
            question,
            history,
            llm=self.llm,
            timeout_s=self.settings.llm_rewrite_timeout_s,
            holds=holds,
        )

    async def _warm(self, scope: Scope) -> None:
        """Loads the embedding model (first request, CLI start) and, for an answer without a model, the
        book's phrases (once per index generation): no part of the retrieval deadline."""
        await self.retriever.awarm()
        if self.llm is None and scope != "selection":
            await book_phrases_ready(self.retriever)

    async def _retrieve(
        self, request: ChatRequest, question: str, scope: Scope, selection: str, query: str
    ) -> _Retrieved:
        """The sources within ``scope``: the book searched, or the selection and its section; for an
        answer without a model, also the words the selection lacks, or the book's passages to quote."""
        if scope == "book" and self.llm is None and not names_a_topic(query):
            # "thanks!", "hello": nothing to look up; a search would quote whatever holds "thanks".
            return _Retrieved([], False)
        if scope == "book":
            query, result = await spelled_search(
                self.retriever, query, functools.partial(self._search, request)
            )
            found = _Retrieved(
                result.sections,
                result.sufficient_context,
                evidence=result.sufficiency.score,
                unknown_names=result.unknown_names,
                asked_unknown=result.asked_unknown,
                absent_words=result.absent_words,
            )
        else:
            located = None
            if request.page is not None:
                located = await self.retriever.alocate(
                    request.page.url, heading_id=request.page.heading_id, text=selection
                )
            sources, sufficient = self._selection_sources(scope, selection, located, request)
            found = _Retrieved(sources, sufficient, located=located)
        if self.llm is None and scope == "selection" and not is_generic_ask(question):
            # The selection answers only when it holds what the question asks about.
            found = replace(found, missing=await self.retriever.amissing_key_words(question, selection))
        if self.llm is None and scope != "selection" and found.sources:
            # "and the other way round?" names nothing, yet asks for what was not shown: the inverse.
            own_topic = names_a_topic(question) or asks_the_other_way(question)
            found = await self._with_passages(
                found,
                query,
                request.history,
                scope,
                names_own_topic=own_topic,
                reader_page=request.page.url if request.page is not None and scope == "book" else None,
            )
        return found

    async def _with_passages(
        self,
        found: _Retrieved,
        query: str,
        history: Sequence[Turn],
        scope: Scope,
        *,
        names_own_topic: bool = True,
        reader_page: str | None = None,
    ) -> _Retrieved:
        """``found`` with the passages to quote: they renumber the sources and may judge the book silent.
        ``names_own_topic``: whether the reader's question names something of its own, not only what
        the conversation was about ("how do I fix it?")."""
        passages = await passage_plan(
            self.retriever,
            query,
            found.sources,
            history,
            retrieval_sufficient=found.sufficient,
            unknown_names=found.unknown_names,
            asked_unknown=found.asked_unknown,
            absent_words=found.absent_words,
            defining_sections=scope == "book",
            names_own_topic=names_own_topic,
            reader_page=reader_page,
        )
        return replace(
            found,
            sources=passages.sources,
            sufficient=passages.sufficient,
            unknown_names=(*found.unknown_names, *passages.unknown_names),
            passages=passages,
        )

    def _plan(self, found: _Retrieved) -> Plan:
        if not found.sources or not found.sufficient:
            return "not_covered"
        return "llm" if self.llm is not None else "extractive"

    async def _search(self, request: ChatRequest, query: str) -> RetrievalResult:
        filters: dict[str, Sequence[str] | str] = dict(request.filters or {})
        from_page = {
            name: value
            for name, value in (
                ("version", request.page.version if request.page else None),
                ("locale", request.page.locale if request.page else None),
            )
            if value and name not in filters
        }
        result = await self.retriever.asearch(query, top_k=request.top_k, filters={**filters, **from_page})
        if not result.sections and from_page:  # the reader's version/locale is not in the index
            result = await self.retriever.asearch(query, top_k=request.top_k, filters=filters)
            from_page = {}
        wanted = self.settings.retrieval_reader_page_sections
        if request.page is None or not wanted or not result.sections:
            return result
        # The page the reader asks from says which of two close answers the reader means: its best
        # sections join the book's, and a passage of it leads when it scores near the best
        # (``evidence.READER_PAGE_MARGIN``).
        on_page = await self.retriever.arun(
            functools.partial(
                self.retriever.search_page,
                query,
                request.page.url,
                top_k=wanted,
                filters={**filters, **from_page},
            )
        )
        known = {section.section_id for section in result.sections}
        added = [section for section in on_page if section.section_id not in known]
        return replace(result, sections=[*result.sections, *added]) if added else result

    @staticmethod
    def _selection_sources(
        scope: Scope, selection: str, located: SectionResult | None, request: ChatRequest
    ) -> tuple[list[SectionResult], bool]:
        if scope == "selection":
            page_url = request.page.url if request.page else "/"
            return [selection_source(selection, located, page_url)], True
        if located is None:
            raise InvalidRequestError(
                "the selection's section is not in the index; ask about the whole book instead"
            )
        return [located], True

    def _messages(
        self,
        request: ChatRequest,
        question: str,
        scope: Scope,
        sources: list[SectionResult],
        unknown_names: Sequence[str],
    ) -> list[Message]:
        title = self.settings.book_title
        if scope == "selection":
            source = sources[0]
            return selected_text_messages(
                question,
                source.text,
                book_title=title,
                page_title=source.title if source.section_id else "",
                heading=source.heading_text,
                history=request.history,
            )
        return normal_messages(
            question,
            sources,
            book_title=title,
            sufficient=True,
            history=request.history,
            unknown_names=unknown_names,
        )

    # -- phase 2: the stream --------------------------------------------------------------------

    def _meta(self, prepared: Prepared) -> Meta:
        request = prepared.request
        return Meta(
            request_id=request.request_id,
            mode=request.mode,
            action=request.action,
            scope="page" if prepared.page_use is not None else request.effective_scope,
            quiz_turn=prepared.quiz_turn,
            index_version=prepared.index_version,
            query=prepared.query.text,
            query_rewritten=prepared.query.rewritten,
            query_method=prepared.query.method,
            answer_mode=prepared.plan,
            model=self.llm.model if self.llm is not None and prepared.plan == "llm" else None,
        )

    async def stream(self, prepared: Prepared) -> AsyncIterator[AnswerEvent]:
        """The events of one answer, ending with exactly one ``done`` or ``error``, whatever fails.

        Every event's strings are valid Unicode (``events.Text``: a lone surrogate from the model, the
        history or a library caller becomes U+FFFD), so no event can fail to encode in the stream
        writer; any exception but cancellation becomes the one ``error`` event.
        """
        try:
            async for event in self._events(prepared):
                yield event
        except BookwiseError as error:
            # The event carries the code's public message; the detail is the operator's, in the log.
            _log.warning("answer_failed", extra={"fields": {"code": error.code, "detail": error.message}})
            yield self._error(prepared, error)
        except Exception as error:  # a bug must not leave a reader waiting for an end that never comes
            _log.error("answer stream failed", exc_info=error)
            yield self._error(prepared, BookwiseError("internal error while answering; try again"))

    @staticmethod
    def _error(prepared: Prepared, error: BookwiseError) -> ErrorEvent:
        return ErrorEvent.of(error, prepared.request.request_id)

    async def _events(self, prepared: Prepared) -> AsyncIterator[AnswerEvent]:
        yield self._meta(prepared)
        sources = [Source(n=n, **s.to_source()) for n, s in enumerate(prepared.sources, start=1)]
        yield Sources(sources=sources, sufficient_context=prepared.sufficient)
        citations = CitationFilter(len(prepared.sources))
        answer: list[str] = []
        completion = Completion()
        written = None if prepared.plan == "llm" else self.written(prepared)
        first_token_ms: float | None = None
        async for delta in self._deltas(prepared, completion, written):
            shown = citations.feed(delta)
            if shown:
                if first_token_ms is None:
                    first_token_ms = (time.monotonic() - prepared.started) * 1000
                answer.append(shown)
                yield Token(text=shown)
        tail = citations.flush()
        if tail:
            answer.append(tail)
            yield Token(text=tail)
        text = "".join(answer)
        kind = written.kind if written is not None else self._generated_kind(prepared, text, citations)
        yield self._done(prepared, kind, text, citations, completion, first_token_ms)

    @staticmethod
    def written(prepared: Prepared) -> Written:
        """The answer of a plan without a model (``not_covered``, ``extractive``) and its kind."""
        if prepared.study is not None:
            return prepared.study
        scope = prepared.request.effective_scope
        if prepared.plan == "not_covered":
            if scope == "section" and prepared.sources:
                return Written(section_silent_text(prepared.sources[0]), "not_covered")
            return Written(not_covered_answer(prepared.sources, prepared.unknown_names), "not_covered")
        if scope == "selection":
            question = prepared.query.text  # as asked, a Greek letter's name written as the letter
            quoted = None if prepared.selection_missing else selection_answer(question, prepared.sources[0])
            return Written(quoted, "extractive") if quoted else Written(NOT_IN_SELECTION, "not_in_selection")
        assert prepared.passages is not None
        if not prepared.passages.quoted:
            if scope == "section" and prepared.sources:
                return Written(section_silent_text(prepared.sources[0]), "not_covered")
            return Written(passage_answer([]), "not_covered")
        return Written(passage_answer(prepared.passages.quoted), "extractive")

    @staticmethod
    def _generated_kind(prepared: Prepared, text: str, citations: CitationFilter) -> AnswerKind:
        """A model's answer declined when it cites nothing (``outcome.declines``: what it did, not
        its wording)."""
        if not declines(text, list(citations.used), prepared.sources):
            return "generated"
        return "not_in_selection" if prepared.request.effective_scope == "selection" else "not_covered"

    async def _deltas(
        self, prepared: Prepared, completion: Completion, written: Written | None
    ) -> AsyncIterator[str]:
        if written is None:
            assert self.llm is not None
            async for delta in self.llm.stream(prepared.messages, completion):
                yield delta
            return
        completion.finish_reason = "stop"
        for piece in _pieces(written.text):
            yield piece

    def _done(
        self,
        prepared: Prepared,
        kind: AnswerKind,
        text: str,
        citations: CitationFilter,
        completion: Completion,
        first_token_ms: float | None,
    ) -> Done:
        scope = prepared.request.effective_scope
        used = [] if kind in ("not_covered", "not_in_selection") else list(citations.used)
        widen: Widen | None = None
        if kind == "not_in_selection":
            widen = self._widen_from_selection(prepared)
        elif (
            scope == "selection"
            and kind == "extractive"
            and prepared.request.action == "ask"
            and is_generic_ask(prepared.request.question)
        ):
            widen = self._widen_from_selection(prepared)  # a model would explain; the section may
        if scope == "section" and (kind == "not_covered" or not used):
            widen = Widen(scope="book", label="Ask the whole book")
        # An extractive answer is made of its quotes: a citations block would repeat them.
        quotes = quotes_for(text, prepared.sources, used) if prepared.plan == "llm" else []
        return Done(
            answer_kind=kind,
            citations=used,
            dropped_citations=citations.dropped,
            quotes=quotes,
            finish_reason=completion.finish_reason,
            widen=widen,
            timings_ms=Timings(
                retrieval=round(prepared.retrieval_ms, 1),
                first_token=round(first_token_ms, 1) if first_token_ms is not None else None,
                total=round((time.monotonic() - prepared.started) * 1000, 1),
            ),
            usage=Usage(**completion.usage) if completion.usage is not None else None,
        )

    @staticmethod
    def _widen_from_selection(prepared: Prepared) -> Widen:
        if prepared.located:
            heading = prepared.sources[0].known_as
            return Widen(scope="section", label=f"Ask about the whole section “{heading}”")
        return Widen(scope="book", label="Ask the whole book")
