from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bookwise.insights.sql import SqlStore
from bookwise.insights.store import open_store
from pgserver import PostgresServer


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str | Path:
    """Where a store lives: a SQLite file, or a new database on the session's real PostgreSQL."""
    if request.param == "sqlite":
        return tmp_path / "insights.sqlite3"
    server: PostgresServer = request.getfixturevalue("postgres")
    return server.create_database()


@pytest.fixture
def store(target: str | Path) -> Iterator[SqlStore]:
    opened = open_store(target)
    assert isinstance(opened, SqlStore)
    try:
        yield opened
    finally:
        opened.close()
