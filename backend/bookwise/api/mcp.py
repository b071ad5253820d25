"""The book for AI agents: an MCP server (official ``mcp`` SDK) with three tools over the same index
the widget uses — ``search`` (ranked sections with ``url#anchor`` citations), ``read`` (a section or a
whole page as Markdown) and ``contents`` (the table of contents).

It reads retrieval, never the other way: ``search`` is the Retriever's own search, with the API's
request rules (``SearchBody`` and ``bookwise.validation``, as ``POST /api/search``); ``read`` and
``contents`` are built from the index's chunk payloads off the event loop, once per index generation,
and ``contents`` answers in bounded pages. Served over stdio (``bookwise mcp``) and over streamable
HTTP at ``/mcp`` on ``bookwise serve`` (``app.py``), where the Guard's checks apply as to ``/api/*``;
``/mcp`` answers POST only (stateless: a GET event stream would carry nothing, and hold a connection).
"""

from __future__ import annotations

import functools
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any
from urllib.parse import unquote, urlsplit

import anyio
import anyio.to_thread
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations
from pydantic import Field, ValidationError, WithJsonSchema
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from bookwise import validation
from bookwise.api.errors import error_response
from bookwise.api.logs import request_id_var
from bookwise.api.schemas import SearchBody
from bookwise.api.services import IndexHandle
from bookwise.errors import BookwiseError, InvalidRequestError, MethodNotAllowedError
from bookwise.generation.coverage import covers, spelled_search
from bookwise.ingest.book import Book, BookPage, BookSection, by_section, relink_outside_code
from bookwise.ingest.payload import ChunkPayload
from bookwise.insights.records import CitedSection, Outcome, QuestionRecord
from bookwise.retrieval.assemble import SectionChunk, assemble
from bookwise.retrieval.models import anchor_of, site_url
from bookwise.retrieval.retriever import Retriever, page_paths
from bookwise.retrieval.snippets import holding_back_solutions
from bookwise.settings import McpSettings, Settings

RetrieverSource = Callable[[], Awaitable[Retriever]]
QuestionSink = Callable[[QuestionRecord], None]  # the question log's submit (never blocks)
READ_ONLY = ToolAnnotations(
    readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
)


def _whole_text(
    chunks: list[ChunkPayload], page: BookPage, links: dict[tuple[str, str, str], str], origin: str
) -> str:
    """The whole section (nothing is left out), its links to doc files made the pages' URLs."""
    text = assemble(
        [SectionChunk.from_payload(p) for p in chunks], [], budget_tokens=0, count_tokens=lambda _: 0
    ).text
    return relink_outside_code(
        text, page.doc_path, lambda path: links.get((page.version, page.locale, path)), origin
    )


def _section_markdown(section: BookSection, page_title: str, text: str) -> str:
    title = f"{'#' * max(1, section.heading.level)} {section.heading.text or page_title}"
    return f"{title}\n\n{text}".rstrip() if text else title


def _section_link(section: BookSection, page_title: str) -> dict[str, str]:
    return {"heading": section.heading.text or page_title, "url": site_url(section.url)}


@dataclass(frozen=True)
class ContentsLimits:
    """How much one ``contents`` call lists (``BOOKWISE_MCP_CONTENTS_MAX_PAGES``/``_MAX_BYTES``)."""

    max_pages: int = Settings.model_fields["mcp_contents_max_pages"].default
    max_bytes: int = Settings.model_fields["mcp_contents_max_bytes"].default

    @classmethod
    def from_settings(cls, settings: McpSettings) -> ContentsLimits:
        return cls(settings.mcp_contents_max_pages, settings.mcp_contents_max_bytes)


_ENVELOPE_BYTES = 512  # the answer's own keys (total, cursor) around its pages
_GROUP_BYTES = 64  # a module's or a chapter's keys and brackets, beside its name
_SHOWN_TITLE_CHARS = 200  # a page whose title alone would pass the bound


def _json_size(value: Any) -> int:
    """Bytes of ``value`` as the SDK sends it: compact JSON, UTF-8."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


@dataclass(frozen=True)
class TocEntry:
    module: str | None
    chapter: str | None
    entry: dict[str, Any]
    size: int  # of ``entry``'s JSON


@dataclass(frozen=True)
class Contents:
    """The table of contents, built with the book: every listed page's entry with its size, so that a
    call only picks a slice (reading order) that fits the byte bound."""

    entries: list[TocEntry]
    modules: frozenset[str | None]
    chapters: frozenset[str | None]

    @classmethod
    def of(cls, pages: list[BookPage], max_bytes: int) -> Contents:
        entries = []
        for page in pages:
            if page.unlisted:
                continue
            module, chapter = page.module or None, page.chapter or None  # "" for a page at the docs root
            # One page alone always fits in an answer: its headings are cut when they alone would not.
            most = max_bytes - _ENVELOPE_BYTES - _group_size(module) - _group_size(chapter)
            entry = _fitted(_page_entry(page), most)
            entries.append(TocEntry(module, chapter, entry, _json_size(entry)))
        return cls(
            entries,
            frozenset(entry.module for entry in entries),
            frozenset(entry.chapter for entry in entries),
        )

    def page(
        self, module: str | None, chapter: str | None, offset: int, limit: int, max_bytes: int
    ) -> tuple[dict[str, Any], int | None]:
        """The answer listing the matching pages from ``offset``: at most ``limit`` of them and
        ``max_bytes`` of JSON (at least one page); and the offset of the next page, if any."""
        wanted = [
            entry
            for entry in self.entries
            if (module is None or entry.module == module) and (chapter is None or entry.chapter == chapter)
        ]
        modules: dict[str | None, dict[str | None, list[dict[str, Any]]]] = {}
        spent, end = _ENVELOPE_BYTES, offset
        for entry in wanted[offset : offset + limit]:
            chapters = modules.get(entry.module)
            cost = entry.size + 1
            if chapters is None:
                cost += _group_size(entry.module) + _group_size(entry.chapter)
            elif entry.chapter not in chapters:
                cost += _group_size(entry.chapter)
            if end > offset and spent + cost > max_bytes:
                break
            spent += cost
            modules.setdefault(entry.module, {}).setdefault(entry.chapter, []).append(entry.entry)
            end += 1
        answer = {
            "modules": [
                {"module": name, "chapters": [{"chapter": c, "pages": p} for c, p in chapters.items()]}
                for name, chapters in modules.items()
            ],
            "total_pages": len(wanted),
            "listed": {"from": offset, "to": end},
        }
        return answer, (end if end < len(wanted) else None)


def _group_size(name: str | None) -> int:
    return _GROUP_BYTES + _json_size(name)


def _fitted(entry: dict[str, Any], most: int) -> dict[str, Any]:
    """``entry`` within ``most`` bytes: the headings that fit (``headings_truncated``; ``read`` the
    page for all of them), then without its description, then with a shortened title."""
    if _json_size(entry) <= most:
        return entry
    headings = entry["headings"]
    fitted = {**entry, "headings": [], "headings_truncated": True}
    if _json_size(fitted) > most:
        fitted.pop("description", None)
    if _json_size(fitted) > most:
        fitted["title"] = fitted["title"][:_SHOWN_TITLE_CHARS]
    spent = _json_size(fitted)
    for heading in headings:
        spent += _json_size(heading) + 1
        if spent > most:
            break
        fitted["headings"].append(heading)
    return fitted


@dataclass(frozen=True)
class Edition:
    """What the tools read of one index generation, built once for it off the event loop: the book's
    pages in reading order with their sections' whole texts, and the table of contents."""

    generation: str
    pages: list[BookPage]  # reading order
    by_url: dict[str, BookPage]  # keyed by their citation form (percent-encoded, as `site_url` writes it)
    texts: dict[str, str]  # section id → the whole section, as its chunks assemble, links relinked
    contents: Contents

    @classmethod
    def of(cls, generation: str, payloads: list[ChunkPayload], max_bytes: int, origin: str = "") -> Edition:
        """The edition of one generation's chunk ``payloads``; ``origin``: the site's
        ``scheme://host``, for absolute links ("" keeps them site-relative)."""
        sections = by_section(payloads)
        book = Book.from_sections(sections)
        pages = list(book.reading)
        # A link to another doc file (`../intro.mdx#a`) is that page's URL, as the site renders it:
        # an agent cannot open a source file.
        links = {(p.version, p.locale, p.doc_path): origin + site_url(p.page_url) for p in book.pages}
        texts = {
            section.id: _whole_text(sections[section.id], page, links, origin)
            for page in pages
            for section in page.sections
        }
        return cls(
            generation,
            pages,
            {site_url(page.page_url): page for page in pages},
            texts,
            Contents.of(pages, max_bytes),
        )

    def find(self, url: str) -> tuple[BookPage, BookSection | None]:
        """The page of ``url`` (absolute or site-relative) and, for ``url#anchor``, its section."""
        forms = [site_url(path) for path in page_paths(url)]
        page = next((self.by_url[form] for form in forms if form in self.by_url), None)
        if page is None:
            raise ToolError(f"no page of this book at {url!r}; use search or contents to find one")
        fragment = urlsplit(url.strip()).fragment
        if not fragment:
            return page, None
        wanted = {anchor_of(fragment), anchor_of(unquote(fragment))}
        for section in page.sections:
            if anchor_of(section.heading.anchor) in wanted:
                return page, section
        shown = site_url(page.page_url)
        raise ToolError(f"the page {shown} has no section #{fragment}; read the page to see its headings")

    def page_markdown(self, page: BookPage) -> str:
        """The page as ``read`` gives it, solutions held back (see ``section_text``)."""
        # The page's H1 is its first section when the source has one; else the title stands for it.
        parts = [] if any(s.heading.level == 1 for s in page.sections) else [f"# {page.title}"]
        parts += [_section_markdown(s, page.title, self.section_text(s)) for s in page.sections]
        return "\n\n".join(parts)

    def section_text(self, section: BookSection) -> str:
        """``section`` as ``read`` gives it: the book's solution to its exercises held back, as on the
        page; an agent has no quiz exchange that would send the reader's answer first."""
        return holding_back_solutions(self.texts[section.id])


def _cursor(offset: int, generation: str) -> str:
    return f"{offset}@{generation}"


def _offset(cursor: object, generation: str) -> int:
    """Where a ``cursor`` of an earlier ``contents`` answer goes on; 0 without one."""
    if cursor is None:
        return 0
    if isinstance(cursor, str):
        at, _, of = cursor.partition("@")
        if at.isascii() and at.isdigit() and of:
            if of != generation:
                raise InvalidRequestError(
                    "the book was re-indexed since this cursor was given; list it again without a cursor"
                )
            return int(at)
    raise InvalidRequestError(
        "cursor is not one contents gave; pass the previous answer's next_cursor, or none to start"
    )


def _page_limit(value: object, most: int) -> int:
    """How many pages one ``contents`` call lists: ``most`` when unset; an integer, never coerced."""
    if value is None:
        return most
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise InvalidRequestError(f"limit must be an integer between 1 and {most}")
    return value


_ARGUMENTS = {"top_k": "limit"}  # the API's field → the search tool's argument


def _search_body(query: str, wanted: Mapping[str, Any], limit: object) -> SearchBody:
    """The search tool's arguments through ``POST /api/search``'s own schema: the same text rules (no
    control characters, no lone surrogates), a strict ``limit``, and the same messages (the API's
    validation handler's form: ``field: problem``, the field named as the tool names it)."""
    try:
        return SearchBody.model_validate({"query": query, "filters": wanted or None, "top_k": limit})
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(_ARGUMENTS.get(str(part), str(part)) for part in first["loc"] if part != "filters")
        raise InvalidRequestError(f"{where}: {first['msg']}" if where else first["msg"]) from None


class BookTools:
    """What the tools do, independent of the transport; a ``BookwiseError`` becomes a tool error."""

    def __init__(
        self,
        retriever: RetrieverSource,
        limits: validation.RequestLimits,
        log: QuestionSink | None = None,
        *,
        contents: ContentsLimits | None = None,
    ) -> None:
        self._retriever = retriever
        self._limits = limits
        self._log = log
        self._contents_limits = contents or ContentsLimits()
        self._edition: Edition | None = None
        self._building = anyio.Lock()  # concurrent calls wait for the one build, not for a thread

    async def search(
        self,
        query: str,
        filters: dict[str, list[str] | str | None],
        limit: object,
    ) -> dict[str, Any]:
        wanted = {name: value for name, value in filters.items() if value}
        asked_at, started = datetime.now(UTC), time.monotonic()
        try:
            body = _search_body(query, wanted, limit)  # before any work, as the API
            validation.search(body.query, body.top_k, body.filters, self._limits)
            retriever = await self._retriever()
            search = functools.partial(retriever.asearch, top_k=body.top_k, filters=wanted)
            _, result = await spelled_search(retriever, query, search)
            # The chat's own decision (retrieval's verdict, the passage evidence, what the book never
            # mentions): an agent told "covered" must not meet a decline for the same question.
            covered = await covers(retriever, result)
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
                    outcome="answered" if covered else "not_covered",
                    evidence=result.sufficiency.score,
                    cited=tuple(
                        CitedSection(s.page_url, s.anchor or None, s.known_as) for s in result.sections
                    ),
                )
            )
        origin = _origin(retriever.site_url)
        return {
            "query": result.query,
            "covered": covered,
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
        edition, origin = await self._current_edition()
        page, section = edition.find(url)
        read = self._read(edition, page, section)
        return {**read, **({"link": origin + read["url"]} if origin else {})}

    def _read(self, edition: Edition, page: BookPage, section: BookSection | None) -> dict[str, Any]:
        page_url = site_url(page.page_url)
        if section is None:
            pages = edition.pages
            at = pages.index(page)
            return {
                "kind": "page",
                "title": page.title,
                "url": page_url,
                "page_url": page_url,
                "heading_path": [page.title],
                "markdown": edition.page_markdown(page),
                "sections": [
                    _section_link(s, page.title)
                    for s in page.sections
                    if s.heading.text and s.heading.level > 1
                ],
                "previous": _page_link(pages[at - 1]) if at > 0 else None,
                "next": _page_link(pages[at + 1]) if at + 1 < len(pages) else None,
            }
        at = page.sections.index(section)
        before, after = page.sections[:at], page.sections[at + 1 :]
        heading = section.heading.text
        return {
            "kind": "section",
            "title": page.title,
            "url": site_url(section.url),
            "page_url": page_url,
            "heading_path": [*section.breadcrumb, *([heading] if heading else [])],
            "markdown": _section_markdown(section, page.title, edition.section_text(section)),
            "previous": _section_link(before[-1], page.title) if before else None,
            "next": _section_link(after[0], page.title) if after else None,
        }

    async def contents(
        self, module: str | None, chapter: str | None, cursor: object = None, limit: object = None
    ) -> dict[str, Any]:
        edition, _ = await self._current()
        table = edition.contents
        for name, value, known in (("module", module, table.modules), ("chapter", chapter, table.chapters)):
            if value is not None and value not in known:
                names = ", ".join(sorted(repr(k) for k in known if k))
                raise ToolError(f"this book has no {name} {value!r}; its {name}s: {names or 'none'}")
        try:
            count = _page_limit(limit, self._contents_limits.max_pages)
            offset = _offset(cursor, edition.generation)
        except InvalidRequestError as error:
            raise ToolError(f"{error.code}: {error.shown}") from error
        answer, following = await anyio.to_thread.run_sync(
            table.page, module, chapter, offset, count, self._contents_limits.max_bytes
        )
        next_cursor = None if following is None else _cursor(following, edition.generation)
        return {**answer, "next_cursor": next_cursor}

    async def _current_edition(self) -> tuple[Edition, str]:
        """The edition, and the site's origin for absolute links ("" when the site has no ``url``)."""
        edition, retriever = await self._current()
        return edition, _origin(retriever.site_url)

    async def _current(self) -> tuple[Edition, Retriever]:
        """The live generation's edition: built once per generation, in a worker thread (a large book
        takes seconds), while concurrent calls wait on the event loop for that one build."""
        try:
            retriever = await self._retriever()
            generation = await anyio.to_thread.run_sync(retriever.generation)  # follows a re-ingest
            edition = self._edition
            if edition is None or edition.generation != generation:
                async with self._building:
                    edition = self._edition
                    if edition is None or edition.generation != generation:
                        edition = self._edition = await anyio.to_thread.run_sync(self._build, retriever)
        except BookwiseError as error:
            raise ToolError(f"{error.code}: {error.shown}") from error
        return edition, retriever

    def _build(self, retriever: Retriever) -> Edition:
        generation = retriever.generation()  # read with the payloads: a later switch rebuilds
        payloads = retriever.chunk_payloads()
        return Edition.of(generation, payloads, self._contents_limits.max_bytes, _origin(retriever.site_url))


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


def _page_link(page: BookPage) -> dict[str, str]:
    return {"title": page.title, "url": site_url(page.page_url)}


def _page_entry(page: BookPage) -> dict[str, Any]:
    entry: dict[str, Any] = {"title": page.title, "url": site_url(page.page_url)}
    if page.description:
        entry["description"] = page.description
    if page.version:
        entry["version"] = page.version
    if page.locale:
        entry["locale"] = page.locale
    entry["headings"] = [
        {"heading": s.heading.text, "level": s.heading.level, "url": site_url(s.url)}
        for s in page.sections
        if s.heading.text and s.heading.level > 1
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
# An integer, never coerced (`"5"` and `true` are refused, as by the API): the tools check it themselves.
StrictCount = WithJsonSchema({"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]})


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
        limit: Annotated[
            Any, StrictCount, Field(description="how many sections (default: the server's)")
        ] = None,
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
        "their descriptions) → headings, each with its URL; optionally only one module or chapter. "
        "It comes in parts, in reading order: while `next_cursor` is not null, call again with it as "
        "`cursor` (and the same module and chapter) for the next pages.",
        annotations=READ_ONLY,
    )
    async def contents(
        module: Optional = None,
        chapter: Optional = None,
        cursor: Annotated[
            str | None, Field(description="the previous answer's `next_cursor`; none to start")
        ] = None,
        limit: Annotated[
            Any, StrictCount, Field(description="at most this many pages (default and cap: the server's)")
        ] = None,
    ) -> dict[str, Any]:
        return await tools.contents(module, chapter, cursor, limit)

    return server


class PostOnly:
    """``/mcp`` answers POST only. The server is stateless, so a GET's event stream would carry
    nothing, and it would stay open outside every limit (no stream slot, no rate limit, and the
    request deadline never fires on a request already read): refused at once, in the API's shape."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] != "POST":
            refused = MethodNotAllowedError(f"{scope['method']} /mcp: MCP over streamable HTTP is POST only")
            response = error_response(refused, str(scope.get("state", {}).get("request_id", "")))
            response.headers["Allow"] = "POST"
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


def http_routes(server: MCPServer, *, max_body_bytes: int) -> list[BaseRoute]:
    """The streamable-HTTP endpoint at ``/mcp``, as routes of the API's own app (a mount would not
    answer ``/mcp`` itself, and its lifespan would not run: the API's lifespan runs
    ``server.session_manager``); POST only."""
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,  # API workers share no memory: no session may live in one of them
        max_request_body_size=max_body_bytes,
        # The Guard checks Host (allowed_hosts) and Origin with the API's rules, before this runs.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return [
        Route(route.path, endpoint=PostOnly(route.app)) if isinstance(route, Route) else route
        for route in app.routes
    ]


def serve_stdio(settings: Settings) -> None:
    """``bookwise mcp``: the server on stdin/stdout for an editor; the index is opened on first use."""
    index = IndexHandle(opener=lambda: Retriever.open(settings))
    tools = BookTools(
        index.get,
        validation.RequestLimits.from_settings(settings),
        contents=ContentsLimits.from_settings(settings),
    )
    server = build_mcp_server(settings.book_title, tools)

    async def run() -> None:
        try:
            await server.run_stdio_async()
        finally:
            await index.close()

    anyio.run(run)
