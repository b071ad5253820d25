"""``GET /api/insights``: the authors' report, for the holder of ``BOOKWISE_ADMIN_TOKEN`` only.

Without the token setting the route is not part of the app (404 like any unknown path). With it, a
request must send ``Authorization: Bearer <token>``; the comparison takes constant time, and the
token is never logged (nor echoed in a refusal).

The report is ``bookwise.insights.report.render_html(store, LogFilter)`` when that module provides
it (the HTML report of ``bookwise insights``); until then, the log's counts as JSON.
"""

from __future__ import annotations

import hmac
import importlib
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated, Any

import anyio.to_thread
from fastapi import APIRouter, Header, Query
from fastapi.responses import HTMLResponse, JSONResponse, Response

from bookwise.api.deps import ServicesDep
from bookwise.errors import UnauthorizedError
from bookwise.insights.records import LogFilter
from bookwise.insights.store import Store

router = APIRouter()

Day = Annotated[date | None, Query(description="a UTC day, YYYY-MM-DD")]
Name = Annotated[str | None, Query(max_length=200)]


@router.get("/api/insights", response_model=None)
async def insights(
    shared: ServicesDep,
    authorization: Annotated[str, Header()] = "",
    since: Day = None,
    until: Day = None,
    version: Name = None,
    locale: Name = None,
) -> Response:
    if not _authorized(authorization, shared.admin_token):
        raise UnauthorizedError("/api/insights needs the admin token (Authorization: Bearer <token>)")
    wanted = LogFilter(
        since=_midnight(since),
        until=_midnight(until + timedelta(days=1)) if until else None,  # the `until` day is included
        version=version,
        locale=locale,
    )
    store = await anyio.to_thread.run_sync(shared.insights.get)  # InsightsStoreError: 503
    render = _html_renderer()
    if render is not None:
        return HTMLResponse(await anyio.to_thread.run_sync(render, store, wanted))
    return JSONResponse(await anyio.to_thread.run_sync(_counts, store, wanted))


def _authorized(header: str, token: str | None) -> bool:
    if token is None:  # the route is only mounted with a token; never open by mistake
        return False
    scheme, _, value = header.strip().partition(" ")
    # Constant time: how much of a guess matched must not show in how long the refusal took.
    return scheme.lower() == "bearer" and hmac.compare_digest(value.strip().encode(), token.encode())


def _midnight(day: date | None) -> datetime | None:
    return None if day is None else datetime.combine(day, time(), tzinfo=UTC)


def _html_renderer() -> Callable[[Store, LogFilter], str] | None:
    """The report's HTML renderer, once ``bookwise.insights.report`` provides one."""
    try:
        module = importlib.import_module("bookwise.insights.report")
    except ModuleNotFoundError:
        return None
    render: Callable[[Store, LogFilter], str] | None = getattr(module, "render_html", None)
    return render


def _counts(store: Store, wanted: LogFilter) -> dict[str, Any]:
    return {"questions": len(store.questions(wanted)), "feedback": len(store.feedback(wanted))}
