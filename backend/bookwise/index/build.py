"""`bookwise ingest` end to end: read the site, chunk it, sync the index, and report."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bookwise.index.adapt import (
    MIN_PAIRS,
    AdaptParams,
    adapt,
    adapted_name,
    export_onnx,
    model_dir,
    onnx_dir,
    training_pairs,
)
from bookwise.index.cache import SqliteEmbeddingCache
from bookwise.index.edge.store import EdgeStore
from bookwise.index.embedders import (
    EXPORTED,
    PASSAGE_KEYS,
    Embedder,
    LocalEmbedder,
    create_embedder,
    is_export_of,
    load_passage_vectors,
    longest_first,
    save_passage_vectors,
    text_key,
)
from bookwise.index.factory import open_store
from bookwise.index.faults import MB, ensure_free_space, warn
from bookwise.index.indexer import IndexReport, sync_index
from bookwise.index.rerank_fit import RERANK_MODEL, FitParams, fit, save_skipped
from bookwise.index.store import IndexStore
from bookwise.ingest.manifest import BuiltDoc, DocKey, ManifestCheck
from bookwise.ingest.models import Chunk
from bookwise.ingest.pipeline import ChunkingParams, FileProblem, IngestResult, ingest_site
from bookwise.ingest.site import SiteConfig
from bookwise.settings import (
    DataSettings,
    EmbeddingSettings,
    IndexBuildSettings,
    IndexSettings,
    IngestSettings,
    RetrievalSettings,
)

# (point id, payload) of every chunk, and the token counter -> the texts of every passage a server
# ranks (retrieval's ``book_passage_inputs``, given by the caller: the index layer cannot import it).
PassageInputs = Callable[[Sequence[tuple[str, Mapping[str, Any]]], Callable[[str], int]], list[str]]
PASSAGE_KEY_PREFIX = "passage:"  # passage vectors in the embedding cache, apart from chunk vectors


@dataclass
class IngestReport:
    docs_processed: int = 0
    docs_skipped: int = 0
    chunks: int = 0
    index: IndexReport = field(default_factory=IndexReport)
    errors: list[FileProblem] = field(default_factory=list)
    skipped: list[FileProblem] = field(default_factory=list)
    embed_model: str = ""
    adapt_s: float | None = None  # set when the local embedder was adapted to this site in this run
    duration_s: float = 0.0
    dry_run: bool = False
    manifest: ManifestCheck | None = None
    # --strict found errors before anything was written: the run went on as a dry run, so the live
    # index (and what readers see) is the one from before; the report says what would have changed.
    held_back: bool = False
    # Data-directory faults recovered from (corrupt CURRENT, manifest or cache): {"code", "message"}.
    warnings: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "docs_processed": self.docs_processed,
            "docs_skipped": self.docs_skipped,
            "chunks": self.chunks,
            **self.index.to_dict(),
            "errors": [e.to_dict() for e in self.errors],
            "skipped": [s.to_dict() for s in self.skipped],
            "embed_model": self.embed_model,
            "adapt_s": None if self.adapt_s is None else round(self.adapt_s, 1),
            "duration_s": round(self.duration_s, 3),
            "dry_run": self.dry_run,
            "held_back": self.held_back,
            "manifest": None if self.manifest is None else self.manifest.to_dict(),
            "warnings": self.warnings,
        }


@dataclass
class Hooks:
    on_file: Callable[[str], None] | None = None
    on_embed: Callable[[int, int], None] | None = None
    on_adapt: Callable[[int], None] | None = None  # called with the number of training pairs


class _FaultCollector(logging.Handler):
    """Keeps the data-directory faults the index layer logs during one ingest, for its report."""

    def __init__(self, into: list[dict[str, str]]) -> None:
        super().__init__(logging.WARNING)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        code = getattr(record, "fields", {}).get("code", "")
        message = record.getMessage().removeprefix(f"{code}: ")
        entry = {"code": code, "message": message}
        if code and entry not in self.into:
            self.into.append(entry)


@contextmanager
def _collect_faults(into: list[dict[str, str]]) -> Iterator[None]:
    handler = _FaultCollector(into)
    logger = logging.getLogger("bookwise.index")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)


def git_commit(site: SiteConfig) -> str | None:
    try:
        out = subprocess.run(
            ["git", "-C", str(site.site_dir), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def chunking_params(settings: IngestSettings, embedder: Embedder) -> ChunkingParams:
    """How the ingest cuts chunks: the configured sizes, counted with ``embedder``'s tokenizer and
    capped by its input size."""
    return ChunkingParams(
        max_tokens=settings.chunk_max_tokens,
        overlap_tokens=settings.chunk_overlap_tokens,
        min_tokens=settings.chunk_min_tokens,
        model_max_tokens=embedder.max_input_tokens,
        count_tokens=embedder.count_tokens,
    )


def run_ingest(
    settings: IndexBuildSettings,
    site: SiteConfig,
    *,
    dry_run: bool = False,
    reindex: bool = False,
    adapt: bool = False,
    docs_commit: str | None = None,
    embedder: Embedder | None = None,
    store: IndexStore | None = None,
    hooks: Hooks | None = None,
    built: dict[DocKey, BuiltDoc] | None = None,
    strict: bool = False,
    passage_inputs: PassageInputs | None = None,
) -> IngestReport:
    """``adapt`` re-adapts the local embedder to the site (and so rebuilds the index).

    ``built``: docs of a build manifest (`--manifest`), checked against and preferred to ours.
    ``strict``: a broken doc or a manifest mismatch holds the whole run back (nothing is written or
    switched), so a CI run that fails the deploy has not already changed what the API serves.
    ``passage_inputs``: the passages whose vectors the generation carries (none when not given).
    """
    started = time.perf_counter()
    hooks = hooks or Hooks()
    # Chunks are sized with the configured model's tokenizer; a site-adapted copy shares it.
    sizing = embedder or create_embedder(settings, runtime="ingest")
    result = _chunk_site(settings, site, sizing, hooks.on_file, built)
    held_back = strict and not dry_run and _failed(result)
    dry_run = dry_run or held_back
    report = _report_of(result, dry_run=dry_run, held_back=held_back)
    # The report lists the data-directory faults survived.
    with _collect_faults(report.warnings), _store_for(settings, store) as index_store:
        if not dry_run:
            _make_room(settings, index_store)
        with closing(SqliteEmbeddingCache(settings.data_dir / "embeddings.sqlite")) as cache:
            if embedder is None:
                embedder, report.adapt_s = _site_embedder(
                    settings,
                    index_store,
                    result.chunks,
                    sizing,
                    rebuild=reindex or adapt,
                    dry_run=dry_run,
                    hooks=hooks,
                )
            report.embed_model = embedder.model_id
            attach, refresh = None, False
            if not dry_run:
                attach, refresh = _plan_attachments(
                    settings, index_store, embedder, result.chunks, passage_inputs, cache, hooks.on_embed
                )
            report.index = sync_index(
                result.chunks,
                index_store,
                embedder,
                cache,
                site_info=_site_info(site),
                docs_commit=docs_commit or git_commit(site),
                reindex=reindex or adapt,
                dry_run=dry_run,
                keep_generations=settings.keep_generations,
                batch_size=settings.embedding_batch_size,
                progress=hooks.on_embed,
                attach=attach,
                refresh=refresh,
            )
    report.duration_s = time.perf_counter() - started
    return report


def _chunk_site(
    settings: IngestSettings,
    site: SiteConfig,
    sizing: Embedder,
    on_file: Callable[[str], None] | None,
    built: dict[DocKey, BuiltDoc] | None,
) -> IngestResult:
    """The site's docs, read and cut into chunks that fit ``sizing``'s input."""
    return ingest_site(
        site,
        chunking_params(settings, sizing),
        module_depth=settings.module_depth,
        chapter_depth=settings.chapter_depth,
        max_file_bytes=settings.max_file_bytes,
        on_file=on_file,
        built=built,
    )


def _failed(result: IngestResult) -> bool:
    """Whether a doc was broken or disagreed with the build manifest."""
    return bool(result.errors) or bool(result.manifest and result.manifest.mismatches)


def _report_of(result: IngestResult, *, dry_run: bool, held_back: bool) -> IngestReport:
    """The report as the site's reading leaves it; the index's part is filled in after."""
    return IngestReport(
        held_back=held_back,
        docs_processed=len(result.documents),
        docs_skipped=len(result.skipped),
        chunks=len(result.chunks),
        errors=result.errors,
        skipped=result.skipped,
        dry_run=dry_run,
        manifest=result.manifest,
    )


@contextmanager
def _store_for(settings: IndexSettings, store: IndexStore | None) -> Iterator[IndexStore]:
    """``store``, or the configured one, opened for this ingest and closed after it."""
    if store is not None:
        yield store
        return
    opened = open_store(settings)
    try:
        yield opened
    finally:
        opened.close()


def _make_room(settings: DataSettings, store: IndexStore) -> None:
    """Frees and checks the disk before anything is written: Edge on a full disk dies of SIGBUS, silently."""
    store.remove_half_built()  # a crashed ingest's leftovers: their space counts as free
    ensure_free_space(settings.data_dir, settings.min_free_disk_mb * MB, "embedding and indexing")


def _site_info(site: SiteConfig) -> dict[str, Any]:
    """What the generation's manifest records of the site's URLs."""
    return {
        "url": site.url,
        "base_url": site.base_url,
        "route_base_path": site.route_base_path,
        "trailing_slash": site.trailing_slash,
    }


def _loadable(settings: EmbeddingSettings, name: str, target: Path) -> Embedder | None:
    """The adapted model saved in ``target``, or None (and the directory removed) if it will not load.

    A rebuild embeds every chunk anyway, so loading the model now costs nothing extra.
    """
    try:
        embedder = create_embedder(settings, model=name, runtime="ingest")
        embedder.embed_documents(["probe"])
        return embedder
    except Exception as exc:  # torn weights, a corrupt tokenizer: the model is derived data
        warn(
            "adapted_model_corrupt",
            f"the adapted embedder in {target} cannot be loaded ({exc}): adapting again",
        )
        shutil.rmtree(target, ignore_errors=True)
        return None


def _site_embedder(
    settings: IndexBuildSettings,
    store: IndexStore,
    chunks: Sequence[Chunk],
    configured: Embedder,
    *,
    rebuild: bool,
    dry_run: bool,
    hooks: Hooks,
) -> tuple[Embedder, float | None]:
    """The embedder for this ingest, and the seconds spent adapting it to the site just now (None
    when it was not).

    An existing index keeps the model it was built with (an incremental ingest never re-embeds
    unchanged text); a rebuild of a local index adapts MiniLM to the site first.
    """
    started = time.perf_counter()
    if not settings.adapts_embedder:
        return configured, None
    live = store.live_manifest()
    if live is not None and not rebuild:
        if live.embed_model == configured.model_id:
            return configured, None
        return create_embedder(settings, model=live.embed_model, runtime="ingest"), None
    params = AdaptParams(max_pairs=settings.embedding_adapt_max_pairs)
    pairs = training_pairs(chunks, params.max_pairs, params.seed)
    if dry_run or len(pairs) < MIN_PAIRS:
        return configured, None
    name = adapted_name(pairs, params)
    target = model_dir(settings.data_dir, name)
    if (target / "config.json").is_file():  # the same pairs and parameters: the same model
        existing = _loadable(settings, name, target)
        if existing is not None:
            return existing, None
    if hooks.on_adapt is not None:
        hooks.on_adapt(len(pairs))
    target.parent.mkdir(parents=True, exist_ok=True)
    adapt(str(getattr(configured, "base_path", "")), pairs, target, params)
    return create_embedder(settings, model=name, runtime="ingest"), time.perf_counter() - started


def _exported(settings: DataSettings, embedder: Embedder) -> Path | None:
    """The ONNX export of the local MiniLM this ingest embeds with, made now if it is missing."""
    if not isinstance(embedder, LocalEmbedder):
        return None
    target = onnx_dir(settings.data_dir, embedder.model_id)
    if not is_export_of(target, embedder.model_id):
        target.parent.mkdir(parents=True, exist_ok=True)
        export_onnx(embedder.path, target, embedder.model_id)
    return target


def _plan_attachments(
    settings: IndexBuildSettings,
    store: IndexStore,
    embedder: Embedder,
    chunks: Sequence[Chunk],
    passage_inputs: PassageInputs | None,
    cache: SqliteEmbeddingCache,
    progress: Callable[[int, int], None] | None,
) -> tuple[Callable[[Path], None] | None, bool]:
    """What a new generation carries beside its points (the embedded index only), and whether the
    live generation lacks some of it."""
    exported = _exported(
        settings, embedder
    )  # also for the API hosts of a Qdrant server that share the data dir
    if not isinstance(store, EdgeStore):
        return None, False
    live = store.live_manifest()
    live_dir = store.root / "generations" / live.generation if live is not None else None
    rerank = _fit_params(settings)
    attach = _attachments(embedder, exported, chunks, passage_inputs, cache, live_dir, progress, rerank)
    lacks = _lacks_attachments(live_dir, exported is not None, passage_inputs is not None, rerank is not None)
    return attach, lacks


def _lacks_attachments(directory: Path | None, model: bool, passages: bool, reranker: bool) -> bool:
    """Whether the live generation lacks the exported model, the passage vectors or the learned
    reranker this ingest adds (it was built before they were): then a new generation is written even
    if no chunk changed."""
    if directory is None:
        return False
    return (
        (model and not (directory / EXPORTED).is_dir())
        or (passages and not (directory / PASSAGE_KEYS).is_file())
        or (reranker and not (directory / RERANK_MODEL).is_file())
    )


def _attachments(
    embedder: Embedder,
    exported: Path | None,
    chunks: Sequence[Chunk],
    passage_inputs: PassageInputs | None,
    cache: SqliteEmbeddingCache,
    live_dir: Path | None,
    progress: Callable[[int, int], None] | None,
    rerank: FitParams | None = None,
) -> Callable[[Path], None]:
    def attach(directory: Path) -> None:
        if exported is not None:
            _link_tree(exported, directory / EXPORTED)
        if rerank is not None:  # every chunk's vector is in the cache by now
            vectors = cache.get_many(embedder.model_id, list({c.content_hash for c in chunks}))
            model = fit(chunks, vectors, embedder.embed_documents, embedder.model_id, rerank)
            if model is not None:
                model.save(directory)
            else:  # too small a book: said once, so the next ingest does not try again
                save_skipped(directory)
        if passage_inputs is not None:
            texts = passage_inputs([(c.id, c.payload) for c in chunks], embedder.count_tokens)
            whole_chunks = {c.embed_text: c.content_hash for c in chunks}
            vectors = _passage_vectors(embedder, texts, cache, live_dir, progress, whole_chunks)
            save_passage_vectors(directory, embedder.model_id, embedder.dim, vectors)

    return attach


def _fit_params(settings: RetrievalSettings) -> FitParams | None:
    """How to fit the learned reranker (searching as the retriever does), when it is configured."""
    if settings.rerank_provider != "learned":
        return None
    return FitParams(
        rrf_k=settings.retrieval_rrf_k,
        weights=(settings.retrieval_dense_weight, settings.retrieval_sparse_weight),
        prefetch=settings.retrieval_prefetch,
        limit=settings.retrieval_candidates,
        candidates=settings.rerank_candidates,
    )


def _link_tree(source: Path, target: Path) -> None:
    """``source``'s files in ``target``: hard links where they can be (no second copy of 90 MB)."""
    target.mkdir()
    for path in source.iterdir():
        try:
            os.link(path, target / path.name)
        except OSError:  # another file system
            shutil.copy2(path, target / path.name)


def _passage_vectors(
    embedder: Embedder,
    texts: Sequence[str],
    cache: SqliteEmbeddingCache,
    live_dir: Path | None,
    progress: Callable[[int, int], None] | None,
    whole_chunks: Mapping[str, str],
    batch_size: int = 64,
) -> dict[str, list[float]]:
    """The vector of every passage text, by its key: reused from the embedding cache or the live
    generation (a fresh CI runner has no cache) when the text is unchanged, or from a chunk whose
    embedded text is the passage's (``whole_chunks``: embedded text → content hash; a short section
    is one chunk and one passage), embedded otherwise."""
    model = embedder.model_id
    by_key = {text_key(t): t for t in texts}
    cached = cache.get_many(model, [PASSAGE_KEY_PREFIX + k for k in by_key])
    vectors = {k.removeprefix(PASSAGE_KEY_PREFIX): v for k, v in cached.items()}
    if live_dir is not None and len(vectors) < len(by_key):
        loaded = load_passage_vectors(live_dir, model)
        if loaded is not None:
            rows, matrix = loaded
            vectors.update((k, matrix[rows[k]].tolist()) for k in by_key if k in rows and k not in vectors)
    # Every chunk's vector is in the cache by now: the same text, the same vector.
    as_chunk = {whole_chunks[t]: k for k, t in by_key.items() if k not in vectors and t in whole_chunks}
    found = cache.get_many(model, list(as_chunk))
    vectors.update((as_chunk[content_hash], vector) for content_hash, vector in found.items())
    missing = [k for k in by_key if k not in vectors]
    missing = [missing[i] for i in longest_first([by_key[k] for k in missing])]
    for start in range(0, len(missing), batch_size):
        batch = missing[start : start + batch_size]
        fresh = dict(zip(batch, embedder.embed_documents([by_key[k] for k in batch]), strict=True))
        cache.put_many(model, {PASSAGE_KEY_PREFIX + k: v for k, v in fresh.items()})
        vectors.update(fresh)
        if progress is not None:
            progress(start + len(batch), len(missing))
    return vectors
