"""``POST /api/feedback``: a reader's rating of one answer this server gave."""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from fastapi import APIRouter

from bookwise.api.deps import ServicesDep
from bookwise.api.schemas import FeedbackBody
from bookwise.errors import InvalidRequestError

router = APIRouter()


@router.post("/api/feedback", status_code=201)
async def feedback(body: FeedbackBody, shared: ServicesDep) -> dict[str, Any]:
    limits = shared.feedback_limits
    for name, text, most in [
        ("comment", body.comment, limits.comment_chars),
        ("question", body.question, limits.question_chars),
    ]:
        if len(text) > most:
            raise InvalidRequestError(f"{name} is too long: {len(text)} characters, at most {most}")
    store = shared.feedback
    stored = await anyio.to_thread.run_sync(
        lambda: store.add(
            request_id=body.request_id,
            rating=body.rating,
            question=body.question,
            answer=body.answer,
            sources=body.sources,
            comment=body.comment,
        )
    )
    return {"id": stored, "stored": True}
