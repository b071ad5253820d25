"""Which passages of the ranked sections answer the question: meaning, term coverage and section rank.

Each candidate passage is scored by

* ``dense``: the cosine between the question and the passage (with its page title and heading, which
  name what the passage is about), from the index's own embedder;
* ``coverage``: the share of the question's terms (Snowball stems, as BM25 sees them) that the
  passage or its heading contains, each term weighted by its rarity among the candidates, so the
  passage that holds ``trailingSlash`` beats one that only says "option";
* ``prior``: the retrieval rank of its section (the reranked, fused evidence of all its chunks).

The weights were chosen on our own question sets (``eval/``) by ``scripts/bench_passages.py``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

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
    heading = section.heading_text if section.heading_text and section.heading_text != section.title else ""
    return f"{section.title} › {heading}" if heading else section.title


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


def rank_passages(
    query_vector: Sequence[float],
    query_terms: set[int],
    sections: Sequence[SectionResult],
    *,
    embed: Embed,
    terms: Terms,
    weights: PassageWeights = PassageWeights(),
) -> list[ScoredPassage]:
    """Every passage of ``sections``, best first."""
    found = candidates(sections)
    if not found:
        return []
    contexts = [context_of(s) for s in sections]
    vectors = embed(embedding_inputs(sections, found))
    # A short passage embedded with its heading is mostly its heading: every pointer sentence under
    # "trailingSlash" would look like the definition. The passage alone tells them apart.
    plain = embed([p.text for p in found]) if weights.plain_share else vectors
    body_terms = [terms(p.text) for p in found]
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
        )
        scored.append(ScoredPassage(passage, score, dense, coverage, len(query_terms)))
    scored.sort(key=lambda s: (-s.score, s.passage.section, s.passage.position))
    return scored
