"""``GET /api/search/instant?q=``: the book's sections for what the reader is typing, by page and heading;
and ``GET /widget-search.js``, the widget's search modal, which the widget loads on first use.

A GET, not a POST like ``/api/search``: the widget sends one per pause in typing, and a GET with
no custom header is a simple cross-origin request (no preflight to wait for), which a browser or
proxy may also cache. Being a GET it is outside the POST endpoints' per-client budget; it has its
own, higher one (``instant_search_per_minute``), counted per process.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse

from bookwise import validation
from bookwise.api.deps import Client, RequestId, ServicesDep
from bookwise.api.limits import RateLimiter
from bookwise.errors import NotFoundError
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


@router.get("/api/search/instant")
async def instant_search(
    request: Request,
    shared: ServicesDep,
    request_id: RequestId,
    client: Client,
    q: Annotated[str, Query(max_length=10_000)] = "",
    version: Name = None,
    locale: Name = None,
    limit: Annotated[int, Query(ge=1, le=MAX_RESULTS)] = 8,
) -> dict[str, Any]:
    """The query as typed (a trailing space means its last word is complete); ``version`` and
    ``locale`` are the reader's page's, preferred when the index has them."""
    settings = shared.answering
    await _limiter(request, settings.instant_search_per_minute).check(client)
    validation.bounded("q", q, shared.limits.max_question_chars)
    retriever = await shared.index.get()
    if not q.strip():
        return {
            "request_id": request_id,
            "query": "",
            "index_version": retriever.index_version,
            "dense": False,
            "count": 0,
            "pages": [],
        }
    instant = _instant(request, retriever, settings.instant_search_dense_words)
    result = await instant.asearch(q, limit=limit, version=version, locale=locale)
    data = result.to_dict()
    data.pop("timings_ms")
    return {"request_id": request_id, **data}


@router.get("/widget-search.js", response_model=None)
async def widget_search(shared: ServicesDep) -> FileResponse:
    # Next to the widget's bundle, named after it: build.mjs writes them together.
    path = shared.widget_path
    bundle = path.with_name(f"{path.stem}-search{path.suffix}")
    if not bundle.is_file():
        raise NotFoundError(f"the widget bundle {bundle.name} is missing")
    cache = {"Cache-Control": "public, max-age=300"}
    return FileResponse(bundle, media_type="text/javascript", headers=cache)
