"""``GET /api/search/instant?q=``: the book's sections for what the reader is typing, by page and heading;
``POST /api/search/instant/log``: the search the reader settled on, and how it ended, for the question
log; and ``GET /widget-search.js``, the widget's search modal, which the widget loads on first use.

A GET, not a POST like ``/api/search``: the widget sends one per pause in typing, and a GET with
no custom header is a simple cross-origin request (no preflight to wait for), which a browser or
proxy may also cache. Being a GET it is outside the POST endpoints' per-client budget; it has its
own, higher one (``instant_search_per_minute``), counted per process.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse, JSONResponse
from pydantic import StringConstraints

from bookwise import validation
from bookwise.api import deps
from bookwise.api.deps import Client, RequestId, ServicesDep
from bookwise.api.limits import RateLimiter
from bookwise.api.schemas import Body, ShortText
from bookwise.errors import NotFoundError
from bookwise.insights.records import SEARCH_ASKED, SEARCH_MODE, CitedSection, QuestionRecord
from bookwise.retrieval.instant import InstantSearch
from bookwise.retrieval.retriever import Retriever

router = APIRouter()

MAX_RESULTS = 20
Name = Annotated[str | None, Query(max_length=200)]


def _limiter(request: Request, per_minute: int) -> RateLimiter:
    state = request.app.state
    limiter: RateLimiter | None = getattr(state, "instant_search_limiter", None)
    if limiter is None:
        limiter = state.instant_search_limiter = RateLimiter(per_minute)
    return limiter


def _instant(request: Request, retriever: Retriever, dense_words: int) -> InstantSearch:
    """One keystroke index per retriever (a test or a reload may swap the retriever)."""
    state = request.app.state
    instant: InstantSearch | None = getattr(state, "instant_search", None)
    if instant is None or instant.retriever is not retriever:
        instant = state.instant_search = InstantSearch(retriever, dense_min_words=dense_words)
    return instant


# Per keystroke, the route's own work counts: the request's services, id and client are read here, not
# through dependencies (a plain function dependency runs in a worker thread), and the reply is
# serialized once, as FastAPI would (no second pass over a dict it need not validate).
@router.get("/api/search/instant", response_model=dict[str, Any])
async def instant_search(
    request: Request,
    q: Annotated[str, Query(max_length=10_000)] = "",
    version: Name = None,
    locale: Name = None,
    limit: Annotated[int, Query(ge=1, le=MAX_RESULTS)] = 8,
) -> JSONResponse:
    """The query as typed (a trailing space means its last word is complete); ``version`` and
    ``locale`` are the reader's page's, preferred when the index has them."""
    shared = deps.services(request)
    await _limiter(request, shared.instant_search_per_minute).check(deps.client(request))
    validation.bounded("q", q, shared.limits.max_question_chars)
    retriever = await shared.index.get()
    if not q.strip():
        return JSONResponse(
            {
                "request_id": deps.request_id(request),
                "query": "",
                "index_version": retriever.index_version,
                "dense": False,
                "count": 0,
                "pages": [],
            }
        )
    instant = _instant(request, retriever, shared.instant_search_dense_words)
    # In memory already (most keystrokes): answered on the loop; a new index or query vector: a thread.
    result = instant.search_ready(q, limit=limit, version=version, locale=locale)
    if result is None:
        result = await instant.asearch(q, limit=limit, version=version, locale=locale)
    data = result.to_dict()
    data.pop("timings_ms")
    return JSONResponse({"request_id": deps.request_id(request), **data})


Url = Annotated[str, StringConstraints(max_length=2048)]


class SearchLogBody(Body):
    """The search a reader settled on: the query last searched when a result was opened, the query
    asked, or the box closed."""

    query: Annotated[str, StringConstraints(max_length=2000)]
    opened: Url | None = None  # the result opened (its ``url``), if one was
    asked: bool = False  # the query was asked to the chat
    page_url: Url | None = None  # the reader's page
    version: ShortText | None = None
    locale: ShortText | None = None


@router.post("/api/search/instant/log")
async def instant_search_log(
    request: Request, body: SearchLogBody, shared: ServicesDep, request_id: RequestId, client: Client
) -> dict[str, Any]:
    """One row of the question log per settled search (when the log is on): whether any section
    holds its words (searched again here, not taken from the reader) and which one the reader opened."""
    log = shared.question_log
    query = " ".join(body.query.split())
    if not log.enabled or not query:
        return {"request_id": request_id, "logged": False}
    validation.bounded("query", query, shared.limits.max_question_chars)
    retriever = await shared.index.get()
    instant = _instant(request, retriever, shared.instant_search_dense_words)
    # Found: a section holds its words (the dense channel always has a nearest section to offer).
    found = await instant.asearch(query, limit=1, version=body.version, locale=body.locale, dense=False)
    opened = instant.section_at(body.opened, body.version, body.locale) if body.opened else None
    record = QuestionRecord(
        created_at=datetime.now(UTC),
        request_id=request_id,
        question=query,
        mode=SEARCH_ASKED if body.asked else SEARCH_MODE,
        outcome="answered" if found.sections else "not_covered",
        page_url=body.page_url,
        version=body.version,
        locale=body.locale,
        cited=(CitedSection(opened.page_url, opened.anchor or None, opened.heading or opened.title),)
        if opened is not None
        else (),
    )
    log.submit(record, client)
    return {"request_id": request_id, "logged": True}


@router.get("/widget-search.js", response_model=None)
async def widget_search(shared: ServicesDep) -> FileResponse:
    # Next to the widget's bundle, named after it: build.mjs writes them together.
    path = shared.widget_path
    bundle = path.with_name(f"{path.stem}-search{path.suffix}")
    if not bundle.is_file():
        raise NotFoundError(f"the widget bundle {bundle.name} is missing")
    cache = {"Cache-Control": "public, max-age=300"}
    return FileResponse(bundle, media_type="text/javascript", headers=cache)
