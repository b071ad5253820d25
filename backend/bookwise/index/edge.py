"""The embedded default: Qdrant Edge (the Qdrant engine in-process), one shard per generation.

Layout under ``<data_dir>/index``::

    CURRENT                         {"generation": "..."}: replaced atomically (rename) to switch
    generations/<gen>/shard/        the Edge shard (segments, WAL)
    generations/<gen>/manifest.json model, dimension, chunk hashes (Edge has no collection metadata)
    generations/<gen>/COMPLETE      written last, atomically: the manifest's SHA-256
    generations/<gen>/embedder/     the ONNX export of the model queries are embedded with (local MiniLM)
    generations/<gen>/passages.*    the vectors of every section's passages (see index/embedders.py)
    ingest.lock                     one writer at a time
    readers/<gen>.<pid>.<random>/   a process's private copy of a shard another process has open

A generation is *complete* when its ``COMPLETE`` marker matches its manifest (the shard was flushed
and closed before either was written); generations from before the marker, whose manifest was the
last thing written, count as complete when their manifest reads. CURRENT only ever names a complete
generation, so readers see the old index or the new one, never a mix.

Faults of the data directory are survived rather than served as errors: when CURRENT is missing,
corrupt, or names a generation whose manifest is corrupt, a running reader keeps the generation it
has loaded and a starting one (or an ingest) uses the newest complete generation, logging the fault
with its code. Half-built generations left by a crash are removed before the next write, and
pruning never removes the live or the newest complete generation.

Several processes read one index (API workers, ``bookwise search`` beside ``bookwise serve``):
Edge lets one process open a shard, so the others serve private copies (see ``EdgeReader``). Each
reader holds a shared ``flock`` on the generation directory it serves; pruning takes an exclusive
one without waiting and skips the generation when it cannot. Readers never take the ingest lock,
and an ingest never waits for a reader.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import qdrant_edge as qe

from bookwise.errors import (
    DiskFullError,
    IndexBusyError,
    IndexCorruptError,
    IndexNotFoundError,
    StoreUnavailableError,
)
from bookwise.index.faults import (
    disk_full_error,
    ensure_free_space,
    is_disk_full,
    read_only,
    used_bytes,
    warn,
)
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

BATCH = 512
COMPLETE = "COMPLETE"
LAYOUT_KEY = "edge_layout"  # in manifests written with a COMPLETE marker: without one they are half-built
LAYOUT = 2

Fault = tuple[str, str]  # (code, message)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)  # the rename itself survives a power cut


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def complete_manifest(directory: Path) -> IndexManifest | None:
    """The manifest of the generation in ``directory`` if it is complete; None if half-built or corrupt."""
    try:
        raw = (directory / "manifest.json").read_bytes()
        data = json.loads(raw)
        manifest = IndexManifest.from_dict(data)
    except (OSError, ValueError, TypeError, AttributeError):  # missing, not JSON, not a manifest
        return None
    if not (directory / "shard").is_dir():
        return None
    try:
        marker = json.loads((directory / COMPLETE).read_bytes())
    except FileNotFoundError:
        return None if LAYOUT_KEY in data else manifest  # an older layout: the manifest was written last
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict) or marker.get("manifest_sha256") != _digest(raw):
        return None
    return manifest


def read_current(root: Path) -> tuple[str | None, Fault | None]:
    """The generation CURRENT names, and the fault if it is missing (with generations on disk) or corrupt."""
    path = root / "CURRENT"
    try:
        generation = json.loads(path.read_text("utf-8"))["generation"]
        if not isinstance(generation, str) or not generation or "/" in generation:
            raise ValueError(f"not a generation name: {generation!r}")
        return generation, None
    except FileNotFoundError:
        if generation_names(root):
            return None, ("index_current_missing", f"{path} is missing")
        return None, None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return None, ("index_current_corrupt", f"{path} is corrupt ({exc})")


def generation_names(root: Path) -> list[str]:
    """Every generation directory, oldest first (names start with their UTC creation time)."""
    generations = root / "generations"
    if not generations.is_dir():
        return []
    return sorted(p.name for p in generations.iterdir() if p.is_dir())


def newest_complete(root: Path, skip: str | None = None) -> tuple[str, IndexManifest] | None:
    for name in reversed(generation_names(root)):
        manifest = complete_manifest(root / "generations" / name) if name != skip else None
        if manifest is not None:
            return name, manifest
    return None


def live_generation(root: Path) -> tuple[str | None, IndexManifest | None, Fault | None]:
    """The generation CURRENT names and its manifest when it is complete; else the fault."""
    current, fault = read_current(root)
    if current is None:
        return None, None, fault
    manifest = complete_manifest(root / "generations" / current)
    if manifest is None:
        return (
            current,
            None,
            (
                "index_generation_corrupt",
                f"CURRENT names generation {current}, which is missing, half-built or has a corrupt manifest",
            ),
        )
    return current, manifest, None


def edge_filter(filters: Filters | None) -> qe.Filter | None:
    if not filters:
        return None
    conditions: list[Any] = []
    for key, values in filters.items():
        if values:
            conditions.append(qe.FieldCondition(key=key, match=qe.MatchAny(any=list(values))))
    return qe.Filter(must=conditions) if conditions else None


def _lock_path(path: Path, operation: int) -> int | None:
    """An open descriptor of ``path`` holding the ``flock`` asked for; None if another holds it.

    Directories are locked through their own descriptor, so a read-only data dir can be locked too;
    closing the descriptor releases the lock (also when the process dies).
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, operation)
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextmanager
def _locked(path: Path, operation: int) -> Iterator[None]:
    fd = _lock_path(path, operation)
    try:
        yield
    finally:
        if fd is not None:
            os.close(fd)


def remove_stale_copies(root: Path) -> list[str]:
    """Private copies under ``readers`` whose process died (their directory's lock is free)."""
    readers = root / "readers"
    if not readers.is_dir():
        return []
    removed = []
    with _locked(readers, fcntl.LOCK_EX):  # a new copy is locked before anyone may look
        for copy in readers.iterdir():
            try:
                fd = _lock_path(copy, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # removed meanwhile, or not a directory we made
                continue
            if fd is not None:
                shutil.rmtree(copy, ignore_errors=True)
                os.close(fd)
                removed.append(copy.name)
    return removed


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
                with _locked(self.in_place / "manifest.json", fcntl.LOCK_EX):
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
        pin = _lock_path(directory, fcntl.LOCK_SH | fcntl.LOCK_NB)
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
            claim = _lock_path(directory / "shard", fcntl.LOCK_EX | fcntl.LOCK_NB)
            if claim is not None:
                try:
                    # Opening rewrites some of the shard's files: a process copying it waits.
                    with _locked(directory / "manifest.json", fcntl.LOCK_EX):
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
            shutil.copytree(directory / "shard", copy / "shard")
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
        with _locked(readers, fcntl.LOCK_EX):  # locked before remove_stale_copies may look
            copy = Path(tempfile.mkdtemp(prefix=f"{generation}.{os.getpid()}.", dir=readers))
            owner = _lock_path(copy, fcntl.LOCK_EX)
        assert owner is not None  # a blocking lock on a directory nobody else knows yet
        try:
            with _locked(directory / "manifest.json", fcntl.LOCK_SH):  # not while the opener rewrites
                shutil.copytree(directory / "shard", copy / "shard")
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
            text = json.dumps(json.loads(manifest.to_json()) | {LAYOUT_KEY: LAYOUT}, sort_keys=True)
            _write_atomic(directory / "manifest.json", text)
            marker = {"generation": manifest.generation, "manifest_sha256": _digest(text.encode())}
            _write_atomic(directory / COMPLETE, json.dumps(marker))  # last: the generation is complete
        except BaseException as exc:
            # A half-built generation is never made current: remove it so it cannot be mistaken for one.
            shutil.rmtree(directory, ignore_errors=True)
            if isinstance(exc, Exception) and is_disk_full(exc):
                raise disk_full_error(self.root, exc) from exc
            raise
        try:
            _write_atomic(self.root / "CURRENT", json.dumps({"generation": manifest.generation}))
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
            _fsync_dir(directory.parent)
        _write_atomic(self.root / "CURRENT", json.dumps({"generation": manifest.generation}))
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
            fd = _lock_path(directory, fcntl.LOCK_EX | fcntl.LOCK_NB)
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
