"""``GET /api/insights``: the authors' report, for the holder of ``BOOKWISE_ADMIN_TOKEN`` only.

Without the token setting the route is not part of the app (404 like any unknown path). With it, a
request must send ``Authorization: Bearer <token>``; the comparison takes constant time, and the
token is never logged (nor echoed in a refusal).

The report is the HTML page of ``bookwise insights --out`` (``bookwise.insights.report``), its gaps
grouped with the index's embedder and matched to the index's sections.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated

import anyio.to_thread
from fastapi import APIRouter, Header, Query
from fastapi.responses import HTMLResponse, Response

from bookwise.api.bearer import bearer_matches
from bookwise.api.deps import ServicesDep
from bookwise.errors import InvalidRequestError, UnauthorizedError
from bookwise.insights.records import LogFilter
from bookwise.insights.report.run import html_report

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
    if until == date.max:  # its end, the next midnight, is past the last date there is
        raise InvalidRequestError("until: the last day it can be is 9999-12-30 (or leave it out)")
    wanted = LogFilter(
        since=_midnight(since),
        until=_midnight(until + timedelta(days=1)) if until else None,  # the `until` day is included
        version=version,
        locale=locale,
    )
    store = await anyio.to_thread.run_sync(shared.insights.get)  # InsightsStoreError: 503
    retriever = await shared.index.get()  # its embedder groups the gaps, its search finds sections
    return HTMLResponse(await anyio.to_thread.run_sync(html_report, store, wanted, retriever))


def _authorized(header: str, token: str | None) -> bool:
    if token is None:  # the route is only mounted with a token; never open by mistake
        return False
    # The header's bytes as sent (Starlette decodes headers as latin-1), the token as configured.
    return bearer_matches(header.encode("latin-1"), token.encode())


def _midnight(day: date | None) -> datetime | None:
    return None if day is None else datetime.combine(day, time(), tzinfo=UTC)
