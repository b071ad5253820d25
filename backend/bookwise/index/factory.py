"""Pick the index backend from settings: a Qdrant server by URL, else the embedded Edge engine."""

from __future__ import annotations

from bookwise.index.edge.store import EdgeStore
from bookwise.index.faults import MB
from bookwise.index.store import IndexStore
from bookwise.settings import IndexSettings


def open_store(settings: IndexSettings) -> IndexStore:
    if settings.qdrant_url:
        # Imported here: qdrant-client takes seconds to import, and the embedded store never needs it.
        from qdrant_client import QdrantClient

        from bookwise.index.server import QdrantServerStore

        if settings.qdrant_url == ":memory:":  # in-process, for tests and experiments
            client = QdrantClient(":memory:")
        else:
            key = settings.qdrant_api_key.get_secret_value() if settings.qdrant_api_key else None
            client = QdrantClient(
                url=settings.qdrant_url,
                api_key=key,
                timeout=int(settings.qdrant_timeout_s),
                # The version probe runs in a background thread whose failure only warns; an
                # unreachable server is reported by the first real call instead, as a clear error.
                check_compatibility=False,
            )
        return QdrantServerStore(client, settings.qdrant_collection)
    return EdgeStore(settings.data_dir, min_free_bytes=settings.min_free_disk_mb * MB)
