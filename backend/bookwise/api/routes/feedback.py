"""``POST /api/feedback``: a reader's rating of one answer this server gave."""

from __future__ import annotations

from typing import Any

import anyio.to_thread
from fastapi import APIRouter

from bookwise import validation
from bookwise.api.deps import ServicesDep
from bookwise.api.schemas import FeedbackBody

router = APIRouter()


@router.post("/api/feedback", status_code=201)
async def feedback(body: FeedbackBody, shared: ServicesDep) -> dict[str, Any]:
    limits = shared.feedback_limits
    validation.bounded("comment", body.comment, limits.comment_chars)
    validation.bounded("question", body.question, limits.question_chars)
    store = shared.feedback
    stored = await anyio.to_thread.run_sync(
        lambda: store.add(
            request_id=body.request_id,
            rating=body.rating,
            reason=body.reason,
            question=body.question,
            answer=body.answer,
            sources=body.sources,
            comment=body.comment,
        )
    )
    return {"id": stored, "stored": True}
