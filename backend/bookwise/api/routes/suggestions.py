"""``GET /api/suggestions?url=``: the questions suggested for the reader's page (built at ingest)."""

from __future__ import annotations

from typing import Annotated, Any

import anyio.to_thread
from fastapi import APIRouter, Query

from bookwise.api.deps import ServicesDep

router = APIRouter()


@router.get("/api/suggestions")
async def suggestions(
    shared: ServicesDep, url: Annotated[str, Query(max_length=2048)] = ""
) -> dict[str, Any]:
    """Unknown pages, and indexes built before suggestions existed, get an empty list (200): the
    widget then shows its own examples."""
    retriever = await shared.index.get()
    generation = await anyio.to_thread.run_sync(retriever.generation)  # follows a re-ingest
    questions = await anyio.to_thread.run_sync(shared.suggestions.for_page, generation, url)
    return {"questions": questions, "index_version": generation}
