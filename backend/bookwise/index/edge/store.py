"""Writing an embedded index: each ingest builds a new generation beside the live one, marks it
complete and switches CURRENT to it; one writer at a time (``ingest.lock``)."""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO

import qdrant_edge as qe

from bookwise.errors import IndexBusyError, IndexCorruptError
from bookwise.index.edge.generations import (
    complete_manifest,
    fsync_dir,
    generation_names,
    live_generation,
    mark_complete,
    newest_complete,
    read_current,
    write_current,
)
from bookwise.index.edge.locks import lock_path, remove_stale_copies
from bookwise.index.edge.reader import EdgeReader
from bookwise.index.faults import disk_full_error, ensure_free_space, is_disk_full, used_bytes, warn
from bookwise.index.store import DENSE, INTEGER_FIELDS, KEYWORD_FIELDS, SPARSE, IndexManifest, IndexPoint

BATCH = 512


class EdgeStore:
    def __init__(self, data_dir: Path, *, min_free_bytes: int = 0) -> None:
        """``min_free_bytes``: the free space an ingest keeps on the disk (``BOOKWISE_MIN_FREE_DISK_MB``)."""
        self.root = data_dir / "index"
        self.root.mkdir(parents=True, exist_ok=True)
        self.min_free_bytes = min_free_bytes
        self._lock_file: IO[str] | None = None  # taken by the first write; readers never take it
        self._pointer_ok = True
        self._warned: set[str] = set()

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

    def _warn(self, code: str, message: str) -> None:
        if message not in self._warned:
            self._warned.add(message)
            warn(code, message)

    def live_manifest(self) -> IndexManifest | None:
        """The live generation's manifest; if CURRENT is broken, the newest complete generation's."""
        current, manifest, fault = live_generation(self.root)
        self._pointer_ok = fault is None
        if manifest is not None or fault is None:
            return manifest
        code, message = fault
        found = newest_complete(self.root, skip=current)
        if found is None:
            self._warn(code, f"{message}; no complete generation is left: the ingest rebuilds the index")
            return None
        self._warn(code, f"{message}; the ingest starts from the newest complete generation {found[0]}")
        return found[1]

    def pointer_ok(self) -> bool:
        return self._pointer_ok

    def fetch_dense(self, ids: list[str]) -> dict[str, list[float]]:
        return {}  # the embedding cache beside the index serves unchanged chunks

    def write_generation(
        self,
        manifest: IndexManifest,
        points: Iterable[IndexPoint],
        *,
        attach: Callable[[Path], None] | None = None,
    ) -> None:
        """``attach(directory)`` writes what travels with the generation (the exported embedding
        model, the passage vectors) into its directory, before the generation is marked complete."""
        self.remove_half_built()  # a crashed ingest's leftovers: their space is needed first
        current, _ = read_current(self.root)
        live = self.root / "generations" / current if current else None
        ensure_free_space(  # the new generation will take about as much as the live one
            self.root,
            self.min_free_bytes,
            "writing a new index generation",
            needed_bytes=used_bytes(live) if live is not None and live.is_dir() else 0,
        )
        directory = self.root / "generations" / manifest.generation
        if directory.exists():
            shutil.rmtree(directory)
        directory.mkdir(parents=True)
        config = qe.EdgeConfig(
            vectors={DENSE: qe.EdgeVectorParams(size=manifest.dim, distance=qe.Distance.Cosine)},
            sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        )
        try:
            self._build_shard(directory / "shard", config, points, self._check_space)
            if attach is not None:
                attach(directory)
            mark_complete(directory, manifest)
        except BaseException as exc:
            # A half-built generation is never made current: remove it so it cannot be mistaken for one.
            shutil.rmtree(directory, ignore_errors=True)
            if isinstance(exc, Exception) and is_disk_full(exc):
                raise disk_full_error(self.root, exc) from exc
            raise
        try:
            write_current(self.root, manifest.generation)
        except OSError as exc:  # the new generation is complete but not live: the old one still is
            if is_disk_full(exc):
                raise disk_full_error(self.root, exc) from exc
            raise
        self._pointer_ok = True

    def install_generation(self, staged: Path) -> IndexManifest:
        """Make a complete generation built elsewhere (an upload unpacked into ``staged``, on this
        index's disk) the live one, as an ingest makes its own: moved under ``generations`` by one
        rename, then CURRENT switched. Takes the write lock."""
        self._acquire()
        manifest = complete_manifest(staged)
        if manifest is None:
            raise IndexCorruptError(f"{staged} is not a complete index generation")
        directory = self.root / "generations" / manifest.generation
        directory.parent.mkdir(exist_ok=True)
        if directory.exists():  # the same generation again (CI re-publishing): switched back to, if need be
            if complete_manifest(directory) != manifest:
                raise FileExistsError(f"another generation named {manifest.generation} exists")
            shutil.rmtree(staged)
        else:
            os.rename(staged, directory)
            fsync_dir(directory.parent)
        write_current(self.root, manifest.generation)
        self._pointer_ok = True
        return manifest

    def _check_space(self, doing: str = "writing the next batch of the index") -> None:
        ensure_free_space(self.root, self.min_free_bytes, doing)

    @staticmethod
    def _build_shard(
        path: Path, config: qe.EdgeConfig, points: Iterable[IndexPoint], check_space: Callable[[], None]
    ) -> None:
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
                    check_space()  # Edge writes through memory maps: a full disk there is a SIGBUS
                    shard.update(qe.UpdateOperation.upsert_points(batch))
                    batch = []
            check_space()
            if batch:
                shard.update(qe.UpdateOperation.upsert_points(batch))
            check_space()  # optimizing rewrites the segments
            shard.optimize()
            shard.flush()
        finally:
            shard.close()

    def remove_half_built(self) -> list[str]:
        """Generations no ingest will finish (we hold the lock), except the one CURRENT names."""
        self._acquire()
        current, _ = read_current(self.root)
        removed = [
            name
            for name in generation_names(self.root)
            if name != current and complete_manifest(self.root / "generations" / name) is None
        ]
        return [name for name in removed if self._remove_unless_open(name)]

    def _remove_unless_open(self, name: str) -> bool:
        """Remove a generation no reader holds (a reader of any process pins the one it serves,
        and the one it retired until its last query ends): a held one waits for the next ingest."""
        directory = self.root / "generations" / name
        try:
            fd = lock_path(directory, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except FileNotFoundError:
            return False
        if fd is None:
            self._warn("index_generation_in_use", f"kept generation {name}: a reader still has it open")
            return False
        try:
            shutil.rmtree(directory, ignore_errors=True)
        finally:
            os.close(fd)
        return True

    def prune(self, keep: int) -> list[str]:
        """Half-built generations first, then complete ones beyond the ``keep`` newest; never the live
        generation nor the newest complete one, nor one a reader has open."""
        removed = self.remove_half_built()
        current, _ = read_current(self.root)
        complete = [
            name
            for name in generation_names(self.root)
            if complete_manifest(self.root / "generations" / name) is not None
        ]
        kept = set(complete[-max(keep, 1) :]) | ({current} if current else set())
        removed += [name for name in complete if name not in kept and self._remove_unless_open(name)]
        remove_stale_copies(self.root)  # readers' private copies whose process died
        return sorted(removed)

    def open_reader(self) -> EdgeReader:
        return EdgeReader(self.root, self.min_free_bytes)

    def close(self) -> None:
        if self._lock_file is not None:
            fcntl.flock(self._lock_file, fcntl.LOCK_UN)
            self._lock_file.close()
            self._lock_file = None
