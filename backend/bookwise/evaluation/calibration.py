"""Fitting the sufficiency model from labelled questions: logistic regression and a threshold.

Plain numpy (a few hundred rows, a handful of features): standardise, fit with L2 and balanced class
weights by gradient descent, then take the highest threshold whose false refusals on answerable
questions stay within the allowed rate, so that as many unanswerable ones as possible are refused.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bookwise.retrieval.sufficiency import SufficiencyModel


def fit_model(
    signals: Sequence[dict[str, float]],
    answerable: Sequence[bool],
    features: Sequence[str],
    *,
    max_false_refusal: float = 0.02,
    l2: float = 1.0,
    steps: int = 4000,
    learning_rate: float = 0.1,
) -> SufficiencyModel:
    if len(signals) != len(answerable) or not signals:
        raise ValueError("one label per signal row, and at least one row")
    y = np.array(answerable, dtype=float)
    if y.min() == y.max():
        raise ValueError("calibration needs both answerable and unanswerable questions")
    x = np.array([[row[name] for name in features] for row in signals], dtype=float)
    mean, scale = x.mean(axis=0), x.std(axis=0) + 1e-9
    z = (x - mean) / scale
    # Balanced weights: the few unanswerable questions count as much as the many answerable ones.
    weight = np.where(y == 1, 1.0, (y == 1).sum() / (y == 0).sum())
    w, b = np.zeros(z.shape[1]), 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-(z @ w + b)))
        gradient = (p - y) * weight
        w -= learning_rate * (z.T @ gradient + l2 * w) / len(y)
        b -= learning_rate * float(gradient.mean())
    model = SufficiencyModel(
        features=tuple(features),
        mean=tuple(float(v) for v in mean),
        scale=tuple(float(v) for v in scale),
        weights=tuple(float(v) for v in w),
        bias=float(b),
        threshold=0.5,
    )
    probabilities = [model.probability(row) for row in signals]
    threshold = choose_threshold(probabilities, answerable, max_false_refusal)
    return SufficiencyModel(model.features, model.mean, model.scale, model.weights, model.bias, threshold)


def choose_threshold(
    probabilities: Sequence[float], answerable: Sequence[bool], max_false_refusal: float
) -> float:
    """The highest threshold (midway between scores) refusing at most the allowed share of answerable."""
    answerable_scores = sorted(p for p, a in zip(probabilities, answerable, strict=True) if a)
    allowed = int(max_false_refusal * len(answerable_scores))  # answerable questions that may fall below
    if not answerable_scores:
        return 0.5
    if allowed >= len(answerable_scores):
        return 1.0
    lowest_kept = answerable_scores[allowed]
    below = answerable_scores[allowed - 1] if allowed > 0 else 0.0
    unanswerable_between = [
        p for p, a in zip(probabilities, answerable, strict=True) if not a and below <= p < lowest_kept
    ]
    # Cut just under the lowest answerable score we keep, but no lower than needed to catch the
    # unanswerable ones in between: a margin on the side of answering.
    top = max(unanswerable_between, default=below)
    return round((top + lowest_kept) / 2, 6)
