"""``PUT /api/admin/index``: CI installs an index generation it built, for the admin token's holder.

The embedded index lives on this server's disk, so a docs deploy cannot write it the way it writes
a Qdrant server: it uploads the generation it built instead (``bookwise publish``), as a tar stream.
The body is streamed to the index's ``incoming`` folder, checked completely and made live with one
atomic switch (``bookwise.index.transfer``); this process's readers move to it before the answer,
other workers within ``BOOKWISE_INDEX_REFRESH_S``.

Like ``/api/insights``, the route exists only with ``BOOKWISE_ADMIN_TOKEN`` and compares the bearer
token in constant time. The body is not JSON and may be large, so the Guard (which checks POSTs)
leaves this PUT alone: its size is capped by ``BOOKWISE_INDEX_UPLOAD_MAX_MB`` here, declared or not.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

import anyio.to_thread
from fastapi import APIRouter, Header, Request
from starlette.requests import ClientDisconnect

from bookwise.api.bearer import bearer_matches
from bookwise.api.deps import ServicesDep
from bookwise.api.logs import log_event
from bookwise.api.services import Services
from bookwise.errors import (
    BookwiseError,
    IndexUploadUnsupportedError,
    InvalidRequestError,
    UnauthorizedError,
)
from bookwise.index.transfer import Upload

router = APIRouter()

WRITE_BYTES = 1024 * 1024  # body chunks are gathered to this size before a thread writes them


INDEX_UPLOAD_PATH = "/api/admin/index"


@router.put(INDEX_UPLOAD_PATH)
async def upload_index(
    request: Request,
    shared: ServicesDep,
    authorization: Annotated[str, Header()] = "",
    content_length: Annotated[str | None, Header()] = None,
) -> dict[str, Any]:
    token = shared.admin_token
    if token is None or not bearer_matches(authorization.encode("latin-1"), token.encode()):
        raise UnauthorizedError("/api/admin/index needs the admin token (Authorization: Bearer <token>)")
    settings = shared.upload
    if settings.qdrant_url:
        raise IndexUploadUnsupportedError(
            "this server reads its index from a Qdrant server (BOOKWISE_QDRANT_URL): ingest into that "
            "server directly (the action's `qdrant` target) instead of uploading a generation"
        )
    if content_length is not None and not content_length.isdigit():
        raise InvalidRequestError("Content-Length is not a number")
    declared = int(content_length) if content_length is not None else None
    upload = await anyio.to_thread.run_sync(
        lambda: Upload(settings, declared, suggestions=shared.suggestions.path)
    )
    try:
        pending = bytearray()
        async for chunk in request.stream():
            pending += chunk
            if len(pending) >= WRITE_BYTES:
                await anyio.to_thread.run_sync(upload.write, bytes(pending))
                pending.clear()
        await anyio.to_thread.run_sync(upload.write, bytes(pending))
        installed = await anyio.to_thread.run_sync(upload.install)
    except ClientDisconnect:  # the client went away (or missed the request deadline): nobody to answer
        log_event("index_upload_interrupted", logging.WARNING, received_bytes=upload.received)
        raise InvalidRequestError("the upload was interrupted; nothing was installed") from None
    finally:
        await anyio.to_thread.run_sync(upload.close)
    answer = installed.to_dict()
    answer["serving"] = await _serving(shared)
    log_event(
        "index_installed",
        logging.INFO,
        index_version=answer["index_version"],
        points=answer["points"],
        archive_bytes=answer["archive_bytes"],
    )
    return answer


async def _serving(shared: Services) -> str | None:
    """The generation this process's readers serve now (they are moved to the new one at once)."""
    handle = shared.index
    if handle.retriever is None:
        handle.open_error = None  # the server had no index until now: look for it now, not later
    try:
        retriever = await handle.get()
        status = await anyio.to_thread.run_sync(retriever.status)
    except BookwiseError as error:  # installed, but this process cannot serve it: say so in the log
        log_event("index_unavailable", logging.WARNING, code=error.code, detail=error.message)
        return None
    version: str = status["index_version"]
    return version
