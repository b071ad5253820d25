"""The values ingestion produces. Frozen: later stages never mutate what ingestion decided."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class SectionFlags:
    has_code: bool = False
    has_table: bool = False
    has_math: bool = False
    has_admonition: bool = False
    has_image: bool = False


@dataclass(frozen=True)
class Block:
    """A piece of section content (paragraph, code fence, table, list…) with its source span."""

    text: str
    char_start: int
    char_end: int
    kind: str = "prose"  # prose | code | table | admonition


@dataclass(frozen=True)
class Heading:
    """A section's heading as the page shows it, with the anchor that links to it."""

    text: str  # as written in the source (inline markup kept, explicit id removed); "" = a page's intro
    plain: str  # as rendered
    level: int
    anchor: str  # the heading's element id; "" when the section is reached by the page URL alone

    def markdown(self, *, with_anchor: bool = False) -> str:
        """The heading line; ``with_anchor`` ends it with ``{#id}``, the heading-id syntax of the
        book's own sources, so a reader of the Markdown can link to the section."""
        line = f"{'#' * max(self.level, 1)} {self.text}"
        return f"{line} {{#{self.anchor}}}" if with_anchor and self.anchor else line


@dataclass(frozen=True)
class Section:
    key: str  # unique within the document; stable across re-ingests while the heading stays
    heading: str  # as written in the source (inline markup kept, explicit id removed); "" = intro
    heading_text: str  # rendered plain text
    level: int
    anchor: str  # element id on the page; "" when the section is reached by the page URL alone
    breadcrumb: tuple[str, ...]  # ancestor headings, outermost first
    char_start: int
    char_end: int
    blocks: tuple[Block, ...]
    flags: SectionFlags = SectionFlags()

    def as_heading(self) -> Heading:
        return Heading(self.heading, self.heading_text, self.level, self.anchor)


@dataclass(frozen=True)
class Document:
    doc_path: str  # relative to the docs folder, "/" separators
    doc_id: str
    url: str  # permalink as Docusaurus links it
    title: str
    description: str
    tags: tuple[str, ...]
    sidebar_label: str | None
    sidebar_position: float | None
    module: str
    chapter: str
    version: str
    locale: str
    content_type: str
    sections: tuple[Section, ...]
    unlisted: bool = False
    learning_objectives: tuple[str, ...] = ()  # front matter `learning_objectives`


@dataclass(frozen=True)
class Chunk:
    id: str
    parent_id: str  # the section's id
    text: str  # the chunk's own content (Markdown)
    embed_text: str  # what the embedder and BM25 see: context line + text
    content_hash: str  # of embed_text: decides re-embedding
    chunk_index: int  # reading order within the document
    total_chunks: int
    section_chunk_index: int
    char_start: int
    char_end: int
    payload: dict[str, Any] = field(default_factory=dict)  # everything denormalized for retrieval
