"""The sufficiency model: its decision, the shipped calibration, and fitting it from labelled rows."""

from __future__ import annotations

import random

import pytest

from bookwise.evaluation.calibration import choose_threshold, fit_model
from bookwise.retrieval.sufficiency import SufficiencyModel, decide, default_model

MODEL = SufficiencyModel(("dense",), (0.5,), (0.1,), (2.0,), 0.0, 0.5)


def test_decision_against_the_threshold() -> None:
    assert decide({"dense": 0.7}, model=MODEL).sufficient
    low = decide({"dense": 0.4}, model=MODEL)
    assert not low.sufficient and low.score == pytest.approx(1 / (1 + 2.718281828**2), abs=1e-3)
    assert decide({"dense": 0.4}, model=MODEL, threshold=0.1).sufficient  # the setting overrides


def test_nothing_retrieved_is_never_sufficient() -> None:
    verdict = decide({"dense": 0.0}, model=MODEL, threshold=0.0)
    assert not verdict.sufficient and verdict.score == 0.0


def test_the_shipped_model_loads_and_uses_known_signals() -> None:
    model = default_model()
    assert set(model.features) <= {"dense", "dense_margin", "bm25", "bm25_margin"}
    assert 0.0 < model.threshold < 1.0


def test_threshold_refuses_at_most_the_allowed_share_of_answerable() -> None:
    probabilities = [0.1, 0.2, 0.3, 0.6, 0.7, 0.8, 0.9, 0.95, 0.15, 0.5]
    answerable = [False, False, True, True, True, True, True, True, False, True]
    # 7 answerable; 0 % allowed → cut between the best unanswerable (0.2) and the worst answerable (0.3)
    assert choose_threshold(probabilities, answerable, 0.0) == pytest.approx(0.25)
    # 15 % of 7 → one answerable (0.3) may be refused; cut just under the next one (0.5)
    assert choose_threshold(probabilities, answerable, 0.15) == pytest.approx(0.4)


def test_fit_separates_answerable_from_unanswerable() -> None:
    rng = random.Random(7)
    rows = [{"dense_margin": rng.gauss(0.25, 0.05), "bm25": rng.gauss(3, 0.5)} for _ in range(80)]
    rows += [{"dense_margin": rng.gauss(0.08, 0.05), "bm25": rng.gauss(2, 0.5)} for _ in range(20)]
    labels = [True] * 80 + [False] * 20
    model = fit_model(rows, labels, ("dense_margin", "bm25"), max_false_refusal=0.05)
    assert all(w > 0 for w in model.weights)  # more evidence, more likely answerable
    refused = [model.probability(r) < model.threshold for r in rows]
    assert sum(refused[:80]) <= 4  # at most 5 % of answerable
    assert sum(refused[80:]) >= 15


def test_fit_needs_both_classes() -> None:
    with pytest.raises(ValueError, match="both answerable and unanswerable"):
        fit_model([{"dense": 0.5}], [True], ("dense",))
