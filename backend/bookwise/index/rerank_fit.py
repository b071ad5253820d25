"""A learned reranker fitted at ingest on the book itself: which of the top sections answers a question.

Fusion by ranks (RRF) throws away how far apart two candidates are, and knows nothing of headings: a
long reference page whose many chunks each match a little can outrank the short section whose heading
names the question's subject. This module learns, per book and with no labelled question, how to weigh
what the search already measured for each candidate section:

* its fused score and rank, its best cosine and best BM25 score (each relative to the best candidate's);
* the share of the question's terms in its heading, and in its page title and breadcrumb;
* the cosine of the question to the section's context line ("Title › Section › Heading"), the text the
  site-adapted embedder learned to match passages to;
* how many of its chunks matched, whether it is a page's introduction, and its heading level.

Training questions come from the book, as the embedder's adaptation does (``adapt.py``): each sampled
section gives one synthetic question, either a few of its most distinctive words or one of its sentences,
in both cases without the words of its heading, title and breadcrumb (readers rarely repeat a heading
word for word). Each question is searched the way the index searches (exact cosine, BM25 with Qdrant's
IDF, weighted RRF, grouping into sections), and a conditional logit (a softmax over one question's
candidates) is fitted so that the section the question came from scores first. The model is a handful of
weights and one vector per section, stored in the index generation; serving applies it with numpy in well
under a millisecond.
"""

from __future__ import annotations

import json
import math
import random
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bookwise.index.sparse import Bm25Encoder
from bookwise.ingest.models import Chunk

RERANK_MODEL = "reranker.json"  # in a generation directory: the fitted weights and the sections' rows
RERANK_VECTORS = "reranker-headings.npy"  # ... and each section's context-line vector, by row
FORMAT = 1
FEATURES = (
    "fused",
    "fused_rank",
    "cosine",
    "bm25",
    "heading_terms",
    "title_terms",
    "heading_cosine",
    "matched",
    "intro",
    "level",
)
MISSING_MARGIN = 0.05  # a channel that did not rank a section puts it this far below its lowest ranked one
MIN_SECTIONS = 20  # a smaller book is served by fusion alone

Embed = Callable[[Sequence[str]], list[list[float]]]
Vector = npt.NDArray[np.float32]


@dataclass(frozen=True)
class FitParams:
    rrf_k: int = 10
    weights: tuple[float, float] = (1.0, 1.0)  # dense, sparse: as the retriever fuses
    prefetch: int = 100
    limit: int = 50  # fused chunks grouped into sections
    candidates: int = 20  # top sections reranked
    max_queries: int = 1200
    l2: float = 0.01
    steps: int = 400
    seed: int = 13


@dataclass(frozen=True)
class Candidate:
    """One section as the search ranked it, in fused order."""

    section_id: str
    fused: float  # the RRF score of its best chunk
    cosine: float | None  # its best chunk's cosine, if the dense channel ranked one of its chunks
    bm25: float | None  # likewise for BM25
    matched: int  # its chunks among the fused ones
    heading_terms: frozenset[int]  # BM25 terms of its heading
    title_terms: frozenset[int]  # ... of its page title and breadcrumb
    level: int
    intro: bool


def _relative(values: Sequence[float | None]) -> npt.NDArray[np.float64]:
    """Each value minus the best one; a missing value sits a margin below the lowest present one."""
    present = [v for v in values if v is not None]
    if not present:
        return np.zeros(len(values))
    low, high = min(present) - MISSING_MARGIN, max(present)
    return np.array([(low if v is None else v) - high for v in values])


def feature_matrix(
    query_terms: frozenset[int], candidates: Sequence[Candidate], heading_cosines: Sequence[float | None]
) -> npt.NDArray[np.float64]:
    """One row of ``FEATURES`` per candidate (candidates in fused order)."""
    n = len(candidates)
    top_fused = max((c.fused for c in candidates), default=0.0) or 1.0
    top_bm25 = max((c.bm25 or 0.0 for c in candidates), default=0.0) or 1.0
    terms = len(query_terms) or 1
    columns = [
        [c.fused / top_fused for c in candidates],
        [1.0 / (rank + 1) for rank in range(n)],
        list(_relative([c.cosine for c in candidates])),
        [(c.bm25 or 0.0) / top_bm25 for c in candidates],
        [len(query_terms & c.heading_terms) / terms for c in candidates],
        [len(query_terms & c.title_terms) / terms for c in candidates],
        list(_relative(heading_cosines)),
        [math.log1p(c.matched) for c in candidates],
        [1.0 if c.intro else 0.0 for c in candidates],
        [c.level / 6 for c in candidates],
    ]
    return np.array(columns, dtype=np.float64).T.reshape(n, len(FEATURES))


@dataclass
class RerankModel:
    weights: npt.NDArray[np.float64]
    embed_model: str
    rows: dict[str, int]  # section id → row of ``vectors``
    vectors: Vector  # each section's context line, embedded (unit length)
    candidates: int = 20
    report: dict[str, Any] = field(default_factory=dict)

    def scores(
        self, query_terms: frozenset[int], query_vector: Sequence[float], candidates: Sequence[Candidate]
    ) -> list[float]:
        query = np.asarray(query_vector, dtype=np.float32)
        norm = float(np.linalg.norm(query)) or 1.0
        rows = [self.rows.get(c.section_id) for c in candidates]
        known = [r for r in rows if r is not None]
        cosines: dict[int, float] = {}
        if known:
            values = (self.vectors[known] @ query) / norm
            cosines = dict(zip(known, (float(v) for v in values), strict=True))
        heading = [None if r is None else cosines[r] for r in rows]
        return [float(s) for s in feature_matrix(query_terms, candidates, heading) @ self.weights]

    def save(self, directory: Path) -> None:
        with open(directory / RERANK_VECTORS, "wb") as handle:
            np.save(handle, self.vectors.astype(np.float32))
        meta = {
            "format": FORMAT,
            "features": list(FEATURES),
            "weights": [round(float(w), 6) for w in self.weights],
            "embed_model": self.embed_model,
            "candidates": self.candidates,
            "sections": sorted(self.rows, key=self.rows.__getitem__),
            "report": self.report,
        }
        (directory / RERANK_MODEL).write_text(json.dumps(meta, sort_keys=True), encoding="utf-8")

    @classmethod
    def load(cls, directory: Path, embed_model: str) -> RerankModel | None:
        """The model a generation carries, if it has one fitted with ``embed_model``'s vectors."""
        try:
            meta = json.loads((directory / RERANK_MODEL).read_text("utf-8"))
            if meta.get("format") != FORMAT or meta.get("features") != list(FEATURES):  # or skipped
                return None
            if meta.get("embed_model") != embed_model:
                return None
            vectors = np.load(directory / RERANK_VECTORS)
            sections = meta["sections"]
            if len(sections) != len(vectors):
                return None
            return cls(
                weights=np.asarray(meta["weights"], dtype=np.float64),
                embed_model=embed_model,
                rows={s: i for i, s in enumerate(sections)},
                vectors=vectors.astype(np.float32),
                candidates=int(meta.get("candidates", 20)),
                report=dict(meta.get("report") or {}),
            )
        except (OSError, ValueError, KeyError, TypeError):  # none, torn or foreign: fusion alone
            return None


def save_skipped(directory: Path) -> None:
    """Mark a generation whose book was too small to fit on: served by fusion alone, not refitted."""
    meta = {"format": FORMAT, "skipped": f"fewer than {MIN_SECTIONS} sections or questions to fit on"}
    (directory / RERANK_MODEL).write_text(json.dumps(meta, sort_keys=True), encoding="utf-8")


# Synthetic questions ----------------------------------------------------------------------------

_CODE_FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1", re.S | re.M)
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_MARKUP = re.compile(r"<[^>]+>|[`*_#>|]|:::\w*|\{[^}]*\}")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9-]{2,}")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_STOP = frozenset(
    "the and for are but not you your with this that from have has can will would should could into "
    "than then them they their there these those what when where which while who why how its it's also "
    "only just more most other some such very each any all both our out use used using may might must "
    "one two see let lets via per about after before over under between does did done been being were "
    "was had here like make makes made need needs new way ways well etc e.g i.e default example "
    "following below above".split()
)
_PREFIXES = ("", "", "how do I", "how can I", "what is", "why does", "where do I", "can I")


@dataclass(frozen=True)
class SectionText:
    section_id: str
    context: str  # "Title › Section › Heading", the embedded chunks' first line
    body: str


def _prose(markdown: str) -> str:
    text = _CODE_FENCE.sub(" ", markdown)
    text = _LINK_TARGET.sub("]", text)
    return " ".join(_MARKUP.sub(" ", text).split())


def sections_of(chunks: Sequence[Chunk]) -> list[SectionText]:
    """Each section's context line and its prose (code blocks left out), in reading order."""
    parts: dict[str, list[tuple[int, str]]] = defaultdict(list)
    context: dict[str, str] = {}
    for chunk in chunks:
        section = str(chunk.payload.get("section_id") or chunk.parent_id)
        parts[section].append((chunk.section_chunk_index, chunk.text))
        line = chunk.embed_text.partition("\n\n")[0] if "\n\n" in chunk.embed_text else ""
        if section not in context or chunk.section_chunk_index == 0:
            context[section] = line
    return [
        SectionText(section, context[section], _prose(" ".join(text for _, text in sorted(parts[section]))))
        for section in sorted(parts)
    ]


def synthetic_queries(sections: Sequence[SectionText], max_queries: int, seed: int) -> list[tuple[str, str]]:
    """(question, section id): one per sampled section, in words other than its heading's."""
    rng = random.Random(seed)
    vocab = [{w.lower() for w in _WORD.findall(s.body)} for s in sections]
    df = Counter(w for words in vocab for w in words)
    total = len(sections)
    out: list[tuple[str, str]] = []
    order = list(range(total))
    rng.shuffle(order)
    for i in order:
        if len(out) >= max_queries:
            break
        section = sections[i]
        banned = {w.lower() for w in _WORD.findall(section.context)} | _STOP
        words = [w for w in _WORD.findall(section.body) if w.lower() not in banned]
        if len(words) < 6:
            continue
        prefix = rng.choice(_PREFIXES)
        if rng.random() < 0.5:
            tf = Counter(w.lower() for w in words)
            ranked = sorted(tf, key=lambda w: (-tf[w] * math.log(total / df[w]), w))[:10]
            picked = rng.sample(ranked, min(len(ranked), rng.randint(2, 4)))
            question = " ".join([prefix, *picked]).strip()
        else:
            sentences = [s for s in _SENTENCE.split(section.body) if len(s.split()) >= 6]
            if not sentences:
                continue
            sentence = rng.choice(sentences)
            kept = [w for w in sentence.split() if w.strip(".,;:()!?\"'").lower() not in banned]
            question = " ".join([prefix, *kept[:12]]).strip()
        if question:
            out.append((question, section.section_id))
    return out


# The search, as the index does it ---------------------------------------------------------------


class BookSearch:
    """Exact hybrid search over the book's chunks in memory: the ranking the index serves, for fitting."""

    def __init__(self, chunks: Sequence[Chunk], vectors: Mapping[str, Sequence[float]], params: FitParams):
        self.params = params
        self.section = [str(c.payload.get("section_id") or c.parent_id) for c in chunks]
        self.ids = [c.id for c in chunks]
        matrix = np.asarray([vectors[c.content_hash] for c in chunks], dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        self.vectors = matrix / np.where(norms > 0, norms, 1.0)
        self.encoder = Bm25Encoder()
        postings: dict[int, list[tuple[int, float]]] = defaultdict(list)
        for row, chunk in enumerate(chunks):
            doc = self.encoder.document(chunk.embed_text)
            for term, value in zip(doc.indices, doc.values, strict=True):
                postings[term].append((row, value))
        n = len(chunks)
        # Qdrant's IDF modifier: ln(1 + (N - n + 0.5) / (n + 0.5)).
        self.postings = {
            term: (
                np.array([r for r, _ in rows], dtype=np.int64),
                np.array([v for _, v in rows], dtype=np.float64)
                * math.log(1 + (n - len(rows) + 0.5) / (len(rows) + 0.5)),
            )
            for term, rows in postings.items()
        }
        self.size = n
        self._meta: dict[str, tuple[str, str, int, bool]] = {}
        for chunk in chunks:
            p = chunk.payload
            sid = str(p.get("section_id") or chunk.parent_id)
            if sid not in self._meta:
                title = " ".join([str(p.get("title") or ""), *map(str, p.get("breadcrumb") or ())])
                heading = str(p.get("heading_text") or p.get("heading") or "")
                self._meta[sid] = (heading, title, int(p.get("heading_level") or 1), not p.get("heading"))
        self._terms: dict[str, frozenset[int]] = {}

    def terms(self, text: str) -> frozenset[int]:
        found = self._terms.get(text)
        if found is None:
            found = self._terms[text] = frozenset(self.encoder.document(text).indices)
        return found

    def query_terms(self, question: str) -> frozenset[int]:
        return frozenset(self.encoder.query(question).indices)

    def candidates(self, question: str, vector: Vector) -> list[Candidate]:
        p = self.params
        cos = self.vectors @ vector
        dense_rows = np.argsort(-cos, kind="stable")[: p.prefetch]
        bm25 = np.zeros(self.size)
        for term in self.query_terms(question):
            if term in self.postings:
                rows, values = self.postings[term]
                bm25[rows] += values
        sparse_rows = [r for r in np.argsort(-bm25, kind="stable")[: p.prefetch] if bm25[r] > 0]
        fused: dict[int, float] = defaultdict(float)
        for weight, ranking in ((p.weights[0], dense_rows), (p.weights[1], sparse_rows)):
            for rank, row in enumerate(ranking):
                fused[int(row)] += weight / (p.rrf_k + rank)  # Qdrant's RRF: ranks from 0
        # Ties broken as the retriever breaks them: cosine, then BM25, then the chunk's id.
        ranked = sorted(fused, key=lambda r: (-fused[r], -cos[r], -bm25[r], self.ids[r]))[: p.limit]
        dense_in = {int(r) for r in dense_rows}
        sparse_in = set(int(r) for r in sparse_rows)
        out: dict[str, dict[str, Any]] = {}
        for row in ranked:
            sid = self.section[row]
            entry = out.setdefault(sid, {"fused": fused[row], "cosine": None, "bm25": None, "matched": 0})
            entry["matched"] += 1
            if row in dense_in and (entry["cosine"] is None or cos[row] > entry["cosine"]):
                entry["cosine"] = float(cos[row])
            if row in sparse_in and (entry["bm25"] is None or bm25[row] > entry["bm25"]):
                entry["bm25"] = float(bm25[row])
        result = []
        for sid, entry in list(out.items())[: p.candidates]:
            heading, title, level, intro = self._meta[sid]
            result.append(
                Candidate(
                    sid,
                    entry["fused"],
                    entry["cosine"],
                    entry["bm25"],
                    entry["matched"],
                    self.terms(heading),
                    self.terms(title),
                    level,
                    intro,
                )
            )
        return result


# Fitting ------------------------------------------------------------------------------------------


def _fit_logit(
    groups: Sequence[tuple[npt.NDArray[np.float64], int]], params: FitParams
) -> npt.NDArray[np.float64]:
    """Weights maximising the mean log-softmax of each group's positive row (L2-regularised), by Adam."""
    size = max(len(x) for x, _ in groups)
    x = np.zeros((len(groups), size, len(FEATURES)))
    valid = np.zeros((len(groups), size), dtype=bool)
    positive = np.zeros((len(groups), len(FEATURES)))
    for g, (rows, pos) in enumerate(groups):
        x[g, : len(rows)] = rows
        valid[g, : len(rows)] = True
        positive[g] = rows[pos]
    w = np.zeros(len(FEATURES))
    first, second = np.zeros_like(w), np.zeros_like(w)
    rate, beta1, beta2 = 0.05, 0.9, 0.999
    for step in range(1, params.steps + 1):
        s = np.where(valid, x @ w, -np.inf)
        e = np.exp(s - s.max(axis=1, keepdims=True))
        prob = e / e.sum(axis=1, keepdims=True)
        grad = params.l2 * w + (np.einsum("gc,gcf->gf", prob, x) - positive).mean(axis=0)
        first = beta1 * first + (1 - beta1) * grad
        second = beta2 * second + (1 - beta2) * grad * grad
        w -= rate * (first / (1 - beta1**step)) / (np.sqrt(second / (1 - beta2**step)) + 1e-8)
    return w


def fit(
    chunks: Sequence[Chunk],
    vectors: Mapping[str, Sequence[float]],
    embed: Embed,
    embed_model: str,
    params: FitParams,
) -> RerankModel | None:
    """The reranker for this book, or None when the book is too small to learn from."""
    started = time.perf_counter()
    sections = sections_of(chunks)
    if len(sections) < MIN_SECTIONS:
        return None
    search = BookSearch(chunks, vectors, params)
    contexts = [s.context for s in sections]
    heading_vectors = np.asarray(embed(contexts), dtype=np.float32)
    norms = np.linalg.norm(heading_vectors, axis=1, keepdims=True)
    heading_vectors = (heading_vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    rows = {s.section_id: i for i, s in enumerate(sections)}
    queries = synthetic_queries(sections, params.max_queries, params.seed)
    query_vectors = (
        np.asarray(embed([q for q, _ in queries]), dtype=np.float32) if queries else np.zeros((0, 1))
    )
    model = RerankModel(np.zeros(len(FEATURES)), embed_model, rows, heading_vectors, params.candidates)
    groups: list[tuple[npt.NDArray[np.float64], int]] = []
    found_first = 0
    for (question, section_id), vector in zip(queries, query_vectors, strict=True):
        vector = vector / (float(np.linalg.norm(vector)) or 1.0)
        candidates = search.candidates(question, vector)
        ids = [c.section_id for c in candidates]
        if section_id not in ids:
            continue
        found_first += ids[0] == section_id
        heading = [float(heading_vectors[rows[i]] @ vector) if i in rows else None for i in ids]
        groups.append(
            (feature_matrix(search.query_terms(question), candidates, heading), ids.index(section_id))
        )
    if len(groups) < MIN_SECTIONS:
        return None
    rng = random.Random(params.seed)
    rng.shuffle(groups)
    held = groups[: len(groups) // 5]  # how well the weights rank questions they were not fitted on
    weights = _fit_logit(groups[len(held) :], params)
    reranked_first = sum(int(np.argmax(x @ weights)) == positive for x, positive in held)
    held_first = sum(positive == 0 for _, positive in held)
    model.weights = _fit_logit(groups, params)
    model.report = {
        "queries": len(queries),
        "fitted_on": len(groups),
        "first_before": round(found_first / len(groups), 4),
        "validation_first_fused": round(held_first / max(len(held), 1), 4),
        "validation_first_reranked": round(reranked_first / max(len(held), 1), 4),
        "seconds": round(time.perf_counter() - started, 1),
    }
    return model
