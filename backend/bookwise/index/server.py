"""A Qdrant server (or cluster) through qdrant-client: blue/green collections behind an alias.

Each ingest writes ``<alias>__<generation>``; one ``update_collection_aliases`` call moves the alias,
which Qdrant applies atomically. The manifest lives in the collection's metadata and the chunk
hashes in the points' payloads. ``QdrantClient(":memory:")`` runs the same code in tests.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from qdrant_client import QdrantClient, models
from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

from bookwise.errors import IndexNotFoundError, StoreUnavailableError
from bookwise.index.store import (
    DENSE,
    INTEGER_FIELDS,
    KEYWORD_FIELDS,
    SPARSE,
    Filters,
    Hit,
    HybridHits,
    HybridQuery,
    IndexManifest,
    IndexPoint,
    unmatched_terms,
)

BATCH = 256
_UNAVAILABLE = (ResponseHandlingException, UnexpectedResponse, ConnectionError, TimeoutError)


def client_filter(filters: Filters | None) -> models.Filter | None:
    if not filters:
        return None
    must: list[Any] = [
        models.FieldCondition(key=key, match=models.MatchAny(any=list(values)))
        for key, values in filters.items()
        if values
    ]
    return models.Filter(must=must) if must else None


class ServerReader:
    def __init__(self, store: QdrantServerStore) -> None:
        self._store = store
        self._manifest: IndexManifest | None = None
        if not self.refresh():
            raise IndexNotFoundError(
                f"no collection behind alias {store.alias!r}: run `bookwise ingest` first"
            )

    @property
    def manifest(self) -> IndexManifest:
        assert self._manifest is not None
        return self._manifest

    def refresh(self) -> bool:
        # The alias itself moves atomically on the server; only the manifest needs re-reading.
        manifest = self._store.live_manifest(with_chunks=False)
        if manifest is None:
            return False
        self._manifest = manifest
        return True

    def hybrid(self, query: HybridQuery) -> HybridHits:
        flt = client_filter(query.filters)
        channels = [models.Prefetch(query=query.dense, using=DENSE, limit=query.prefetch, filter=flt)]
        if query.sparse.indices:
            sparse = models.SparseVector(indices=query.sparse.indices, values=query.sparse.values)
            channels.append(models.Prefetch(query=sparse, using=SPARSE, limit=query.prefetch, filter=flt))
        fused = models.QueryRequest(
            prefetch=channels,
            query=models.RrfQuery(
                rrf=models.Rrf(k=query.rrf_k, weights=list(query.weights[: len(channels)]))
            ),
            filter=flt,
            limit=query.limit,
            with_payload=True,
        )
        requests = [fused] + [
            models.QueryRequest(
                query=c.query, using=c.using, filter=flt, limit=query.prefetch, with_payload=False
            )
            for c in channels
        ]
        probes = [
            models.QueryRequest(
                query=models.SparseVector(indices=[term], values=[1.0]),
                using=SPARSE,
                filter=flt,
                limit=1,
                with_payload=False,
            )
            for term in query.probe_terms
        ]
        try:
            responses = self._store.client.query_batch_points(self._store.alias, requests + probes)
        except _UNAVAILABLE as exc:
            raise StoreUnavailableError(f"Qdrant query failed: {exc}") from exc
        fused_hits = [Hit(str(p.id), float(p.score), dict(p.payload or {})) for p in responses[0].points]
        channels_end = len(requests)
        ranked = [[Hit(str(p.id), float(p.score), {}) for p in r.points] for r in responses[1:channels_end]]
        unmatched = unmatched_terms(query.probe_terms, [bool(r.points) for r in responses[channels_end:]])
        return HybridHits(fused_hits, ranked[0], ranked[1] if len(ranked) > 1 else [], unmatched)

    def section_chunks(self, section_ids: list[str]) -> list[Hit]:
        if not section_ids:
            return []
        return self._scroll(client_filter({"section_id": section_ids}))

    def all_chunks(self) -> list[Hit]:
        return self._scroll(None)

    def _scroll(self, flt: Any) -> list[Hit]:
        found: list[Hit] = []
        offset: Any = None
        try:
            while True:
                records, offset = self._store.client.scroll(
                    self._store.alias, scroll_filter=flt, limit=256, offset=offset, with_payload=True
                )
                found.extend(Hit(str(r.id), 0.0, dict(r.payload or {})) for r in records)
                if offset is None:
                    return found
        except _UNAVAILABLE as exc:
            raise StoreUnavailableError(f"Qdrant scroll failed: {exc}") from exc

    def close(self) -> None:
        pass


class QdrantServerStore:
    def __init__(self, client: QdrantClient, alias: str) -> None:
        self.client = client
        self.alias = alias

    def _live_collection(self) -> str | None:
        try:
            for description in self.client.get_aliases().aliases:
                if description.alias_name == self.alias:
                    return description.collection_name
        except _UNAVAILABLE as exc:
            raise StoreUnavailableError(f"Qdrant is unreachable: {exc}") from exc
        return None

    def live_manifest(self, with_chunks: bool = True) -> IndexManifest | None:
        collection = self._live_collection()
        if collection is None:
            return None
        metadata = self.client.get_collection(collection).config.metadata or {}
        manifest = IndexManifest.from_dict(json.loads(str(metadata.get("bookwise_manifest", "{}"))))
        if with_chunks:
            offset: Any = None
            while True:
                records, offset = self.client.scroll(
                    collection,
                    limit=1024,
                    offset=offset,
                    with_payload=["content_hash", "payload_hash", "ingested_at"],
                )
                for record in records:
                    p = record.payload or {}
                    manifest.chunks[str(record.id)] = [p["content_hash"], p["payload_hash"], p["ingested_at"]]
                if offset is None:
                    break
        elif not manifest.points:  # written before manifests carried their count: ask the server
            manifest.points = self.client.count(collection, exact=True).count
        return manifest

    def pointer_ok(self) -> bool:
        return True  # Qdrant moves the alias atomically: there is no pointer file to break

    def fetch_dense(self, ids: list[str]) -> dict[str, list[float]]:
        collection = self._live_collection()
        if collection is None or not ids:
            return {}
        found: dict[str, list[float]] = {}
        for start in range(0, len(ids), BATCH):
            for record in self.client.retrieve(collection, ids[start : start + BATCH], with_vectors=[DENSE]):
                vector = record.vector.get(DENSE) if isinstance(record.vector, dict) else None
                if isinstance(vector, list):
                    found[str(record.id)] = [float(v) for v in vector]  # type: ignore[arg-type]
        return found

    def write_generation(self, manifest: IndexManifest, points: Iterable[IndexPoint]) -> None:
        name = f"{self.alias}__{manifest.generation}"
        metadata = {"bookwise_manifest": json.dumps(manifest.summary() | {"chunks": {}})}
        try:
            self.client.create_collection(
                name,
                vectors_config={
                    DENSE: models.VectorParams(size=manifest.dim, distance=models.Distance.COSINE)
                },
                sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
                metadata=metadata,
            )
            for field in KEYWORD_FIELDS:
                self.client.create_payload_index(name, field, models.PayloadSchemaType.KEYWORD)
            for field in INTEGER_FIELDS:
                self.client.create_payload_index(name, field, models.PayloadSchemaType.INTEGER)
            batch: list[models.PointStruct] = []
            for point in points:
                vector: dict[str, Any] = {
                    DENSE: point.dense,
                    SPARSE: models.SparseVector(indices=point.sparse.indices, values=point.sparse.values),
                }
                batch.append(models.PointStruct(id=point.id, vector=vector, payload=point.payload))
                if len(batch) >= BATCH:
                    self.client.upsert(name, batch, wait=True)
                    batch = []
            if batch:
                self.client.upsert(name, batch, wait=True)
            operations: list[Any] = []
            if self._live_collection() is not None:
                operations.append(
                    models.DeleteAliasOperation(delete_alias=models.DeleteAlias(alias_name=self.alias))
                )
            operations.append(
                models.CreateAliasOperation(
                    create_alias=models.CreateAlias(collection_name=name, alias_name=self.alias)
                )
            )
            self.client.update_collection_aliases(change_aliases_operations=operations)
        except BaseException as exc:
            # Never leave a half-built collection behind; the alias still points at the old one.
            try:
                self.client.delete_collection(name)
            except Exception:  # the original error is the one to report
                pass
            if isinstance(exc, _UNAVAILABLE):
                raise StoreUnavailableError(f"writing to Qdrant failed: {exc}") from exc
            raise

    def remove_half_built(self) -> list[str]:
        return []  # a failed write deletes its collection; one a crash left is pruned once it is old

    def prune(self, keep: int) -> list[str]:
        """Collections older than the live one beyond ``keep``: newer ones are being written by another
        ingest or were left by a crash (pruned once a later switch makes them old), never the last good."""
        live = self._live_collection()
        if live is None:
            return []
        prefix = f"{self.alias}__"
        names = sorted(c.name for c in self.client.get_collections().collections if c.name.startswith(prefix))
        older = [n for n in names if n < live]
        removed = older[: max(len(older) - (keep - 1), 0)]
        for name in removed:
            self.client.delete_collection(name)
        return removed

    def open_reader(self) -> ServerReader:
        return ServerReader(self)

    def close(self) -> None:
        self.client.close()
