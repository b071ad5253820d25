"""The book as its readers see it: pages in order, each with its sections and their headings.

Ingestion writes it into every chunk's payload (``ChunkPayload``); an index's payloads give it back
with ``Book.from_payloads``, once per index generation, for the page outlines retrieval reads and
the pages and table of contents the MCP tools serve. ``llms.txt`` and the ``.md`` twins are written
from the parsed Documents themselves (an index holds chunks, which overlap, not the Markdown blocks),
with the same headings (``Heading``) and the same rewriting of links between pages (``relink``).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import unquote

from bookwise.ingest.blocks import fence_spans
from bookwise.ingest.models import Heading
from bookwise.ingest.payload import ChunkPayload


@dataclass(frozen=True)
class BookSection:
    id: str  # the section's id in the index
    heading: Heading
    url: str  # page URL + "#anchor", as indexed
    breadcrumb: tuple[str, ...]  # ancestor headings, outermost first
    first: ChunkPayload  # the section's first chunk (its text is not the section's: see `by_section`)


@dataclass(frozen=True)
class BookPage:
    page_url: str  # as indexed
    doc_path: str
    title: str
    description: str
    learning_objectives: tuple[str, ...]  # the non-blank ones
    module: str  # "" outside any module
    chapter: str
    version: str
    locale: str
    content_type: str  # the page's declared type (lab, quiz, assessment, exercise) or "prose"
    sidebar_position: float | None
    unlisted: bool
    sections: tuple[BookSection, ...]  # reading order

    @property
    def group(self) -> tuple[str, str]:
        """The chapter the page belongs to (its module when the book has no chapter level)."""
        return (self.module, self.chapter)


@dataclass(frozen=True)
class Book:
    pages: tuple[BookPage, ...]  # in the order the index gave their chunks
    reading: tuple[BookPage, ...]  # reading order: sidebar position, then source path

    @classmethod
    def from_payloads(cls, payloads: Iterable[ChunkPayload]) -> Book:
        return cls.from_sections(by_section(payloads))

    @classmethod
    def from_sections(cls, sections: dict[str, list[ChunkPayload]]) -> Book:
        """The book of ``by_section``'s sections. Only each section's first chunk is kept: a whole
        book's chunks would stay in memory for as long as the book (one per index generation)."""
        by_page: dict[str, list[list[ChunkPayload]]] = {}  # page URL → its sections, first seen first
        for chunks in sections.values():
            by_page.setdefault(chunks[0].page_url, []).append(chunks)
        pages = {url: _page(url, chunks) for url, chunks in by_page.items()}
        # Pages that sort alike (one doc in two versions) keep the order of their first sections.
        started: dict[str, int] = {}
        for chunks in sorted(sections.values(), key=lambda c: c[0].chunk_index):
            started.setdefault(chunks[0].page_url, len(started))
        reading = sorted(pages.values(), key=lambda p: (*_reading_key(p), started[p.page_url]))
        return cls(tuple(pages.values()), tuple(reading))


def by_section(payloads: Iterable[ChunkPayload]) -> dict[str, list[ChunkPayload]]:
    """Section id → its chunks in reading order; sections in the order their chunks first came."""
    sections: dict[str, list[ChunkPayload]] = {}
    for payload in payloads:
        sections.setdefault(payload.section_id or "", []).append(payload)
    for chunks in sections.values():
        chunks.sort(key=lambda p: p.chunk_index)
    return sections


def _page(url: str, sections: list[list[ChunkPayload]]) -> BookPage:
    sections.sort(key=lambda chunks: chunks[0].chunk_index)
    head = sections[0][0]
    return BookPage(
        page_url=url,
        doc_path=head.doc_path,
        title=head.title,
        description=head.description,
        learning_objectives=tuple(o for o in head.learning_objectives if o.strip()),
        module=head.module or "",
        chapter=head.chapter or "",
        version=head.version or "",
        locale=head.locale or "",
        content_type=_page_type(p for chunks in sections for p in chunks),
        sidebar_position=head.sidebar_position,
        unlisted=head.unlisted,
        sections=tuple(_section(chunks, url) for chunks in sections),
    )


def _section(chunks: list[ChunkPayload], page_url: str) -> BookSection:
    first = chunks[0]
    return BookSection(
        id=first.section_id or "",
        heading=Heading(first.heading, first.heading_text, first.heading_level, first.anchor),
        url=page_url if first.url is None else first.url,
        breadcrumb=first.breadcrumb,
        first=first,
    )


def _page_type(payloads: Iterable[ChunkPayload]) -> str:
    # A chunk's type is refined to code/table on prose pages; a declared page type is on every chunk.
    types = {p.content_type or "prose" for p in payloads}
    declared = types - {"prose", "code", "table"}
    return sorted(declared)[0] if declared else "prose"


def _reading_key(page: BookPage) -> tuple[bool, float, str]:
    position = page.sidebar_position
    return (position is None, float(position or 0), page.doc_path)


# ---- links between pages ------------------------------------------------------------------------

# An inline link's target: a relative file link (`../x.md#a`) or a site path (`/docs/x`).
_LINK = re.compile(r"\]\((?P<target>[^)\s#]*)(?P<anchor>#[^)\s]*)?(?P<title>\s+\"[^\"]*\")?\)")


def relink(text: str, doc_path: str, page_of: Callable[[str], str | None], origin: str) -> str:
    """Links as the site renders them: a link to a doc file (``../x.mdx#a``, relative to
    ``doc_path``) becomes ``page_of(that file's doc path)`` with its anchor; a site path
    (``/docs/x``) gets ``origin`` in front when there is one. Anything else is left as it is."""

    def replace(match: re.Match[str]) -> str:
        target, anchor, title = match["target"], match["anchor"] or "", match["title"] or ""
        if target.endswith((".md", ".mdx")) and "://" not in target and not target.startswith("/"):
            path = posixpath.normpath(posixpath.join(posixpath.dirname(doc_path), unquote(target)))
            page = page_of(path)
            if page is not None:
                return f"]({page}{anchor}{title})"
        elif target.startswith("/") and not target.startswith("//") and origin:
            return f"]({origin}{target}{anchor}{title})"
        return match.group(0)

    return _LINK.sub(replace, text)


def relink_outside_code(text: str, doc_path: str, page_of: Callable[[str], str | None], origin: str) -> str:
    """``relink`` on the text outside fenced code blocks (a link in code is code)."""
    lines = text.split("\n")
    out: list[str] = []
    done = 0  # lines before this index are in ``out``
    for opening, closing in [*fence_spans(lines), (len(lines), len(lines))]:
        if prose := lines[done:opening]:
            out.append(relink("\n".join(prose), doc_path, page_of, origin))
        out.extend(lines[opening : closing + 1])
        done = closing + 1
    return "\n".join(out)
