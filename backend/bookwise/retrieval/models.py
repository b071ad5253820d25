"""What retrieval returns: ranked sections with their citation fields, and the sufficiency verdict."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class SectionResult:
    """One section of the book: the unit that is ranked, cited and given to the model."""

    section_id: str
    doc_path: str
    doc_id: str
    title: str
    heading: str  # as written in the source (inline code kept); "" for a page's intro
    heading_text: str  # as rendered
    heading_level: int
    breadcrumb: list[str]
    url: str  # page URL + "#anchor" (no fragment for a page's intro or H1)
    page_url: str
    anchor: str
    module: str | None
    chapter: str | None
    version: str | None
    locale: str | None
    content_type: str
    score: float
    snippet: str
    text: str  # the assembled section text (small-to-big), within the context budget
    tokens: int
    truncated: bool
    matched_chunks: list[int] = field(default_factory=list)  # section chunk indices that matched

    def to_source(self) -> dict[str, Any]:
        """The public source object (API, CLI --json); ``text`` is kept for the prompt only."""
        data = asdict(self)
        for private in ("text", "matched_chunks", "section_id", "tokens", "truncated"):
            data.pop(private)
        data["score"] = round(self.score, 6)
        return data


@dataclass(frozen=True)
class Sufficiency:
    """Whether the retrieved sections can answer: a calibrated score against a threshold."""

    sufficient: bool
    score: float
    threshold: float
    signals: dict[str, float]


@dataclass(frozen=True)
class RetrievalResult:
    query: str
    sections: list[SectionResult]
    sufficiency: Sufficiency
    index_version: str
    timings_ms: dict[str, float]

    @property
    def sufficient_context(self) -> bool:
        return self.sufficiency.sufficient

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "sufficient_context": self.sufficient_context,
            "sufficiency": asdict(self.sufficiency),
            "index_version": self.index_version,
            "sections": [s.to_source() for s in self.sections],
            "timings_ms": {k: round(v, 2) for k, v in self.timings_ms.items()},
        }
