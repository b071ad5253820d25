"""The embedded default: Qdrant Edge (the Qdrant engine in-process), one shard per generation.

Layout under ``<data_dir>/index``::

    CURRENT                         {"generation": "..."}: replaced atomically (rename) to switch
    generations/<gen>/shard/        the Edge shard (segments, WAL)
    generations/<gen>/manifest.json model, dimension, chunk hashes (Edge has no collection metadata)
    ingest.lock                     one writer at a time

A generation is complete (shard flushed and closed, manifest written) before CURRENT points at it, so
readers see the old index or the new one, never a mix; an interrupted ingest leaves only garbage
that the next prune removes.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

import qdrant_edge as qe

from bookwise.errors import IndexBusyError, IndexNotFoundError, StoreUnavailableError
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
)

BATCH = 512


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def edge_filter(filters: Filters | None) -> qe.Filter | None:
    if not filters:
        return None
    conditions: list[Any] = []
    for key, values in filters.items():
        if values:
            conditions.append(qe.FieldCondition(key=key, match=qe.MatchAny(any=list(values))))
    return qe.Filter(must=conditions) if conditions else None


class EdgeReader:
    def __init__(self, root: Path) -> None:
        self._root = root
        self._lock = threading.Lock()
        self._shard: qe.EdgeShard | None = None
        self._retired: qe.EdgeShard | None = None  # closed one switch later: in-flight queries finish
        self._generation = ""
        self._manifest: IndexManifest | None = None
        if not self.refresh():
            raise IndexNotFoundError(f"no index in {root}: run `bookwise ingest` first")

    @property
    def manifest(self) -> IndexManifest:
        assert self._manifest is not None
        return self._manifest

    def refresh(self) -> bool:
        generation = EdgeStore.current_generation(self._root)
        if generation is None or generation == self._generation:
            return self._shard is not None
        directory = self._root / "generations" / generation
        manifest = IndexManifest.from_dict(json.loads((directory / "manifest.json").read_text("utf-8")))
        try:
            shard = qe.EdgeShard.load(str(directory / "shard"))
        except Exception as exc:  # the binding raises plain exceptions
            raise StoreUnavailableError(f"cannot open index generation {generation}: {exc}") from exc
        with self._lock:
            if self._retired is not None:
                self._retired.close()
            self._retired, self._shard = self._shard, shard
            self._generation, self._manifest = generation, manifest
        return True

    def _current(self) -> qe.EdgeShard:
        shard = self._shard
        if shard is None:
            raise StoreUnavailableError("the index reader is closed")
        return shard

    def hybrid(self, query: HybridQuery) -> HybridHits:
        flt = edge_filter(query.filters)
        dense = qe.Query.Nearest(query.dense, using=DENSE)
        channels = [qe.Prefetch(limit=query.prefetch, query=dense, filter=flt)]
        requests = [qe.QueryRequest(limit=query.prefetch, query=dense, filter=flt, with_payload=False)]
        if query.sparse.indices:
            sparse = qe.Query.Nearest(
                qe.SparseVector(query.sparse.indices, query.sparse.values), using=SPARSE
            )
            channels.append(qe.Prefetch(limit=query.prefetch, query=sparse, filter=flt))
            requests.append(
                qe.QueryRequest(limit=query.prefetch, query=sparse, filter=flt, with_payload=False)
            )
        weights = list(query.weights[: len(channels)])
        fused = qe.QueryRequest(
            limit=query.limit,
            prefetches=channels,
            query=qe.Fusion.Rrf(k=query.rrf_k, weights=weights),  # type: ignore[arg-type]  # stub lacks it
            filter=flt,
            with_payload=True,
        )
        # One planned batch: the channels' own rankings come with the fused one at little extra cost.
        results = self._current().query_batch(qe.QueryBatchRequest([fused, *requests]))
        fused_hits = [Hit(str(p.id), float(p.score), dict(p.payload or {})) for p in results[0]]
        ranked = [[Hit(str(p.id), float(p.score), {}) for p in points] for points in results[1:]]
        return HybridHits(fused_hits, ranked[0], ranked[1] if len(ranked) > 1 else [])

    def section_chunks(self, section_ids: list[str]) -> list[Hit]:
        if not section_ids:
            return []
        return self._scroll(
            qe.Filter(must=[qe.FieldCondition(key="section_id", match=qe.MatchAny(any=section_ids))])
        )

    def all_chunks(self) -> list[Hit]:
        return self._scroll(None)

    def _scroll(self, flt: qe.Filter | None) -> list[Hit]:
        found: list[Hit] = []
        offset: Any = None
        while True:
            records, offset = self._current().scroll(
                qe.ScrollRequest(offset=offset, limit=256, filter=flt, with_payload=True)
            )
            found.extend(Hit(str(r.id), 0.0, dict(r.payload or {})) for r in records)
            if offset is None:
                return found

    def close(self) -> None:
        with self._lock:
            for shard in (self._shard, self._retired):
                if shard is not None:
                    shard.close()
            self._shard = self._retired = None


class EdgeStore:
    def __init__(self, data_dir: Path) -> None:
        self.root = data_dir / "index"
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock_file: IO[str] | None = None  # taken by the first write; readers never take it

    @staticmethod
    def current_generation(root: Path) -> str | None:
        try:
            return str(json.loads((root / "CURRENT").read_text("utf-8"))["generation"])
        except FileNotFoundError:
            return None
        except (ValueError, KeyError) as exc:
            raise StoreUnavailableError(f"{root / 'CURRENT'} is corrupt: {exc}") from exc

    def _acquire(self) -> None:
        if self._lock_file is not None:
            return
        handle = open(self.root / "ingest.lock", "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            handle.close()
            raise IndexBusyError(f"another ingest is writing {self.root}") from exc
        self._lock_file = handle

    def live_manifest(self) -> IndexManifest | None:
        generation = self.current_generation(self.root)
        if generation is None:
            return None
        path = self.root / "generations" / generation / "manifest.json"
        return IndexManifest.from_dict(json.loads(path.read_text("utf-8")))

    def fetch_dense(self, ids: list[str]) -> dict[str, list[float]]:
        return {}  # the embedding cache beside the index serves unchanged chunks

    def write_generation(self, manifest: IndexManifest, points: Iterable[IndexPoint]) -> None:
        self._acquire()
        directory = self.root / "generations" / manifest.generation
        if directory.exists():
            shutil.rmtree(directory)
        directory.mkdir(parents=True)
        config = qe.EdgeConfig(
            vectors={DENSE: qe.EdgeVectorParams(size=manifest.dim, distance=qe.Distance.Cosine)},
            sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        )
        try:
            self._build_shard(directory / "shard", config, points)
            _write_atomic(directory / "manifest.json", manifest.to_json())
        except BaseException:
            # A half-built generation is never made current: remove it so it cannot be mistaken for one.
            shutil.rmtree(directory, ignore_errors=True)
            raise
        _write_atomic(self.root / "CURRENT", json.dumps({"generation": manifest.generation}))

    @staticmethod
    def _build_shard(path: Path, config: qe.EdgeConfig, points: Iterable[IndexPoint]) -> None:
        shard = qe.EdgeShard.create(str(path), config)
        try:
            for name in KEYWORD_FIELDS:
                shard.update(qe.UpdateOperation.create_field_index(name, qe.PayloadSchemaType.Keyword))
            for name in INTEGER_FIELDS:
                shard.update(qe.UpdateOperation.create_field_index(name, qe.PayloadSchemaType.Integer))
            batch: list[qe.Point] = []
            for point in points:
                vector = {
                    DENSE: point.dense,
                    SPARSE: qe.SparseVector(point.sparse.indices, point.sparse.values),
                }
                batch.append(qe.Point(id=point.id, vector=vector, payload=point.payload))  # type: ignore[arg-type]
                if len(batch) >= BATCH:
                    shard.update(qe.UpdateOperation.upsert_points(batch))
                    batch = []
            if batch:
                shard.update(qe.UpdateOperation.upsert_points(batch))
            shard.optimize()
            shard.flush()
        finally:
            shard.close()

    def prune(self, keep: int) -> list[str]:
        self._acquire()
        current = self.current_generation(self.root)
        generations = self.root / "generations"
        if not generations.is_dir():
            return []
        names = sorted(p.name for p in generations.iterdir() if p.is_dir())
        kept = set(names[-keep:]) | ({current} if current else set())
        removed = [n for n in names if n not in kept]
        for name in removed:
            shutil.rmtree(generations / name, ignore_errors=True)
        return removed

    def open_reader(self) -> EdgeReader:
        return EdgeReader(self.root)

    def close(self) -> None:
        if self._lock_file is not None:
            fcntl.flock(self._lock_file, fcntl.LOCK_UN)
            self._lock_file.close()
            self._lock_file = None
