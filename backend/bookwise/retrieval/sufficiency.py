"""Does the book answer this query? A calibrated score over retrieval signals, against a threshold.

Signals (all cheap, all from the search already made, none depends on rank fusion):

* ``dense``: the best cosine similarity between the query and any chunk;
* ``dense_margin``: how far that cosine stands above the mean of the top 50 — a question the book
  answers has a chunk that stands out, a near miss finds many similar, loosely related ones;
* ``bm25``: the best BM25 score per query term (how much of the query one chunk matches, and how
  rare the matched words are);
* ``bm25_margin``: the best BM25 score over the mean of the top ten.

Which signals the model uses was chosen by leave-one-corpus-out validation on our own question sets
(``eval/``); ``corpora/redux/questions.jsonl`` stays held out.

A logistic model turns them into P(answerable). Its coefficients and the threshold are fitted on
labelled questions (answerable and unanswerable) by ``scripts/calibrate_sufficiency.py`` and stored in
``sufficiency_model.json`` beside this module; ``sufficiency_threshold`` overrides the threshold.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from bookwise.index.sparse import SparseVector
from bookwise.index.store import HybridHits
from bookwise.retrieval.models import Sufficiency

MODEL_PATH = Path(__file__).with_name("sufficiency_model.json")
MARGIN_DEPTH = 50


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


def signals(query_terms: SparseVector, hits: HybridHits) -> dict[str, float]:
    """Absolute evidence that the index holds an answer, from the channels' raw scores."""
    cosines = [h.score for h in hits.dense[:MARGIN_DEPTH]]
    bm25 = [h.score for h in hits.sparse[:10]]
    terms = len(set(query_terms.indices))
    return {
        "dense": cosines[0] if cosines else 0.0,
        "dense_margin": cosines[0] - sum(cosines) / len(cosines) if cosines else 0.0,
        "bm25": bm25[0] / terms if bm25 and terms else 0.0,
        "bm25_margin": bm25[0] / (sum(bm25) / len(bm25)) if bm25 and bm25[0] > 0 else 0.0,
    }


def decide(
    values: dict[str, float], *, model: SufficiencyModel | None = None, threshold: float | None = None
) -> Sufficiency:
    model = model or default_model()
    limit = model.threshold if threshold is None else threshold
    if not values.get("dense"):  # nothing retrieved at all
        return Sufficiency(False, 0.0, limit, values)
    probability = model.probability(values)
    return Sufficiency(probability >= limit, round(probability, 4), limit, values)
