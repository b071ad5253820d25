"""The one retriever behind the CLI, the API and the eval: hybrid chunks in, ranked sections out.

1. embed the query (dense) and encode it for BM25 (sparse);
2. one Qdrant query: both prefetches fused by weighted RRF, plus each channel's raw scores;
3. group the fused chunks by section (a section scores as its best chunk), drop duplicates;
4. optionally rerank the top sections;
5. fetch the chosen sections' chunks and assemble their text in reading order within the budget;
6. decide whether the sections suffice to answer (calibrated threshold).
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

import anyio
import anyio.to_thread
import numpy as np

from bookwise import validation
from bookwise.errors import BookwiseError, EmbeddingError, InvalidRequestError
from bookwise.index.adapt import is_adapted
from bookwise.index.embedders import Embedder, ServingEmbedder, create_embedder
from bookwise.index.factory import open_store
from bookwise.index.sparse import BM25_SCHEME, Bm25Encoder, SparseVector
from bookwise.index.store import Filters, Hit, HybridHits, HybridQuery, IndexReader, IndexStore
from bookwise.ingest.book import Book
from bookwise.ingest.payload import ChunkPayload
from bookwise.ingest.pipeline import CHUNKER_VERSION
from bookwise.lru import Lru
from bookwise.retrieval.assemble import SectionChunk, assemble
from bookwise.retrieval.batching import QueryBatcher
from bookwise.retrieval.direction import direction_asked
from bookwise.retrieval.embedding_cache import PassageVectorCache
from bookwise.retrieval.measures import measures_asked, states_measure
from bookwise.retrieval.models import RetrievalResult, SectionResult
from bookwise.retrieval.pages import PageOutline, within_budget
from bookwise.retrieval.passage_rank import (
    PassageWeights,
    ScoredPassage,
    candidates,
    embedding_inputs,
    rank_passages,
)
from bookwise.retrieval.rerank import LearnedReranker, Reranker, create_learned_reranker, create_reranker
from bookwise.retrieval.snippets import make_snippet
from bookwise.retrieval.sufficiency import decide, signals
from bookwise.retrieval.topics import (
    derived_forms,
    greek_letters_asked,
    holds_symbol,
    joined_forms,
    named_words,
    probed_words,
    symbols_named,
    topic_text,
)
from bookwise.settings import EmbeddingSettings, OpenRetrieverSettings, RetrieverSettings

_T = TypeVar("_T")
TOKEN_COUNT_CACHE = 20_000
PASSAGE_VECTOR_CACHE = 20_000
PASSAGE_TERMS_CACHE = 20_000
PAYLOAD_CACHE = 20_000
SECTION_CHUNKS_CACHE = 4_096  # sections whose chunks are kept, per index generation
PASSAGE_PREFILL_LIMIT = 16_000  # leave room in the cache for the passages of assembled long sections
# A word of the question that no chunk of the book contains is what the question asks about when its
# embedding is this close to the question's ("SLAM" in "How does SLAM build a map of the room?" 0.63,
# "poem" in "Write me a poem about robots" 0.61), and a paraphrase when it is not ("stuck" 0.00 and
# "overshot" 0.40 in the windup question, which the book words as "pressed against a wall"; "uncolored"
# 0.49 for code blocks without highlighting). Chosen on the example book's questions and eval/.
KEY_WORD_COSINE = 0.55
# Against a reader's selection, a few sentences in the reader's own words, a word must be closer still:
# "derivative" in "What does the derivative term do?" 0.71, "setting" in "What exactly goes wrong if I
# leave that setting switched on?" 0.58 (its selection says "Pretty URLs").
SELECTION_KEY_WORD_COSINE = 0.6
WATCH_MIN_S = 0.2  # the index watcher's shortest period (BOOKWISE_INDEX_REFRESH_S may be 0)


@dataclass
class _Candidate:
    section_id: str
    score: float
    payload: ChunkPayload  # the best chunk's
    hits: list[int] = field(default_factory=list)  # matching section_chunk_index, best first


def page_paths(page_url: str) -> list[str]:
    """The index's ``page_url`` forms of a browser URL: its path, with and without a trailing slash."""
    path = unquote(urlsplit(page_url.strip()).path)
    if not path.startswith("/"):
        return []
    trimmed = path.rstrip("/") or "/"
    return sorted({trimmed, trimmed if trimmed == "/" else trimmed + "/"})


def _merged(*forms: Mapping[str, Sequence[str]]) -> dict[str, tuple[str, ...]]:
    """One word's other forms from several sources (``joined_forms``, ``derived_forms``), each once."""
    merged: dict[str, tuple[str, ...]] = {}
    for mapping in forms:
        for word, found in mapping.items():
            merged[word] = tuple(dict.fromkeys([*merged.get(word, ()), *found]))
    return merged


def _absent_words(
    probed: Sequence[str],
    forms: Mapping[str, Sequence[str]],
    terms: Mapping[str, Sequence[int]],
    held: Callable[[Sequence[int]], bool],
) -> list[str]:
    """The ``probed`` words whose terms are not ``held``, nor those of any of their other ``forms``:
    "winding" is not absent from a book that says "windup", nor "sharp" from one that says "sharply". A
    word without terms is never absent."""

    def found(word: str) -> bool:
        return bool(terms[word]) and held(terms[word])

    return [
        word
        for word in probed
        if terms[word] and not found(word) and not any(map(found, forms.get(word, ())))
    ]


def _book_forms(
    probed: Sequence[str],
    joined: Mapping[str, Sequence[str]],
    terms: Mapping[str, Sequence[int]],
    held: Callable[[Sequence[int]], bool],
) -> tuple[tuple[str, str], ...]:
    """The ``probed`` words the book never writes alone but joined with the particle after them, each
    with that one-word form: ("wind", "windup") for "why does it wind up?" in a book that says "windup"."""
    found = []
    for word in probed:
        if terms[word] and held(terms[word]):
            continue
        form = next((f for f in joined.get(word, ()) if terms.get(f) and held(terms[f])), None)
        if form is not None:
            found.append((word, form))
    return tuple(found)


def _probe_terms(
    sparse: Bm25Encoder, probed: Sequence[str], forms: Mapping[str, Sequence[str]]
) -> dict[str, tuple[int, ...]]:
    """The sparse terms of each probed word and of its other forms."""
    others = (form for word in probed for form in forms.get(word, ()))
    return {word: tuple(sparse.query(word).indices) for word in dict.fromkeys([*probed, *others])}


def _break_ties(hits: HybridHits) -> list[Hit]:
    """Fused chunks best first; equal RRF scores (common: rank 2 + rank 5 = rank 5 + rank 2) are
    ordered by cosine, then BM25, then id, so one query always gets one ranking."""
    cosine = {h.id: h.score for h in hits.dense}
    bm25 = {h.id: h.score for h in hits.sparse}
    return sorted(hits.fused, key=lambda h: (-h.score, -cosine.get(h.id, 0.0), -bm25.get(h.id, 0.0), h.id))


def _dedupe_key(payload: ChunkPayload) -> tuple[str, str]:
    # The same section published twice (versions, locales, a copied page) reads the same: keep the best.
    # Its visible text decides, not the content hash, which also covers the page's title and breadcrumb.
    return payload.heading, payload.text


def _section_id(hit: Hit, payload: ChunkPayload) -> str:
    return hit.id if payload.section_id is None else payload.section_id


class Retriever:
    def __init__(
        self,
        settings: RetrieverSettings,
        reader: IndexReader,
        embedder: Embedder,
        *,
        reranker: Reranker | None = None,
        learned: LearnedReranker | None = None,
        store: IndexStore | None = None,
        embedder_for: Callable[[str], Embedder] | None = None,
    ) -> None:
        """``embedder_for(model)`` loads the embedder a newer index generation names, if allowed."""
        self.settings = settings
        self._limits = validation.RequestLimits.from_settings(settings)
        self._reader = reader
        self._store = store  # owned when opened by ``open``
        self._embedder = embedder
        self._sparse = Bm25Encoder()
        self._reranker = reranker
        self._learned = learned
        self._embedder_for = embedder_for
        self._checked_generation = ""
        self._refreshed_at = 0.0
        self._refresh_lock = threading.Lock()
        self._limiter = anyio.CapacityLimiter(settings.retrieval_threads)
        self._queries = QueryBatcher(lambda texts: self._embedder.embed_documents(texts))
        self._passage_vectors = PassageVectorCache(
            lambda texts: self._embedder.embed_documents(texts), PASSAGE_VECTOR_CACHE
        )
        # The same chunks come back for many queries: their token counts are kept, not recounted.
        self._count_tokens = functools.lru_cache(maxsize=TOKEN_COUNT_CACHE)(self._embedder.count_tokens)
        # ... and so are their passages' BM25 terms, and their chunks' payloads read back.
        self._passage_terms = functools.lru_cache(maxsize=PASSAGE_TERMS_CACHE)(self._document_terms)
        self._payloads: Lru[tuple[str, str], ChunkPayload] = Lru(PAYLOAD_CACHE)
        self._section_chunks_kept: Lru[tuple[str, str], tuple[SectionChunk, ...]] = Lru(SECTION_CHUNKS_CACHE)
        self._warm = False
        self._outlines: tuple[str, dict[str, PageOutline]] = ("", {})
        self._outlines_lock = threading.Lock()
        self._check_generation()

    @classmethod
    def open(cls, settings: OpenRetrieverSettings) -> Retriever:
        """The configured index and the embedder its live generation was built with."""
        store = open_store(settings)
        try:
            reader = store.open_reader()
            embedder_for = functools.partial(_embedder_for, settings)
            embedder = embedder_for(reader.manifest.embed_model)
            return cls(
                settings,
                reader,
                embedder,
                reranker=create_reranker(settings),
                learned=create_learned_reranker(settings, settings.data_dir),
                store=store,
                embedder_for=embedder_for,
            )
        except BaseException:
            store.close()
            raise

    @property
    def index_version(self) -> str:
        return self._reader.manifest.generation

    def status(self) -> dict[str, Any]:
        """The live index, checked now (a Qdrant server is asked): for readiness probes."""
        self._maybe_refresh(force=True)
        summary = self._reader.manifest.summary()
        return {
            "index_version": summary["generation"],
            "embed_model": summary["embed_model"],
            "points": summary["points"],
            "docs_commit": summary.get("docs_commit"),
            "created_at": summary.get("created_at"),
        }

    def _check_generation(self) -> None:
        manifest = self._reader.manifest
        if manifest.generation == self._checked_generation:
            return
        # A new generation may have been built with another model: never mix vector spaces.
        if manifest.embed_model != self._embedder.model_id and self._embedder_for is not None:
            self._embedder = self._embedder_for(manifest.embed_model)  # e.g. re-adapted to the site
            self._passage_vectors.clear()
        manifest.check_model(self._embedder.model_id, self._embedder.dim)
        # Queries are BM25-encoded here, and sections assembled from chunks as this version cuts them.
        manifest.check_compatible(CHUNKER_VERSION, BM25_SCHEME)
        self._checked_generation = manifest.generation

    def _maybe_refresh(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._refreshed_at < self.settings.index_refresh_s:
            return
        with self._refresh_lock:
            if force or now - self._refreshed_at >= self.settings.index_refresh_s:
                self._reader.refresh()
                self._refreshed_at = now
        self._check_generation()

    def watch_index(self, stop: threading.Event) -> None:
        """Follow re-ingests on a timer as well as on queries, until ``stop``: an idle API worker
        moves to a new generation as soon as a busy one does, and lets go of the old one (which
        the next ingest may then prune)."""
        while not stop.wait(max(self.settings.index_refresh_s, WATCH_MIN_S)):
            try:
                self._maybe_refresh()
            except BookwiseError:
                pass  # the reader keeps its loaded generation; a query reports the fault

    def search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        filters: Mapping[str, Sequence[str] | str] | None = None,
    ) -> RetrievalResult:
        query, top_k, clean = validation.retrieval(query, top_k, filters, self._limits)
        return self._run(query, top_k, clean)

    def search_page(
        self,
        query: str,
        page_url: str,
        *,
        top_k: int,
        filters: Mapping[str, Sequence[str] | str] | None = None,
    ) -> list[SectionResult]:
        """The sections of the reader's page (a browser URL) that best match ``query``: [] when the page
        is not in the index. Blocking: ``arun`` it from a loop."""
        pages = page_paths(page_url)
        if not pages:
            return []
        query, top_k, clean = validation.retrieval(query, top_k, filters, self._limits)
        return self._run(query, top_k, {**(clean or {}), "page_url": pages}, probe_names=False).sections

    def generation(self) -> str:
        """The live index generation, after following a re-ingest if one is due."""
        self._maybe_refresh()
        return self.index_version

    @property
    def site_url(self) -> str:
        """The site's address as its Docusaurus config gives it (``url``, e.g. an origin), or ""."""
        return str(self._reader.manifest.site.get("url") or "")

    @property
    def embedder(self) -> Embedder:
        """The embedder of the loaded generation (the insights report groups questions with it)."""
        return self._embedder

    def chunk_payloads(self) -> list[ChunkPayload]:
        """Every chunk's payload in the loaded generation: the book's structure and text, for a
        table of contents or a whole page, not for ranking."""
        return [ChunkPayload.from_payload(hit.payload) for hit in self._reader.all_chunks()]

    def locate(self, page_url: str, *, heading_id: str | None, text: str) -> SectionResult | None:
        """The section of the reader's page that holds a selected passage: the selection's citation.

        The heading id the widget found is tried first ("" for the page's opening, above its first
        heading), then the page's section closest to the text.
        """
        pages = page_paths(page_url)
        query = " ".join((text or heading_id or "").split())
        if not pages or not query:
            return None
        attempts: list[Filters] = (
            [{"page_url": pages, "anchor": [heading_id]}] if heading_id is not None else []
        )
        attempts.append({"page_url": pages})
        for filters in attempts:
            found = self._run(query, 1, filters, probe_names=False).sections
            if found:
                return found[0]
        return None

    async def alocate(self, page_url: str, *, heading_id: str | None, text: str) -> SectionResult | None:
        call = functools.partial(self.locate, page_url, heading_id=heading_id, text=text)
        return await anyio.to_thread.run_sync(call, limiter=self._limiter, abandon_on_cancel=True)

    def outlines(self) -> dict[str, PageOutline]:
        """Every page's outline (page URL → outline): the book's pages, built once per index generation."""
        generation = self.generation()
        with self._outlines_lock:
            if self._outlines[0] != generation:
                book = Book.from_payloads(self.chunk_payloads())
                self._outlines = (generation, {page.page_url: page for page in book.pages})
            return self._outlines[1]

    def page(self, page_url: str) -> PageOutline | None:
        """The outline of the reader's page (a browser URL: origin, query and fragment ignored)."""
        outlines = self.outlines()
        return next((outlines[path] for path in page_paths(page_url) if path in outlines), None)

    def outline_sections(
        self, outline: PageOutline, *, budget_tokens: int | None = None
    ) -> list[SectionResult]:
        """A page's sections in reading order, each assembled whole (within the section budget);
        with ``budget_tokens``, only the leading sections whose texts fit in it together."""
        candidates = [_Candidate(section.id, 1.0, section.first) for section in outline.sections]
        sections = self._assemble("", candidates)
        return sections if budget_tokens is None else within_budget(sections, budget_tokens)

    def page_sections(self, page_url: str, *, budget_tokens: int | None = None) -> list[SectionResult]:
        """The reader's page, section by section (empty when the page is not in the index)."""
        outline = self.page(page_url)
        return [] if outline is None else self.outline_sections(outline, budget_tokens=budget_tokens)

    async def apage_sections(self, page_url: str, *, budget_tokens: int | None = None) -> list[SectionResult]:
        call = functools.partial(self.page_sections, page_url, budget_tokens=budget_tokens)
        return await anyio.to_thread.run_sync(call, limiter=self._limiter, abandon_on_cancel=True)

    async def arun(self, call: Callable[[], _T]) -> _T:
        """Any blocking read of this retriever in a worker thread (bounded like the searches)."""
        return await anyio.to_thread.run_sync(call, limiter=self._limiter, abandon_on_cancel=True)

    def _run(
        self, query: str, top_k: int, clean_filters: Filters | None, *, probe_names: bool = True
    ) -> RetrievalResult:
        """One search; ``probe_names`` also looks up the query's names and topic words one by one
        (``unknown_names``, ``asks_unknown``), which locating a selection's section never reads."""
        settings = self.settings
        timings: dict[str, float] = {}
        started = time.perf_counter()
        self._maybe_refresh()

        dense, sparse = self._encode(query)
        probed = probed_words(query) if probe_names else []
        joined = joined_forms(query) if probe_names else {}
        forms = _merged(joined, derived_forms(probed))
        names = _probe_terms(self._sparse, probed, forms)
        timings["embed"] = (time.perf_counter() - started) * 1000

        mark = time.perf_counter()
        hits = self._reader.hybrid(
            HybridQuery(
                dense=dense,
                sparse=sparse,
                limit=settings.retrieval_candidates,
                prefetch=settings.retrieval_prefetch,
                rrf_k=settings.retrieval_rrf_k,
                weights=(settings.retrieval_dense_weight, settings.retrieval_sparse_weight),
                filters=clean_filters,
                probe_terms=tuple(sorted({term for terms in names.values() for term in terms})),
            )
        )
        timings["search"] = (time.perf_counter() - mark) * 1000

        mark = time.perf_counter()
        candidates = self._group(_break_ties(hits))
        if self._reranker is not None and candidates:
            candidates = self._rerank(query, candidates)
            timings["rerank"] = (time.perf_counter() - mark) * 1000
        elif self._learned is not None and len(candidates) > 1:
            candidates = self._learned_rerank(dense, sparse, hits, candidates)
            timings["rerank"] = (time.perf_counter() - mark) * 1000
        chosen = candidates[:top_k]
        sections = self._assemble(query, chosen)
        sufficiency = decide(signals(sparse, hits), threshold=settings.sufficiency_threshold)
        timings["assemble"] = (time.perf_counter() - mark) * 1000

        def held(terms: Sequence[int]) -> bool:
            return not hits.unmatched_terms.issuperset(terms)

        absent = _absent_words(probed, forms, names, held)
        central = self._central_words(dense, absent)
        named = set(named_words(query))
        timings["total"] = (time.perf_counter() - started) * 1000
        return RetrievalResult(
            query=query,
            sections=sections,
            sufficiency=sufficiency,
            index_version=self.index_version,
            timings_ms=timings,
            unknown_names=tuple(word for word in absent if word in named or word in central),
            asked_unknown=tuple(word for word in absent if word in central),
            absent_words=tuple(absent),
            book_forms=_book_forms(probed, joined, names, held),
        )

    def missing_key_words(self, query: str, text: str) -> tuple[str, ...]:
        """The words ``query`` asks about (its names and topic words close to it, as for
        ``asks_unknown``) that ``text`` does not contain: "derivative" for "What does the derivative
        term do?" and the Proportional paragraph; and the one-letter symbols it names that ``text``
        never writes: "Q" for "what is Q?" and a paragraph on the gain K."""
        symbols = [symbol for symbol in symbols_named(query) if not holds_symbol(text, symbol)]
        held = set(self._sparse.document(text).indices)
        probed = probed_words(query)
        forms = _merged(joined_forms(query), derived_forms(probed))
        terms = _probe_terms(self._sparse, probed, forms)
        absent = _absent_words(probed, forms, terms, lambda word_terms: not held.isdisjoint(word_terms))
        if not absent:
            return tuple(symbols)
        vector = self._queries.embed(" ".join(query.split()))
        central = self._central_words(vector, absent, SELECTION_KEY_WORD_COSINE)
        return (*symbols, *(word for word in absent if word in central))

    async def amissing_key_words(self, query: str, text: str) -> tuple[str, ...]:
        return await self.arun(functools.partial(self.missing_key_words, query, text))

    def _central_words(
        self, query_vector: Sequence[float], words: Sequence[str], bar: float = KEY_WORD_COSINE
    ) -> set[str]:
        """The ``words`` that say what the query asks about: each embedded alone, as close to the
        query as ``bar``."""
        if not words:
            return set()
        query = np.asarray(query_vector, dtype=np.float32)
        vectors = np.asarray(self._embedder.embed_documents(list(words)), dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1) * float(np.linalg.norm(query))
        cosines = (vectors @ query) / np.where(norms > 0, norms, 1.0)
        return {word for word, cosine in zip(words, cosines, strict=True) if cosine >= bar}

    def _encode(self, query: str) -> tuple[list[float], SparseVector]:
        """The query's dense and sparse vectors; a failure is this query's own clear error, one log line."""
        try:
            return self._queries.embed(query), self._sparse.query(query)
        except UnicodeError as error:  # the API refuses such text; the CLI or a library caller may not
            raise InvalidRequestError("the query is not valid Unicode text (a lone surrogate?)") from error
        except Exception as error:
            # The operator's detail; users are shown EmbeddingError's fixed public message.
            raise EmbeddingError(
                f"the query could not be embedded ({type(error).__name__}: {error})"
            ) from error

    async def asearch(
        self,
        query: str,
        *,
        top_k: int | None = None,
        filters: Mapping[str, Sequence[str] | str] | None = None,
    ) -> RetrievalResult:
        """``search`` in a worker thread: embedding and search are CPU-bound and must not block a loop."""
        call = functools.partial(self.search, query, top_k=top_k, filters=filters)
        return await anyio.to_thread.run_sync(call, limiter=self._limiter, abandon_on_cancel=True)

    def warm(self) -> None:
        """Load the embedding model now (one query embedding), so no reader's deadline pays for it."""
        if not self._warm:
            self._queries.embed("warm up")
            self._warm = True

    async def awarm(self) -> None:
        if not self._warm:
            await anyio.to_thread.run_sync(self.warm, limiter=self._limiter)

    def rank_passages(
        self, query: str, sections: Sequence[SectionResult], weights: PassageWeights | None = None
    ) -> list[ScoredPassage]:
        """The passages of ``sections`` that best answer ``query``, best first (see ``passage_rank``)."""
        query = " ".join(query.split())
        # Coverage counts the words that name something ("R", "small"), not "what happens" or "explain".
        topic = topic_text(query)
        # A capital symbol is held only as written: the stems are lower case, and "what does R mean?"
        # led with a note on how formulas are written, for its `v_r`, and the wheel radius `r`.
        symbols = {symbol: set(self._sparse.query(symbol).indices) for symbol in symbols_named(query)}
        # "How long…" is held by a passage that states a duration or a length ("Allow about an hour").
        measures = {word: set(self._sparse.query(word).indices) for word in measures_asked(query)}
        # A Greek letter asked by its name is held by a passage that writes the letter: "What does
        # theta mean in the pose?" is answered by "a **pose** `(x, y, θ)`: … the rotation angle".
        letters = {
            letter: set(self._sparse.query(name).indices)
            for name, letter in greek_letters_asked(query).items()
        }

        def terms(text: str) -> set[int]:
            found = set(self._passage_terms(text))
            for symbol, ids in symbols.items():
                if found & ids and not holds_symbol(text, symbol):
                    found -= ids
            for word, ids in measures.items():
                # The word itself is not the measure: "as much as" states no amount.
                found = found | ids if states_measure(text, word) else found - ids
            for letter, ids in letters.items():
                if letter in text or letter.upper() in text:
                    found |= ids
            return found

        return rank_passages(
            self._queries.embed(query),
            set(self._sparse.query(topic).indices),
            sections,
            embed=self._passage_vectors.embed,
            terms=terms,
            weights=weights or PassageWeights(),
            asked=direction_asked(query),
        )

    def prefill_passages(self, *, stop: threading.Event | None = None, sections_per_batch: int = 8) -> int:
        """Embed every section's passages into the cache, so no reader waits for them.

        Run at start in a background thread when answers are extractive: a question's passages are
        then ranked from cached vectors (tens of milliseconds instead of one embedding batch per
        question). Stops at ``stop``, or when the cache is nearly full (a very large book keeps
        embedding on demand). Returns the number of passages embedded. Batches are small (about one
        embedding call) because stopping waits for the current one.
        """
        if isinstance(self._embedder, ServingEmbedder) and self._embedder.passages_known:
            # The generation carries the vectors of every passage a search can rank: copying them
            # would only hold the interpreter (1.8 s on docusaurus-docs) while the first readers wait.
            return 0
        first_chunk: dict[str, ChunkPayload] = {}
        for hit in self._reader.all_chunks():
            payload = ChunkPayload.from_payload(hit.payload)
            section_id = _section_id(hit, payload)
            known = first_chunk.get(section_id)
            if known is None or payload.section_chunk_index < known.section_chunk_index:
                first_chunk[section_id] = payload
        pending = [_Candidate(section_id, 0.0, payload) for section_id, payload in first_chunk.items()]
        embedded = 0
        for start in range(0, len(pending), sections_per_batch):
            if (stop is not None and stop.is_set()) or len(self._passage_vectors) >= PASSAGE_PREFILL_LIMIT:
                break
            sections = self._assemble("", pending[start : start + sections_per_batch])
            texts = embedding_inputs(sections, candidates(sections))
            self._passage_vectors.embed(texts)
            embedded += len(texts)
        return embedded

    async def arank_passages(self, query: str, sections: Sequence[SectionResult]) -> list[ScoredPassage]:
        call = functools.partial(self.rank_passages, query, sections)
        return await anyio.to_thread.run_sync(call, limiter=self._limiter, abandon_on_cancel=True)

    def _group(self, fused: list[Hit]) -> list[_Candidate]:
        by_section: dict[str, _Candidate] = {}
        seen_content: dict[tuple[str, str], str] = {}
        for hit in fused:  # best first
            payload = self._payload(hit)
            section_id = _section_id(hit, payload)
            candidate = by_section.get(section_id)
            if candidate is None:
                key = _dedupe_key(payload)
                if key in seen_content and seen_content[key] != section_id:
                    continue
                seen_content[key] = section_id
                candidate = by_section[section_id] = _Candidate(section_id, hit.score, payload)
            candidate.hits.append(payload.section_chunk_index)
        return list(by_section.values())

    def _document_terms(self, text: str) -> frozenset[int]:
        return frozenset(self._sparse.document(text).indices)

    def _payload(self, hit: Hit) -> ChunkPayload:
        """``hit``'s payload read back, kept by chunk id and the payload's hash (the ingest's stamp of
        its content): the same chunks come back for many queries, of this generation or a later one.
        Only the stamps in ``extra`` (``index_version``…) may be those of an earlier generation: a
        search never reads them."""
        stamp = hit.payload.get("payload_hash")
        if not isinstance(stamp, str):  # an index without the stamp: read every time
            return ChunkPayload.from_payload(hit.payload)
        key = (hit.id, stamp)
        payload = self._payloads.get(key)
        if payload is None:
            payload = ChunkPayload.from_payload(hit.payload)
            self._payloads.put(key, payload)
        return payload

    def _rerank(self, query: str, candidates: list[_Candidate]) -> list[_Candidate]:
        assert self._reranker is not None
        head = candidates[: self.settings.rerank_candidates]
        passages = [f"{c.payload.title} › {c.payload.heading_text}\n\n{c.payload.text}" for c in head]
        scores = self._reranker.scores(query, passages)
        order = sorted(range(len(head)), key=lambda i: -scores[i])
        reranked = [head[i] for i in order]
        for candidate, score in zip(reranked, sorted(scores, reverse=True), strict=True):
            candidate.score = score
        return reranked + candidates[len(head) :]

    def _learned_rerank(
        self, dense: list[float], sparse: SparseVector, hits: HybridHits, candidates: list[_Candidate]
    ) -> list[_Candidate]:
        """The top sections in the order the scorer fitted at ingest gives them (fusion's order when
        the generation carries none); their scores stay the fused ones."""
        assert self._learned is not None
        model = self._learned.model(self.index_version, self._embedder.model_id)
        if model is None:
            return candidates
        head = candidates[: self.settings.rerank_candidates]
        found = self._learned.candidates(hits, [(c.section_id, c.score, c.payload) for c in head])
        scores = model.scores(frozenset(sparse.indices), dense, found)
        order = sorted(range(len(head)), key=lambda i: (-scores[i], i))
        return [head[i] for i in order] + candidates[len(head) :]

    def _section_chunks(self, section_ids: list[str]) -> dict[str, tuple[SectionChunk, ...]]:
        """Each section's chunks, kept per index generation (a section changes only with a new one):
        the same sections come back for many questions, and reading them was a scroll of the index."""
        generation = self.index_version
        kept, absent = self._section_chunks_kept.get_many(
            (generation, section_id) for section_id in section_ids
        )
        found = {section_id: chunks for (_, section_id), chunks in kept.items()}
        missing = [section_id for _, section_id in absent]
        if not missing:
            return found
        read: dict[str, list[SectionChunk]] = {section_id: [] for section_id in missing}
        for hit in self._reader.section_chunks(missing):
            payload = self._payload(hit)
            if payload.section_id in read:
                read[str(payload.section_id)].append(SectionChunk.from_payload(payload))
        fresh = {section_id: tuple(chunks) for section_id, chunks in read.items()}
        if self.index_version == generation:  # else a switch meanwhile: they may be of either one
            for section_id, chunks in fresh.items():
                self._section_chunks_kept.put((generation, section_id), chunks)
        return found | fresh

    def _assemble(self, query: str, chosen: list[_Candidate]) -> list[SectionResult]:
        chunks_by_section = self._section_chunks(list(dict.fromkeys(c.section_id for c in chosen)))
        budget = self.settings.section_max_tokens
        results = []
        for candidate in chosen:
            p = candidate.payload
            built = assemble(
                list(chunks_by_section[candidate.section_id]) or [SectionChunk.from_payload(p)],
                candidate.hits,
                budget_tokens=budget,
                count_tokens=self._count_tokens,
            )
            results.append(
                SectionResult(
                    section_id=candidate.section_id,
                    doc_path=p.doc_path,
                    doc_id=p.doc_id,
                    title=p.title,
                    heading=p.heading,
                    heading_text=p.heading_text,
                    heading_level=p.heading_level,
                    breadcrumb=list(p.breadcrumb),
                    url=p.url or "",
                    page_url=p.page_url,
                    anchor=p.anchor,
                    module=p.module,
                    chapter=p.chapter,
                    version=p.version,
                    locale=p.locale,
                    content_type=p.content_type or "",
                    score=candidate.score,
                    snippet=make_snippet(p.text, query),
                    text=built.text,
                    tokens=built.tokens,
                    truncated=built.truncated,
                    matched_chunks=list(candidate.hits),
                )
            )
        return results

    def close(self) -> None:
        self._reader.close()
        if self._store is not None:
            self._store.close()


def _embedder_for(settings: EmbeddingSettings, model: str) -> Embedder:
    # Only a site-adapted copy of the configured local model is followed; any other model is left
    # to the mismatch check, which refuses it with a clear message.
    if is_adapted(model) or model == settings.resolved_embedding_model:
        return create_embedder(settings, model=model)
    return create_embedder(settings)
