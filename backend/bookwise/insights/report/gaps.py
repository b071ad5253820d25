"""Coverage gaps: the questions the book did not answer well, grouped by meaning.

A gap question is one the book declined (not covered), answered on thin evidence (below the
sufficiency threshold), or whose answer got a thumbs down; or a search of the search box that ended
with no result opened (none found, or none the reader chose). Their embeddings (the index's own
embedder) are grouped by average-linkage agglomerative clustering on cosine similarity: two groups
merge while the mean similarity between their members is at least a threshold. Average linkage was
chosen over single linkage (which chains unrelated questions through one bridging phrasing) and
over k-means (which needs the number of gaps in advance); the threshold is measured by
``scripts/bench_insights_clusters.py``.

Each group also lists the names its questions ask about that the book never mentions (retrieval's
``unknown_names``: "Firebase", "Tailwind"), the plainest kind of gap: a page to write, not a section
to improve.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np
import numpy.typing as npt

from bookwise.insights.records import SEARCH_MODE, FeedbackRecord, QuestionRecord
from bookwise.insights.report.aggregate import latest_per_answer, normalize, page_of
from bookwise.retrieval.sufficiency import default_model

# Mean cosine similarity two groups need to merge; chosen on planted gaps (bench_insights_clusters).
GAP_SIMILARITY = 0.5
# An answer counts as thin when the log's evidence (retrieval's calibrated P(answerable)) is below
# the sufficiency threshold: the book answered against retrieval's own verdict, on one strong
# passage. The calibrated threshold by default; `bookwise insights` passes the configured one.
LOW_EVIDENCE = default_model().threshold
MAX_GAP_TEXTS = 2000  # distinct phrasings clustered (the most asked): keeps the O(n²) matrix small
SECTIONS_PER_GAP = 3
PHRASINGS_PROBED = 5  # a group's most asked phrasings looked up for names the book never mentions
# A question about a highlighted passage ("what does this mean?") or a study action is about a page
# the book has; its thumbs down counts in the page's feedback rate, not as a missing topic.
GAP_MODES = frozenset({"normal", "search"})
# Why a search of the search box is a gap: nothing found, or results the reader opened none of.
SEARCH_GAPS = ("search_no_results", "search_no_click")

Embed = Callable[[Sequence[str]], Sequence[Sequence[float]]]


@dataclass(frozen=True)
class ClosestSection:
    title: str
    url: str
    score: float


Search = Callable[[str], Sequence[ClosestSection]]
UnknownNames = Callable[[str], Sequence[str]]  # the names in a question that no chunk of the book holds


@dataclass(frozen=True)
class GapQuestion:
    question: str
    reasons: tuple[str, ...]  # among "not_covered", "low_evidence", "thumbs_down", SEARCH_GAPS
    created_at: datetime
    page_url: str | None = None


def gap_questions(
    questions: Sequence[QuestionRecord],
    feedback: Sequence[FeedbackRecord],
    *,
    low_evidence: float = LOW_EVIDENCE,
) -> list[GapQuestion]:
    """One entry per answer that was declined, thin, or voted down (an answer counts once), and per
    search left with no result opened."""
    reasons: dict[str, set[str]] = defaultdict(set)
    asked: dict[str, QuestionRecord] = {}
    for q in questions:
        asked[q.request_id] = q
        if q.mode == SEARCH_MODE and not q.cited:
            reasons[q.request_id].add(SEARCH_GAPS[0] if q.outcome == "not_covered" else SEARCH_GAPS[1])
        if q.mode not in GAP_MODES:
            continue
        if q.outcome == "not_covered":
            reasons[q.request_id].add("not_covered")
        elif q.outcome == "answered" and q.evidence is not None and q.evidence < low_evidence:
            reasons[q.request_id].add("low_evidence")
    voted: dict[str, FeedbackRecord] = {}
    for f in latest_per_answer(feedback):
        known = asked.get(f.request_id)
        if known is not None and known.mode not in GAP_MODES:
            continue
        if f.rating == "down" and (known is not None or f.question.strip()):
            reasons[f.request_id].add("thumbs_down")
            voted[f.request_id] = f
    gaps = []
    for request_id, why in reasons.items():
        record = asked.get(request_id)
        if record is not None:
            gaps.append(GapQuestion(record.question, tuple(sorted(why)), record.created_at, record.page_url))
        else:  # feedback on an answer the log never saw: its own copy of the question
            f = voted[request_id]
            gaps.append(GapQuestion(f.question, tuple(sorted(why)), f.created_at, f.page_url))
    return [g for g in gaps if normalize(g.question)]


def agglomerate(
    vectors: npt.NDArray[np.float64], threshold: float, weights: Sequence[float] | None = None
) -> list[list[int]]:
    """Average-linkage clusters of ``vectors`` (rows), merged while mean cosine >= ``threshold``.

    ``weights`` count duplicates: a phrasing asked five times pulls its group's mean five times.
    The Lance-Williams update keeps one similarity matrix between live groups (O(n²) memory), and
    each row's best partner is cached, so a merge rescans only the rows whose best partner changed.
    """
    n = len(vectors)
    if n == 0:
        return []
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms == 0, 1.0, norms)
    sim = unit @ unit.T
    np.fill_diagonal(sim, -np.inf)
    size = np.array(weights if weights is not None else [1.0] * n, dtype=np.float64)  # a copy: grown below
    members: list[list[int]] = [[i] for i in range(n)]
    best = sim.argmax(axis=1)
    best_sim = sim[np.arange(n), best]
    while n > 1:
        i = int(np.argmax(best_sim))
        j = int(best[i])
        if best_sim[i] < threshold:
            break
        merged = (size[i] * sim[i] + size[j] * sim[j]) / (size[i] + size[j])
        sim[i, :] = merged
        sim[:, i] = merged
        sim[i, i] = -np.inf
        sim[j, :] = -np.inf
        sim[:, j] = -np.inf
        size[i] += size[j]
        members[i].extend(members[j])
        members[j] = []
        best_sim[j] = -np.inf
        # Rows that pointed at i or j look again; any row may now prefer the merged group i.
        for k in np.flatnonzero((best == i) | (best == j) | (np.arange(n) == i)):
            if members[k]:
                best[k] = int(np.argmax(sim[k]))
                best_sim[k] = sim[k, best[k]]
        closer = sim[:, i] > best_sim
        best[closer] = i
        best_sim[closer] = sim[closer, i]
    return [sorted(m) for m in members if m]


@dataclass(frozen=True)
class GapCluster:
    label: str  # the most typical question: the member closest to the group's centroid
    size: int  # gap questions in the group (repeats counted)
    reasons: dict[str, int]
    phrasings: list[str]  # every distinct phrasing, most asked first (the page shows the first few)
    pages: list[str]  # where readers asked from, most first
    last_asked: datetime
    sections: list[ClosestSection] = field(default_factory=list)
    unknown_names: list[str] = field(default_factory=list)  # most asked first


def gap_clusters(
    gaps: Sequence[GapQuestion],
    embed: Embed,
    search: Search | None = None,
    *,
    threshold: float = GAP_SIMILARITY,
    limit: int | None = None,
    unknown_names: UnknownNames | None = None,
) -> list[GapCluster]:
    """The gaps grouped by meaning, biggest first; each with the book's closest sections and the
    names its phrasings ask about that the book never mentions."""
    by_text: dict[str, list[GapQuestion]] = defaultdict(list)
    for g in gaps:
        by_text[normalize(g.question)].append(g)
    keys = sorted(by_text, key=lambda k: (-len(by_text[k]), k))[:MAX_GAP_TEXTS]
    if not keys:
        return []
    # The phrasing asked most under each key is what gets embedded and shown.
    texts = [Counter(g.question.strip() for g in by_text[k]).most_common(1)[0][0] for k in keys]
    vectors = np.asarray(embed(texts), dtype=np.float64)
    weights = [float(len(by_text[k])) for k in keys]
    groups = [
        _describe(group, keys, texts, vectors, by_text) for group in agglomerate(vectors, threshold, weights)
    ]
    groups.sort(key=lambda c: (-c.size, -c.reasons.get("thumbs_down", 0), -c.last_asked.timestamp(), c.label))
    groups = groups[:limit] if limit is not None else groups
    if unknown_names is not None:
        groups = [_with_unknown_names(c, unknown_names) for c in groups]
    if search is None:
        return groups
    return [_with_sections(c, search) for c in groups]


def _describe(
    group: list[int],
    keys: list[str],
    texts: list[str],
    vectors: npt.NDArray[np.float64],
    by_text: dict[str, list[GapQuestion]],
) -> GapCluster:
    asked = [g for i in group for g in by_text[keys[i]]]
    counts = np.array([len(by_text[keys[i]]) for i in group], dtype=np.float64)
    unit = vectors[group] / np.maximum(np.linalg.norm(vectors[group], axis=1, keepdims=True), 1e-12)
    centroid = (unit * counts[:, None]).sum(axis=0)
    closeness = unit @ centroid
    # Closest to the centroid; among near-equals the most asked phrasing reads best.
    typical = max(range(len(group)), key=lambda n: (round(float(closeness[n]), 6), counts[n], -n))
    order = sorted(range(len(group)), key=lambda n: (-counts[n], texts[group[n]]))
    pages = Counter(p for g in asked if (p := page_of(g.page_url)))
    return GapCluster(
        label=texts[group[typical]],
        size=len(asked),
        reasons=dict(Counter(r for g in asked for r in g.reasons).most_common()),
        phrasings=[texts[group[n]] for n in order],
        pages=[p for p, _ in pages.most_common(3)],
        last_asked=max(g.created_at for g in asked),
    )


def _with_sections(cluster: GapCluster, search: Search) -> GapCluster:
    return replace(cluster, sections=list(search(cluster.label))[:SECTIONS_PER_GAP])


def _with_unknown_names(cluster: GapCluster, unknown_names: UnknownNames) -> GapCluster:
    counted: Counter[str] = Counter()
    for phrasing in cluster.phrasings[:PHRASINGS_PROBED]:  # most asked first
        counted.update(dict.fromkeys(unknown_names(phrasing), 1))
    return replace(cluster, unknown_names=[name for name, _ in counted.most_common()])
