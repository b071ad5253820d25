"""How well the insights report's coverage gaps recover gaps planted in a question log.

Plants the gaps of ``eval/insights-gaps.jsonl`` (unanswerable questions of the eval sets and the
example book, 3–4 phrasings each, each phrasing asked 1–3 times, declined or voted down) in a log of
answered questions, and scatters one-off noise among the gaps: answerable eval questions declined by
mistake or voted down (each asked once, on every topic of the books). The report's clustering then
groups the gap questions; of its top K clusters (K = the number of planted gaps):

* recall: planted gaps recovered, i.e. some top-K cluster is labelled with one of the gap's
  phrasings and at least half its askings are that gap's;
* purity: the share of the top-K clusters' askings that belong to their cluster's majority gap
  (a noise question is its own gap);
* together: on average, the share of a gap's askings that its best cluster holds.

Run for the hash embedder (the tests') and the local MiniLM (the default, if installed), over a
range of similarity thresholds; ``*`` marks the report's default.

    python scripts/bench_insights_clusters.py [--seed 7] [--noise 80]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "backend")]

from bookwise.index.embedders import Embedder, HashEmbedder  # noqa: E402
from bookwise.insights.records import FeedbackRecord, QuestionRecord  # noqa: E402
from bookwise.insights.report.aggregate import normalize  # noqa: E402
from bookwise.insights.report.gaps import (  # noqa: E402
    GAP_SIMILARITY,
    MAX_GAP_TEXTS,
    GapCluster,
    agglomerate,
    gap_clusters,
    gap_questions,
)

GAPS = ROOT / "eval" / "insights-gaps.jsonl"
QUESTION_SETS = [
    *sorted((ROOT / "eval").glob("*.questions.jsonl")),
    ROOT / "website-plugin" / "example" / "questions.jsonl",
    Path("/work/shared/corpora/redux/questions.jsonl"),
]
THRESHOLDS = (0.3, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7, 0.8)
START = datetime(2026, 3, 1, tzinfo=UTC)


def load_planted() -> dict[str, list[str]]:
    rows = [json.loads(line) for line in GAPS.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {row["id"]: row["phrasings"] for row in rows}


def answerable_questions() -> list[str]:
    found = []
    for path in QUESTION_SETS:
        if not path.is_file():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                if row.get("type") != "unanswerable" and not row.get("selected_text"):
                    found.append(row["question"])
    return found


def planted_log(
    planted: dict[str, list[str]], noise: Sequence[str], rng: random.Random
) -> tuple[list[QuestionRecord], list[FeedbackRecord], dict[str, str]]:
    """The log, its feedback, and each gap question's truth (normalized text → planted gap id)."""
    questions: list[QuestionRecord] = []
    feedback: list[FeedbackRecord] = []
    truth: dict[str, str] = {}

    def ask(text: str, outcome: str, down: bool = False) -> None:
        when = START + timedelta(minutes=rng.randrange(30 * 24 * 60))
        record = QuestionRecord(when, f"r{len(questions)}", text, "normal", outcome, evidence=0.9)  # type: ignore[arg-type]
        questions.append(record)
        if down:
            feedback.append(
                FeedbackRecord(when + timedelta(minutes=1), record.request_id, "down", "incorrect")
            )

    for gap_id, phrasings in planted.items():
        for text in phrasings:
            truth[normalize(text)] = gap_id
            for _ in range(rng.randint(1, 3)):
                declined = rng.random() < 0.8  # else answered from a near miss, and voted down
                ask(text, "not_covered" if declined else "answered", down=not declined)
    for text in noise:
        truth.setdefault(normalize(text), f"noise:{text}")
        ask(text, "not_covered" if rng.random() < 0.5 else "answered", down=True)
    for text in rng.sample(answerable_questions(), k=min(150, len(answerable_questions()))):
        ask(text, "answered")  # answered and not voted down: never a gap
    return questions, feedback, truth


def score(
    clusters: Sequence[GapCluster],
    planted: dict[str, list[str]],
    truth: dict[str, str],
    askings: Counter[str],
) -> tuple[int, float, float]:
    """(gaps recovered, purity, together) of ``clusters``; ``askings`` counts each normalized text."""
    recovered: set[str] = set()
    majority = members = 0
    held: dict[str, int] = Counter()  # per gap, the most askings one cluster holds
    for cluster in clusters:
        owners: Counter[str] = Counter()
        for text in cluster.phrasings:
            owners[truth[normalize(text)]] += askings[normalize(text)]
        owner, count = owners.most_common(1)[0]
        majority, members = majority + count, members + sum(owners.values())
        if (
            owner in planted
            and truth[normalize(cluster.label)] == owner
            and 2 * count >= sum(owners.values())
        ):
            recovered.add(owner)
        for gap_id, n in owners.items():
            held[gap_id] = max(held[gap_id], n)
    total = Counter(truth[key] for key in askings.elements())
    together = sum(held[g] / total[g] for g in planted) / len(planted)
    return len(recovered), majority / max(members, 1), together


def run(embedder: Embedder, planted: dict[str, list[str]], seed: int, noise_n: int) -> None:
    rng = random.Random(seed)
    noise = rng.sample(answerable_questions(), k=noise_n)
    questions, feedback, truth = planted_log(planted, noise, rng)
    gaps = gap_questions(questions, feedback)
    askings = Counter(normalize(g.question) for g in gaps)
    per_gap = Counter(truth[key] for key in askings.elements())
    k = len(planted)
    planted_n = sum(per_gap[g] for g in planted)
    print(f"\n{embedder.model_id}: {len(questions)} logged, {len(gaps)} gap questions "
          f"({planted_n} planted in {k} gaps, {noise_n} noise); top {k} clusters")  # fmt: skip
    print("  threshold  recall        purity  together  clusters  ms")
    vectors_cache: dict[str, list[float]] = {}

    def embed(texts: Sequence[str]) -> list[list[float]]:
        missing = [t for t in texts if t not in vectors_cache]
        for text, vector in zip(missing, embedder.embed_documents(missing), strict=True):
            vectors_cache[text] = list(vector)
        return [vectors_cache[t] for t in texts]

    embed([g.question for g in gaps])  # the model's time is not the clustering's
    for threshold in THRESHOLDS:
        started = time.perf_counter()
        clusters = gap_clusters(gaps, embed, threshold=threshold)
        elapsed = (time.perf_counter() - started) * 1000
        recovered, purity, together = score(clusters[:k], planted, truth, askings)
        mark = "*" if threshold == GAP_SIMILARITY else " "
        print(f"  {threshold:.2f}{mark}     {recovered:2d}/{k} {recovered / k:5.0%}  {purity:6.1%}"
              f"  {together:7.1%}  {len(clusters):8d}  {elapsed:4.0f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--noise", type=int, default=80, help="one-off noise gap questions")
    args = parser.parse_args()
    planted = load_planted()
    embedders: list[Embedder] = [HashEmbedder()]
    try:
        from bookwise.index.embedders import LocalEmbedder

        embedders.append(LocalEmbedder())
    except Exception as exc:  # the local extra is optional
        print(f"(local embedder unavailable: {exc})")
    for embedder in embedders:
        run(embedder, planted, args.seed, args.noise)
    print("\nclustering alone: n distinct phrasings in n/10 groups (384-d, ~0.6 cosine within a group):")
    rng = np.random.default_rng(args.seed)
    for n in (500, 1000, MAX_GAP_TEXTS):
        centres = rng.standard_normal((n // 10, 384))
        vectors = centres[rng.integers(0, n // 10, n)] + 0.8 * rng.standard_normal((n, 384))
        started = time.perf_counter()
        groups = agglomerate(vectors, GAP_SIMILARITY)
        print(f"  n={n:5d}  {time.perf_counter() - started:6.2f} s  ({len(groups)} groups)")


if __name__ == "__main__":
    main()
