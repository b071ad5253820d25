"""Serving the live generation of an embedded index, in as many processes as want it."""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from bookwise.errors import DiskFullError, IndexCorruptError, IndexNotFoundError, StoreUnavailableError
from bookwise.index.edge.copies import copy_shard
from bookwise.index.edge.generations import generation_names, live_generation, newest_complete, read_current
from bookwise.index.edge.locks import lock_path, locked, remove_stale_copies
from bookwise.index.faults import ensure_free_space, read_only, used_bytes, warn
from bookwise.index.store import (
    DENSE,
    SPARSE,
    Filters,
    Hit,
    HybridHits,
    HybridQuery,
    IndexManifest,
    unmatched_terms,
)


def edge_filter(filters: Filters | None) -> qe.Filter | None:
    if not filters:
        return None
    conditions: list[Any] = []
    for key, values in filters.items():
        if values:
            conditions.append(qe.FieldCondition(key=key, match=qe.MatchAny(any=list(values))))
    return qe.Filter(must=conditions) if conditions else None


@dataclass
class _Loaded:
    """One open generation: its shard, the private copy it may come from, and the locks that pin it.

    ``locks``: the generation directory, shared (pruning skips a generation while it is held); then
    either the shard directory, exclusive (this process serves the shard where it lies), or the
    private copy's directory, exclusive (it is in use: not stale).
    """

    generation: str
    manifest: IndexManifest
    shard: qe.EdgeShard
    locks: list[int]
    copy: Path | None = None
    in_place: Path | None = None  # the generation directory, when the shard is opened where it lies
    users: int = 0  # queries running on it: a retired generation closes when the last one ends
    retired: bool = False

    def close(self) -> None:
        try:
            if self.in_place is not None:
                # Closing rewrites some of the shard's files: a process copying it waits.
                with locked(self.in_place / "manifest.json", fcntl.LOCK_EX):
                    self.shard.close()
            else:
                self.shard.close()
        finally:
            if self.copy is not None:
                shutil.rmtree(self.copy, ignore_errors=True)
            for fd in reversed(self.locks):
                os.close(fd)
            self.locks = []


class EdgeReader:
    """Serves the live generation and follows CURRENT on ``refresh``.

    Edge's WAL admits one opener per shard: the first process opens a generation where it lies (and
    holds the shard directory's lock to say so); every other process (more API workers, a
    ``bookwise search`` beside ``bookwise serve``) serves a private copy under ``index/readers``,
    removed when it closes, or by the next reader or ingest if its process died. A read-only data
    dir is served from a copy in the temporary directory (Edge opens a shard read-write).
    """

    def __init__(self, root: Path, min_free_bytes: int = 0) -> None:
        """``min_free_bytes``: a shard is not opened on a fuller disk (opening one writes to it)."""
        self._root = root
        self._min_free_bytes = min_free_bytes
        self._lock = threading.Lock()  # guards _live and the users counts
        self._refreshing = threading.Lock()  # one load at a time
        self._live: _Loaded | None = None
        self._generation = ""
        self._manifest: IndexManifest | None = None
        self._fault = ""  # the fault last logged: logged once, not at every refresh
        if not self.refresh():
            if generation_names(root) or (root / "CURRENT").exists():
                raise IndexCorruptError(
                    f"no complete index generation in {root} (a crashed ingest or a corrupt manifest): "
                    "rebuild it with `bookwise ingest --reindex`"
                )
            raise IndexNotFoundError(f"no index in {root}: run `bookwise ingest` first")

    @property
    def manifest(self) -> IndexManifest:
        assert self._manifest is not None
        return self._manifest

    def refresh(self) -> bool:
        with self._refreshing:
            return self._refresh()

    def _refresh(self) -> bool:
        target = self._target()
        if target is None:
            return self._live is not None
        generation, manifest = target
        if generation == self._generation:
            return True
        try:
            loaded = self._load(generation, manifest)
        except Exception as exc:  # the binding raises plain exceptions
            if self._live is None:
                if isinstance(exc, DiskFullError):
                    raise
                raise StoreUnavailableError(f"cannot open index generation {generation}: {exc}") from exc
            code = exc.code if isinstance(exc, DiskFullError) else "index_generation_unloadable"
            self._note(code, f"cannot open generation {generation} ({exc})")
            return True
        with self._lock:
            old, self._live = self._live, loaded
            self._generation, self._manifest = generation, manifest
            if old is not None:
                old.retired = True  # queries running on it finish there; new ones use the new shard
            idle = old is not None and old.users == 0
        if old is not None and idle:
            old.close()  # its locks go with it: the next ingest may prune it
        return True

    def _load(self, generation: str, manifest: IndexManifest) -> _Loaded:
        directory = self._root / "generations" / generation
        pin = lock_path(directory, fcntl.LOCK_SH | fcntl.LOCK_NB)
        if pin is None:  # an ingest is pruning it (never the live generation, so rarely wanted)
            raise StoreUnavailableError(f"generation {generation} is being removed")
        try:
            if read_only(directory / "shard"):
                return self._load_read_only(directory, manifest, pin)
            # Opening a shard writes to its WAL through memory maps: on a full disk, a SIGBUS.
            ensure_free_space(
                self._root,
                self._min_free_bytes,
                f"opening index generation {generation}",
                then="retry (a running server retries by itself)",
            )
            claim = lock_path(directory / "shard", fcntl.LOCK_EX | fcntl.LOCK_NB)
            if claim is not None:
                try:
                    # Opening rewrites some of the shard's files: a process copying it waits.
                    with locked(directory / "manifest.json", fcntl.LOCK_EX):
                        shard = qe.EdgeShard.load(str(directory / "shard"))
                    return _Loaded(generation, manifest, shard, [pin, claim], in_place=directory)
                except Exception as exc:
                    os.close(claim)
                    if "WouldBlock" not in str(exc):  # else its WAL is held by a process of an older
                        raise  # release, which takes no claim: served from a copy like any other
            return self._load_private_copy(directory, manifest, pin)
        except BaseException:
            os.close(pin)
            raise

    def _load_read_only(self, directory: Path, manifest: IndexManifest, pin: int) -> _Loaded:
        generation = directory.name
        copy = Path(tempfile.mkdtemp(prefix=f"bookwise-{generation}-"))
        try:
            copy_shard(directory / "shard", copy / "shard")
            shard = qe.EdgeShard.load(str(copy / "shard"))
        except BaseException:
            shutil.rmtree(copy, ignore_errors=True)
            raise
        self._note(
            "data_dir_read_only",
            f"{self._root} is read-only: serving a copy of {generation} from {copy / 'shard'}",
        )
        return _Loaded(generation, manifest, shard, [pin], copy=copy)

    def _load_private_copy(self, directory: Path, manifest: IndexManifest, pin: int) -> _Loaded:
        generation = directory.name
        ensure_free_space(
            self._root,
            self._min_free_bytes,
            f"copying index generation {generation} for this process",
            needed_bytes=used_bytes(directory / "shard"),
            then="retry (a running server retries by itself)",
        )
        readers = self._root / "readers"
        readers.mkdir(exist_ok=True)
        remove_stale_copies(self._root)
        with locked(readers, fcntl.LOCK_EX):  # locked before remove_stale_copies may look
            copy = Path(tempfile.mkdtemp(prefix=f"{generation}.{os.getpid()}.", dir=readers))
            owner = lock_path(copy, fcntl.LOCK_EX)
        assert owner is not None  # a blocking lock on a directory nobody else knows yet
        try:
            with locked(directory / "manifest.json", fcntl.LOCK_SH):  # not while the opener rewrites
                copy_shard(directory / "shard", copy / "shard")
            shard = qe.EdgeShard.load(str(copy / "shard"))
        except BaseException:
            shutil.rmtree(copy, ignore_errors=True)
            os.close(owner)
            raise
        return _Loaded(generation, manifest, shard, [pin, owner], copy=copy)

    def _target(self) -> tuple[str, IndexManifest] | None:
        """The generation to serve, or None to keep the loaded one (or to have none)."""
        current, fault = read_current(self._root)
        if current is not None and current == self._generation:
            self._fault = ""
            return None  # unchanged: the common case, one small read
        current, manifest, fault = live_generation(self._root)
        if current is not None and manifest is not None:
            self._fault = ""
            return current, manifest
        if fault is None:
            return None  # nothing ingested yet
        code, message = fault
        repair = "`bookwise ingest` repairs CURRENT"
        if self._live is not None and (self._root / "generations" / self._generation).is_dir():
            self._note(code, f"{message}; still serving the loaded generation {self._generation}; {repair}")
            return None
        found = newest_complete(self._root, skip=current)
        if found is not None:
            self._note(code, f"{message}; serving the newest complete generation {found[0]}; {repair}")
        return found

    def _note(self, code: str, message: str) -> None:
        if message != self._fault:
            self._fault = message
            warn(code, message)

    @contextmanager
    def _shard(self) -> Iterator[qe.EdgeShard]:
        """The live shard for one query: a switch meanwhile closes the old one only after it."""
        with self._lock:
            loaded = self._live
            if loaded is None:
                raise StoreUnavailableError("the index reader is closed")
            loaded.users += 1
        try:
            yield loaded.shard
        finally:
            with self._lock:
                loaded.users -= 1
                idle = loaded.retired and loaded.users == 0
            if idle:
                loaded.close()

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
        probes = [
            qe.QueryRequest(
                limit=1,
                query=qe.Query.Nearest(qe.SparseVector([term], [1.0]), using=SPARSE),
                filter=flt,
                with_payload=False,
            )
            for term in query.probe_terms
        ]
        fused = qe.QueryRequest(
            limit=query.limit,
            prefetches=channels,
            query=qe.Fusion.Rrf(k=query.rrf_k, weights=weights),  # type: ignore[arg-type]  # stub lacks it
            filter=flt,
            with_payload=True,
        )
        # One planned batch: the channels' own rankings come with the fused one at little extra cost.
        with self._shard() as shard:
            results = shard.query_batch(qe.QueryBatchRequest([fused, *requests, *probes]))
        fused_hits = [Hit(str(p.id), float(p.score), dict(p.payload or {})) for p in results[0]]
        channels_end = 1 + len(requests)
        ranked = [[Hit(str(p.id), float(p.score), {}) for p in points] for points in results[1:channels_end]]
        unmatched = unmatched_terms(query.probe_terms, [bool(points) for points in results[channels_end:]])
        return HybridHits(fused_hits, ranked[0], ranked[1] if len(ranked) > 1 else [], unmatched)

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
        with self._shard() as shard:  # every page from the same generation
            while True:
                records, offset = shard.scroll(
                    qe.ScrollRequest(offset=offset, limit=256, filter=flt, with_payload=True)
                )
                found.extend(Hit(str(r.id), 0.0, dict(r.payload or {})) for r in records)
                if offset is None:
                    return found

    def close(self) -> None:
        with self._refreshing, self._lock:  # a refresh under way would open a shard after this
            loaded, self._live = self._live, None
            if loaded is not None:
                loaded.retired = True
            idle = loaded is not None and loaded.users == 0
        if loaded is not None and idle:
            loaded.close()  # else the last query running on it closes it
