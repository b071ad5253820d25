"""The book's pages as outlines: each page's metadata and its sections in reading order.

Built from the chunk payloads of one index generation (the index holds no page table), once per
generation. Study actions and page-context questions read a page whole from here instead of
searching for it, so an answer about "this page" can only draw on this page.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from bookwise.retrieval.models import SectionResult


@dataclass(frozen=True)
class PageOutline:
    page_url: str
    title: str
    description: str
    learning_objectives: tuple[str, ...]
    module: str
    chapter: str
    content_type: str  # the page's declared type (lab, quiz, assessment, exercise) or "prose"
    section_ids: tuple[str, ...]  # reading order
    first_payloads: tuple[dict[str, Any], ...]  # each section's first chunk, same order

    @property
    def group(self) -> tuple[str, str]:
        """The chapter the page belongs to (its module when the book has no chapter level)."""
        return (self.module, self.chapter)


def _page_type(payloads: Iterable[dict[str, Any]]) -> str:
    # A chunk's type is refined to code/table on prose pages; a declared page type is on every chunk.
    types = {str(p.get("content_type", "prose")) for p in payloads}
    declared = types - {"prose", "code", "table"}
    return sorted(declared)[0] if declared else "prose"


def build_outlines(payloads: Iterable[dict[str, Any]]) -> dict[str, PageOutline]:
    """Page URL (as indexed) → outline."""
    by_page: dict[str, list[dict[str, Any]]] = {}
    for payload in payloads:
        by_page.setdefault(str(payload.get("page_url", "")), []).append(payload)
    outlines: dict[str, PageOutline] = {}
    for page_url, chunks in by_page.items():
        chunks.sort(key=lambda p: int(p.get("chunk_index", 0)))
        firsts: dict[str, dict[str, Any]] = {}
        for payload in chunks:
            firsts.setdefault(str(payload.get("section_id", "")), payload)
        head = chunks[0]
        objectives = head.get("learning_objectives") or []
        outlines[page_url] = PageOutline(
            page_url=page_url,
            title=str(head.get("title", "")),
            description=str(head.get("description") or ""),
            learning_objectives=tuple(str(o) for o in objectives if str(o).strip()),
            module=str(head.get("module") or ""),
            chapter=str(head.get("chapter") or ""),
            content_type=_page_type(chunks),
            section_ids=tuple(firsts),
            first_payloads=tuple(firsts.values()),
        )
    return outlines


def within_budget(sections: Sequence[SectionResult], budget_tokens: int) -> list[SectionResult]:
    """The leading sections whose texts fit in ``budget_tokens`` together (the first one always)."""
    kept: list[SectionResult] = []
    spent = 0
    for section in sections:
        if kept and spent + section.tokens > budget_tokens:
            break
        kept.append(section)
        spent += section.tokens
    return kept


def section_and_subsections(sections: Sequence[SectionResult], anchor: str) -> list[SectionResult]:
    """The section with this anchor and the deeper ones under it, in reading order ([] if absent)."""
    start = next((i for i, s in enumerate(sections) if s.anchor == anchor), None)
    if start is None:
        return []
    level = sections[start].heading_level
    end = next(
        (i for i in range(start + 1, len(sections)) if sections[i].heading_level <= level), len(sections)
    )
    return list(sections[start:end])
