"""One embedded index generation as an archive: packed where it was built (CI), installed on a server.

A one-machine owner's index lives on the server's own disk, so CI cannot write it the way it writes
a Qdrant server. Instead CI ingests into a data dir of its own, packs the live generation
(``pack_live_generation``) and uploads it; the server unpacks it aside, checks it completely and
switches to it atomically (``Upload``), as an ingest of its own would.

The archive is a tar stream (gzip-compressed by ``pack_live_generation``) holding only::

    generation/manifest.json   generation/COMPLETE   generation/shard/...
    generation/embedder/...    the ONNX export of the model queries are embedded with (local MiniLM)
    generation/passages.*      the vectors of every section's passages (when the ingest computed them)
    model/...                  the site-adapted embedder the manifest names (when it names one)
    suggestions.json           the generation's checked suggested questions (when there are any)

An upload is refused before anything is written when it is declared too large or the disk is too
full, and while another ingest or upload holds the index's write lock. It is written under
``<data_dir>/index/incoming/`` (never under ``generations``, where a reader could mistake it for a
generation) and removed whatever happens; a process killed mid-upload leaves a folder the next
upload removes. Nothing but the rename into ``generations`` and the CURRENT switch touches what
readers see, so a failed, partial or interrupted upload never replaces the live index.
"""

from __future__ import annotations

import fcntl
import gzip
import json
import os
import re
import shutil
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

import qdrant_edge as qe

from bookwise.errors import (
    BookwiseError,
    IndexNotFoundError,
    IndexUploadIncompatibleError,
    IndexUploadInvalidError,
    PayloadTooLargeError,
)
from bookwise.index.adapt import SEPARATOR, is_adapted, model_dir
from bookwise.index.edge.generations import COMPLETE, LAYOUT_KEY, complete_manifest, live_generation
from bookwise.index.edge.store import EdgeStore
from bookwise.index.embedders import (
    EXPORTED,
    PASSAGE_KEYS,
    PASSAGE_VECTORS,
    LocalEmbedder,
    OnnxEmbedder,
    configured_dim,
    is_export_of,
)
from bookwise.index.faults import MB, disk_full_error, ensure_free_space, is_disk_full
from bookwise.index.sparse import BM25_SCHEME
from bookwise.index.store import DENSE, SPARSE, IndexManifest
from bookwise.ingest.pipeline import CHUNKER_VERSION
from bookwise.settings import IndexUploadSettings

GENERATION = "generation"
MODEL = "model"
SUGGESTIONS = "suggestions.json"
INCOMING = "incoming"
# gzip's fastest level: most of an archive is the model's float weights, which no level shrinks by more
# than a tenth; on the example book's generation, level 9 (tarfile's own) took 8.4 s and level 1 4.8 s,
# for an archive 1.6 % larger.
PACK_COMPRESSION = 1
SPACE_CHECK_BYTES = 16 * MB  # the disk's free space is checked again after this much is written
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")  # a generation name: one safe path part
_AGAIN = "upload again"
BLOCK = 64 * 1024
_ZEROS = bytes(BLOCK)
# Unpacked files may be this many times larger than the cap in holes (a small book's shard is 258 MB
# apparent for 1 MB of data): bounds the time a zip bomb of zeros can take, not the disk it can use.
MAX_HOLE_RATIO = 64


@dataclass(frozen=True)
class Installed:
    """What an upload made live: the server's answer."""

    manifest: IndexManifest
    archive_bytes: int
    unpacked_bytes: int
    model_installed: bool
    pruned: list[str]

    def to_dict(self) -> dict[str, Any]:
        summary = self.manifest.summary()
        return {
            "index_version": self.manifest.generation,
            "embed_model": self.manifest.embed_model,
            "dim": self.manifest.dim,
            "points": summary["points"],
            "docs_commit": self.manifest.docs_commit,
            "created_at": self.manifest.created_at,
            "archive_bytes": self.archive_bytes,
            "unpacked_bytes": self.unpacked_bytes,
            "model_installed": self.model_installed,
            "pruned": self.pruned,
        }


# --- packing (the CI side) ---


@contextmanager
def _flock(path: Path, operation: int) -> Iterator[None]:
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, operation)
        yield
    finally:
        os.close(fd)


def _add_tree(tar: tarfile.TarFile, source: Path, name: str) -> None:
    """``source`` as ``name``: folders and regular files only (a shard has nothing else)."""
    tar.add(source, arcname=name, recursive=False)
    for path in sorted(source.rglob("*")):
        if path.is_dir() or path.is_file():
            tar.add(path, arcname=f"{name}/{path.relative_to(source).as_posix()}", recursive=False)


def pack_live_generation(
    data_dir: Path, out: IO[bytes], *, suggestions: Callable[[str], Path] | None = None
) -> IndexManifest:
    """Write the live generation of ``data_dir``'s embedded index to ``out`` as a gzipped tar.

    The generation is pinned while it is read, as a reader pins the one it serves (pruning skips
    it), and its shard is copied under the lock a process opening it in place takes to rewrite it.
    ``suggestions``: where the suggested questions of a generation are stored, if anywhere.
    """
    root = data_dir / "index"
    generation, manifest, fault = live_generation(root)
    if generation is None or manifest is None:
        why = f" ({fault[1]})" if fault else ""
        raise IndexNotFoundError(f"no live index generation in {root}{why}: run `bookwise ingest` first")
    directory = root / "generations" / generation
    with (
        _flock(directory, fcntl.LOCK_SH),
        gzip.GzipFile(fileobj=out, mode="wb", compresslevel=PACK_COMPRESSION, mtime=0) as packed,
        tarfile.open(fileobj=packed, mode="w|", format=tarfile.PAX_FORMAT) as tar,
    ):
        tar.add(directory / "manifest.json", arcname=f"{GENERATION}/manifest.json")
        tar.add(directory / COMPLETE, arcname=f"{GENERATION}/{COMPLETE}")
        with _flock(directory / "manifest.json", fcntl.LOCK_SH):
            _add_tree(tar, directory / "shard", f"{GENERATION}/shard")
        if (directory / EXPORTED).is_dir():
            _add_tree(tar, directory / EXPORTED, f"{GENERATION}/{EXPORTED}")
        for name in (PASSAGE_VECTORS, PASSAGE_KEYS):
            if (directory / name).is_file():
                tar.add(directory / name, arcname=f"{GENERATION}/{name}")
        if is_adapted(manifest.embed_model):
            model = model_dir(data_dir, manifest.embed_model)
            if not (model / "config.json").is_file():
                raise IndexNotFoundError(
                    f"the live generation needs the site-adapted embedder in {model}, which is missing: "
                    "run `bookwise ingest --reindex`"
                )
            _add_tree(tar, model, MODEL)
        extra = suggestions(generation) if suggestions is not None else None
        if extra is not None and extra.is_file():
            tar.add(extra, arcname=SUGGESTIONS)
    return manifest


# --- receiving (the server side) ---


def _member_path(member: tarfile.TarInfo) -> PurePosixPath:
    """The member's path if it is a safe one of the layout; else the upload is refused."""
    name = member.name
    path = PurePosixPath(name)
    if (
        not name
        or "\\" in name
        or "\x00" in name
        or path.is_absolute()
        or any(part in ("..", "") for part in name.rstrip("/").split("/"))
    ):
        raise IndexUploadInvalidError(f"the archive member {name!r} is not a safe relative path")
    if not (member.isfile() or member.isdir()):
        raise IndexUploadInvalidError(
            f"the archive member {name!r} is a link or a device: only files and folders are accepted"
        )
    top = path.parts[0] if path.parts else name  # "." (tar -C dir .) has no parts: refused below
    if top not in (GENERATION, MODEL) and name != SUGGESTIONS:
        raise IndexUploadInvalidError(
            f"the archive member {name!r} is not part of an index generation "
            f"({GENERATION}/, {MODEL}/ or {SUGGESTIONS})"
        )
    return path


class Upload:
    """One index upload being received: ``write`` the body as it arrives, then ``install``.

    Use as a context manager: whatever ends it, the incoming folder is removed and the write lock
    let go. Opening it takes the lock and checks the declared size and the free space, before
    anything is written.
    """

    def __init__(
        self,
        settings: IndexUploadSettings,
        declared_bytes: int | None,
        *,
        suggestions: Callable[[str], Path] | None = None,
    ) -> None:
        """``suggestions``: where this server keeps a generation's suggested questions."""
        self.settings = settings
        self.suggestions = suggestions
        self.max_bytes = settings.index_upload_max_mb * MB
        self.min_free = settings.min_free_disk_mb * MB
        self.received = 0
        self._since_check = 0
        if declared_bytes is not None and declared_bytes > self.max_bytes:
            raise self._too_large("the archive")
        self.store = EdgeStore(settings.data_dir, min_free_bytes=self.min_free)
        self._folder: Path | None = None
        self._file: IO[bytes] | None = None
        try:
            self.store.remove_half_built()  # takes the write lock (IndexBusyError if held)
            self.root = self.store.root
            incoming = self.root / INCOMING
            if incoming.is_dir():  # what an upload killed mid-way left: we hold the lock
                shutil.rmtree(incoming, ignore_errors=True)
            # The archive, then its unpacked files: about twice what was declared.
            ensure_free_space(
                self.root,
                self.min_free,
                "receiving an index upload",
                needed_bytes=2 * (declared_bytes or 0),
                then=_AGAIN,
            )
            incoming.mkdir()
            self._folder = Path(tempfile.mkdtemp(prefix="upload-", dir=incoming))
            self._file = open(self._folder / "archive.tar", "wb")
        except BaseException:
            self.close()
            raise

    def _too_large(self, what: str) -> PayloadTooLargeError:
        return PayloadTooLargeError(
            f"{what} is larger than {self.settings.index_upload_max_mb} MB (BOOKWISE_INDEX_UPLOAD_MAX_MB); "
            "nothing was kept"
        )

    def __enter__(self) -> Upload:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def write(self, chunk: bytes) -> None:
        assert self._file is not None
        self.received += len(chunk)
        if self.received > self.max_bytes:
            raise self._too_large("the archive")
        self._since_check += len(chunk)
        if self._since_check >= SPACE_CHECK_BYTES:
            self._since_check = 0
            ensure_free_space(self.root, self.min_free, "receiving the rest of an index upload", then=_AGAIN)
        try:
            self._file.write(chunk)
        except OSError as exc:
            if is_disk_full(exc):
                raise disk_full_error(self.root, exc) from exc
            raise

    def install(self, *, check_model: bool = True) -> Installed:
        """Unpack, check and make the uploaded generation live; prune as an ingest does."""
        assert self._file is not None and self._folder is not None
        self._file.close()
        unpacked = self._folder / "unpacked"
        unpacked_bytes = self._unpack(self._folder / "archive.tar", unpacked)
        (self._folder / "archive.tar").unlink()  # its space is the generation's now
        manifest = self._check_generation(unpacked / GENERATION)
        if check_model:
            self._check_compatible(manifest, unpacked / MODEL)
        self._check_shard(unpacked / GENERATION / "shard", manifest)
        existing = self.root / "generations" / manifest.generation
        if existing.exists() and complete_manifest(existing) != manifest:
            raise IndexUploadInvalidError(
                f"this server already has another generation named {manifest.generation}: "
                "run the ingest again to build a new one"
            )
        model_installed = self._install_model(manifest, unpacked / MODEL)
        self._install_suggestions(manifest, unpacked / SUGGESTIONS)
        staged = unpacked / manifest.generation
        (unpacked / GENERATION).rename(staged)  # the name it will have under generations/
        self.store.install_generation(staged)
        pruned = self.store.prune(self.settings.keep_generations)
        return Installed(manifest, self.received, unpacked_bytes, model_installed, pruned)

    def _unpack(self, archive: Path, into: Path) -> int:
        """Every member checked before it is written. Edge's memory-mapped files are mostly holes
        (258 MB apparent, under 1 MB used for a small book): runs of zeros are written as holes
        again, and what is really written is capped like the archive."""
        written, apparent = 0, 0
        into.mkdir()
        try:
            with tarfile.open(archive, mode="r:*") as tar:
                for member in tar:
                    path = _member_path(member)
                    target = into.joinpath(*path.parts)
                    if member.isdir():
                        target.mkdir(parents=True, exist_ok=True)
                        continue
                    apparent += member.size
                    if apparent > self.max_bytes * MAX_HOLE_RATIO:
                        raise self._too_large("the unpacked archive (holes included)")
                    target.parent.mkdir(parents=True, exist_ok=True)
                    source = tar.extractfile(member)
                    assert source is not None  # a regular file
                    with source, open(target, "xb") as handle:  # "x": a repeated member is refused
                        written += self._copy_sparse(source, handle, member.size, written)
        except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
            if isinstance(exc, OSError) and is_disk_full(exc):
                raise disk_full_error(self.root, exc) from exc
            raise IndexUploadInvalidError(
                f"the archive is truncated or corrupt ({type(exc).__name__}: {exc}); nothing was installed"
            ) from exc
        return written

    def _copy_sparse(self, source: IO[bytes], handle: IO[bytes], size: int, before: int) -> int:
        written = 0
        while block := source.read(BLOCK):
            if block == _ZEROS[: len(block)]:
                handle.seek(len(block), os.SEEK_CUR)
                continue
            written += len(block)
            if before + written > self.max_bytes:
                raise self._too_large("the unpacked archive")
            self._since_check += len(block)
            if self._since_check >= SPACE_CHECK_BYTES:
                self._since_check = 0
                ensure_free_space(self.root, self.min_free, "unpacking an index upload", then=_AGAIN)
            handle.write(block)
        handle.truncate(size)  # a file ending in a hole
        return written

    @staticmethod
    def _check_generation(directory: Path) -> IndexManifest:
        if not (directory / "manifest.json").is_file() or not (directory / COMPLETE).is_file():
            raise IndexUploadInvalidError(
                f"the archive holds no complete generation ({GENERATION}/manifest.json and "
                f"{GENERATION}/{COMPLETE} are required)"
            )
        manifest = complete_manifest(directory)
        if manifest is None:
            raise IndexUploadInvalidError(
                "the generation's COMPLETE marker does not match its manifest (or the manifest or "
                "its shard is missing or corrupt): it is half-built or damaged"
            )
        marker = json.loads((directory / COMPLETE).read_bytes())
        raw = json.loads((directory / "manifest.json").read_bytes())
        if not _NAME.match(manifest.generation) or marker.get("generation") != manifest.generation:
            raise IndexUploadInvalidError(f"the generation name {manifest.generation!r} is invalid")
        if LAYOUT_KEY not in raw:
            raise IndexUploadInvalidError("the generation was written by an older Bookwise: ingest again")
        return manifest

    def _check_compatible(self, manifest: IndexManifest, model: Path) -> None:
        """The same embedding model (or a site-adapted copy of it) and dimension as this server's,
        and the same chunker and BM25 scheme: what queries here are embedded and encoded with."""
        settings = self.settings
        configured = settings.resolved_embedding_model
        adapted = is_adapted(manifest.embed_model) and settings.embedding_provider == "local"
        base = manifest.embed_model.partition(SEPARATOR)[0] if adapted else manifest.embed_model
        server_dim = configured_dim(settings)
        if base != configured or manifest.dim != server_dim:
            raise IndexUploadIncompatibleError(
                f"the uploaded generation {manifest.generation} was built with embedding model "
                f"{manifest.embed_model!r} ({manifest.dim} dims), but this server embeds questions with "
                f"{configured!r} ({server_dim} dims): ingest in CI with the server's "
                "BOOKWISE_EMBEDDING_PROVIDER and BOOKWISE_EMBEDDING_MODEL; the live index is unchanged"
            )
        differ = manifest.differences(CHUNKER_VERSION, BM25_SCHEME, here="this server")
        if differ:
            raise IndexUploadIncompatibleError(
                f"the uploaded generation {manifest.generation} was built with {' and '.join(differ)}: "
                "ingest in CI with the same Bookwise version as the server; the live index is unchanged"
            )
        exported = model.parent / GENERATION / EXPORTED
        if exported.is_dir():
            self._check_exported(manifest, exported)
        elif adapted:
            self._check_adapted_model(manifest, model)

    @staticmethod
    def _check_exported(manifest: IndexManifest, exported: Path) -> None:
        """The ONNX model the generation carries loads and gives vectors of the generation's size."""
        if not is_export_of(exported, manifest.embed_model):
            raise IndexUploadInvalidError(
                f"the generation's {EXPORTED}/ is not a complete export of {manifest.embed_model!r}"
            )
        try:
            vector = OnnxEmbedder(exported).embed_query("probe")
        except Exception as exc:  # a torn or foreign file: onnxruntime raises its own errors
            raise IndexUploadInvalidError(f"the generation's embedder cannot be loaded: {exc}") from exc
        if len(vector) != manifest.dim:
            raise IndexUploadIncompatibleError(
                f"the generation's embedder gives {len(vector)} dims, its generation {manifest.dim}"
            )

    def _check_adapted_model(self, manifest: IndexManifest, model: Path) -> None:
        if (model_dir(self.settings.data_dir, manifest.embed_model) / "config.json").is_file():
            return  # this server has it already (the same name is the same training)
        if not (model / "config.json").is_file():
            raise IndexUploadInvalidError(
                f"the generation was built with the site-adapted embedder {manifest.embed_model!r}, "
                f"which this server does not have and the archive does not carry ({MODEL}/)"
            )
        try:
            vector = LocalEmbedder(path=model, model_id=manifest.embed_model).embed_query("probe")
        except BookwiseError as exc:
            raise IndexUploadInvalidError(f"the archive's embedder cannot be loaded: {exc.message}") from exc
        if len(vector) != manifest.dim:
            raise IndexUploadIncompatibleError(
                f"the archive's embedder gives {len(vector)} dims, its generation {manifest.dim}"
            )

    @staticmethod
    def _check_shard(shard_dir: Path, manifest: IndexManifest) -> None:
        """Edge must open the shard and count what the manifest says (a copy: the upload's own)."""
        try:
            shard = qe.EdgeShard.load(str(shard_dir))
        except Exception as exc:  # the binding raises plain exceptions
            raise IndexUploadInvalidError(f"the generation's shard cannot be opened ({exc})") from exc
        try:
            count = shard.count(qe.CountRequest(exact=True))
            # One query per channel: a dense vector of another size, or no BM25 vectors, fail here.
            probe = [1.0] + [0.0] * (manifest.dim - 1)
            shard.query(qe.QueryRequest(limit=1, query=qe.Query.Nearest(probe, using=DENSE)))
            sparse = qe.Query.Nearest(qe.SparseVector([1], [1.0]), using=SPARSE)
            shard.query(qe.QueryRequest(limit=1, query=sparse))
        except Exception as exc:
            raise IndexUploadInvalidError(f"the generation's shard cannot be queried ({exc})") from exc
        finally:
            shard.close()
        if manifest.points and count != manifest.points:
            raise IndexUploadInvalidError(
                f"the generation's shard holds {count} chunks, its manifest says {manifest.points}"
            )

    def _install_model(self, manifest: IndexManifest, model: Path) -> bool:
        if not model.is_dir() or not is_adapted(manifest.embed_model):
            return False
        target = model_dir(self.settings.data_dir, manifest.embed_model)
        if (target / "config.json").is_file():
            return False
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(target, ignore_errors=True)  # a torn copy without its config
        try:
            model.rename(target)  # before CURRENT names the generation that needs it
        except OSError:  # the models folder is on another disk than the index
            shutil.copytree(model, target.with_name(target.name + ".tmp"), dirs_exist_ok=True)
            target.with_name(target.name + ".tmp").replace(target)
        return True

    def _install_suggestions(self, manifest: IndexManifest, file: Path) -> None:
        """The generation's suggested questions, kept where the server's reader of them looks."""
        if not file.is_file() or self.suggestions is None:
            return
        try:
            data = json.loads(file.read_bytes())
        except ValueError as exc:
            raise IndexUploadInvalidError(f"{SUGGESTIONS} is not JSON ({exc})") from exc
        if not isinstance(data, dict) or data.get("generation") != manifest.generation:
            raise IndexUploadInvalidError(f"{SUGGESTIONS} is not the generation's")
        target = self.suggestions(manifest.generation)
        target.parent.mkdir(parents=True, exist_ok=True)
        file.replace(target)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        if self._folder is not None:
            shutil.rmtree(self._folder.parent, ignore_errors=True)  # incoming/: ours while we hold the lock
            self._folder = None
        self.store.close()
