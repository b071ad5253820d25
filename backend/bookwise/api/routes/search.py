"""``POST /api/search``: ranked sections for a query, without an answer."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from bookwise import validation
from bookwise.api.deps import RequestId, ServicesDep
from bookwise.api.schemas import SearchBody

router = APIRouter()


@router.post("/api/search")
async def search(body: SearchBody, shared: ServicesDep, request_id: RequestId) -> dict[str, Any]:
    validation.search(body.query, body.top_k, body.filters, shared.limits)  # before any work
    retriever = await shared.index.get()
    result = await retriever.asearch(body.query, top_k=body.top_k, filters=body.filters)
    data = result.to_dict()
    sources = [{"n": n, **s} for n, s in enumerate(data.pop("sections"), start=1)]
    return {"request_id": request_id, **data, "sources": sources}
