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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bookwise.retrieval.retriever import Retriever, page_paths
from bookwise.settings import Settings

FOLDER = "suggestions"
KEEP_FILES = 4  # generations' files kept (the index keeps BOOKWISE_KEEP_GENERATIONS of them)


def checked_suggestions(retriever: Retriever, per_page: int) -> dict[str, list[str]]:
    """Page URL → up to ``per_page`` proposed questions whose top-ranked section is on that page.

    Questions about the page itself (``check: false``: its exercises, "Summarize this lab") are
    answered from the reader's page and keep their place; the others fill the remaining slots in
    the order proposed, each searched as a reader would ask it.
    """
    kept: dict[str, list[str]] = {}
    if per_page <= 0:
        return kept
    for page_url, outline in retriever.outlines().items():
        raw = (outline.first_payloads[0].get("suggestions") or []) if outline.first_payloads else []
        proposed = [
            (str(p.get("question", "")), bool(p.get("check", True))) for p in raw if isinstance(p, dict)
        ]
        page_questions = [q for q, check in proposed if not check][:per_page]
        room = per_page - len(page_questions)
        searched: list[str] = []
        for question, check in proposed:
            if len(searched) >= room:
                break
            if check and _ranks_page_first(retriever, question, page_url):
                searched.append(question)
        chosen = set(page_questions) | set(searched)
        questions = [q for q, _ in proposed if q in chosen]
        if questions:
            kept[page_url] = questions
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


def build_suggestions(retriever: Retriever, data_dir: Path, per_page: int) -> tuple[Path, int]:
    """Check the live generation's proposed questions and store them; returns the file and the count."""
    generation = retriever.generation()
    pages = checked_suggestions(retriever, per_page)
    return SuggestionStore(data_dir).write(generation, pages), sum(len(q) for q in pages.values())


def suggest_for_live_index(settings: Settings) -> int:
    """What ``bookwise ingest`` runs after indexing: open the live generation as a reader, check and
    store its pages' suggested questions, close it; returns how many were kept."""
    retriever = Retriever.open(settings)
    try:
        return build_suggestions(retriever, settings.data_dir, settings.suggested_questions)[1]
    finally:
        retriever.close()
