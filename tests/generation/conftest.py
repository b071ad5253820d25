from __future__ import annotations

from collections.abc import Callable

import pytest

from bookwise.retrieval.models import SectionResult

SectionFactory = Callable[..., SectionResult]


@pytest.fixture
def section() -> SectionFactory:
    def make(heading: str, text: str, n: int = 1) -> SectionResult:
        return SectionResult(
            section_id=f"s{n}",
            doc_path=f"p{n}.md",
            doc_id=f"p{n}",
            title=f"Page {n}",
            heading=heading,
            heading_text=heading,
            heading_level=2,
            breadcrumb=[f"Page {n}"],
            url=f"/p{n}#{heading.lower()}",
            page_url=f"/p{n}",
            anchor=heading.lower(),
            module=None,
            chapter=None,
            version="current",
            locale="en",
            content_type="prose",
            score=1.0 / n,
            snippet="",
            text=text,
            tokens=0,
            truncated=False,
        )

    return make
