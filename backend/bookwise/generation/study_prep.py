"""``prepare`` for a study action or a question about the reader's page: its material, read whole.

``explain``, ``example`` and ``quiz`` work on a selection; ``summarize_page``, ``quiz_page`` and
questions that point at "this page / chapter / section" (``study.page_intent``) on the reader's
page. The material is the selection or the page, never searched for, and only it reaches the model.
Without a model the answer is written here, from the book's own material (``study.py``), so the
stream only has to send it.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import replace

import anyio

from bookwise.errors import RetrievalTimeoutError
from bookwise.generation.code_context import (
    SelectedProgram,
    explaining_section,
    selected_program,
    working_passages,
)
from bookwise.generation.evidence import plan_passages
from bookwise.generation.extractive import passage_answer
from bookwise.generation.followup import SearchQuery
from bookwise.generation.models import ChatRequest, PageUse, Plan, Prepared, Written
from bookwise.generation.prompts import Message, Turn, page_action_messages, selection_action_messages
from bookwise.generation.selection import selection_source
from bookwise.generation.study import (
    EXAMPLE_HEADING,
    PAGE_CODE,
    THIS_SECTION,
    Exercise,
    PageIntent,
    blanks_of,
    example_answer,
    example_quotes,
    exercises_answer,
    exercises_of,
    explain_answer,
    explain_code_answer,
    holds_code,
    is_exercise_section,
    page_intent,
    page_silent_answer,
    page_topic,
    quiz_turn,
    section_blanks,
    summary_answer,
    term_definitions,
    without_solutions,
)
from bookwise.ingest.documents import EXERCISE_TYPES
from bookwise.retrieval.models import SectionResult
from bookwise.retrieval.pages import PageOutline, section_and_subsections, within_budget
from bookwise.retrieval.retriever import Retriever
from bookwise.retrieval.snippets import holding_back_solutions
from bookwise.validation import QUIZ_ACTIONS

NOT_INDEXED_PAGE = "This page is not in the book's index, so Bookwise cannot answer from it."
NO_EXAMPLE = (
    "The book gives no worked example, code or lab for this passage. *A language model would build an "
    "example from the passage.*"
)
NO_EXPLANATION = (
    "The page does not introduce or define this passage's terms anywhere else, and without a language "
    "model Bookwise cannot put the passage in other words. *A language model would explain it in plain "
    "words.*"
)
CHAPTER_PAGES = 3  # quiz and lab pages of the reader's chapter drawn on without a model

Material = tuple[list[SectionResult], Written]  # the sources, and the answer written from them


def page_use_of(request: ChatRequest, question: str) -> PageUse | None:
    """What ``request`` uses the reader's page for; None when it does not read the page."""
    if request.action == "summarize_page":
        return "summarize"
    if request.action == "quiz_page":
        return "quiz"
    if (
        request.action == "ask"
        and request.mode == "normal"
        and request.page is not None
        and not request.scope
    ):
        intent: PageIntent | None = page_intent(question)
        return intent
    return None


def reader_answer(request: ChatRequest) -> str | None:
    """The reader's answer to a quiz question: a quiz action whose history ends with the question
    the same action asked (see the quiz protocol in docs/api.md); None on a question turn."""
    answer = " ".join(request.question.split())
    last = request.history[-1] if request.history else None
    if request.action not in QUIZ_ACTIONS or not answer or last is None:
        return None
    return answer if last.role == "assistant" and last.action == request.action else None


def study_history(request: ChatRequest, page_use: PageUse | None) -> tuple[Turn, ...]:
    """The earlier turns a study prompt may carry: a quiz its own exchange (the turns since an
    answer of another action), a question about the page its conversation, the other actions none.
    An earlier answer may quote other pages; only the passage or the page belongs in these prompts."""
    if page_use == "question":
        return request.history
    if request.action not in QUIZ_ACTIONS:
        return ()
    kept: list[Turn] = []
    for turn in reversed(request.history):
        if turn.role == "assistant" and turn.action != request.action:
            break
        kept.append(turn)
    return tuple(reversed(kept))


class StudyPreparer:
    """Prepares study actions and page questions; holds only what they read.

    ``with_model``: whether a model answers (the material is then only gathered, and the prompt
    built); without one the answer is written here.
    """

    def __init__(
        self,
        retriever: Retriever,
        *,
        with_model: bool,
        book_title: str,
        retrieval_timeout_s: float,
        page_context_max_tokens: int,
    ) -> None:
        self.retriever = retriever
        self.with_model = with_model
        self.book_title = book_title
        self.retrieval_timeout_s = retrieval_timeout_s
        self.page_context_max_tokens = page_context_max_tokens

    async def prepare(
        self, request: ChatRequest, question: str, page_use: PageUse | None, started: float
    ) -> Prepared:
        """A study action, or a question about the reader's page: the material is the selection or
        the page, read whole (never searched for), and only it reaches the model."""
        answer = reader_answer(request)
        query = SearchQuery(question, rewritten=False, method="as_asked")  # nothing is searched
        await self.retriever.awarm()
        mark = time.monotonic()
        sources, study, located = await self._material(request, question, page_use, answer)
        plan: Plan = "not_covered" if not sources else ("llm" if self.with_model else "extractive")
        if plan == "not_covered":
            study = Written(NOT_INDEXED_PAGE, "not_covered")
        prepared = Prepared(
            request=request,
            query=query,
            sources=sources,
            sufficient=bool(sources),
            plan=plan,
            messages=[],
            index_version=self.retriever.index_version,
            retrieval_ms=(time.monotonic() - mark) * 1000,
            started=started,
            located=located,
            page_use=page_use,
            quiz_turn=None if request.action not in QUIZ_ACTIONS else ("answer" if answer else "question"),
            study=None if plan == "llm" else study,
        )
        if plan == "llm":
            prepared.messages = self._messages(prepared, question, answer)
        return prepared

    async def _material(
        self, request: ChatRequest, question: str, page_use: PageUse | None, answer: str | None
    ) -> tuple[list[SectionResult], Written | None, bool]:
        """The sources, the answer written without a model, and whether the selection was located;
        read within the retrieval deadline."""
        try:
            with anyio.fail_after(self.retrieval_timeout_s):
                if page_use is not None:
                    assert request.page is not None  # validated: page actions need page.url
                    sources, study = await self._page_material(request, question, page_use, answer)
                    return sources, study, False
                return await self._selection_material(request, answer)
        except TimeoutError as error:
            raise RetrievalTimeoutError("retrieval took too long; try again") from error

    # -- the reader's page ----------------------------------------------------------------------

    async def _page_material(
        self, request: ChatRequest, question: str, use: PageUse, answer: str | None
    ) -> tuple[list[SectionResult], Written | None]:
        assert request.page is not None
        retriever = self.retriever
        outline = await retriever.arun(functools.partial(retriever.page, request.page.url))
        if outline is None:
            return [], None
        sections = await retriever.arun(functools.partial(retriever.outline_sections, outline))
        heading_id = request.page.heading_id
        if use == "question" and heading_id and THIS_SECTION.search(question):
            sections = section_and_subsections(sections, heading_id) or sections  # "explain this section"
        if self.with_model:
            return within_budget(sections, self.page_context_max_tokens), None
        return await self._written_page(request, question, use, answer, outline, sections)

    async def _written_page(
        self,
        request: ChatRequest,
        question: str,
        use: PageUse,
        answer: str | None,
        outline: PageOutline,
        sections: list[SectionResult],
    ) -> Material:
        """The page's answer without a model: its summary, its exercises, or its best passages."""
        if use == "summarize":
            return sections, Written(summary_answer(outline, sections), "extractive")
        if use in ("exercises", "quiz"):
            return await self._page_exercises(request, use, answer, outline, sections)
        topic = page_topic(question)
        searched = topic or question
        ranked = without_solutions(await self.retriever.arank_passages(searched, sections), sections)
        passages = plan_passages(
            ranked, sections, request.history, retrieval_sufficient=True, question=searched
        )
        if not passages.quoted and topic:
            # The page narrows the search; it does not replace it: "what does this chapter say about
            # delay?" on a page that never discusses delay got the page's outline. The answer says so
            # and offers the whole book, as a selection that does not answer does.
            # Its one source is the page itself (its opening section), not every section of it.
            return sections[:1], Written(page_silent_answer(outline.title, topic), "not_in_selection")
        if not passages.quoted:
            return sections, Written(summary_answer(outline, sections), "extractive")
        return passages.sources, Written(passage_answer(passages.quoted), "extractive")

    async def _page_exercises(
        self,
        request: ChatRequest,
        use: PageUse,
        answer: str | None,
        outline: PageOutline,
        sections: list[SectionResult],
    ) -> Material:
        """The exercises listed, or a quiz turn on them; without exercises the summary (listing) or
        blanks cut from the page (quiz)."""
        material = await self._exercise_sections(outline, sections)
        exercises = _exercises(material)
        if use == "exercises":
            listed = exercises_answer(exercises, material)
            if listed is not None:
                return material, Written(listed, "extractive")
            return sections, Written(summary_answer(outline, sections), "extractive")
        if exercises:
            return material, Written(quiz_turn(exercises, [], request.history, answer).text, "extractive")
        blanks = [b for n, s in enumerate(sections, start=1) for b in blanks_of(s.text, n)]
        return sections, Written(quiz_turn([], blanks, request.history, answer).text, "extractive")

    async def _exercise_sections(
        self, outline: PageOutline, sections: list[SectionResult]
    ) -> list[SectionResult]:
        """The page's exercise sections, then the first sections of the quiz pages of its chapter."""
        own = [s for s in sections if is_exercise_section(s, outline)]
        retriever = self.retriever
        outlines = await retriever.arun(retriever.outlines)
        quiz_pages = [
            o
            for o in outlines.values()
            if o.group == outline.group
            and o.page_url != outline.page_url
            and o.content_type in EXERCISE_TYPES
        ][:CHAPTER_PAGES]
        for page in quiz_pages:
            own += (await retriever.arun(functools.partial(retriever.outline_sections, page)))[:CHAPTER_PAGES]
        return own

    # -- a selection ----------------------------------------------------------------------------

    async def _selection_material(
        self, request: ChatRequest, answer: str | None
    ) -> tuple[list[SectionResult], Written | None, bool]:
        """[1] is the selection (its section's metadata, its own text); without a model the section,
        its page's examples or exercises and the chapter's labs follow."""
        selection = request.selected_text.strip()
        located: SectionResult | None = None
        if request.page is not None:
            located = await self.retriever.alocate(
                request.page.url, heading_id=request.page.heading_id, text=selection
            )
        page_url = request.page.url if request.page else "/"
        sources = [selection_source(selection, located, page_url)]
        if self.with_model:
            return sources, None, located is not None
        more, written = await self._written_selection(request, selection, answer, located, page_url)
        return sources + more, written, located is not None

    async def _written_selection(
        self,
        request: ChatRequest,
        selection: str,
        answer: str | None,
        located: SectionResult | None,
        page_url: str,
    ) -> Material:
        """The answer without a model, and the sources it draws on after the selection."""
        outline, page_sections = await self._page_of(page_url, located)
        if request.action == "explain":
            program = _selected_program(selection, located, page_sections)
            return self._explanation(selection, located, page_sections, program)
        if request.action == "example":
            return await self._examples(selection, located, outline, page_sections)
        # quiz: the book's exercises for the page and chapter, then blanks cut from the selection and
        # its section (the selection's source, [1])
        material = await self._exercise_sections(outline, page_sections) if outline is not None else []
        exercises = _exercises(material, first=2)
        blanks = blanks_of(selection)
        if located is not None:  # the section's other sentences, not the selection's again
            blanks += section_blanks(selection, located.text)
        turn = quiz_turn(exercises, blanks, request.history, answer)
        return material, Written(turn.text, "extractive")

    @staticmethod
    def _explanation(
        selection: str,
        located: SectionResult | None,
        page_sections: list[SectionResult],
        program: SelectedProgram | None,
    ) -> Material:
        """Where the page introduces the selection's terms, or, on a selected ``program``, what the page
        says about it: its own section is the selection's source ([1], not listed twice), the page's
        other sections follow as they are cited."""
        own = located.section_id if located is not None else ""
        sections = [located if located is not None and s.section_id == own else s for s in page_sections]
        if located is not None and located not in sections:
            sections.append(located)
        found = term_definitions(selection, located, list(enumerate(sections)))
        if program is not None:
            return _code_explanation(program, own, sections, found)
        if not found:
            return [], Written(NO_EXPLANATION, "not_covered")
        cited = [i for i in dict.fromkeys(i for _, i in found) if sections[i].section_id != own]
        number = {i: n for n, i in enumerate(cited, start=2)}
        quoted = [(sentence, number.get(i, 1)) for sentence, i in found]
        return [sections[i] for i in cited], Written(explain_answer(quoted), "extractive")

    async def code_explanation(
        self, selection: str, located: SectionResult | None, page_url: str
    ) -> Material | None:
        """What the reader's page says about the program ``selection`` lies in (``located``: the
        section the selection was found in), as Explain answers it, for a code block's plain Ask
        without a model; None when the selection is no program of the page or the page says nothing
        of it. The sources follow the selection's own, [1]."""
        _, page_sections = await self._page_of(page_url, located)
        program = _selected_program(selection, located, page_sections)
        if program is None:
            return None
        sources, written = self._explanation(selection, located, page_sections, program)
        return None if written.kind == "not_covered" else (sources, written)

    async def _page_of(
        self, page_url: str, located: SectionResult | None
    ) -> tuple[PageOutline | None, list[SectionResult]]:
        """The outline and sections of the page a located selection is on; none when not located."""
        retriever = self.retriever
        outline = await retriever.arun(lambda: retriever.page(page_url)) if located is not None else None
        if outline is None:
            return None, []
        return outline, await retriever.arun(lambda: retriever.outline_sections(outline))

    async def _examples(
        self,
        selection: str,
        located: SectionResult | None,
        outline: PageOutline | None,
        page_sections: list[SectionResult],
    ) -> Material:
        """The page's worked examples and the selection's own section ([1], the selection's source,
        not listed twice), then the chapter's labs, numbered from [2]."""
        own = located.section_id if located is not None else ""
        worked = [
            s for s in page_sections if s.section_id != own and EXAMPLE_HEADING.search(s.heading_text or "")
        ]
        labs = await self._labs(outline)
        numbered_worked = list(enumerate(worked, start=2))
        section = (1, located) if located is not None else None
        quoted = example_quotes(selection, section, numbered_worked)
        coded: list[SectionResult] = []
        if not quoted:
            coded = [
                s
                for s in page_sections
                if s.section_id != own and s not in worked and not is_exercise_section(s) and holds_code(s)
            ][:PAGE_CODE]
        numbered_code = list(enumerate(coded, start=2 + len(worked)))
        numbered_labs = list(enumerate(labs, start=2 + len(worked) + len(coded)))
        text = example_answer(quoted, numbered_labs, numbered_code)
        written = Written(text, "extractive") if text else Written(NO_EXAMPLE, "not_covered")
        return worked + coded + labs, written

    async def _labs(self, outline: PageOutline | None) -> list[SectionResult]:
        if outline is None:
            return []
        retriever = self.retriever
        outlines = await retriever.arun(retriever.outlines)
        labs = [o for o in outlines.values() if o.group == outline.group and o.content_type == "lab"][
            :CHAPTER_PAGES
        ]
        found: list[SectionResult] = []
        for lab in labs:
            found += (await retriever.arun(functools.partial(retriever.outline_sections, lab)))[:1]
        return found

    # -- the prompt -----------------------------------------------------------------------------

    def _messages(self, prepared: Prepared, question: str, answer: str | None) -> list[Message]:
        request, title = prepared.request, self.book_title
        history = study_history(request, prepared.page_use)
        if prepared.page_use is not None:
            template = {"summarize": "summarize_page", "quiz": "quiz_page"}.get(
                prepared.page_use, "page_question"
            )
            sources = prepared.sources
            if template == "quiz_page" and answer is None:  # asking: the book's solutions stay hidden
                sources = [replace(s, text=holding_back_solutions(s.text)) for s in sources]
            return page_action_messages(
                template,
                question,
                sources,
                book_title=title,
                page_title=prepared.sources[0].title,
                history=history,
                reader_answer=answer,
            )
        source = prepared.sources[0]
        return selection_action_messages(
            request.action,
            question,
            source.text,
            book_title=title,
            page_title=source.title if source.section_id else "",
            heading=source.heading_text,
            history=history,
            reader_answer=answer,
        )


def _selected_program(
    selection: str, located: SectionResult | None, page_sections: Sequence[SectionResult]
) -> SelectedProgram | None:
    """The program of the page the selection lies in: looked for in the page's copy of the located
    section, which is whole up to the section budget, then in the located one, assembled around the
    chunk that holds the selection (a later tab's program, left out of a long section's page copy)."""
    if located is None:
        return None
    whole = next((s for s in page_sections if s.section_id == located.section_id), located)
    return selected_program(selection, whole) or selected_program(selection, located)


def _code_explanation(
    program: SelectedProgram, own: str, sections: list[SectionResult], found: list[tuple[str, int]]
) -> Material:
    """Explain on a selected program: the sentence introducing it (its section is the selection's
    source, [1]), the section working out what it computes [2], then the page's definitions of the
    terms it uses, numbered on."""
    candidates = [(i, s) for i, s in enumerate(sections) if not is_exercise_section(s)]
    explaining = explaining_section(program, candidates, own)
    passages = working_passages(explaining[1]) if explaining is not None else []
    cited: list[int] = [explaining[0]] if explaining is not None and passages else []
    cited += [
        i for i in dict.fromkeys(i for _, i in found) if sections[i].section_id != own and i not in cited
    ]
    number = {i: n for n, i in enumerate(cited, start=2)}
    working = (2, sections[cited[0]], passages) if passages else None
    quoted = [(sentence, number.get(i, 1)) for sentence, i in found]
    text = explain_code_answer(program, working, quoted)
    if text is None:
        return [], Written(NO_EXPLANATION, "not_covered")
    return [sections[i] for i in cited], Written(text, "extractive")


def _exercises(sections: Sequence[SectionResult], first: int = 1) -> list[Exercise]:
    """The exercises of ``sections``, numbered as sources from ``first``."""
    return [e for n, s in enumerate(sections, start=first) for e in exercises_of(s.text, n)]
