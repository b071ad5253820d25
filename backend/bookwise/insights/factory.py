"""Open the insights store named by the settings: a PostgreSQL URL, or else the path of a SQLite file."""

from __future__ import annotations

from pathlib import Path

from bookwise.insights.sqlite import SqliteStore
from bookwise.insights.store import Store

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
DEFAULT_CONNECT_TIMEOUT_S = 5.0


def is_postgres_url(target: str | Path) -> bool:
    return isinstance(target, str) and target.startswith(POSTGRES_SCHEMES)


def open_insights_store(
    target: str | Path,
    *,
    max_bytes: int | None = None,
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
) -> Store:
    """Open (creating and migrating if needed) the store at ``target``.

    ``target`` is a ``postgresql://`` URL, or the path of a SQLite file (created with its folder).
    ``max_bytes`` caps a SQLite file's used space (the oldest rows are deleted first); PostgreSQL's
    space is its operator's to manage, with the retention setting.
    """
    if is_postgres_url(target):
        from bookwise.insights.postgres import PostgresStore  # psycopg is loaded only when used

        return PostgresStore(str(target), connect_timeout_s=connect_timeout_s)
    return SqliteStore(Path(target), max_bytes=max_bytes, busy_timeout_s=connect_timeout_s)
