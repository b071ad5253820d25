"""Suggested questions per page: checked by retrieval, stored beside the index generation.

``bookwise ingest`` proposes questions for each page without a model (``ingest.suggestions``, kept
in the page's first chunk payload); here each is searched as a reader would ask it, and kept only
when one of its own page's sections comes back first: a suggestion the book does not answer from
that page would send the reader elsewhere. The kept questions are written to
``<data dir>/suggestions/<generation>.json`` (atomically), so a reader of that generation serves
exactly the questions that were checked against it; an older file is removed with its generation.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bookwise.retrieval.retriever import Retriever, page_paths
from bookwise.retrieval.suggestion_vectors import store_question_vectors
from bookwise.settings import Settings

FOLDER = "suggestions"
KEEP_FILES = 4  # generations' files kept (the index keeps BOOKWISE_KEEP_GENERATIONS of them)


@dataclass
class SuggestionsReport:
    """What the suggestions step of an ingest did: questions kept, on how many pages, the searches it
    made, and whether ``BOOKWISE_SUGGESTED_QUESTIONS_MAX_SEARCHES`` stopped it before every page was
    checked (the pages left then offer only their questions about the page itself)."""

    kept: int = 0
    pages: int = 0
    searches: int = 0
    capped: bool = False
    duration_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"duration_s": round(self.duration_s, 1)}


@dataclass
class _Page:
    url: str
    proposed: list[tuple[str, bool]]
    to_search: deque[str]
    room: int
    searched: list[str] = field(default_factory=list)


def checked_suggestions(
    retriever: Retriever,
    per_page: int,
    max_searches: int | None = None,
    report: SuggestionsReport | None = None,
) -> dict[str, list[str]]:
    """Page URL → up to ``per_page`` proposed questions whose top-ranked section is on that page.

    Questions about the page itself (``check: false``: its exercises, "Summarize this lab") are
    answered from the reader's page and keep their place; the others fill the remaining slots in
    the order proposed, each searched as a reader would ask it.

    Each search costs about as much as a reader's, and a bigger book has both more questions and
    dearer searches: ``max_searches`` bounds the step. Pages are checked breadth first (every page's
    first question, then every page's second, …), so under the cap each page gets its best proposal
    checked before any page gets a second; without reaching it the result is the same as checking page
    by page.
    """
    report = report if report is not None else SuggestionsReport()
    kept: dict[str, list[str]] = {}
    if per_page <= 0:
        return kept
    pages: list[_Page] = []
    for page_url, outline in retriever.outlines().items():
        raw = (outline.sections[0].first.suggestions or ()) if outline.sections else ()
        proposed = [(proposal.question, proposal.check) for proposal in raw]
        page_questions = [q for q, check in proposed if not check][:per_page]
        to_search = deque(q for q, check in proposed if check)
        pages.append(_Page(page_url, proposed, to_search, per_page - len(page_questions)))
    pending = [page for page in pages if page.room > 0 and page.to_search]
    while pending and not report.capped:
        still: list[_Page] = []
        for page in pending:
            if max_searches is not None and report.searches >= max_searches:
                report.capped = True
                break
            question = page.to_search.popleft()
            report.searches += 1
            if _ranks_page_first(retriever, question, page.url):
                page.searched.append(question)
            if len(page.searched) < page.room and page.to_search:
                still.append(page)
        pending = still
    for page in pages:
        page_questions = [q for q, check in page.proposed if not check][:per_page]
        chosen = set(page_questions) | set(page.searched)
        questions = [q for q, _ in page.proposed if q in chosen]
        if questions:
            kept[page.url] = questions
    report.kept = sum(len(q) for q in kept.values())
    report.pages = len(kept)
    return kept


def _ranks_page_first(retriever: Retriever, question: str, page_url: str) -> bool:
    found = retriever.search(question, top_k=1).sections
    return bool(found) and found[0].page_url == page_url


class SuggestionStore:
    """The suggestions files of a data directory; a generation's file is read once."""

    def __init__(self, data_dir: Path) -> None:
        self.directory = data_dir / FOLDER
        self._lock = threading.Lock()
        self._loaded: tuple[str, dict[str, list[str]]] = ("", {})

    def path(self, generation: str) -> Path:
        return self.directory / f"{generation}.json"

    def write(self, generation: str, pages: Mapping[str, list[str]]) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        target = self.path(generation)
        data = json.dumps({"generation": generation, "pages": dict(pages)}, ensure_ascii=False, indent=1)
        handle, temporary = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(data)
        os.replace(temporary, target)
        self._prune(keep=target)
        return target

    def _prune(self, keep: Path) -> None:
        files = sorted(self.directory.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in [f for f in files if f != keep][KEEP_FILES - 1 :]:
            old.unlink(missing_ok=True)

    def pages(self, generation: str) -> dict[str, list[str]]:
        with self._lock:
            if self._loaded[0] != generation:
                self._loaded = (generation, _read(self.path(generation)))
            return self._loaded[1]

    def for_page(self, generation: str, page_url: str) -> list[str]:
        """The page's questions ([] for a page or a generation without any)."""
        pages = self.pages(generation)
        return next((pages[path] for path in page_paths(page_url) if path in pages), [])


def _read(path: Path) -> dict[str, list[str]]:
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}  # not built (an older ingest) or unreadable: no suggestions, never an error
    pages = data.get("pages") if isinstance(data, dict) else None
    if not isinstance(pages, dict):
        return {}
    return {
        str(url): [str(q) for q in questions]
        for url, questions in pages.items()
        if isinstance(questions, list)
    }


def build_suggestions(
    retriever: Retriever, data_dir: Path, per_page: int, max_searches: int | None = None
) -> tuple[Path, SuggestionsReport]:
    """Check the live generation's proposed questions and store them; returns the file and what was done."""
    started = time.perf_counter()
    generation = retriever.generation()
    report = SuggestionsReport()
    pages = checked_suggestions(retriever, per_page, max_searches, report)
    path = SuggestionStore(data_dir).write(generation, pages)
    # Their vectors go with the generation: a reader who clicks one is answered without embedding it.
    store_question_vectors(retriever, data_dir, (q for questions in pages.values() for q in questions))
    report.duration_s = time.perf_counter() - started
    return path, report


def suggest_for_live_index(settings: Settings) -> SuggestionsReport:
    """What ``bookwise ingest`` runs after indexing: open the live generation as a reader, check and
    store its pages' suggested questions (at most ``suggested_questions_max_searches`` searches),
    close it."""
    retriever = Retriever.open(settings)
    try:
        return build_suggestions(
            retriever,
            settings.data_dir,
            settings.suggested_questions,
            settings.suggested_questions_max_searches,
        )[1]
    finally:
        retriever.close()
