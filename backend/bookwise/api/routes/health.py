"""Liveness (``/api/health``, cheap, never touches the index), readiness (``/api/ready``) and the
public limits a client must respect and the server's version (``/api/config``: the widget reads them
instead of guessing)."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.to_thread
from fastapi import APIRouter

from bookwise import __version__
from bookwise.api.deps import RetrieverDep, ServicesDep

router = APIRouter()


@router.get("/api/health")
async def health(shared: ServicesDep) -> dict[str, Any]:
    return {"status": "ok", "active_streams": shared.slots.active}


@router.get("/api/ready")
async def ready(shared: ServicesDep, retriever: RetrieverDep) -> dict[str, Any]:
    with anyio.fail_after(shared.retrieval_timeout_s):
        index = await anyio.to_thread.run_sync(retriever.status, abandon_on_cancel=True)
    return {"status": "ready", **index, "llm": shared.llm.model if shared.llm else None}


@router.get("/api/config")
async def config(shared: ServicesDep) -> dict[str, Any]:
    # The version lets the widget tell a reader when this server and the site's plugin do not match;
    # who answers lets its study buttons promise only what happens (a model, or the book's own words).
    answers = "llm" if shared.llm is not None else "extractive"
    return {"version": __version__, "limits": shared.limits.to_dict(), "answers": answers}
