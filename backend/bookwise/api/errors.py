"""The one shape of every error the API answers: ``{"error": {code, message, retryable, ...,
request_id}}`` with the error's status, and ``Retry-After`` when the error says when to retry.

The guard, the exception handlers, the MCP endpoint and the metrics listener all answer through it.
"""

from __future__ import annotations

from starlette.responses import JSONResponse

from bookwise.errors import BookwiseError


def error_response(error: BookwiseError, request_id: str) -> JSONResponse:
    headers = {}
    retry_after = getattr(error, "retry_after", None)
    if retry_after is not None:
        headers["Retry-After"] = str(int(max(retry_after, 1)))
    return JSONResponse(
        {"error": {**error.to_dict(), "request_id": request_id}},
        status_code=error.status_code,
        headers=headers,
    )
