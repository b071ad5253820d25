"""FastAPI dependencies: the app's shared services and the request's own id and client."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from bookwise.api.services import Services
from bookwise.retrieval.retriever import Retriever


def services(request: Request) -> Services:
    found: Services = request.app.state.services
    return found


def request_id(request: Request) -> str:
    """Set by the Guard: always a new one (a client's ``X-Request-ID`` is only logged and echoed)."""
    return str(getattr(request.state, "request_id", ""))


def client(request: Request) -> str:
    """The client's address as the Guard decided it (trusted proxies' ``X-Forwarded-For``)."""
    return str(request.state.client_ip)


async def retriever(shared: Annotated[Services, Depends(services)]) -> Retriever:
    return await shared.index.get()


ServicesDep = Annotated[Services, Depends(services)]
RequestId = Annotated[str, Depends(request_id)]


def reader(request: Request) -> str:
    """The anonymous per-browser id the widget sent (``X-Bookwise-Reader``), "" without one."""
    return str(getattr(request.state, "reader", ""))


Client = Annotated[str, Depends(client)]
Reader = Annotated[str, Depends(reader)]
RetrieverDep = Annotated[Retriever, Depends(retriever)]
