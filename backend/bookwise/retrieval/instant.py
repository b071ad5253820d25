"""Search as the reader types: the book's sections for a query that may end in half a word.

A keystroke query differs from a question: its last word is usually unfinished, it is sent every
few hundred milliseconds by every reader typing, and its answer is a list to pick from, not
evidence for a model. So this is a lexical index of its own, built in memory once per index
generation from the chunk payloads (``Retriever.chunk_payloads``): BM25 over each section's page
title, heading and text, where the last word of the query matches every word of the vocabulary it
begins (``conf`` → ``config``, ``configure``…). The dense channel joins in once the query has a
complete word; its ranking is fused with the lexical one by reciprocal rank and cached by the text it
was embedded from, so typing the next word's letters reuses it instead of embedding again. While the
query is short, the dense channel also reads a word being typed that is already a word of the book,
and its best sections keep places among the first results (the few words typed give the lexical
ranking little to go on).
"""

from __future__ import annotations

import bisect
import functools
import logging
import math
import re
import threading
import time
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from bookwise.index.embedders import ServingEmbedder
from bookwise.ingest.documents import is_exercises
from bookwise.ingest.payload import ChunkPayload
from bookwise.lru import Lru
from bookwise.retrieval.batching import QueryBatcher
from bookwise.retrieval.models import code_spans, plain_markdown, plain_text, site_url
from bookwise.retrieval.passage_rank import candidates, embedding_inputs
from bookwise.retrieval.retriever import Retriever
from bookwise.retrieval.snippets import STOP_WORDS, before_solutions

_log = logging.getLogger("bookwise.retrieval")
_WORD = re.compile(r"\w+", re.UNICODE)
# Markdown that reads badly in a one-line snippet: fence and admonition lines, link targets, emphasis
# and code marks (a single `_` stays: it is part of names like `u_max`), line markers, table pipes.
_FENCE = re.compile(r"^\s*(```|~~~).*$", re.M)
_ADMONITION = re.compile(r"^\s*:::\w*.*$", re.M)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_EMPHASIS = re.compile(r"\*{1,3}|_{2,3}|`+")
_LINE_MARKS = re.compile(r"^\s*(#{1,6}|>+|[-*+]|\d+\.)\s+", re.M)

K1, B = 1.2, 0.75
HEADING_WEIGHT = 3  # a word of the heading counts as this many of the text
TITLE_WEIGHT = 2  # and one of the page title (or the breadcrumb) as this many
PREFIX_EXPANSIONS = 24  # the vocabulary words a half-typed word stands for, most common first
PREFIX_WEIGHT = 0.8  # a completion weighs a little less than the word typed whole
WORD_PREFIX_WEIGHT = 0.5  # and less again when what is typed is a whole word already
RRF_K = 20  # reciprocal-rank fusion of the lexical and dense rankings
# The dense ranking weighs in the fusion by the complete words it was embedded from, in full from
# this many: a word or two carry little meaning for the embedder, and their exact matches are the
# better guide (measured: scripts/bench_instant_search.py quality).
DENSE_FULL_WORDS = 3
# Until then, the dense ranking's first (DENSE_FULL_WORDS - complete words) sections keep places among
# this many first results, and a word being typed that is a word of the book (of this many letters at
# least) is read by the dense channel as typed: the reader may have finished it.
DENSE_KEPT_WITHIN = 5
DENSE_TYPED_WORD_CHARS = 3
# An exercise section's lexical score is weighed by this: on a tie or near-tie the section that
# teaches comes first ("kalman gai" means the Kalman gain's section, not the exercises that ask about it).
EXERCISE_WEIGHT = 0.9
DENSE_TOP_K = 10
SECOND_PASSAGE_WEIGHT = 0.1  # of a section's second best passage, added to its best one's cosine
DENSE_CACHE = 512  # dense rankings kept, by (generation, complete words, filters)
SNIPPET_CHARS = 160
COMPLETION_CACHE = 50_000  # typed prefixes whose completions are kept (cleared when full)
ALLOWED_CACHE = 256


@dataclass(frozen=True)
class Snippet:
    text: str
    marks: tuple[tuple[int, int], ...]


@dataclass
class Section:
    key: tuple[str, str, str]  # (url, version, locale): the same key the dense channel's sections have
    url: str
    page_url: str
    anchor: str
    title: str
    heading: str
    breadcrumb: tuple[str, ...]
    version: str | None
    locale: str | None
    doc_path: str  # with the source-form heading, the key the evaluation's gold sections use
    source_heading: str
    chunks: list[str] = field(default_factory=list)
    text: str = ""  # plain-ish text, for snippets
    exercise: bool = False  # a page of exercises (its declared type), or a section headed as such


@dataclass(frozen=True)
class InstantHit:
    section: int
    score: float
    matched: frozenset[str]  # the vocabulary words that matched in this section


def words_of(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def _plain_snippet_text(markdown: str) -> str:
    text = _FENCE.sub(" ", _ADMONITION.sub(" ", before_solutions(markdown)))
    text = _EMPHASIS.sub("", _LINE_MARKS.sub("", _LINK.sub(r"\1", text))).replace("|", " ")
    return " ".join(plain_text(text).split())


@dataclass(frozen=True)
class ParsedQuery:
    """The query's complete words (stop words dropped), the word being typed, if any, the text up to
    the last complete word, as typed (stop words kept: the embedder reads them as sense), and the word
    being typed as typed."""

    complete: tuple[str, ...]
    partial: str
    dense_text: str = field(default="", compare=False)
    typed: str = field(default="", compare=False)

    @classmethod
    def parse(cls, query: str) -> ParsedQuery:
        tokens = words_of(query)
        typing = bool(tokens) and bool(query) and not query[-1].isspace() and query[-1] not in "?!.,;:"
        partial = tokens.pop() if typing else ""
        complete = tuple(dict.fromkeys(t for t in tokens if t not in STOP_WORDS))
        last = list(_WORD.finditer(query))[-1] if partial else None
        done = query[: last.start()] if last else query
        return cls(complete, partial, " ".join(done.split()), last.group() if last else "")


class SectionIndex:
    """Every section of one index generation with a BM25F-like inverted index and a sorted vocabulary.

    A word's BM25 weight in a section depends on the book alone, so it is computed here, once: a
    keystroke only adds up arrays (one per word: the sections holding it, and its weight in each).
    """

    def __init__(self, generation: str, payloads: Sequence[ChunkPayload]) -> None:
        self.generation = generation
        by_key: dict[tuple[str, str, str], Section] = {}
        for p in sorted(payloads, key=lambda p: (p.page_url, p.chunk_index)):
            url = site_url(p.url or p.page_url)
            key = (url, p.version or "", p.locale or "")
            section = by_key.get(key)
            if section is None:
                code = code_spans(p.heading)
                section = by_key[key] = Section(
                    key=key,
                    url=url,
                    page_url=site_url(p.page_url),
                    anchor=url.partition("#")[2],
                    title=plain_text(p.title, code),
                    heading=plain_markdown(p.heading) if p.heading else "",
                    breadcrumb=tuple(plain_text(c, code) for c in p.breadcrumb),
                    version=p.version,
                    locale=p.locale,
                    doc_path=p.doc_path,
                    source_heading=p.heading,
                )
            section.chunks.append(p.text)
            if is_exercises(p.content_type, p.heading_text or section.heading):
                section.exercise = True
        self.sections = list(by_key.values())
        self.index_of = {s.key: i for i, s in enumerate(self.sections)}
        postings: dict[str, dict[int, float]] = defaultdict(dict)
        lengths: list[float] = []
        for number, section in enumerate(self.sections):
            section.text = _plain_snippet_text("\n\n".join(section.chunks))
            section.chunks = []  # the text is all that is kept
            counts: Counter[str] = Counter(words_of(section.text))
            for word in words_of(section.heading):
                counts[word] += HEADING_WEIGHT
            for word in words_of(" ".join((section.title, *section.breadcrumb))):
                counts[word] += TITLE_WEIGHT
            lengths.append(float(sum(counts.values())))
            for word, count in counts.items():
                postings[word][number] = float(count)
        self.vocabulary = sorted(postings)
        exercise = np.array([s.exercise for s in self.sections], dtype=np.bool_)
        self.exercise = exercise if exercise.any() else None
        self.lengths = lengths
        self.average_length = sum(lengths) / len(lengths) if lengths else 1.0
        total = len(self.sections)
        self.idf = {
            word: math.log(1 + (total - len(found) + 0.5) / (len(found) + 0.5))
            for word, found in postings.items()
        }
        # Completions are ranked by how many sections hold them: the common word is the likely one.
        self.frequency = {word: len(found) for word, found in postings.items()}
        norms = [K1 * (1 - B + B * length / self.average_length) for length in lengths]
        self.postings: dict[str, tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]] = {}
        for word, found in postings.items():
            numbers = np.fromiter(found, dtype=np.intp, count=len(found))
            counts_ = np.fromiter(found.values(), dtype=np.float64, count=len(found))
            weights = np.array([norms[n] for n in found], dtype=np.float64)
            self.postings[word] = (numbers, self.idf[word] * counts_ * (K1 + 1) / (counts_ + weights))
        # Which sections hold a word, for the words to mark in a result.
        self.holding = {word: frozenset(found) for word, found in postings.items()}
        self._completions: dict[str, list[str]] = {}
        self._allowed: dict[tuple[str, str], tuple[set[int] | None, npt.NDArray[np.bool_] | None]] = {}

    def completions(self, prefix: str) -> list[str]:
        """The vocabulary words starting with ``prefix`` (itself first when it is one), most common first."""
        if not prefix:
            return []
        known = self._completions.get(prefix)
        if known is not None:
            return known
        start = bisect.bisect_left(self.vocabulary, prefix)
        end = bisect.bisect_left(self.vocabulary, prefix + "\U0010ffff", lo=start)
        found = self.vocabulary[start:end]
        if len(found) > PREFIX_EXPANSIONS:
            found = sorted(found, key=lambda w: -self.frequency[w])[:PREFIX_EXPANSIONS]
        exact = [prefix] if prefix in self.postings else []
        completions = exact + [w for w in found if w != prefix]
        if len(self._completions) >= COMPLETION_CACHE:
            self._completions.clear()
        self._completions[prefix] = completions
        return completions

    def allowed(self, version: str | None, locale: str | None) -> set[int] | None:
        """The sections of the reader's version and locale (None: all), or all when none has them."""
        return self._allowed_of(version, locale)[0]

    def mask(self, version: str | None, locale: str | None) -> npt.NDArray[np.bool_] | None:
        """``allowed`` as a mask over the sections."""
        return self._allowed_of(version, locale)[1]

    def _allowed_of(
        self, version: str | None, locale: str | None
    ) -> tuple[set[int] | None, npt.NDArray[np.bool_] | None]:
        if not version and not locale:
            return None, None
        key = (version or "", locale or "")
        known = self._allowed.get(key)
        if known is not None:
            return known
        chosen = {
            i
            for i, s in enumerate(self.sections)
            if (not version or s.version == version) and (not locale or s.locale == locale)
        }
        mask = None
        if chosen:
            mask = np.zeros(len(self.sections), dtype=np.bool_)
            mask[list(chosen)] = True
        found = (chosen or None, mask)
        if len(self._allowed) < ALLOWED_CACHE:  # readers name versions and locales: a few, not many
            self._allowed[key] = found
        return found

    def terms(self, parsed: ParsedQuery) -> list[list[tuple[str, float]]]:
        """The query's words, each with the vocabulary words that stand for it and their weights.

        The word being typed stands for the words it begins, with two exceptions: a stop word is most
        likely that word ("of", not "offline"), so it is left out like the complete ones; and a prefix
        that is a word of the book already may well be finished, so its longer completions count less.
        """
        terms: list[list[tuple[str, float]]] = [[(w, 1.0)] for w in parsed.complete]
        partial = parsed.partial
        if partial and partial not in parsed.complete and partial not in STOP_WORDS:
            if len(partial) == 1:
                terms.append([(partial, 1.0)])  # one letter completes to too much
            else:
                longer = WORD_PREFIX_WEIGHT if partial in self.postings else PREFIX_WEIGHT
                terms.append([(w, 1.0 if w == partial else longer) for w in self.completions(partial)])
        return terms

    def dense_text(self, parsed: ParsedQuery) -> str:
        """What the dense channel embeds: the text up to the word being typed, and that word too while
        the query is short and it is a word of the book already (the reader may be done with it; once
        a space follows, the text is the same, so that embedding is reused)."""
        partial = parsed.partial
        if (
            len(parsed.complete) < DENSE_FULL_WORDS
            and len(partial) >= DENSE_TYPED_WORD_CHARS
            and partial not in STOP_WORDS
            and partial in self.postings
        ):
            return f"{parsed.dense_text} {parsed.typed}".strip()
        return parsed.dense_text

    def search(self, parsed: ParsedQuery, allowed: set[int] | None, limit: int) -> list[InstantHit]:
        """Sections by BM25 over the complete words and the typed word's completions, weighed by how
        many of the query's words they hold."""
        terms = self.terms(parsed)
        mask = None
        if allowed is not None:
            mask = np.zeros(len(self.sections), dtype=np.bool_)
            mask[list(allowed)] = True
        return self.search_masked(terms, mask, limit)

    def search_masked(
        self, terms: list[list[tuple[str, float]]], mask: npt.NDArray[np.bool_] | None, limit: int
    ) -> list[InstantHit]:
        total = len(self.sections)
        scores = np.zeros(total, dtype=np.float64)
        covered = np.zeros(total, dtype=np.float64)
        for alternatives in terms:
            best = np.zeros(total, dtype=np.float64)
            for word, weight in alternatives:
                found = self.postings.get(word)
                if found is None:
                    continue
                numbers, weights = found
                best[numbers] = np.maximum(best[numbers], weights * weight if weight != 1.0 else weights)
            if mask is not None:
                best[~mask] = 0.0
            scores += best
            covered += best > 0
        candidates_ = np.flatnonzero(scores > 0)
        if not len(candidates_):
            return []
        # A section holding every word of the query weighs up to twice one holding few of them.
        ranked = scores[candidates_] * (0.5 + 0.5 * covered[candidates_] / len(terms))
        if self.exercise is not None:
            ranked *= np.where(self.exercise[candidates_], EXERCISE_WEIGHT, 1.0)
        order = np.lexsort((candidates_, -ranked))[:limit]
        holding = [self.holding[w] for alternatives in terms for w, _ in alternatives if w in self.holding]
        words = [w for alternatives in terms for w, _ in alternatives if w in self.holding]
        return [
            InstantHit(
                n, float(scores[n]), frozenset(w for w, held in zip(words, holding, strict=True) if n in held)
            )
            for n in candidates_[order].tolist()
        ]


@functools.lru_cache(maxsize=4096)
def words_pattern(words: frozenset[str]) -> re.Pattern[str]:
    """Any of ``words`` (lower case) as a whole word of a text, in any case: what ``words_of`` would
    have found, by a regular expression rather than splitting a whole section into words."""
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=lambda w: (-len(w), w)))
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)


def _spans(
    text: str, matched: frozenset[str], start: int = 0, pattern: re.Pattern[str] | None = None
) -> Iterator[re.Match[str]]:
    """The words of ``text`` from ``start`` on that are in ``matched``; ``pattern``: one that finds
    them among others (the whole query's, compiled once for all of its results)."""
    if not matched:
        return iter(())
    found = (pattern or words_pattern(matched)).finditer(text, start)
    return (m for m in found if m.group().lower() in matched)


def snippet(
    text: str, matched: frozenset[str], max_chars: int = SNIPPET_CHARS, pattern: re.Pattern[str] | None = None
) -> Snippet:
    """A window of the text around its first matched word, and where each matched word stands in it."""
    if not text:
        return Snippet("", ())
    first = next(_spans(text, matched, 0, pattern), None)
    start = 0
    if first is not None:
        start = max(0, first.start() - max_chars // 4)
        if start:
            space = text.find(" ", start)
            start = space + 1 if 0 <= space < first.start() else start
    end = min(len(text), start + max_chars)
    if end < len(text):
        space = text.rfind(" ", start, end)
        end = space if space > start else end
    window = text[start:end]
    prefix = "…" if start else ""
    suffix = "…" if end < len(text) else ""
    offset = len(prefix) - start
    marks = []
    if first is not None:
        for m in _spans(text, matched, start, pattern):
            if m.start() >= end:
                break
            if m.end() <= end:
                marks.append((m.start() + offset, m.end() + offset))
    return Snippet(prefix + window + suffix, tuple(marks))


def marks_in(text: str, matched: frozenset[str]) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _WORD.finditer(text) if m.group().lower() in matched]


@dataclass(frozen=True)
class InstantResult:
    query: str
    index_version: str
    dense: bool  # whether the dense channel ranked too
    sections: list[dict[str, Any]]
    timings_ms: dict[str, float]

    def pages(self) -> list[dict[str, Any]]:
        """The sections grouped by page, pages in the order of their best section."""
        grouped: OrderedDict[str, dict[str, Any]] = OrderedDict()
        for section in self.sections:
            page = grouped.get(section["page_url"])
            if page is None:
                page = grouped[section["page_url"]] = {
                    "page_url": section["page_url"],
                    "title": section["title"],
                    "title_marks": section.pop("title_marks"),
                    "sections": [],
                }
            else:
                section.pop("title_marks")
            del section["title"], section["page_url"]
            page["sections"].append(section)
        return list(grouped.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "index_version": self.index_version,
            "dense": self.dense,
            "count": len(self.sections),
            "pages": self.pages(),
            "timings_ms": {k: round(v, 2) for k, v in self.timings_ms.items()},
        }


class PassageVectors:
    """The book's passages as the ingest embedded them, each owned by a section of the ``SectionIndex``.

    The dense channel of a keystroke ranks sections by their best passage's cosine to the query (and a
    little of their second best's): a product of one matrix and the query vector, instead of a search
    of the index (its hybrid query, grouping, assembly and probes, most of the cost of a question's
    retrieval and not needed to order a list of headings).
    """

    def __init__(self, owners: npt.NDArray[np.intp], vectors: npt.NDArray[np.float32], sections: int) -> None:
        order = np.argsort(owners, kind="stable")
        self.owners = owners[order]
        self.vectors = vectors[order]
        self.starts = np.flatnonzero(np.r_[True, self.owners[1:] != self.owners[:-1]])
        self.holders = self.owners[self.starts]  # the sections that have passages, in order
        self.segment = np.cumsum(np.r_[False, self.owners[1:] != self.owners[:-1]])  # passage -> holder
        self.sections = sections

    @classmethod
    def build(cls, retriever: Retriever, index: SectionIndex) -> PassageVectors | None:
        """The passages' vectors when the index carries them (None: they would all be embedded now)."""
        embedder = retriever.embedder
        if not isinstance(embedder, ServingEmbedder) or not embedder.passages_known:
            return None
        texts: list[str] = []
        owners: list[int] = []
        for outline in retriever.outlines().values():
            sections = retriever.outline_sections(outline)
            found = candidates(sections)
            for text, passage in zip(embedding_inputs(sections, found), found, strict=True):
                section = sections[passage.section]
                number = index.index_of.get((section.url, section.version or "", section.locale or ""))
                if number is not None:
                    texts.append(text)
                    owners.append(number)
        if not texts:
            return None
        vectors = np.asarray(embedder.embed_documents(texts), dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors /= np.where(norms > 0, norms, 1.0)
        return cls(np.asarray(owners, dtype=np.intp), vectors, len(index.sections))

    def rank(
        self, query: Sequence[float], mask: npt.NDArray[np.bool_] | None, top_k: int
    ) -> list[int] | None:
        """The ``top_k`` sections by their best passage (None: the query vector is of another model)."""
        vector = np.asarray(query, dtype=np.float32)
        if vector.shape != (self.vectors.shape[1],):
            return None
        norm = float(np.linalg.norm(vector))
        # Not ``@``: BLAS would spread this small product over threads that spin and cost 20 times
        # the CPU of einsum's single loop (measured: 8 ms against 0.3 ms for 3,185 passages).
        cosines = np.einsum("ij,j->i", self.vectors, vector / (norm or 1.0))
        best = np.maximum.reduceat(cosines, self.starts)
        # A section with a second passage close to the query is more about it than one close passage.
        second = np.maximum.reduceat(np.where(cosines == best[self.segment], -1.0, cosines), self.starts)
        best = best + SECOND_PASSAGE_WEIGHT * np.maximum(second, 0.0)
        holders = self.holders
        if mask is not None:
            keep = mask[holders]
            best, holders = best[keep], holders[keep]
        order = np.lexsort((holders, -best))[:top_k]
        ranked: list[int] = holders[order].tolist()
        return ranked


def keep_dense_first(fused: list[InstantHit], kept: Sequence[int], within: int) -> list[InstantHit]:
    """``fused`` with the sections ``kept`` (the dense ranking's first, in its order) among its first
    ``within``: those that are not take the last of those places. While the dense channel weighs
    less than in full, its best sections could otherwise never show, where the few words typed give
    the lexical ranking little to go on."""
    first = {hit.section for hit in fused[:within]}
    missing = [n for n in kept if n not in first]
    if not missing:
        return fused
    moved = [hit for hit in fused if hit.section in missing]
    moved.sort(key=lambda hit: missing.index(hit.section))
    head = [hit for hit in fused if hit.section not in missing][: within - len(moved)]
    placed = {hit.section for hit in head} | set(missing)
    return head + moved + [hit for hit in fused if hit.section not in placed]


class InstantSearch:
    """Keystroke search over one retriever: the section index follows its generations."""

    def __init__(self, retriever: Retriever, *, dense_min_words: int = 1) -> None:
        self.retriever = retriever
        self.dense_min_words = dense_min_words
        self._index: SectionIndex | None = None
        self._lock = threading.Lock()
        self._dense: Lru[tuple[str, str, str, str], tuple[tuple[str, str, str], ...]] = Lru(DENSE_CACHE)
        self._passages: tuple[str, PassageVectors | None] | None = None
        self._passages_lock = threading.Lock()
        self._loading: str | None = None  # the generation whose passages a thread is loading
        # Readers finishing words at once have their queries embedded in one forward pass.
        self._queries = QueryBatcher(lambda texts: self.retriever.embedder.embed_documents(texts))

    def section_index(self) -> SectionIndex:
        generation = self.retriever.generation()
        index = self._index
        if index is not None and index.generation == generation:
            return index
        with self._lock:
            if self._index is None or self._index.generation != generation:
                self._index = SectionIndex(generation, self.retriever.chunk_payloads())
            return self._index

    def passage_vectors(self, index: SectionIndex) -> PassageVectors | None:
        """The passages of ``index``'s generation, loaded now if they are not yet (seconds for a large
        book: the benchmark's warm-up; a server loads them in the background, ``_passages_soon``)."""
        known = self._passages
        if known is not None and known[0] == index.generation:
            return known[1]
        with self._passages_lock:
            if self._passages is None or self._passages[0] != index.generation:
                self._passages = (index.generation, self._load_passages(index))
            return self._passages[1]

    def _passages_soon(self, index: SectionIndex) -> PassageVectors | None:
        """The loaded passages of ``index``'s generation, or None while a thread loads them: no reader
        waits for a new generation's passages (its dense rankings come from the index meanwhile)."""
        known = self._passages
        if known is not None and known[0] == index.generation:
            return known[1]
        with self._passages_lock:
            if self._loading != index.generation:
                self._loading = index.generation
                threading.Thread(
                    target=self.passage_vectors, args=(index,), name="instant-passages", daemon=True
                ).start()
        return None

    def _load_passages(self, index: SectionIndex) -> PassageVectors | None:
        try:
            return PassageVectors.build(self.retriever, index)
        except Exception as error:  # e.g. the generation went away meanwhile: the index's search instead
            _log.warning("keystroke search: passage vectors not loaded (%s)", type(error).__name__)
            return None

    def _dense_ranking(
        self, index: SectionIndex, text: str, version: str | None, locale: str | None, *, embed: bool = True
    ) -> tuple[tuple[str, str, str], ...] | None:
        """The sections the dense channel ranks first for ``text`` (None: not cached, and not ``embed``)."""
        key = (index.generation, text, version or "", locale or "")
        known = self._dense.get(key)
        if known is not None or not embed:
            return known
        ranking = self._dense_of_passages(index, text, version, locale)
        if ranking is None:
            ranking = self._dense_of_index(text, version, locale)
        self._dense.put(key, ranking)
        return ranking

    def _dense_of_passages(
        self, index: SectionIndex, text: str, version: str | None, locale: str | None
    ) -> tuple[tuple[str, str, str], ...] | None:
        passages = self._passages_soon(index)
        if passages is None or not text.strip():
            return None
        numbers = passages.rank(self._queries.embed(text), index.mask(version, locale), DENSE_TOP_K)
        return None if numbers is None else tuple(index.sections[n].key for n in numbers)

    def _dense_of_index(
        self, text: str, version: str | None, locale: str | None
    ) -> tuple[tuple[str, str, str], ...]:
        filters = {name: value for name, value in (("version", version), ("locale", locale)) if value}
        result = self.retriever.search(text, top_k=DENSE_TOP_K, filters=filters or None)
        if not result.sections and filters:  # the reader's version/locale is not in the index
            result = self.retriever.search(text, top_k=DENSE_TOP_K)
        return tuple((s.url, s.version or "", s.locale or "") for s in result.sections)

    def section_at(self, url: str, version: str | None, locale: str | None) -> Section | None:
        """The section a result's ``url`` names (of the reader's version and locale when it has them)."""
        index = self.section_index()
        number = index.index_of.get((site_url(url), version or "", locale or ""))
        if number is None:
            number = next((i for i, s in enumerate(index.sections) if s.url == site_url(url)), None)
        return None if number is None else index.sections[number]

    def gold_key(self, url: str, version: str | None, locale: str | None) -> tuple[str, str] | None:
        """A result's (doc_path, source heading): how the evaluation names a section."""
        index = self.section_index()
        number = index.index_of.get((url, version or "", locale or ""))
        if number is None:
            return None
        section = index.sections[number]
        return section.doc_path, section.source_heading

    def search(
        self,
        query: str,
        *,
        limit: int = 8,
        version: str | None = None,
        locale: str | None = None,
        dense: bool = True,
    ) -> InstantResult:
        found = self._search(self.section_index(), query, limit, version, locale, dense)
        assert found is not None  # it may embed
        return found

    def search_ready(
        self, query: str, *, limit: int = 8, version: str | None = None, locale: str | None = None
    ) -> InstantResult | None:
        """``search``, when it can answer from what is in memory (the loaded generation's section index,
        a cached dense ranking or none needed): well under a millisecond, so an event loop may call it
        instead of a worker thread. None when it would build an index or embed the query."""
        index = self._index
        if index is None or index.generation != self.retriever.index_version:
            return None
        return self._search(index, query, limit, version, locale, True, embed=False)

    def _search(
        self,
        index: SectionIndex,
        query: str,
        limit: int,
        version: str | None,
        locale: str | None,
        dense: bool,
        *,
        embed: bool = True,
    ) -> InstantResult | None:
        """The search; None when it would have to embed the query and ``embed`` is false."""
        started = time.perf_counter()
        timings: dict[str, float] = {}
        parsed = ParsedQuery.parse(query)
        allowed = index.allowed(version, locale)
        terms = index.terms(parsed)
        lexical = index.search_masked(terms, index.mask(version, locale), max(limit, DENSE_TOP_K) * 2)
        timings["lexical"] = (time.perf_counter() - started) * 1000
        use_dense = dense and len(parsed.complete) >= self.dense_min_words
        hits = lexical[:limit]
        if use_dense:
            mark = time.perf_counter()
            ranking = self._dense_ranking(index, index.dense_text(parsed), version, locale, embed=embed)
            if ranking is None:
                return None
            timings["dense"] = (time.perf_counter() - mark) * 1000
            fused = self._fuse(index, parsed, lexical, ranking, allowed)
            kept = [n for n in (index.index_of.get(key) for key in ranking) if n is not None]
            if allowed is not None:
                kept = [n for n in kept if n in allowed]
            kept = kept[: max(0, DENSE_FULL_WORDS - len(parsed.complete))]
            hits = keep_dense_first(fused, kept, min(limit, DENSE_KEPT_WITHIN))[:limit]
        every = frozenset(w for hit in hits for w in hit.matched)
        pattern = words_pattern(every) if every else None
        sections = [self._section(index, hit, pattern) for hit in hits]
        timings["total"] = (time.perf_counter() - started) * 1000
        return InstantResult(query, index.generation, use_dense, sections, timings)

    async def asearch(self, query: str, **options: Any) -> InstantResult:
        return await self.retriever.arun(functools.partial(self.search, query, **options))

    @staticmethod
    def _fuse(
        index: SectionIndex,
        parsed: ParsedQuery,
        lexical: Sequence[InstantHit],
        ranking: Sequence[tuple[str, str, str]],
        allowed: set[int] | None,
    ) -> list[InstantHit]:
        fused: dict[int, float] = defaultdict(float)
        by_number = {hit.section: hit for hit in lexical}
        for rank, hit in enumerate(lexical):
            fused[hit.section] += 1 / (RRF_K + rank + 1)
        wanted = set(parsed.complete) | ({parsed.partial} if parsed.partial else set())
        weight = min(1.0, len(parsed.complete) / DENSE_FULL_WORDS)
        for rank, key in enumerate(ranking):
            number = index.index_of.get(key)
            if number is None or (allowed is not None and number not in allowed):
                continue
            fused[number] += weight / (RRF_K + rank + 1)
            if number not in by_number:  # found by meaning: mark the query's own words it holds
                section = index.sections[number]
                text = f"{section.heading} {section.title} {section.text}"
                present = {m.group().lower() for m in _spans(text, frozenset(wanted))}
                by_number[number] = InstantHit(number, 0.0, frozenset(present))
        ordered = sorted(fused, key=lambda n: (-fused[n], n))
        return [InstantHit(n, fused[n], by_number[n].matched) for n in ordered]

    @staticmethod
    def _section(index: SectionIndex, hit: InstantHit, pattern: re.Pattern[str] | None) -> dict[str, Any]:
        section = index.sections[hit.section]
        found = snippet(section.text, hit.matched, pattern=pattern)
        return {
            "url": section.url,
            "page_url": section.page_url,
            "anchor": section.anchor,
            "title": section.title,
            "title_marks": marks_in(section.title, hit.matched),
            "heading": section.heading,
            "heading_marks": marks_in(section.heading, hit.matched),
            "breadcrumb": list(section.breadcrumb),
            "version": section.version,
            "locale": section.locale,
            "snippet": found.text,
            "snippet_marks": [list(m) for m in found.marks],
            "score": round(hit.score, 6),
        }
