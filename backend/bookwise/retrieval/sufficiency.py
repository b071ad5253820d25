"""Does the book answer this query? A calibrated score over retrieval signals, against a threshold.

Signals (all cheap, all from the search already made):

* ``dense``: the best cosine similarity between the query and any chunk;
* ``agreement``: the best fused RRF score scaled to [0, 2] (1 per channel that ranks it first), high
  when the dense and BM25 channels agree on a chunk;
* ``coverage``: the share of the query's BM25 terms found in the top sections' matching text.

A logistic model turns them into P(answerable). Its coefficients and the threshold are fitted on
labelled questions (answerable and unanswerable) by ``scripts/calibrate_sufficiency.py`` and stored in
``sufficiency_model.json`` beside this module; ``sufficiency_threshold`` overrides the threshold.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Protocol

from bookwise.index.sparse import Bm25Encoder, SparseVector
from bookwise.index.store import HybridHits
from bookwise.retrieval.models import Sufficiency

MODEL_PATH = Path(__file__).with_name("sufficiency_model.json")
COVERAGE_SECTIONS = 3


class _Candidate(Protocol):
    @property
    def payload(self) -> dict[str, Any]: ...

    @property
    def matched_text(self) -> str: ...


@dataclass(frozen=True)
class SufficiencyModel:
    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    threshold: float

    def probability(self, signals: dict[str, float]) -> float:
        z = self.bias + sum(
            w * (signals[name] - mu) / sd
            for name, mu, sd, w in zip(self.features, self.mean, self.scale, self.weights, strict=True)
        )
        return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))

    def to_dict(self) -> dict[str, Any]:
        return {
            "features": list(self.features),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "weights": list(self.weights),
            "bias": self.bias,
            "threshold": self.threshold,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SufficiencyModel:
        return cls(
            features=tuple(data["features"]),
            mean=tuple(float(v) for v in data["mean"]),
            scale=tuple(float(v) for v in data["scale"]),
            weights=tuple(float(v) for v in data["weights"]),
            bias=float(data["bias"]),
            threshold=float(data["threshold"]),
        )


@cache
def default_model() -> SufficiencyModel:
    return SufficiencyModel.from_dict(json.loads(MODEL_PATH.read_text(encoding="utf-8")))


def signals(
    query_terms: SparseVector,
    hits: HybridHits,
    candidates: Sequence[_Candidate],
    *,
    rrf_k: int,
    encoder: Bm25Encoder,
) -> dict[str, float]:
    dense = hits.dense[0].score if hits.dense else 0.0
    agreement = hits.fused[0].score * rrf_k if hits.fused else 0.0
    wanted = set(query_terms.indices)
    text = " ".join(
        f"{c.payload.get('heading_text', '')} {c.matched_text}" for c in candidates[:COVERAGE_SECTIONS]
    )
    found = set(encoder.document(text).indices) if text.strip() else set()
    coverage = len(wanted & found) / len(wanted) if wanted else 0.0
    return {"dense": dense, "agreement": agreement, "coverage": coverage}


def decide(
    values: dict[str, float], *, model: SufficiencyModel | None = None, threshold: float | None = None
) -> Sufficiency:
    model = model or default_model()
    limit = model.threshold if threshold is None else threshold
    if not values.get("agreement"):  # nothing retrieved at all
        return Sufficiency(False, 0.0, limit, values)
    probability = model.probability(values)
    return Sufficiency(probability >= limit, round(probability, 4), limit, values)
