"""Search as the reader types: the book's sections for a query that may end in half a word.

A keystroke query differs from a question: its last word is usually unfinished, it is sent every
few hundred milliseconds by every reader typing, and its answer is a list to pick from, not
evidence for a model. So this is a lexical index of its own, built in memory once per index
generation from the chunk payloads (``Retriever.chunk_payloads``): BM25 over each section's page
title, heading and text, where the last word of the query matches every word of the vocabulary it
begins (``conf`` → ``config``, ``configure``…). The dense channel (``Retriever.asearch``) joins in
once the query has enough complete words to carry a meaning; its ranking is fused with the lexical
one by reciprocal rank and cached by those complete words, so typing the next word's letters reuses
it instead of embedding again.
"""

from __future__ import annotations

import bisect
import functools
import math
import re
import threading
import time
from collections import Counter, OrderedDict, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bookwise.ingest.payload import ChunkPayload
from bookwise.retrieval.models import code_spans, plain_markdown, plain_text, site_url
from bookwise.retrieval.retriever import Retriever
from bookwise.retrieval.snippets import STOP_WORDS, before_solutions

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
RRF_K = 20  # reciprocal-rank fusion of the lexical and dense rankings
DENSE_TOP_K = 10
DENSE_CACHE = 512  # dense rankings kept, by (generation, complete words, filters)
SNIPPET_CHARS = 160


@dataclass(frozen=True)
class Snippet:
    text: str
    marks: tuple[tuple[int, int], ...]


@dataclass
class _Section:
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
    """The query's complete words (stop words dropped), the word being typed, if any, and the text
    up to the last complete word, as typed (stop words kept: the embedder reads them as sense)."""

    complete: tuple[str, ...]
    partial: str
    dense_text: str = field(default="", compare=False)

    @classmethod
    def parse(cls, query: str) -> ParsedQuery:
        tokens = words_of(query)
        typing = bool(tokens) and bool(query) and not query[-1].isspace() and query[-1] not in "?!.,;:"
        partial = tokens.pop() if typing else ""
        complete = tuple(dict.fromkeys(t for t in tokens if t not in STOP_WORDS))
        done = query[: list(_WORD.finditer(query))[-1].start()] if partial else query
        return cls(complete, partial, " ".join(done.split()))


class SectionIndex:
    """Every section of one index generation with a BM25F-like inverted index and a sorted vocabulary."""

    def __init__(self, generation: str, payloads: Sequence[ChunkPayload]) -> None:
        self.generation = generation
        by_key: dict[tuple[str, str, str], _Section] = {}
        for p in sorted(payloads, key=lambda p: (p.page_url, p.chunk_index)):
            url = site_url(p.url or p.page_url)
            key = (url, p.version or "", p.locale or "")
            section = by_key.get(key)
            if section is None:
                code = code_spans(p.heading)
                section = by_key[key] = _Section(
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
        self.postings = dict(postings)
        self.vocabulary = sorted(self.postings)
        self.lengths = lengths
        self.average_length = sum(lengths) / len(lengths) if lengths else 1.0
        total = len(self.sections)
        self.idf = {
            word: math.log(1 + (total - len(found) + 0.5) / (len(found) + 0.5))
            for word, found in self.postings.items()
        }
        # Completions are ranked by how many sections hold them: the common word is the likely one.
        self.frequency = {word: len(found) for word, found in self.postings.items()}

    def completions(self, prefix: str) -> list[str]:
        """The vocabulary words starting with ``prefix`` (itself first when it is one), most common first."""
        if not prefix:
            return []
        start = bisect.bisect_left(self.vocabulary, prefix)
        end = bisect.bisect_left(self.vocabulary, prefix + "\U0010ffff", lo=start)
        found = self.vocabulary[start:end]
        if len(found) > PREFIX_EXPANSIONS:
            found = sorted(found, key=lambda w: -self.frequency[w])[:PREFIX_EXPANSIONS]
        exact = [prefix] if prefix in self.postings else []
        return exact + [w for w in found if w != prefix]

    def allowed(self, version: str | None, locale: str | None) -> set[int] | None:
        """The sections of the reader's version and locale (None: all), or all when none has them."""
        if not version and not locale:
            return None
        chosen = {
            i
            for i, s in enumerate(self.sections)
            if (not version or s.version == version) and (not locale or s.locale == locale)
        }
        return chosen or None

    def search(self, parsed: ParsedQuery, allowed: set[int] | None, limit: int) -> list[InstantHit]:
        """Sections by BM25 over the complete words and the typed word's completions, weighed by how
        many of the query's words they hold."""
        terms: list[list[tuple[str, float]]] = [[(w, 1.0)] for w in parsed.complete]
        if parsed.partial and parsed.partial not in parsed.complete:
            if parsed.partial in STOP_WORDS and not parsed.complete:
                pass  # "how" alone: every page has it
            elif len(parsed.partial) == 1:
                terms.append([(parsed.partial, 1.0)])  # one letter completes to too much
            else:
                completions = self.completions(parsed.partial)
                terms.append([(w, 1.0 if w == parsed.partial else PREFIX_WEIGHT) for w in completions])
        scores: dict[int, float] = defaultdict(float)
        covered: dict[int, int] = defaultdict(int)
        matched: dict[int, set[str]] = defaultdict(set)
        for alternatives in terms:
            best: dict[int, float] = {}
            for word, weight in alternatives:
                found = self.postings.get(word)
                if not found:
                    continue
                idf = self.idf[word] * weight
                for number, count in found.items():
                    if allowed is not None and number not in allowed:
                        continue
                    norm = K1 * (1 - B + B * self.lengths[number] / self.average_length)
                    score = idf * count * (K1 + 1) / (count + norm)
                    if score > best.get(number, 0.0):
                        best[number] = score
                    matched[number].add(word)
            for number, score in best.items():
                scores[number] += score
                covered[number] += 1
        # A section holding every word of the query weighs up to twice one holding few of them.
        coverage = {n: 0.5 + 0.5 * covered[n] / len(terms) for n in scores}
        ranked = sorted(scores, key=lambda n: (-scores[n] * coverage[n], n))[:limit]
        return [InstantHit(n, scores[n], frozenset(matched[n])) for n in ranked]


def snippet(text: str, matched: frozenset[str], max_chars: int = SNIPPET_CHARS) -> Snippet:
    """A window of the text around its first matched word, and where each matched word stands in it."""
    spans = [m for m in _WORD.finditer(text) if m.group().lower() in matched]
    if not text:
        return Snippet("", ())
    start = 0
    if spans:
        first = spans[0].start()
        start = max(0, first - max_chars // 4)
        if start:
            space = text.find(" ", start)
            start = space + 1 if 0 <= space < first else start
    end = min(len(text), start + max_chars)
    if end < len(text):
        space = text.rfind(" ", start, end)
        end = space if space > start else end
    window = text[start:end]
    prefix = "…" if start else ""
    suffix = "…" if end < len(text) else ""
    offset = len(prefix) - start
    marks = tuple(
        (m.start() + offset, m.end() + offset) for m in spans if m.start() >= start and m.end() <= end
    )
    return Snippet(prefix + window + suffix, marks)


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


class InstantSearch:
    """Keystroke search over one retriever: the section index follows its generations."""

    def __init__(self, retriever: Retriever, *, dense_min_words: int = 2) -> None:
        self.retriever = retriever
        self.dense_min_words = dense_min_words
        self._index: SectionIndex | None = None
        self._lock = threading.Lock()
        self._dense: OrderedDict[tuple[str, str, str, str], tuple[tuple[str, str, str], ...]] = OrderedDict()
        self._dense_lock = threading.Lock()

    def section_index(self) -> SectionIndex:
        generation = self.retriever.generation()
        index = self._index
        if index is not None and index.generation == generation:
            return index
        with self._lock:
            if self._index is None or self._index.generation != generation:
                self._index = SectionIndex(generation, self.retriever.chunk_payloads())
            return self._index

    def _dense_ranking(
        self, index: SectionIndex, text: str, version: str | None, locale: str | None
    ) -> tuple[tuple[str, str, str], ...]:
        key = (index.generation, text, version or "", locale or "")
        with self._dense_lock:
            if key in self._dense:
                self._dense.move_to_end(key)
                return self._dense[key]
        filters = {name: value for name, value in (("version", version), ("locale", locale)) if value}
        result = self.retriever.search(text, top_k=DENSE_TOP_K, filters=filters or None)
        if not result.sections and filters:  # the reader's version/locale is not in the index
            result = self.retriever.search(text, top_k=DENSE_TOP_K)
        ranking = tuple((s.url, s.version or "", s.locale or "") for s in result.sections)
        with self._dense_lock:
            self._dense[key] = ranking
            while len(self._dense) > DENSE_CACHE:
                self._dense.popitem(last=False)
        return ranking

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
        started = time.perf_counter()
        timings: dict[str, float] = {}
        index = self.section_index()
        parsed = ParsedQuery.parse(query)
        allowed = index.allowed(version, locale)
        lexical = index.search(parsed, allowed, max(limit, DENSE_TOP_K) * 2)
        timings["lexical"] = (time.perf_counter() - started) * 1000
        use_dense = dense and len(parsed.complete) >= self.dense_min_words
        hits = lexical[:limit]
        if use_dense:
            mark = time.perf_counter()
            ranking = self._dense_ranking(index, parsed.dense_text, version, locale)
            timings["dense"] = (time.perf_counter() - mark) * 1000
            hits = self._fuse(index, parsed, lexical, ranking, allowed)[:limit]
        sections = [self._section(index, hit) for hit in hits]
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
        for rank, key in enumerate(ranking):
            number = index.index_of.get(key)
            if number is None or (allowed is not None and number not in allowed):
                continue
            fused[number] += 1 / (RRF_K + rank + 1)
            if number not in by_number:  # found by meaning: mark the query's own words it holds
                section = index.sections[number]
                present = set(words_of(f"{section.heading} {section.title} {section.text}")) & wanted
                by_number[number] = InstantHit(number, 0.0, frozenset(present))
        ordered = sorted(fused, key=lambda n: (-fused[n], n))
        return [InstantHit(n, fused[n], by_number[n].matched) for n in ordered]

    @staticmethod
    def _section(index: SectionIndex, hit: InstantHit) -> dict[str, Any]:
        section = index.sections[hit.section]
        found = snippet(section.text, hit.matched)
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
