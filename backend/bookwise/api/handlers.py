"""Every failure answered in the one error shape (``bookwise.api.errors``), with the request id."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from bookwise.api.deps import request_id
from bookwise.api.errors import error_response
from bookwise.api.logs import log_event, mark_logged
from bookwise.errors import BookwiseError, InvalidRequestError, NotFoundError, RequestRejected


async def bookwise_error(request: Request, error: BookwiseError) -> JSONResponse:
    if error.status_code >= 500 and not isinstance(error, RequestRejected):
        # The body says only what the code means; what went wrong (hosts, paths) is for the log.
        log_event("request_failed", logging.WARNING, code=error.code, detail=error.message)
    return error_response(error, request_id(request))


async def validation_error(request: Request, error: RequestValidationError) -> JSONResponse:
    first = error.errors()[0] if error.errors() else {}
    if first.get("type") == "json_invalid":
        at = first.get("loc", ("body", 0))[-1]
        message = f"the body is not valid JSON: {first.get('ctx', {}).get('error', 'invalid')} (at {at})"
        return error_response(InvalidRequestError(message), request_id(request))
    where = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
    message = f"{where}: {first.get('msg', 'invalid')}" if where else str(first.get("msg", "invalid body"))
    return error_response(InvalidRequestError(message), request_id(request))


async def http_error(request: Request, error: HTTPException) -> JSONResponse:
    if isinstance(error.__cause__, BookwiseError):  # e.g. the body counter's 413 while reading
        return error_response(error.__cause__, request_id(request))
    if isinstance(error.__cause__, ValueError):  # FastAPI's 400 for a body that is not UTF-8
        invalid = InvalidRequestError("the body is not valid JSON: it is not UTF-8 text")
        return error_response(invalid, request_id(request))
    rejected: RequestRejected = (
        NotFoundError("no such endpoint")
        if error.status_code == 404
        else InvalidRequestError(str(error.detail))
    )
    rejected.status_code = error.status_code
    return error_response(rejected, request_id(request))


async def unexpected_error(request: Request, error: Exception) -> JSONResponse:
    # Outside the Guard (Starlette answers it outermost), so the request id is passed by hand.
    client_request_id = getattr(request.state, "client_request_id", "")
    logging.getLogger("bookwise.api").error(
        "unexpected_error",
        exc_info=error,
        extra={"request_id": request_id(request), "client_request_id": client_request_id},
    )
    mark_logged(error)  # Starlette re-raises it to uvicorn, whose report would repeat this one
    return error_response(BookwiseError("internal error"), request_id(request))


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(BookwiseError, bookwise_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, validation_error)  # type: ignore[arg-type]
    app.add_exception_handler(HTTPException, http_error)  # type: ignore[arg-type]
    app.add_exception_handler(Exception, unexpected_error)
