"""The book for AI agents: an MCP server (official ``mcp`` SDK) with three tools over the same index
the widget uses — ``search`` (ranked sections with ``url#anchor`` citations), ``read`` (a section or a
whole page as Markdown) and ``contents`` (the table of contents).

It reads retrieval, never the other way: ``search`` is the Retriever's own search, with the API's
request rules (``bookwise.validation``); ``read`` and ``contents`` are built from the index's chunk
payloads, once per index generation. Served over stdio (``bookwise mcp``) and over streamable HTTP at
``/mcp`` on ``bookwise serve`` (``app.py``), where the Guard's checks apply as to ``/api/*``.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any
from urllib.parse import unquote, urlsplit

import anyio.to_thread
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations
from pydantic import Field
from starlette.routing import BaseRoute

from bookwise import validation
from bookwise.api.logs import request_id_var
from bookwise.api.services import IndexHandle
from bookwise.errors import BookwiseError
from bookwise.insights.records import CitedSection, Outcome, QuestionRecord
from bookwise.retrieval.assemble import SectionChunk, assemble
from bookwise.retrieval.models import anchor_of, site_url
from bookwise.retrieval.retriever import Retriever, page_paths
from bookwise.settings import Settings

RetrieverSource = Callable[[], Awaitable[Retriever]]
QuestionSink = Callable[[QuestionRecord], None]  # the question log's submit (never blocks)
READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)


@dataclass
class Section:
    heading: str  # as written; "" for a page's intro
    level: int
    anchor: str
    url: str
    breadcrumb: list[str]
    text: str

    def markdown(self, page_title: str) -> str:
        title = f"{'#' * max(1, self.level)} {self.heading or page_title}"
        return f"{title}\n\n{self.text}".rstrip() if self.text else title

    def link(self, page_title: str) -> dict[str, str]:
        return {"heading": self.heading or page_title, "url": self.url}


@dataclass
class Page:
    title: str
    url: str
    description: str
    module: str | None
    chapter: str | None
    version: str | None
    locale: str | None
    order: tuple[bool, float, str]  # sidebar position first, then the source path
    listed: bool
    sections: list[Section] = field(default_factory=list)

    def markdown(self) -> str:
        # The page's H1 is its first section when the source has one; else the title stands for it.
        parts = [] if any(s.level == 1 for s in self.sections) else [f"# {self.title}"]
        parts += [section.markdown(self.title) for section in self.sections]
        return "\n\n".join(parts)


@dataclass
class Book:
    """The book's pages in reading order, with their sections' full text: from every chunk's payload."""

    pages: list[Page]
    by_url: dict[str, Page]

    @classmethod
    def from_payloads(cls, payloads: list[dict[str, Any]]) -> Book:
        chunks: dict[str, list[dict[str, Any]]] = {}
        for payload in payloads:
            chunks.setdefault(str(payload.get("section_id", "")), []).append(payload)
        pages: dict[str, Page] = {}
        ordered = sorted(chunks.values(), key=lambda c: min(int(p.get("chunk_index", 0)) for p in c))
        for section_chunks in ordered:
            first = min(section_chunks, key=lambda p: int(p.get("section_chunk_index", 0)))
            page_url = site_url(str(first.get("page_url", "")))
            page = pages.get(page_url)
            if page is None:
                page = pages[page_url] = _page(first, page_url)
            built = assemble(
                [SectionChunk.from_payload(p) for p in section_chunks],
                [],
                budget_tokens=0,
                count_tokens=lambda _: 0,  # the whole section: nothing is left out
            )
            page.sections.append(
                Section(
                    heading=str(first.get("heading", "")),
                    level=int(first.get("heading_level", 1)),
                    anchor=anchor_of(str(first.get("anchor", ""))),
                    url=site_url(str(first.get("url", page_url))),
                    breadcrumb=[str(crumb) for crumb in first.get("breadcrumb") or []],
                    text=built.text,
                )
            )
        reading = sorted(pages.values(), key=lambda p: p.order)
        return cls(reading, {page.url: page for page in reading})

    def find(self, url: str) -> tuple[Page, Section | None]:
        """The page of ``url`` (absolute or site-relative) and, for ``url#anchor``, its section."""
        # Pages are keyed by their citation form (percent-encoded, as `site_url` writes it).
        forms = [site_url(path) for path in page_paths(url)]
        page = next((self.by_url[form] for form in forms if form in self.by_url), None)
        if page is None:
            raise ToolError(f"no page of this book at {url!r}; use search or contents to find one")
        fragment = urlsplit(url.strip()).fragment
        if not fragment:
            return page, None
        wanted = {anchor_of(fragment), anchor_of(unquote(fragment))}
        for section in page.sections:
            if section.anchor in wanted:
                return page, section
        raise ToolError(f"the page {page.url} has no section #{fragment}; read the page to see its headings")


def _page(payload: dict[str, Any], url: str) -> Page:
    position = payload.get("sidebar_position")
    return Page(
        title=str(payload.get("title", "")),
        url=url,
        description=str(payload.get("description") or ""),
        module=payload.get("module") or None,  # "" for a page at the docs root
        chapter=payload.get("chapter") or None,
        version=payload.get("version") or None,
        locale=payload.get("locale") or None,
        order=(position is None, float(position or 0), str(payload.get("doc_path", ""))),
        listed=not payload.get("unlisted"),
    )


class BookTools:
    """What the tools do, independent of the transport; a ``BookwiseError`` becomes a tool error."""

    def __init__(
        self, retriever: RetrieverSource, limits: validation.RequestLimits, log: QuestionSink | None = None
    ) -> None:
        self._retriever = retriever
        self._limits = limits
        self._log = log
        self._book: tuple[str, Book] | None = None
        self._lock = threading.Lock()

    async def search(
        self,
        query: str,
        filters: dict[str, list[str] | str | None],
        limit: int | None,
    ) -> dict[str, Any]:
        wanted = {name: value for name, value in filters.items() if value}
        asked_at, started = datetime.now(UTC), time.monotonic()
        try:
            validation.search(query, limit, wanted, self._limits)  # before any work, as the API
            retriever = await self._retriever()
            result = await retriever.asearch(query, top_k=limit, filters=wanted)
        except BookwiseError as error:
            if self._log is not None and error.code != "invalid_request":  # an agent's typo is no question
                self._log(_agent_record(query, wanted, asked_at, started, error_code=error.code))
            raise ToolError(f"{error.code}: {error.shown}") from error
        if self._log is not None:
            self._log(
                _agent_record(
                    query,
                    wanted,
                    asked_at,
                    started,
                    outcome="answered" if result.sufficient_context else "not_covered",
                    evidence=result.sufficiency.score,
                    cited=tuple(
                        CitedSection(s.page_url, s.anchor or None, s.heading_text or s.title)
                        for s in result.sections
                    ),
                )
            )
        origin = _origin(retriever.site_url)
        return {
            "query": result.query,
            "covered": result.sufficient_context,
            "results": [
                {
                    "title": source["title"],
                    "heading": source["heading_text"] or source["title"],
                    "breadcrumb": source["breadcrumb"],
                    "url": source["url"],
                    **({"link": origin + source["url"]} if origin else {}),
                    "page_url": source["page_url"],
                    "snippet": source["snippet"],
                    "score": source["score"],
                }
                for source in (section.to_source() for section in result.sections)
            ],
        }

    async def read(self, url: str) -> dict[str, Any]:
        book, origin = await self._current_book()
        page, section = book.find(url)
        return {
            **self._read(book, page, section),
            **({"link": origin + (section or page).url} if origin else {}),
        }

    def _read(self, book: Book, page: Page, section: Section | None) -> dict[str, Any]:
        if section is None:
            at = book.pages.index(page)
            return {
                "kind": "page",
                "title": page.title,
                "url": page.url,
                "page_url": page.url,
                "heading_path": [page.title],
                "markdown": page.markdown(),
                "sections": [s.link(page.title) for s in page.sections if s.heading and s.level > 1],
                "previous": _page_link(book.pages[at - 1]) if at > 0 else None,
                "next": _page_link(book.pages[at + 1]) if at + 1 < len(book.pages) else None,
            }
        at = page.sections.index(section)
        before, after = page.sections[:at], page.sections[at + 1 :]
        return {
            "kind": "section",
            "title": page.title,
            "url": section.url,
            "page_url": page.url,
            "heading_path": [*section.breadcrumb, *([section.heading] if section.heading else [])],
            "markdown": section.markdown(page.title),
            "previous": before[-1].link(page.title) if before else None,
            "next": after[0].link(page.title) if after else None,
        }

    async def contents(self, module: str | None, chapter: str | None) -> dict[str, Any]:
        book, _ = await self._current_book()
        pages = [p for p in book.pages if p.listed]
        for name, value, known in (
            ("module", module, {p.module for p in pages}),
            ("chapter", chapter, {p.chapter for p in pages}),
        ):
            if value is not None and value not in known:
                names = ", ".join(sorted(repr(k) for k in known if k))
                raise ToolError(f"this book has no {name} {value!r}; its {name}s: {names or 'none'}")
        modules: dict[str | None, dict[str | None, list[dict[str, Any]]]] = {}
        for page in pages:
            if (module is None or page.module == module) and (chapter is None or page.chapter == chapter):
                modules.setdefault(page.module, {}).setdefault(page.chapter, []).append(_page_entry(page))
        return {
            "modules": [
                {"module": name, "chapters": [{"chapter": c, "pages": p} for c, p in chapters.items()]}
                for name, chapters in modules.items()
            ]
        }

    async def _current_book(self) -> tuple[Book, str]:
        """The book, and the site's origin for absolute links ("" when the site has no ``url``)."""
        try:
            retriever = await self._retriever()
            book = await anyio.to_thread.run_sync(self._book_of, retriever)
        except BookwiseError as error:
            raise ToolError(f"{error.code}: {error.shown}") from error
        return book, _origin(retriever.site_url)

    def _book_of(self, retriever: Retriever) -> Book:
        # Built once per index generation: a re-ingest is followed on the next call.
        with self._lock:
            generation = retriever.generation()
            if self._book is None or self._book[0] != generation:
                self._book = (generation, Book.from_payloads(retriever.chunk_payloads()))
            return self._book[1]


def _agent_record(
    query: str,
    wanted: Mapping[str, list[str] | str | None],
    asked_at: datetime,
    started: float,
    *,
    outcome: Outcome = "error",
    evidence: float | None = None,
    cited: tuple[CitedSection, ...] = (),
    error_code: str | None = None,
) -> QuestionRecord:
    """The question log's row of one ``search`` call (agent traffic: no page, no reader)."""
    version, locale = wanted.get("version"), wanted.get("locale")
    return QuestionRecord(
        created_at=asked_at,
        request_id=request_id_var.get() or uuid.uuid4().hex,
        question=query,
        mode="search",  # the MCP tool
        outcome=outcome,
        traffic="agent",
        version=version if isinstance(version, str) else None,
        locale=locale if isinstance(locale, str) else None,
        evidence=evidence,
        cited=cited,
        error_code=error_code,
        ms_total=round((time.monotonic() - started) * 1000, 1),
    )


def _origin(site_url: str) -> str:
    """``scheme://host[:port]`` of the site's configured ``url``: page URLs already carry the base path."""
    parts = urlsplit(site_url.strip())
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") and parts.netloc else ""


def _page_link(page: Page) -> dict[str, str]:
    return {"title": page.title, "url": page.url}


def _page_entry(page: Page) -> dict[str, Any]:
    entry: dict[str, Any] = {"title": page.title, "url": page.url}
    if page.description:
        entry["description"] = page.description
    for name in ("version", "locale"):
        if getattr(page, name):
            entry[name] = getattr(page, name)
    entry["headings"] = [
        {"heading": s.heading, "level": s.level, "url": s.url}
        for s in page.sections
        if s.heading and s.level > 1
    ]
    return entry


def instructions(title: str) -> str:
    return (
        f"This server gives you the documentation book {title!r}: search it, read its sections and pages "
        "as Markdown, and list its table of contents. Answer from what you read, and cite every fact "
        "with the `url#anchor` link of the section it comes from: the `link` of a search result or of "
        "read (absolute), or its `url` (site-relative) when there is no `link`; those links open the "
        "book at that heading. When search says the book does not seem "
        "to cover a question, say so rather than guess."
    )


Optional = Annotated[str | None, Field(description="only this one (optional)")]


def build_mcp_server(title: str, tools: BookTools) -> MCPServer:
    """The MCP server of the book ``title``: its name, instructions and tool descriptions name it."""
    root = logging.getLogger()
    level, handlers = root.level, list(root.handlers)
    server: MCPServer = MCPServer(name=f"{title} (Bookwise)", instructions=instructions(title))
    # The SDK configures the root logger (its own handler, INFO): the API's logs stay JSON lines.
    root.setLevel(level)
    root.handlers[:] = handlers

    @server.tool(
        name="search",
        description=f"Search the book {title!r}: its sections best matching the query, best first, each "
        "with its title, breadcrumb, `url#anchor` citation link, a snippet and a score; `covered` says "
        "whether the book seems to cover the query. Filters narrow the search (all optional).",
        annotations=READ_ONLY,
    )
    async def search(
        query: Annotated[str, Field(description="what to look for, in plain words")],
        module: Optional = None,
        chapter: Optional = None,
        tags: Annotated[list[str] | None, Field(description="sections tagged with any of these")] = None,
        version: Optional = None,
        locale: Optional = None,
        limit: Annotated[int | None, Field(description="how many sections (default: the server's)")] = None,
    ) -> dict[str, Any]:
        filters = {"module": module, "chapter": chapter, "tags": tags, "version": version, "locale": locale}
        return await tools.search(query, filters, limit)

    @server.tool(
        name="read",
        description=f"Read the book {title!r} as Markdown: a `url#anchor` (from search or contents) "
        "gives that section, a page URL the whole page; with the heading path, the previous and next "
        "sections (or pages) and the page's URL.",
        annotations=READ_ONLY,
    )
    async def read(
        url: Annotated[str, Field(min_length=1, description="a page URL or `url#anchor`")],
    ) -> dict[str, Any]:
        return await tools.read(url)

    @server.tool(
        name="contents",
        description=f"The table of contents of the book {title!r}: modules → chapters → pages (with "
        "their descriptions) → headings, each with its URL; optionally only one module or chapter.",
        annotations=READ_ONLY,
    )
    async def contents(module: Optional = None, chapter: Optional = None) -> dict[str, Any]:
        return await tools.contents(module, chapter)

    return server


def http_routes(server: MCPServer, *, max_body_bytes: int) -> list[BaseRoute]:
    """The streamable-HTTP endpoint at ``/mcp``, as routes of the API's own app (a mount would not
    answer ``/mcp`` itself, and its lifespan would not run: the API's lifespan runs
    ``server.session_manager``)."""
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,  # API workers share no memory: no session may live in one of them
        max_request_body_size=max_body_bytes,
        # The Guard checks Host (allowed_hosts) and Origin with the API's rules, before this runs.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return list(app.routes)


def serve_stdio(settings: Settings) -> None:
    """``bookwise mcp``: the server on stdin/stdout for an editor; the index is opened on first use."""
    index = IndexHandle(opener=lambda: Retriever.open(settings))
    tools = BookTools(index.get, validation.RequestLimits.from_settings(settings))
    server = build_mcp_server(settings.book_title, tools)

    async def run() -> None:
        try:
            await server.run_stdio_async()
        finally:
            await index.close()

    anyio.run(run)
