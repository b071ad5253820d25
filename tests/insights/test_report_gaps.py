"""Coverage gaps: which answers count, and how they are grouped by meaning."""

from __future__ import annotations

import numpy as np
from reportdata import DAY0, SITE, question, vote

from bookwise.index.embedders import HashEmbedder
from bookwise.insights.report.gaps import (
    ClosestSection,
    GapQuestion,
    agglomerate,
    gap_clusters,
    gap_questions,
)

EMBED = HashEmbedder().embed_documents


def test_gap_questions_are_declined_thin_or_voted_down_answers_each_once() -> None:
    declined = question("propellers for a drone", 0, 0, outcome="not_covered", evidence=0.2)
    thin = question("servo jitter", 0, 1, evidence=0.1)  # below the calibrated threshold
    voted = question("pid gains", 0, 2, evidence=0.9)
    fine = question("kalman gain", 0, 3, evidence=0.9)
    selection = question("this passage?", 0, 4, outcome="not_in_selection")
    explained = question("what does this mean?", 0, 5, mode="selected_text")  # about a page the book has
    declined_and_voted = vote(declined)
    gaps = gap_questions(
        [declined, thin, voted, fine, selection, explained],
        [vote(voted), declined_and_voted, vote(fine, "up"), vote(explained)],
    )
    by_question = {g.question: g.reasons for g in gaps}
    assert by_question == {
        "propellers for a drone": ("not_covered", "thumbs_down"),
        "servo jitter": ("low_evidence",),
        "pid gains": ("thumbs_down",),
    }


def test_a_thumbs_down_on_an_answer_the_log_never_saw_keeps_its_own_question() -> None:
    unseen = question("battery for two hours", 0, 0, page_url=f"{SITE}/docs/power")
    gaps = gap_questions([], [vote(unseen)])
    assert [(g.question, g.page_url) for g in gaps] == [("battery for two hours", f"{SITE}/docs/power")]


def test_average_linkage_does_not_chain_unrelated_questions_through_a_bridge() -> None:
    # a~b and b~c are close, a~c far: single linkage would put all three together.
    a = np.array([1.0, 0.0])
    c = np.array([np.cos(1.2), np.sin(1.2)])
    b = (a + c) / np.linalg.norm(a + c)
    assert float(a @ b) > 0.8 and float(a @ c) < 0.4
    groups = agglomerate(np.stack([a, b, c]), threshold=0.7)
    assert sorted(map(len, groups)) == [1, 2]
    assert agglomerate(np.stack([a, b, c]), threshold=0.3) == [[0, 1, 2]]
    assert agglomerate(np.zeros((0, 2)), threshold=0.5) == []


def test_weights_count_repeats_when_groups_merge() -> None:
    # p~q 0.9 merge first; then {p, q}~r is the weighted mean of p~r 0.5 and q~r 0.8.
    gram = np.array([[1.0, 0.9, 0.5], [0.9, 1.0, 0.8], [0.5, 0.8, 1.0]])
    vectors = np.linalg.cholesky(gram)  # rows with exactly these cosines
    assert len(agglomerate(vectors, threshold=0.6, weights=[1, 5, 1])) == 1  # (0.5 + 5·0.8) / 6 = 0.75
    assert len(agglomerate(vectors, threshold=0.6, weights=[5, 1, 1])) == 2  # (5·0.5 + 0.8) / 6 = 0.55


def _gap(text: str, n: int, reason: str = "not_covered") -> GapQuestion:
    return GapQuestion(text, (reason,), DAY0.replace(minute=n), f"{SITE}/docs/intro")


def test_clusters_are_ranked_biggest_first_and_labelled_by_their_most_typical_question() -> None:
    drone = [
        "what propeller size for my quadcopter drone",
        "which propeller size should my quadcopter drone use",
        "quadcopter drone propeller size and motor kv",
        "what propeller size for my quadcopter drone",
    ]
    battery = [
        "which battery chemistry for two hours of runtime",
        "battery chemistry for a two hours runtime",
    ]
    lone = ["how do I write a stair climbing gait for legs"]
    gaps = [_gap(t, n) for n, t in enumerate(drone + battery + lone)]
    clusters = gap_clusters(gaps, EMBED, threshold=0.5)
    assert [c.size for c in clusters] == [4, 2, 1]
    assert clusters[0].label == "what propeller size for my quadcopter drone"  # asked twice, central
    assert set(clusters[0].phrasings) == set(drone)
    assert clusters[0].reasons == {"not_covered": 4}
    assert clusters[1].label in battery and clusters[2].label == lone[0]


def test_each_cluster_gets_the_closest_sections_its_label_finds() -> None:
    asked: list[str] = []

    def search(label: str) -> list[ClosestSection]:
        asked.append(label)
        return [ClosestSection(f"About {label}", f"{SITE}/docs/x#{n}", 0.5 - n / 10) for n in range(5)]

    clusters = gap_clusters([_gap("motor kv rating", 0), _gap("lidar range noise", 1)], EMBED, search)
    assert sorted(asked) == ["lidar range noise", "motor kv rating"]
    assert all(len(c.sections) == 3 and c.sections[0].title == f"About {c.label}" for c in clusters)
    assert gap_clusters([], EMBED, search) == []


def test_each_cluster_lists_the_names_its_phrasings_ask_about_that_the_book_never_mentions() -> None:
    probed: list[str] = []

    def unknown(question: str) -> list[str]:
        probed.append(question)
        return [word for word in question.split() if word in ("Firebase", "Netlify")]

    asked = ["deploy to Firebase Hosting", "deploy to Firebase Hosting", "deploy on Netlify or Firebase"]
    asked += [f"later phrasing {n}" for n in range(6)]  # sorted after the two above
    gaps = [_gap(text, n) for n, text in enumerate(asked)]
    (cluster,) = gap_clusters(gaps, lambda texts: [[1.0, 0.0] for _ in texts], unknown_names=unknown)
    assert cluster.unknown_names == ["Firebase", "Netlify"]  # in the most phrasings first
    assert len(probed) == 5  # the most asked phrasings only, each once
    assert gap_clusters(gaps, lambda texts: [[1.0, 0.0] for _ in texts])[0].unknown_names == []


def brute_force(vectors: np.ndarray, threshold: float, weights: np.ndarray) -> list[list[int]]:
    """Average linkage the slow way: the best pair of the whole matrix at every merge."""
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    sim = unit @ unit.T
    np.fill_diagonal(sim, -np.inf)
    size, members = weights.astype(float), [[i] for i in range(len(vectors))]
    while True:
        i, j = divmod(int(np.argmax(sim)), len(vectors))
        if sim[i, j] < threshold:
            return sorted(sorted(m) for m in members if m)
        sim[i, :] = sim[:, i] = (size[i] * sim[i] + size[j] * sim[j]) / (size[i] + size[j])
        sim[i, i] = sim[j, :] = sim[:, j] = -np.inf
        size[i] += size[j]
        members[i] += members[j]
        members[j] = []


def test_the_cached_best_partners_merge_as_the_brute_force_does_and_leave_the_weights_alone() -> None:
    rng = np.random.default_rng(3)
    for _ in range(8):
        n = int(rng.integers(5, 120))
        centres = rng.standard_normal((max(n // 8, 1), 16))
        vectors = centres[rng.integers(0, len(centres), n)] + 0.9 * rng.standard_normal((n, 16))
        weights = rng.integers(1, 4, n).astype(float)
        given = weights.copy()
        for threshold in (0.2, 0.4, 0.6):
            assert sorted(agglomerate(vectors, threshold, weights)) == brute_force(
                vectors, threshold, weights
            )
            assert (weights == given).all()
