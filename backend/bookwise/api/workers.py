"""`bookwise serve --workers N`: what each uvicorn worker process imports.

uvicorn spawns its workers, so the app and the HTTP protocol class reach them as import strings,
not objects. Each worker reads the settings once (the environment and ``bookwise.toml`` it
inherited) and builds both from them: the same app, limits and guarded h11 protocol as a single
``bookwise serve``, per process. The worker processes share the listening socket (the kernel
spreads connections among them) and the index on disk (see ``bookwise.index.edge``).
"""

from __future__ import annotations

import functools
from typing import Any

from fastapi import FastAPI
from pydantic import ValidationError

from bookwise.api.app import create_app
from bookwise.api.logs import configure_logging
from bookwise.api.server import protocol_class
from bookwise.settings import Settings, describe_settings_error

WORKER_APP = "bookwise.api.workers:create_app_from_env"  # with uvicorn's factory=True
WORKER_PROTOCOL = "bookwise.api.workers:GuardedH11Protocol"


@functools.cache
def worker_settings() -> Settings:
    """This process's settings, read once. Invalid ones (a ``bookwise.toml`` edited since the parent
    checked it) end the worker with the CLI's one line per setting: pydantic's own message would
    echo the input, and some settings are secrets."""
    try:
        return Settings()
    except ValidationError as error:
        raise SystemExit(f"bookwise: invalid settings:\n{describe_settings_error(error)}") from None


def create_app_from_env() -> FastAPI:
    configure_logging()  # a spawned worker starts with Python's defaults: JSON lines, as the parent
    return create_app(worker_settings())


@functools.cache
def _protocol() -> type:
    return protocol_class(worker_settings())


def __getattr__(name: str) -> Any:
    # The protocol class holds this process's connection caps, built from its settings on first
    # use (uvicorn looks it up before it calls the app factory).
    if name == "GuardedH11Protocol":
        return _protocol()
    raise AttributeError(name)
