"""Which passages of the ranked sections answer the question: meaning, term coverage and section rank.

Each candidate passage is scored by

* ``dense``: the cosine between the question and the passage (with its page title and heading, which
  name what the passage is about), from the index's own embedder;
* ``coverage``: the share of the question's terms (Snowball stems, as BM25 sees them) that the
  passage or its heading contains, each term weighted by its rarity among the candidates, so the
  passage that holds ``trailingSlash`` beats one that only says "option" (the caller's ``terms`` decides
  what a text holds: a capital symbol only as written);
* ``prior``: the retrieval rank of its section (the reranked, fused evidence of all its chunks);

less a share for a long passage; more or less for one that converts the way the question asks or
the other way (``direction``).

The weights were chosen on our own question sets (``eval/``) by ``scripts/bench_passages.py``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from bookwise.ingest.payload import ChunkPayload
from bookwise.retrieval.assemble import SectionChunk, assemble, windows
from bookwise.retrieval.direction import Direction, way_of
from bookwise.retrieval.models import SectionResult
from bookwise.retrieval.passages import Passage, passages_of


@dataclass(frozen=True)
class PassageWeights:
    dense: float = 1.0
    coverage: float = 0.3
    prior: float = 0.05
    heading_share: float = 0.5  # a term found only in the heading counts this much
    long_chars: int = 1600  # passages longer than this lose score in proportion
    long_penalty: float = 0.1
    plain_share: float = 0.0  # of the cosine, from the passage alone (measured: no gain, twice the cost)
    other_way: float = 0.15  # lost by a passage converting the other way from the question…
    way_asked: float = 0.1  # …and gained by one converting the way it asks


@dataclass(frozen=True)
class ScoredPassage:
    passage: Passage
    score: float
    dense: float
    coverage: float
    query_terms: int = 0  # how many terms the coverage is over


Embed = Callable[[list[str]], Sequence[npt.ArrayLike]]
Terms = Callable[[str], set[int]]


def context_of(section: SectionResult) -> str:
    return _context(section.title, section.heading_text)


def _context(title: str, heading_text: str) -> str:
    heading = heading_text if heading_text and heading_text != title else ""
    return f"{title} › {heading}" if heading else title


def _cosine(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    left, right = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    norm = float(np.linalg.norm(left) * np.linalg.norm(right))
    return float(left @ right) / norm if norm else 0.0


def candidates(sections: Sequence[SectionResult]) -> list[Passage]:
    return [p for n, section in enumerate(sections) for p in passages_of(section.text, n)]


def embedding_inputs(sections: Sequence[SectionResult], found: Sequence[Passage]) -> list[str]:
    """What the embedder sees of each passage: the page title and heading, then the passage."""
    contexts = [context_of(s) for s in sections]
    return [f"{contexts[p.section]}\n\n{p.text}" for p in found]


def book_passage_inputs(
    chunks: Sequence[tuple[str, Mapping[str, Any]]],
    count_tokens: Callable[[str], int],
    *,
    budget_tokens: int,
) -> list[str]:
    """What the embedder sees of every passage of every section of a book (``embedding_inputs``):
    of each section assembled whole, and of every window a search can assemble of a section longer
    than the budget. The texts whose vectors an ingest computes with the index, so a server ranks
    passages without embedding them.

    ``chunks``: (point id, payload) of every chunk; ``budget_tokens``: the section budget
    (``BOOKWISE_SECTION_MAX_TOKENS``) of the servers that will read the index.
    """
    payloads = [(point_id, ChunkPayload.from_payload(payload)) for point_id, payload in chunks]
    first: dict[str, ChunkPayload] = {}
    members: dict[str, list[SectionChunk]] = {}
    for point_id, payload in payloads:
        section_id = point_id if payload.section_id is None else payload.section_id
        known = first.get(section_id)
        if known is None or payload.section_chunk_index < known.section_chunk_index:
            first[section_id] = payload
        if payload.section_id is not None:
            members.setdefault(payload.section_id, []).append(SectionChunk.from_payload(payload))
    texts: list[str] = []
    for section_id, head in first.items():
        chunks_of = members.get(section_id) or [SectionChunk.from_payload(head)]
        built = assemble(chunks_of, [], budget_tokens=budget_tokens, count_tokens=count_tokens)
        context = _context(head.title, head.heading_text)
        # The section as a page outline shows it, then every window a search can assemble of it.
        for text in [built.text, *windows(chunks_of, budget_tokens=budget_tokens, count_tokens=count_tokens)]:
            texts.extend(f"{context}\n\n{p.text}" for p in passages_of(text))
    return list(dict.fromkeys(texts))


def book_passage_inputs_within(
    budget_tokens: int,
) -> Callable[[Sequence[tuple[str, Mapping[str, Any]]], Callable[[str], int]], list[str]]:
    """``book_passage_inputs`` for servers with this section budget: what an ingest is given to
    compute the passage vectors with the index (``run_ingest``'s ``passage_inputs``)."""
    return lambda chunks, count_tokens: book_passage_inputs(chunks, count_tokens, budget_tokens=budget_tokens)


def rank_passages(
    query_vector: Sequence[float],
    query_terms: set[int],
    sections: Sequence[SectionResult],
    *,
    embed: Embed,
    terms: Terms,
    weights: PassageWeights = PassageWeights(),
    asked: Direction | None = None,
) -> list[ScoredPassage]:
    """Every passage of ``sections``, best first. ``asked``: the conversion the question asks for;
    a passage going the other way loses ``weights.other_way`` ("From body velocity to wheel speeds"
    for "convert wheel speeds to velocity"), one going the way asked gains ``weights.way_asked``."""
    found = candidates(sections)
    if not found:
        return []
    contexts = [context_of(s) for s in sections]

    def way(passage: Passage) -> float:
        if asked is None:
            return 0.0
        went = way_of(asked, sections[passage.section].heading_text, passage.text)
        return weights.way_asked * (went > 0) - weights.other_way * (went < 0)

    vectors = embed(embedding_inputs(sections, found))
    # A short passage embedded with its heading is mostly its heading: every pointer sentence under
    # "trailingSlash" would look like the definition. The passage alone tells them apart.
    plain = embed([p.text for p in found]) if weights.plain_share else vectors
    body_terms = [terms(p.said) for p in found]  # a link to another page names where to read on
    heading_terms = [terms(c) for c in contexts]
    frequency = Counter(t for found_terms in body_terms for t in found_terms & query_terms)
    total = len(found)
    weight = {t: math.log(1 + total / (frequency[t] + 0.5)) for t in query_terms}
    wanted = sum(weight.values()) or 1.0
    scored = []
    for passage, vector, alone, body in zip(found, vectors, plain, body_terms, strict=True):
        heading = heading_terms[passage.section] - body
        covered = sum(weight[t] for t in query_terms & body)
        covered += weights.heading_share * sum(weight[t] for t in query_terms & heading)
        coverage = covered / wanted
        share = weights.plain_share
        dense = (1 - share) * _cosine(query_vector, vector) + share * _cosine(query_vector, alone)
        prior = 1.0 / (1 + passage.section)
        excess = max(0, len(passage.text) - weights.long_chars) / weights.long_chars
        score = (
            weights.dense * dense
            + weights.coverage * coverage
            + weights.prior * prior
            - weights.long_penalty * min(excess, 3.0)
            + way(passage)
        )
        scored.append(ScoredPassage(passage, score, dense, coverage, len(query_terms)))
    scored.sort(key=lambda s: (-s.score, s.passage.section, s.passage.position))
    return scored
