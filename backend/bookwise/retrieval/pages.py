"""The book's pages as outlines: each page's metadata and its sections in reading order.

An outline is the ``BookPage`` of the book model ingestion writes (``ingest.book``), rebuilt from the
chunk payloads of one index generation (the index holds no page table), once per generation. Study
actions and page-context questions read a page whole from here instead of searching for it, so an
answer about "this page" can only draw on this page.
"""

from __future__ import annotations

from collections.abc import Sequence

from bookwise.ingest.book import BookPage
from bookwise.retrieval.models import SectionResult

PageOutline = BookPage  # the name the study actions know a page by


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
